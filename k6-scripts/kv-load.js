// kv-load: the load phase (seed 001: 30 billion keys at a steady 85K inserts/s; seed 004: 1.6 billion keys). New keys in order, OP_SIZE rows per INSERT; NUM_UNIQUE_KEYS bounds it (0: run DURATION).
// Knobs: lib/kv.js and docs/workloads.md.
import { kvWorkload } from "./lib/kv.js";

const w = kvWorkload("kv-load", { load: true });
export const options = w.options;
export const setup = w.setup;
export default w.run;
export const teardown = w.teardown;
export const handleSummary = w.handleSummary;
