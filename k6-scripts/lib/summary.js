// handleSummary for every workload: a short per-operation table on stdout
// (returning from handleSummary replaces k6's own text summary) and the
// same numbers as JSON in SUMMARY_JSON when it is set (`ybbench run` sets
// it; a plain `k6 run` leaves the working folder alone). --summary-export
// keeps working beside it.
import exec from "k6/execution";
import { str } from "./config.js";
import { goHelpers } from "./go_helpers.js";
import { seriesOutput } from "./series.js";

const jsonPath = str("SUMMARY_JSON", undefined, { pattern: /^[^\0\n]+$/, maxLength: 4096, hint: "a file path" });

function values(data, name) {
  return (data.metrics[name] || {}).values || {};
}

const WRITES = ["insert", "update"];
export const K6_SOURCE = "k6: every sample kept, exact (k6's memory grows with the run)";
export const GO_HELPERS_SOURCE = "k6/x/ybbench: per-op histograms, 3 significant digits, fixed memory";
// The version of summary.json's format: ybbench/core/schemas/summary.schema.json
// (docs/results-format.md), which says every field below and its unit.
export const FORMAT_VERSION = 2;

// The op's iteration_duration. With our Go module (lib/go_helpers.js): its
// per-op histograms, of fixed size, in place of k6's sink, which keeps every
// sample. Otherwise k6's: the op's submetric with OP_LATENCY_SUMMARY=on, or
// all iterations when every one ran this op (a single-op workload).
function latency(data, op, count, helpersLatency) {
  if (helpersLatency) return helpersLatency.ops[op];
  const sub = data.metrics[`iteration_duration{op:${op}}`];
  if (sub) return sub.values;
  return count > 0 && values(data, "iterations").count === count ? values(data, "iteration_duration") : undefined;
}

// Per-op numbers from the submetrics that lib/run.js declares in thresholds.
// Rows written: each write statement that did not fail wrote rowsPerWrite
// rows, less those it did not find (keys_missing{op}); lib/metrics.js. A
// load whose statements write different numbers of rows (tpcc-load) counts
// them in a Counter instead, one sample a statement: rowsMetric names it.
export function digest(data, workload, rowsPerWrite = 1, rowsMetric = undefined) {
  const seconds = data.state.testRunDurationMs / 1000;
  const helpersLatency = goHelpers && goHelpers.latencySummary();
  const ops = {};
  for (const name of Object.keys(data.metrics)) {
    const m = /^iterations\{op:(.+)\}$/.exec(name);
    if (!m) continue;
    const op = m[1];
    if (op === "loop") continue; // lib/loop.js LOOP_OP: k6's iterations of the inner loop, not an op
    const count = values(data, name).count || 0;
    const it = latency(data, op, count, helpersLatency);
    ops[op] = {
      count,
      per_second: count / seconds,
      // k6's µs-precise clock; null when not in the summary (lib/run.js).
      latency_ms: it ? { avg: it.avg, p50: it.med, p90: it["p(90)"], p95: it["p(95)"], p99: it["p(99)"], max: it.max } : null,
      retries: values(data, `ybbench_retries{op:${op}}`).count || 0,
      errors: values(data, `ybbench_errors{op:${op}}`).count || 0,
      keys_missing: values(data, `ybbench_keys_missing{op:${op}}`).count || 0,
    };
  }
  let rowsWritten = 0;
  for (const op of WRITES) {
    if (ops[op]) rowsWritten += (ops[op].count - ops[op].errors) * rowsPerWrite - ops[op].keys_missing;
  }
  if (rowsMetric) rowsWritten = values(data, rowsMetric).count || 0;
  const errorsByClass = {};
  for (const name of Object.keys(data.metrics)) {
    const m = /^ybbench_errors\{sqlstate_class:(.+)\}$/.exec(name);
    if (m && values(data, name).count) errorsByClass[m[1]] = values(data, name).count;
  }
  const thresholdsFailed = Object.entries(data.metrics)
    .filter(([, v]) => v.thresholds && Object.values(v.thresholds).some((t) => !t.ok))
    .map(([k]) => k);
  return {
    format_version: FORMAT_VERSION,
    workload,
    testid: exec.test.options.tags.testid,
    scenario: exec.test.options.scenarios[workload],
    duration_s: seconds,
    ops,
    errors: values(data, "ybbench_errors").count || 0,
    errors_by_class: errorsByClass,
    rows_written: rowsWritten,
    keys_missing: values(data, "ybbench_keys_missing").count || 0,
    dropped_iterations: values(data, "dropped_iterations").count || 0,
    // Where latency_ms comes from: k6's sink keeps every sample (memory
    // grows with the run); our module's histograms keep 3 significant digits.
    latency_source: helpersLatency ? GO_HELPERS_SOURCE : K6_SOURCE,
    thresholds_failed: thresholdsFailed,
    // A load's keys and values (its setup() says), for `ybbench verify`.
    written: (data.setup_data && data.setup_data.written) || null,
  };
}

const fmt = (x, d = 2) => (x === undefined ? "-" : x.toFixed(d));

export function text(d) {
  const s = d.scenario;
  const width = Math.max(8, ...Object.keys(d.ops).map((op) => op.length + 1));
  const load = s.executor.endsWith("arrival-rate")
    ? `${s.executor} rate=${s.rate ?? s.stages.map((x) => `${x.target}:${x.duration}`).join(",")}/s vus=${s.preAllocatedVUs}..${s.maxVUs}`
    : `${s.executor} vus=${s.vus}`;
  const lines = [
    "",
    `ybbench ${d.workload}  testid=${d.testid}  ${load}  ran ${fmt(d.duration_s, 1)} s`,
    `  ${"op".padEnd(width)}${"ops".padStart(10)}${"ops/s".padStart(11)}${"p50 ms".padStart(9)}${"p95 ms".padStart(9)}` +
      `${"p99 ms".padStart(9)}${"avg ms".padStart(9)}${"max ms".padStart(9)}${"retries".padStart(9)}`,
  ];
  for (const [op, o] of Object.entries(d.ops)) {
    const l = o.latency_ms || {};
    lines.push(`  ${op.padEnd(width)}${String(o.count).padStart(10)}${fmt(o.per_second, 1).padStart(11)}` +
      `${fmt(l.p50, 3).padStart(9)}${fmt(l.p95, 3).padStart(9)}${fmt(l.p99, 3).padStart(9)}${fmt(l.avg, 3).padStart(9)}${fmt(l.max, 1).padStart(9)}` +
      `${String(o.retries).padStart(9)}`);
  }
  const classes = Object.entries(d.errors_by_class).map(([c, n]) => `${c}=${n}`).join(" ");
  lines.push(`  errors ${d.errors}${classes ? ` (SQLSTATE class ${classes})` : ""}  rows written ${d.rows_written}` +
    `  keys missing ${d.keys_missing}  dropped iterations ${d.dropped_iterations}`);
  lines.push(`  latency from ${d.latency_source}`);
  if (Object.values(d.ops).some((o) => !o.latency_ms)) {
    lines.push("  per-op latency: in Prometheus (k6 dashboard), or here with OP_LATENCY_SUMMARY=on (short runs: lib/run.js)");
  }
  lines.push(d.thresholds_failed.length ? `  thresholds FAILED: ${d.thresholds_failed.join(", ")}` : "  thresholds ok");
  return lines.join("\n") + "\n\n";
}

// extra(data, digest): a workload's own {fields, text}: fields join
// summary.json's, text follows the table (tpcc's tpmC).
export function summaryHandler(workload, { rowsPerWrite = 1, rowsMetric, extra } = {}) {
  return (data) => {
    let d = digest(data, workload, rowsPerWrite, rowsMetric);
    const more = extra ? extra(data, d) : { fields: {}, text: "" };
    d = { ...d, ...more.fields };
    const out = { stdout: text(d).replace(/\n$/, more.text + "\n") };
    if (jsonPath) out[jsonPath] = JSON.stringify({ ...d, k6: data.metrics }, null, 1);
    return { ...out, ...seriesOutput(jsonPath, workload) };
  };
}
