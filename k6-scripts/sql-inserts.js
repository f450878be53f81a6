// yb-sample-apps SqlInserts, write side (seed 000): single-row INSERTs of
// new keys `<KEY_PREFIX>:<n>` into (k text PRIMARY KEY, v text).
//
//   YSQL_NODES       host:port,...   nodes to spread VUs over (127.0.0.1:5433)
//   DB_USER DB_NAME  role and database (yugabyte, yugabyte); password from
//                    PGPASSWORD or PGPASSFILE
//   TABLE            table name (postgresqlkeyvalue)
//   KEY_PREFIX       key prefix, distinct per generator (default: the testid)
//   NUM_UNIQUE_KEYS  stop after this many keys (0 = no bound, run DURATION)
//   ROW_BYTES        key + value bytes per row (64)
//   VUS DURATION     concurrency and length (16, 30s); LOAD_MODEL etc.: docs/workloads.md
import { identifier, int, str, connection } from "./lib/config.js";
import { open, runners, nodeFor, checkReachable, ensure, where } from "./lib/db.js";
import { sqlRowFiller } from "./lib/keys.js";
import { attempt, tagIteration, pastBound, unacknowledged } from "./lib/metrics.js";
import { summaryHandler } from "./lib/summary.js";
import { options as runOptions, testid, iterationInTest } from "./lib/run.js";
import { innerLoop, opsPerIteration } from "./lib/loop.js";

const conn = connection();
const table = identifier("TABLE", "postgresqlkeyvalue");
const numUniqueKeys = int("NUM_UNIQUE_KEYS", 0, { min: 0 });
const rowBytes = int("ROW_BYTES", 64, { min: 8, max: 1048576 });
const keyPrefix = str("KEY_PREFIX", undefined, { pattern: /^[A-Za-z0-9_.-]{1,64}$/, hint: "1-64 letters, digits, . _ -" });

export const options = runOptions("sql-inserts", { ops: ["insert"], bound: numUniqueKeys });
export const handleSummary = summaryHandler("sql-inserts");

const db = open(conn, nodeFor(conn, __VU));
const insert = `INSERT INTO ${table} (k, v) VALUES ($1, $2)`;
const sql = runners(db, conn, nodeFor(conn, __VU));
const args = [insert, "", ""]; // statement, key, value
// OPS_PER_ITERATION > 1: iteration n writes keys n x N .. n x N + N - 1 in Go.
const loop = innerLoop("sql-inserts", conn, nodeFor(conn, __VU), { table, rowBytes, bound: numUniqueKeys });

export function setup() {
  checkReachable(conn);
  // Several generators may start at once: IF NOT EXISTS can still race on
  // the catalog (23505/42P07), which means the table is there.
  ensure(db, `CREATE TABLE IF NOT EXISTS ${table} (k text PRIMARY KEY, v text)`);
  const prefix = keyPrefix || testid();
  console.log(`sql-inserts: keys ${prefix}:<n> into ${table} on ${conn.nodes.length} node(s)`);
  // What was written, for summary.json and `ybbench verify`: iteration n
  // writes key(prefix, n) with value valueMaker(prefix, row_bytes)(n)
  // (lib/keys.js sqlRowFiller).
  return { prefix, written: { scheme: "sql-inserts", table, prefix, row_bytes: rowBytes, rows_per_iteration: 1,
    ...(loop ? { ops_per_iteration: opsPerIteration } : {}), ...where(conn) } };
}

let fill;

export default function (data) {
  if (loop) return loop(data.prefix);
  if (!fill) fill = sqlRowFiller(data.prefix, rowBytes);
  // iterationInTest is unique across VUs and across k6 instances running
  // execution segments of one test, so no two iterations write one key.
  const n = iterationInTest();
  if (pastBound(n, numUniqueKeys)) return;
  tagIteration("insert");
  fill(args, 1, n);
  // A single-row INSERT that succeeds wrote its row: no rowsAffected() call.
  if (attempt("insert", sql.exec, args) === undefined) unacknowledged(n, 1);
}

export function teardown() {
  db.close();
}
