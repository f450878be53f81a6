// Each op's count and latency per second, from our Go module's sink
// (compose/k6/xk6-ybbench/series.go), written by handleSummary beside
// summary.json as per-second.json (ybbench/core/schemas/per-second.schema.json):
// `ybbench compare` reads it at 1 s resolution without Prometheus. A k6
// without the module (Grafana Cloud's) writes none: k6 gives a script no
// per-second view of its own samples, and compare falls back to Prometheus.
import exec from "k6/execution";
import { goHelpers } from "./go_helpers.js";

export const FORMAT_VERSION = 1;
export const FILE = "per-second.json";
export const SOURCE = "k6/x/ybbench: iteration_duration samples by op and second of their end, log histogram, 1% relative accuracy";

// {path: JSON} to add to handleSummary's output, or {} (no module, no path).
export function seriesOutput(summaryPath, workload) {
  if (!summaryPath || !goHelpers || typeof goHelpers.perSecondSeries !== "function") return {};
  const s = goHelpers.perSecondSeries();
  if (!s) return {};
  const path = summaryPath.replace(/[^/]*$/, FILE);
  const doc = {
    format_version: FORMAT_VERSION,
    workload,
    testid: exec.test.options.tags.testid,
    resolution_s: 1,
    source: SOURCE,
    histogram: { kind: "log", unit: "us", gamma: s.gamma, relative_accuracy: s.relative_accuracy },
    ops: s.ops,
  };
  return { [path]: JSON.stringify(doc) };
}
