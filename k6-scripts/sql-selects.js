// yb-sample-apps SqlInserts, read-only (seed 000): point SELECTs by key,
// uniform over the keys a sql-inserts run wrote, `<KEY_PREFIX>:0` up to
// `<KEY_PREFIX>:<MAX_WRITTEN_KEY - 1>`.
//
//   KEY_PREFIX       the prefix the insert run used (its testid by default)
//   MAX_WRITTEN_KEY  how many keys that run wrote contiguously from 0
//   TABLE, YSQL_NODES, DB_USER, DB_NAME, VUS, DURATION as in sql-inserts.js
import { identifier, int, str, required, connection } from "./lib/config.js";
import { open, runners, nodeFor, checkReachable, requireKey } from "./lib/db.js";
import { key, uniformKeys } from "./lib/keys.js";
import { attempt, tagIteration, keysMissing } from "./lib/metrics.js";
import { summaryHandler } from "./lib/summary.js";
import { options as runOptions } from "./lib/run.js";
import { innerLoop } from "./lib/loop.js";

const conn = connection();
const table = identifier("TABLE", "postgresqlkeyvalue");
const keyPrefix = required("KEY_PREFIX", str("KEY_PREFIX", undefined, { pattern: /^[A-Za-z0-9_.-]{1,64}$/, hint: "1-64 letters, digits, . _ -" }));
const maxWrittenKey = required("MAX_WRITTEN_KEY", int("MAX_WRITTEN_KEY", undefined, { min: 1 }));

export const options = runOptions("sql-selects", { ops: ["select"] });
export const handleSummary = summaryHandler("sql-selects");

const db = open(conn, nodeFor(conn, __VU));
const select = `SELECT k, v FROM ${table} WHERE k = $1`;
const sql = runners(db, conn, nodeFor(conn, __VU));
const args = [select, ""]; // statement, key
const nextKey = uniformKeys(keyPrefix, maxWrittenKey);
const loop = innerLoop("sql-selects", conn, nodeFor(conn, __VU), { table, prefix: keyPrefix, keys: maxWrittenKey });

export function setup() {
  checkReachable(conn);
  requireKey(db, table, select, key(keyPrefix, maxWrittenKey - 1));
}

export default function () {
  if (loop) return loop();
  tagIteration("select");
  args[1] = nextKey();
  const rows = attempt("select", sql.query, args);
  if (rows !== undefined && rows.length !== 1) keysMissing.add(1, { op: "select" });
}

export function teardown() {
  db.close();
}
