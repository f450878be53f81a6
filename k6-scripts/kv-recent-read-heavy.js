// kv-recent-read-heavy: reads and updates over the most recently loaded
// RECENT_KEYS keys (default 1% of MAX_WRITTEN_KEY), the subset of seed 001's
// "recent-data" workload (~385K reads/s with ~6.5K writes/s: WRITE_PERCENT=1.7).
// Knobs: lib/kv.js and docs/workloads.md.
import { kvWorkload } from "./lib/kv.js";

const w = kvWorkload("kv-recent-read-heavy", { recent: true, writePercent: 1.7 });
export const options = w.options;
export const setup = w.setup;
export default w.run;
export const teardown = w.teardown;
export const handleSummary = w.handleSummary;
