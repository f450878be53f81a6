// Client-side metrics every workload reports, tagged by operation. In
// Prometheus (remote write) they appear as k6_ybbench_ops_total{op=...},
// k6_ybbench_op_duration_p99{op=...}, k6_ybbench_errors_total{op,sqlstate}.
import { Counter, Trend } from "k6/metrics";
import { sqlstate } from "./db.js";

export const ops = new Counter("ybbench_ops");
export const opDuration = new Trend("ybbench_op_duration", true);
export const errors = new Counter("ybbench_errors");
export const rowsWritten = new Counter("ybbench_rows_written");
export const keysMissing = new Counter("ybbench_keys_missing");

// Runs one statement, timing it and counting its outcome. Returns the
// statement's result, or undefined when it failed (the error is counted by
// SQLSTATE, not thrown: one failed statement must not end the VU).
export function timed(op, fn) {
  const start = Date.now();
  try {
    const result = fn();
    opDuration.add(Date.now() - start, { op });
    ops.add(1, { op });
    return result;
  } catch (e) {
    errors.add(1, { op, sqlstate: sqlstate(e) });
    return undefined;
  }
}
