// YCSB run phase (seed 003) on the table ycsb-load filled: workload a (50%
// reads, 50% updates), b (95/5) or c (100% reads); one operation per
// iteration, keys chosen as YCSB's CoreWorkload chooses them.
//
//   YCSB_WORKLOAD         a | b | c (a)
//   READ_PROPORTION       share of reads, 0..1 (the workload's: 0.5, 0.95, 1)
//   REQUEST_DISTRIBUTION  zipfian (scrambled, as YCSB) | uniform | latest (zipfian)
//   ZIPFIAN_CONSTANT      (0.99)
//   RECORD_COUNT          records ycsb-load wrote (1000)
//   OPERATION_COUNT       stop after this many operations (0: run DURATION)
//   OPS_PER_ITERATION     N operations per k6 iteration, in Go (lib/loop.js; 1)
//   TABLE FIELD_COUNT FIELD_LENGTH, and the common knobs (docs/workloads.md)
// A read is SELECT of all fields by key; an update sets one random field,
// with FIELD_LENGTH >= 32 starting with `U<tag>:<iteration>.<field>:` (tag:
// the run's, lib/keys.js runTag), the rest random as before, for `ybbench
// verify`. A failed update logs `ybbench-unacked first=<iteration> rows=1`.
import { identifier, int, number, oneOf, connection } from "./lib/config.js";
import { open, runners, nodeFor, checkReachable, errorMessage, where } from "./lib/db.js";
import { runTag } from "./lib/keys.js";
import { attempt, tagIteration, keysMissing, unacknowledged } from "./lib/metrics.js";
import { options as runOptions, iterationInTest, testid } from "./lib/run.js";
import { summaryHandler } from "./lib/summary.js";
import { keyName, fieldMaker, usertable, keyChooser } from "./lib/ycsb.js";
import { innerLoop, opsPerIteration } from "./lib/loop.js";

const conn = connection();
const t = usertable({ identifier, int });
const workload = oneOf("YCSB_WORKLOAD", "a", ["a", "b", "c"]);
const readProportion = number("READ_PROPORTION", { a: 0.5, b: 0.95, c: 1 }[workload], { min: 0, max: 1 });
const distribution = oneOf("REQUEST_DISTRIBUTION", "zipfian", ["zipfian", "uniform", "latest"]);
const theta = number("ZIPFIAN_CONSTANT", 0.99, { above: 0, max: 0.9999 });
const operationCount = int("OPERATION_COUNT", 0, { min: 0 });

const ops = readProportion === 1 ? ["select"] : readProportion === 0 ? ["update"] : ["select", "update"];
export const options = runOptions("ycsb", { ops, bound: operationCount });
export const handleSummary = summaryHandler("ycsb");

const db = open(conn, nodeFor(conn, __VU));
const read = `SELECT ycsb_key, ${t.fields.join(", ")} FROM ${t.table} WHERE ycsb_key = $1`;
const updates = t.fields.map((f) => `UPDATE ${t.table} SET ${f} = $1 WHERE ycsb_key = $2`);
const nextKey = keyChooser(distribution, t.recordCount, theta);
const sql = runners(db, conn, nodeFor(conn, __VU));
const readArgs = [read, ""], updateArgs = ["", "", ""]; // statement, then its parameters
let field;
const stamped = t.fieldLength >= 32;
// OPS_PER_ITERATION > 1: iteration n runs operations n x N .. n x N + N - 1
// in Go (compose/k6/xk6-ybbench/ycsb_loop.go), chosen as below.
const loop = innerLoop("ycsb", conn, nodeFor(conn, __VU), { table: t.table, fieldCount: t.fieldCount,
  fieldLength: t.fieldLength, recordCount: t.recordCount, readProportion, distribution, theta,
  bound: operationCount, boundName: "OPERATION_COUNT" });

export function setup() {
  checkReachable(conn);
  for (const keynum of [0, t.recordCount - 1]) {
    let rows;
    try {
      rows = db.query(`SELECT 1 AS found FROM ${t.table} WHERE ycsb_key = $1`, keyName(keynum));
    } catch (e) {
      throw new Error(`cannot read ${t.table}: ${errorMessage(e)}`);
    }
    if (rows.length !== 1) throw new Error(`record ${keynum} (${keyName(keynum)}) is not in ${t.table}: run ycsb-load with RECORD_COUNT=${t.recordCount} first`);
  }
  console.log(`ycsb: workload ${workload} (reads ${readProportion}), ${distribution} over ${t.recordCount} records of ${t.table}`);
  const tag = runTag(testid());
  return { tag, written: { scheme: "ycsb", table: t.table, record_count: t.recordCount, field_count: t.fieldCount,
    field_length: t.fieldLength, stamped, tag, ...(loop ? { ops_per_iteration: opsPerIteration } : {}), ...where(conn) } };
}

export default function (data) {
  if (loop) return loop(data.tag);
  const key = nextKey();
  if (Math.random() < readProportion) {
    tagIteration("select");
    readArgs[1] = key;
    const rows = attempt("select", sql.query, readArgs);
    if (rows !== undefined && rows.length !== 1) keysMissing.add(1, { op: "select" });
  } else {
    if (!field) field = fieldMaker(t.fieldLength);
    tagIteration("update");
    const f = Math.floor(Math.random() * t.fieldCount);
    updateArgs[0] = updates[f];
    updateArgs[1] = field(stamped ? `U${data.tag}:${iterationInTest()}.${f}:` : undefined);
    updateArgs[2] = key;
    const r = attempt("update", sql.exec, updateArgs);
    if (r === undefined) unacknowledged(iterationInTest(), 1);
    else if (r.rowsAffected() !== 1) keysMissing.add(1, { op: "update" });
  }
}

export function teardown() {
  db.close();
}
