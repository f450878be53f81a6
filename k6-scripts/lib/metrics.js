// Client-side metrics, tagged by operation (op=insert|select|update|scan|...).
// Counts and latency come from k6's own per-iteration metrics, tagged with
// the op the iteration ran: one iteration is one statement (with its
// retries), and k6 times it with µs precision at no cost to the script.
// Custom metrics are only for rare events. In Prometheus (remote write):
//   k6_iterations_total{op}                           statements run
//   k6_iteration_duration_seconds{op}                 latency, native histogram
//   k6_ybbench_errors_total{op, sqlstate, sqlstate_class}  failed statements
//   k6_ybbench_retries_total{op}                      retries (40001, 40P01)
//   k6_ybbench_keys_missing_total{op}                 rows a statement did not find
// Rows written are not counted per statement (a sample costs ~8 µs): every
// successful write statement writes its rows, or counts the missing ones in
// keys_missing, so rows written = (statements - errors) x rows each - missing
// (lib/summary.js).
// Dashboards and rules depend on these names: change them in both places.
// Per-statement work here is client CPU taken from the load (make bench):
// a tagged custom sample costs ~10 µs.
import { Counter } from "k6/metrics";
import exec from "k6/execution";
import { int } from "./config.js";
import { sqlstate, errorMessage } from "./db.js";

export const errors = new Counter("ybbench_errors");
export const retries = new Counter("ybbench_retries");
export const keysMissing = new Counter("ybbench_keys_missing");

// Serialization failures and deadlocks are the database asking us to try
// again: retried up to MAX_RETRIES times, each retry counted.
export const maxRetries = int("MAX_RETRIES", 10, { min: 0, max: 1000 });
const RETRYABLE = ["40001", "40P01"];

// Tags this iteration's k6 metrics with its operation, only when the op
// differs from the last one: once per VU in a single-op workload. exec.vu
// builds a new object on each access (~20 µs per tag change), so its tags
// object, which stays bound to the VU, is taken once.
let currentOp, vuTags;
export function tagIteration(op) {
  if (op !== currentOp) {
    if (!vuTags) vuTags = exec.vu.metrics.tags;
    vuTags.op = op;
    currentOp = op;
  }
}

// The first error of each op and SQLSTATE in a VU goes to the log with the
// driver's words (a count says how many, not why: "none" is a connection
// refused, a timeout, ...); later ones are only counted.
const logged = new Set();
function logFirst(op, state, e) {
  const k = `${op} ${state}`;
  if (logged.has(k)) return;
  logged.add(k);
  console.warn(`${op} failed (SQLSTATE ${state}): ${errorMessage(e)}; further ${op} errors of this VU with this SQLSTATE are only counted`);
}

// An iteration that runs no statement (op=idle), left out of every
// statement count and latency.
export function idle() {
  tagIteration("idle");
}

// A load's key bound in the open model, which cannot stop at an iteration
// count: an iteration whose number n is past `bound` (0: none) writes
// nothing, and is idle so that it does not count as the load's op.
export function pastBound(n, bound) {
  if (!bound || n < bound) return false;
  idle();
  return true;
}

// Runs one statement, fn(...args) with args = [statement text, parameters...],
// with its retries. Returns the statement's result, or undefined when it
// failed (the error is counted by SQLSTATE, not thrown: one failed statement
// must not end the VU).
// fn is db.query or db.exec taken once per VU (lib/db.js runners): a method
// looked up on the Go object, or a closure, is a new function object per
// call. args is an array the caller keeps and refills; apply costs ~0.5 µs
// where a spread call (f(...a)) costs 4-12 µs in k6's interpreter.
// `expected`: a SQLSTATE that is an outcome, not an error (TPC-C's
// rolled-back New-Order): returns EXPECTED, counts nothing.
export const EXPECTED = Object.freeze({ expected: true });
let lastTries = 0;
export function attempt(op, fn, args, expected) {
  for (let tries = 0; ; tries++) {
    lastTries = tries;
    try {
      return fn.apply(undefined, args);
    } catch (e) {
      const state = sqlstate(e);
      if (state === expected) return EXPECTED;
      if (RETRYABLE.includes(state) && tries < maxRetries) {
        retries.add(1, { op });
        continue;
      }
      errors.add(1, { op, sqlstate: state, sqlstate_class: state === "none" ? "none" : state.slice(0, 2) });
      logFirst(op, state, e);
      return undefined;
    }
  }
}

// The retries of this VU's last attempt() (tpcc.js's retry histogram).
export function lastRetries() {
  return lastTries;
}

// A write that failed (or timed out) may or may not be in the table. Its
// keys go to the log, one line per statement (failures only: no cost to
// the load), so that `ybbench verify` reports them as unknown, not lost.
export function unacknowledged(first, rows) {
  console.warn(`ybbench-unacked first=${first} rows=${rows}`);
}

// A multi-row read whose result comes back short. xk6-sql does not check
// rows.Err() after reading rows, so an error that arrives after the first
// rows (a YugabyteDB read restart, a node dying mid-result) returns the rows
// read so far and no exception: a short result may be an error, and is
// never counted as keys missing. It is retried like 40001; still short after
// MAX_RETRIES, it is a failed statement of SQLSTATE "short" (class "short").
export const SHORT = "short";
export function attemptRows(op, fn, args, expected) {
  for (let tries = 0; ; tries++) {
    const rows = attempt(op, fn, args);
    if (rows === undefined || rows.length >= expected) return rows;
    if (tries < maxRetries) {
      retries.add(1, { op });
      continue;
    }
    errors.add(1, { op, sqlstate: SHORT, sqlstate_class: SHORT });
    logFirst(op, SHORT, new Error(`${rows.length} of ${expected} rows came back, ${tries} retries`));
    return undefined;
  }
}
