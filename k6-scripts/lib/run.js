// What every workload shares around its statements: the run's id, the load
// model (k6 scenario) and the thresholds that put each operation in the
// summary.
import exec from "k6/execution";
import { ConfigError, duration, int, oneOf, str } from "./config.js";
import { goHelpers } from "./go_helpers.js";
import { checkLoop, opsPerIteration, LOOP_OP } from "./loop.js";

// Closed model: a fixed number of VUs, each starting its next operation when
// the last one ended (as yb-sample-apps and YCSB threads do). Open model:
// operations start at a given rate whatever the latency; those that find no
// free VU are dropped and counted in dropped_iterations.
export function loadModel(defaultVus = 16) {
  const model = oneOf("LOAD_MODEL", "closed", ["closed", "constant-arrival-rate", "ramping-arrival-rate"]);
  const vus = int("VUS", defaultVus, { min: 1, max: 100000 });
  const m = { model, vus, duration: duration("DURATION", "30s") };
  if (model === "closed") return m;
  m.maxVUs = int("MAX_VUS", vus, { min: vus, max: 100000 });
  if (model === "constant-arrival-rate") {
    m.rate = int("RATE", undefined, { min: 1 });
    if (m.rate === undefined) throw new ConfigError("RATE is required and not set (LOAD_MODEL=constant-arrival-rate)");
  } else {
    m.startRate = int("START_RATE", 0, { min: 0 });
    m.stages = stages("STAGES");
  }
  return m;
}

// STAGES: target:duration,... e.g. 100:30s,1000:2m (operations per second).
function stages(name) {
  const v = str(name, undefined, {
    pattern: /^[0-9]+:([0-9]+(ms|s|m|h))+(,[0-9]+:([0-9]+(ms|s|m|h))+)*$/,
    hint: "target:duration,... such as 100:30s,1000:2m",
  });
  if (v === undefined) throw new ConfigError(`${name} is required and not set (LOAD_MODEL=ramping-arrival-rate)`);
  return v.split(",").map((s) => ({ target: Number(s.split(":")[0]), duration: s.split(":")[1] }));
}

function scenario(m, bound) {
  const common = { gracefulStop: "10s" };
  if (m.model === "closed" && bound) {
    // A key bound: exactly `bound` iterations, or fewer if DURATION ends first.
    return { executor: "shared-iterations", vus: m.vus, iterations: bound, maxDuration: m.duration, ...common };
  }
  if (m.model === "closed") return { executor: "constant-vus", vus: m.vus, duration: m.duration, ...common };
  const open = { preAllocatedVUs: m.vus, maxVUs: m.maxVUs, timeUnit: "1s", ...common };
  if (m.model === "constant-arrival-rate") return { executor: "constant-arrival-rate", rate: m.rate, duration: m.duration, ...open };
  return { executor: "ramping-arrival-rate", startRate: m.startRate, stages: m.stages, ...open };
}

// Per-op latency in the k6 summary of a workload that mixes ops needs a
// threshold on iteration_duration{op}, and k6 re-sorts every sample of a
// trend with a threshold every 2 s: client CPU that grows with the run
// (13% of k6's CPU after 2 minutes at 40K ops/s, and on). So it is off
// unless asked for; Prometheus has per-op latency (native histograms) at no
// cost, and a single-op workload's summary takes it from iteration_duration.
// With our Go module (lib/go_helpers.js) the summary has per-op latency from
// its histograms, and OP_LATENCY_SUMMARY adds nothing.
const opLatencySummary = oneOf("OP_LATENCY_SUMMARY", "off", ["off", "on"]) === "on" && !goHelpers;

// The SQLSTATE classes worth a line in the summary; Prometheus has them all.
// "short": a multi-row read cut short, which may be an error (lib/metrics.js).
const ERROR_CLASSES = ["08", "23", "40", "42", "53", "57", "XX", "none", "short"];

// k6 options for a workload. `ops` lists the operations it runs, so that the
// summary (and --summary-export) carries per-op counts, errors and retries
// (latencies with OP_LATENCY_SUMMARY=on);
// `bound` caps the iterations of a load phase in the closed model.
export function options(workload, { ops = [], bound = 0, vus = 16, extra = {} } = {}) {
  const m = loadModel(vus);
  checkLoop(workload, m.model);
  const testid = __ENV.TESTID || `${workload}-${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}`;
  // Any SQL error fails the run (non-zero exit) but not the load.
  const thresholds = { ybbench_errors: ["count==0"], dropped_iterations: ["count>=0"] };
  for (const op of ops) {
    thresholds[`iterations{op:${op}}`] = ["count>=0"];
    if (opLatencySummary) thresholds[`iteration_duration{op:${op}}`] = ["max>=0"];
    thresholds[`ybbench_retries{op:${op}}`] = ["count>=0"];
    thresholds[`ybbench_errors{op:${op}}`] = ["count>=0"];
    thresholds[`ybbench_keys_missing{op:${op}}`] = ["count>=0"];
  }
  // The inner loop's iterations (lib/loop.js), which `ybbench verify` counts.
  if (opsPerIteration > 1) thresholds[`iterations{op:${LOOP_OP}}`] = ["count>=0"];
  for (const c of ERROR_CLASSES) thresholds[`ybbench_errors{sqlstate_class:${c}}`] = ["count>=0"];
  return Object.assign(
    {
      // With the inner loop, a key bound is ceil(bound / N) iterations.
      scenarios: { [workload]: scenario(m, bound && Math.ceil(bound / opsPerIteration)) },
      tags: { testid },
      thresholds,
      summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"],
      // No HTTP here: k6 need not make each iteration a new cookie jar.
      noCookiesReset: true,
    },
    extra,
  );
}

export function testid() {
  return exec.test.options.tags.testid;
}

// exec.scenario builds a new object on every access, which costs ~30 µs of
// client CPU per iteration; its getters stay live, so each VU takes it once.
// With our Go module, the same number from Go, without a getter called
// through reflect.
let scenarioInfo;
function scenarioIteration() {
  if (!scenarioInfo) scenarioInfo = exec.scenario;
  return scenarioInfo.iterationInTest;
}
export const iterationInTest = goHelpers ? goHelpers.iterationInTest : scenarioIteration;
