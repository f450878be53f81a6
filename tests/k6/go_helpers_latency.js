// Iterations of two ops with spread-out durations; handleSummary writes the
// Go helpers' latency summary next to k6's exact per-op trends (the
// thresholds keep every sample of iteration_duration{op:...}), to OUT
// (tests/native/test_go_helpers.py).
import { sleep } from "k6";
import { tagIteration } from "../../k6-scripts/lib/metrics.js";
import { goHelpers } from "../../k6-scripts/lib/go_helpers.js";

export const options = {
  vus: 8,
  iterations: Number(__ENV.ITERATIONS),
  thresholds: { "iteration_duration{op:fast}": ["max>=0"], "iteration_duration{op:slow}": ["max>=0"] },
  summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"],
};

export default function () {
  const fast = Math.random() < 0.5;
  tagIteration(fast ? "fast" : "slow");
  sleep(fast ? Math.random() * 0.004 : 0.004 + Math.random() * 0.016);
}

export function handleSummary(data) {
  const exact = {};
  for (const op of ["fast", "slow"]) exact[op] = data.metrics[`iteration_duration{op:${op}}`].values;
  return { [__ENV.OUT]: JSON.stringify({ go_helpers: goHelpers.latencySummary(), exact, iterations: data.metrics.iterations.values.count }) };
}
