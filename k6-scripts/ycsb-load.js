// YCSB load phase (seed 003): RECORD_COUNT records of FIELD_COUNT fields of
// FIELD_LENGTH random printable characters (10 x 100: about 1 KB), keys
// user<fnv64(keynum)> as YCSB's CoreWorkload names them (insertorder=hashed).
//
//   RECORD_COUNT   records in the table when every loader is done (1000)
//   INSERT_START   first key number this loader inserts (0), as YCSB's insertstart
//   INSERT_COUNT   how many it inserts (RECORD_COUNT - INSERT_START)
//   TABLE FIELD_COUNT FIELD_LENGTH, and the common knobs (docs/workloads.md)
// Several k6 instances (execution segments) split INSERT_COUNT between them.
// With FIELD_LENGTH >= 32 each field starts with `L<tag>:<keynum>.<field>:`
// (tag: the run's, lib/keys.js runTag), the rest random as before, so that
// `ybbench verify` can tell a field this run wrote to this record from any
// other value. A failed insert logs `ybbench-unacked first=<iteration> rows=1`.
import { ConfigError, identifier, int, connection } from "./lib/config.js";
import { open, runners, nodeFor, checkReachable, ensure, where } from "./lib/db.js";
import { runTag } from "./lib/keys.js";
import { attempt, tagIteration, pastBound, unacknowledged } from "./lib/metrics.js";
import { options as runOptions, iterationInTest, testid } from "./lib/run.js";
import { summaryHandler } from "./lib/summary.js";
import { keyName, fieldFiller, usertable } from "./lib/ycsb.js";

const conn = connection();
const t = usertable({ identifier, int });
const insertStart = int("INSERT_START", 0, { min: 0, max: t.recordCount - 1 });
const insertCount = int("INSERT_COUNT", t.recordCount - insertStart, { min: 1 });
if (insertStart + insertCount > t.recordCount) {
  throw new ConfigError(`invalid INSERT_COUNT=${insertCount}: INSERT_START + INSERT_COUNT exceeds RECORD_COUNT=${t.recordCount}`);
}

export const options = runOptions("ycsb-load", { ops: ["insert"], bound: insertCount });
export const handleSummary = summaryHandler("ycsb-load");

const db = open(conn, nodeFor(conn, __VU));
const insert = `INSERT INTO ${t.table} (ycsb_key, ${t.fields.join(", ")}) VALUES (${[0, ...t.fields.keys()].map((_, i) => `$${i + 1}`).join(", ")})`;
const sql = runners(db, conn, nodeFor(conn, __VU));
const args = [insert, ...t.fields.map(() => ""), ""]; // statement, key, fields
let fill;
const stamped = t.fieldLength >= 32;

export function setup() {
  checkReachable(conn);
  ensure(db, t.ddl);
  console.log(`ycsb-load: key numbers [${insertStart}, ${insertStart + insertCount}) of ${t.recordCount} into ${t.table}`);
  // What was written, for summary.json and `ybbench verify`: iteration n
  // inserts key number INSERT_START + n.
  const tag = runTag(testid());
  return { tag, written: { scheme: "ycsb-load", table: t.table, record_count: t.recordCount, insert_start: insertStart,
    insert_count: insertCount, field_count: t.fieldCount, field_length: t.fieldLength, stamped, tag, ...where(conn) } };
}

export default function (data) {
  if (!fill) fill = fieldFiller(t.fieldLength);
  const n = iterationInTest();
  if (pastBound(n, insertCount)) return;
  tagIteration("insert");
  args[1] = keyName(insertStart + n);
  fill(args, 2, t.fieldCount, stamped ? `L${data.tag}:${insertStart + n}.` : undefined);
  // A single-row INSERT that succeeds wrote its row: no rowsAffected() call.
  if (attempt("insert", sql.exec, args) === undefined) unacknowledged(n, 1);
}

export function teardown() {
  db.close();
}
