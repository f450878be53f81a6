// What every workload shares around its statements: the run's id, the k6
// options for the closed model, and the setup that checks the database.
import exec from "k6/execution";
import { load } from "./config.js";

// One run, one id: the `testid` tag on every series. `k6 run --tag testid=...`
// (as ybbench does) wins; otherwise a readable, unique id is made here once,
// in the init context that k6 reads the options from.
export function options(workload, extra = {}) {
  const { vus, duration } = load();
  const testid = __ENV.TESTID || `${workload}-${new Date().toISOString().replace(/[-:]/g, "").replace(/\..*/, "")}`;
  return Object.assign(
    {
      scenarios: { [workload]: { executor: "constant-vus", vus, duration, gracefulStop: "10s" } },
      tags: { testid },
      // Any SQL error fails the run (non-zero exit) but not the load.
      thresholds: { ybbench_errors: ["count==0"] },
      summaryTrendStats: ["avg", "min", "med", "max", "p(90)", "p(95)", "p(99)"],
    },
    extra,
  );
}

export function testid() {
  return exec.test.options.tags.testid;
}
