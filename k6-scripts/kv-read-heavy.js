// kv-read-heavy: random reads uniform over all loaded keys with a small share of updates (seed 001: ~185K reads/s with ~1K writes/s, WRITE_PERCENT=0.5).
// Knobs: lib/kv.js and docs/workloads.md.
import { kvWorkload } from "./lib/kv.js";

const w = kvWorkload("kv-read-heavy", { writePercent: 0.5 });
export const options = w.options;
export const setup = w.setup;
export default w.run;
export const teardown = w.teardown;
export const handleSummary = w.handleSummary;
