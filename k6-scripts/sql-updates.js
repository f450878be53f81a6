// yb-sample-apps SqlUpdates: point reads and updates of the keys a
// sql-inserts run wrote, `<KEY_PREFIX>:0` .. `<KEY_PREFIX>:<MAX_WRITTEN_KEY - 1>`,
// uniformly. An update sets v to `val:<n>:<ms since epoch>`; a read checks
// that v still starts with `val:<n>`.
//
//   KEY_PREFIX       the prefix the insert run used (required)
//   MAX_WRITTEN_KEY  how many keys that run wrote (required)
//   WRITE_PERCENT    share of updates, percent (50: one reader, one writer)
//   TABLE            (postgresqlkeyvalue), and the common knobs (docs/workloads.md)
import { identifier, int, number, str, required, connection } from "./lib/config.js";
import { open, runners, nodeFor, checkReachable, requireKey } from "./lib/db.js";
import { key, uniformIndex } from "./lib/keys.js";
import { attempt, tagIteration, keysMissing } from "./lib/metrics.js";
import { options as runOptions } from "./lib/run.js";
import { summaryHandler } from "./lib/summary.js";

const conn = connection();
const table = identifier("TABLE", "postgresqlkeyvalue");
const keyPrefix = required("KEY_PREFIX", str("KEY_PREFIX", undefined, { pattern: /^[A-Za-z0-9_.-]{1,64}$/, hint: "1-64 letters, digits, . _ -" }));
const maxWrittenKey = required("MAX_WRITTEN_KEY", int("MAX_WRITTEN_KEY", undefined, { min: 1 }));
const writePercent = number("WRITE_PERCENT", 50, { min: 0, max: 100 });

export const options = runOptions("sql-updates", { ops: ["select", "update"] });
export const handleSummary = summaryHandler("sql-updates");

const db = open(conn, nodeFor(conn, __VU));
const select = `SELECT k, v FROM ${table} WHERE k = $1`;
const update = `UPDATE ${table} SET v = $1 WHERE k = $2`;
const sql = runners(db, conn, nodeFor(conn, __VU));
const updateArgs = [update, "", ""], selectArgs = [select, ""];

export function setup() {
  checkReachable(conn);
  requireKey(db, table, select, key(keyPrefix, maxWrittenKey - 1));
}

export default function () {
  const n = uniformIndex(maxWrittenKey);
  const k = key(keyPrefix, n);
  if (Math.random() * 100 < writePercent) {
    tagIteration("update");
    updateArgs[1] = `val:${n}:${Date.now()}`;
    updateArgs[2] = k;
    const r = attempt("update", sql.exec, updateArgs);
    if (r !== undefined && r.rowsAffected() !== 1) keysMissing.add(1, { op: "update" });
  } else {
    tagIteration("select");
    selectArgs[1] = k;
    const rows = attempt("select", sql.query, selectArgs);
    if (rows !== undefined && (rows.length !== 1 || !rows[0].v.startsWith(`val:${n}`))) keysMissing.add(1, { op: "select" });
  }
}

export function teardown() {
  db.close();
}
