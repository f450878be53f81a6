// A k6 threshold on the whole iteration_duration with the native helpers
// loaded: k6 runs thresholds only on its own sink types, so the module
// leaves k6's sink in place (tests/native/test_native_helpers.py).
import { native } from "../../k6-scripts/lib/native.js";

export const options = { vus: 2, iterations: 200, thresholds: { iteration_duration: [`max<${__ENV.MAX_MS}`] } };

export default function () {}

export function handleSummary(data) {
  return { [__ENV.OUT]: JSON.stringify({ native: native.latencySummary(), values: data.metrics.iteration_duration.values }) };
}
