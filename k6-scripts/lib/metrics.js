// Client-side metrics every workload reports, tagged by operation
// (op=insert|select|update|scan|...). In Prometheus (remote write) they are
//   k6_ybbench_ops_total{op}                       statements that succeeded
//   k6_ybbench_op_duration_{p50,p95,p99,max,avg}{op}  latency, seconds
//   k6_ybbench_errors_total{op, sqlstate, sqlstate_class}
//   k6_ybbench_retries_total{op}                   retried statements (40001)
//   k6_ybbench_rows_written_total, k6_ybbench_keys_missing_total{op}
// Dashboards and rules depend on these names: change them in both places.
import { Counter, Trend } from "k6/metrics";
import exec from "k6/execution";
import { int } from "./config.js";
import { sqlstate } from "./db.js";

export const ops = new Counter("ybbench_ops");
export const opDuration = new Trend("ybbench_op_duration", true);
export const errors = new Counter("ybbench_errors");
export const retries = new Counter("ybbench_retries");
export const rowsWritten = new Counter("ybbench_rows_written");
export const keysMissing = new Counter("ybbench_keys_missing");

// Serialization failures and deadlocks are the database asking us to try
// again: retried up to MAX_RETRIES times, each retry counted.
const maxRetries = int("MAX_RETRIES", 10, { min: 0, max: 1000 });
const RETRYABLE = ["40001", "40P01"];

// Tags the rest of the iteration with its operation, so that k6's own
// iteration_duration (µs precision, unlike Date.now() here) splits by op.
export function tagIteration(op) {
  exec.vu.metrics.tags.op = op;
}

// Runs one statement, timing it (with its retries) and counting its outcome.
// Returns the statement's result, or undefined when it failed (the error is
// counted by SQLSTATE, not thrown: one failed statement must not end the VU).
export function timed(op, fn) {
  const start = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      const result = fn();
      opDuration.add(Date.now() - start, { op });
      ops.add(1, { op });
      return result;
    } catch (e) {
      const state = sqlstate(e);
      if (RETRYABLE.includes(state) && attempt < maxRetries) {
        retries.add(1, { op });
        continue;
      }
      errors.add(1, { op, sqlstate: state, sqlstate_class: state === "none" ? "none" : state.slice(0, 2) });
      return undefined;
    }
  }
}
