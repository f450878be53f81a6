// A k6 threshold on the whole iteration_duration with the Go helpers
// loaded: k6 runs thresholds only on its own sink types, so the module
// leaves k6's sink in place (tests/native/test_go_helpers.py).
import { goHelpers } from "../../k6-scripts/lib/go_helpers.js";

export const options = { vus: 2, iterations: 200, thresholds: { iteration_duration: [`max<${__ENV.MAX_MS}`] } };

export default function () {}

export function handleSummary(data) {
  return { [__ENV.OUT]: JSON.stringify({ go_helpers: goHelpers.latencySummary(), values: data.metrics.iteration_duration.values }) };
}
