// kv-random-read: uncached random reads (seed 004): 150 readers, uniform over the whole key space, no writes.
// Knobs: lib/kv.js and docs/workloads.md.
import { kvWorkload } from "./lib/kv.js";

const w = kvWorkload("kv-random-read", { vus: 150 });
export const options = w.options;
export const setup = w.setup;
export default w.run;
export const teardown = w.teardown;
export const handleSummary = w.handleSummary;
