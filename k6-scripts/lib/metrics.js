// Client-side metrics, tagged by operation (op=insert|select|update|scan|...).
// Counts and latency come from k6's own per-iteration metrics, tagged with
// the op the iteration ran: one iteration is one statement (with its
// retries), and k6 times it with µs precision at no cost to the script.
// Custom metrics are only for rare events. In Prometheus (remote write):
//   k6_iterations_total{op}                           statements run
//   k6_iteration_duration_seconds{op}                 latency, native histogram
//   k6_ybbench_errors_total{op, sqlstate, sqlstate_class}  failed statements
//   k6_ybbench_retries_total{op}                      retries (40001, 40P01)
//   k6_ybbench_rows_written_total, k6_ybbench_keys_missing_total{op}
// Dashboards and rules depend on these names: change them in both places.
// Per-statement work here is client CPU taken from the load (make bench):
// a tagged custom sample costs ~10 µs, a tag change ~30 µs.
import { Counter } from "k6/metrics";
import exec from "k6/execution";
import { int } from "./config.js";
import { sqlstate } from "./db.js";

export const errors = new Counter("ybbench_errors");
export const retries = new Counter("ybbench_retries");
export const rowsWritten = new Counter("ybbench_rows_written");
export const keysMissing = new Counter("ybbench_keys_missing");

// Serialization failures and deadlocks are the database asking us to try
// again: retried up to MAX_RETRIES times, each retry counted.
const maxRetries = int("MAX_RETRIES", 10, { min: 0, max: 1000 });
const RETRYABLE = ["40001", "40P01"];

// Tags this iteration's k6 metrics with its operation. Changing a VU's tags
// is costly, so it is done only when the op differs from the last one: once
// per VU in a single-op workload.
let currentOp;
export function tagIteration(op) {
  if (op !== currentOp) {
    exec.vu.metrics.tags.op = op;
    currentOp = op;
  }
}

// Runs one statement with its retries. Returns the statement's result, or
// undefined when it failed (the error is counted by SQLSTATE, not thrown:
// one failed statement must not end the VU).
export function attempt(op, fn) {
  for (let tries = 0; ; tries++) {
    try {
      return fn();
    } catch (e) {
      const state = sqlstate(e);
      if (RETRYABLE.includes(state) && tries < maxRetries) {
        retries.add(1, { op });
        continue;
      }
      errors.add(1, { op, sqlstate: state, sqlstate_class: state === "none" ? "none" : state.slice(0, 2) });
      return undefined;
    }
  }
}
