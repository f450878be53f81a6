// yb-sample-apps SqlSecondaryIndex: inserts of new keys into
// (k text PRIMARY KEY, v text) with an index on v, and reads by value
// (`SELECT k, v ... WHERE v = $1`) of keys already written.
//
// A VU reads only keys it wrote itself, so every read asks for a row that
// exists without any VU knowing the others' progress: VU i (exec.vu.idInTest,
// unique across execution segments) writes indexes i-1, i-1+S, i-1+2S, ...
// with S the test's largest VU count, and remembers only how many.
//
//   WRITE_PERCENT  share of inserts, percent (50: one reader, one writer)
//   KEY_PREFIX     key prefix (default: the testid)
//   TABLE          (sqlsecondaryindex), and the common knobs (docs/workloads.md)
import exec from "k6/execution";
import { identifier, number, str, connection } from "./lib/config.js";
import { open, runners, nodeFor, checkReachable, ensure, where } from "./lib/db.js";
import { key } from "./lib/keys.js";
import { attempt, tagIteration, keysMissing } from "./lib/metrics.js";
import { options as runOptions, testid } from "./lib/run.js";
import { summaryHandler } from "./lib/summary.js";

const conn = connection();
const table = identifier("TABLE", "sqlsecondaryindex");
const keyPrefix = str("KEY_PREFIX", undefined, { pattern: /^[A-Za-z0-9_.-]{1,64}$/, hint: "1-64 letters, digits, . _ -" });
const writePercent = number("WRITE_PERCENT", 50, { min: 0, max: 100, above: 0 });

export const options = runOptions("sql-secondary-index", { ops: ["insert", "select"] });
export const handleSummary = summaryHandler("sql-secondary-index");
const s = options.scenarios["sql-secondary-index"];
const stride = s.maxVUs || s.vus;

const db = open(conn, nodeFor(conn, __VU));
const insert = `INSERT INTO ${table} (k, v) VALUES ($1, $2)`;
const select = `SELECT k, v FROM ${table} WHERE v = $1`;
const sql = runners(db, conn, nodeFor(conn, __VU));
const insertArgs = [insert, "", ""], selectArgs = [select, ""];
let written = 0; // this VU's rows: its nth row has index base + stride * n

export function setup() {
  checkReachable(conn);
  ensure(db, `CREATE TABLE IF NOT EXISTS ${table} (k text PRIMARY KEY, v text)`);
  ensure(db, `CREATE INDEX IF NOT EXISTS ${table}_index ON ${table} (v)`);
  const prefix = keyPrefix || testid();
  // For summary.json and `ybbench verify`: the index must agree with the
  // table, and key <prefix>:<n> holds val:<n>.
  return { prefix, written: { scheme: "sql-secondary-index", table, index: `${table}_index`, prefix, ...where(conn) } };
}

let base; // exec.vu builds a new object on each access: take the id once

export default function (data) {
  if (base === undefined) base = exec.vu.idInTest - 1;
  if (written === 0 || Math.random() * 100 < writePercent) {
    const n = base + stride * written;
    tagIteration("insert");
    insertArgs[1] = key(data.prefix, n);
    insertArgs[2] = `val:${n}`;
    // Reads pick among rows known written: a failed insert's index is retried.
    if (attempt("insert", sql.exec, insertArgs) !== undefined) written++;
  } else {
    const n = base + stride * Math.floor(Math.random() * written);
    tagIteration("select");
    selectArgs[1] = `val:${n}`;
    const rows = attempt("select", sql.query, selectArgs);
    if (rows !== undefined && (rows.length !== 1 || rows[0].k !== key(data.prefix, n))) keysMissing.add(1, { op: "select" });
  }
}

export function teardown() {
  db.close();
}
