// yb-sample-apps SqlUpdates: point reads and updates of the keys a
// sql-inserts run wrote, `<KEY_PREFIX>:0` .. `<KEY_PREFIX>:<MAX_WRITTEN_KEY - 1>`,
// uniformly. An update sets v to `val:<n>:<tag>.<i>`, stamped with the run
// (tag, from its testid) and the iteration i that wrote it; a read checks
// that v still starts with `val:<n>`.
//
// So that `ybbench verify` can tell what the run wrote without a log of every
// statement, iteration i's key and op are a function of i (lib/keys.js
// updateSchedule): round r = floor(i / MAX_WRITTEN_KEY) visits every key once,
// in a scrambled order, and i is an update when frac(i x 0.618...) is below
// WRITE_PERCENT / 100 (evenly spread over the iterations and the keys). A
// failed update logs `ybbench-unacked first=<i> rows=1` (failures only).
//
//   KEY_PREFIX       the prefix the insert run used (required)
//   MAX_WRITTEN_KEY  how many keys that run wrote (required)
//   WRITE_PERCENT    share of updates, percent (50: one reader, one writer)
//   TABLE            (postgresqlkeyvalue), and the common knobs (docs/workloads.md)
import { identifier, int, number, str, required, connection } from "./lib/config.js";
import { open, runners, nodeFor, checkReachable, requireKey, where } from "./lib/db.js";
import { key, updateSchedule, sqlUpdatesStep, runTag } from "./lib/keys.js";
import { attempt, tagIteration, keysMissing, unacknowledged } from "./lib/metrics.js";
import { options as runOptions, testid, iterationInTest } from "./lib/run.js";
import { summaryHandler } from "./lib/summary.js";
import { innerLoop, opsPerIteration } from "./lib/loop.js";

const conn = connection();
const table = identifier("TABLE", "postgresqlkeyvalue");
const keyPrefix = required("KEY_PREFIX", str("KEY_PREFIX", undefined, { pattern: /^[A-Za-z0-9_.-]{1,64}$/, hint: "1-64 letters, digits, . _ -" }));
const maxWrittenKey = required("MAX_WRITTEN_KEY", int("MAX_WRITTEN_KEY", undefined, { min: 1, max: 2 ** 34 }));
const writePercent = number("WRITE_PERCENT", 50, { min: 0, max: 100 });

export const options = runOptions("sql-updates", { ops: ["select", "update"] });
export const handleSummary = summaryHandler("sql-updates");

const db = open(conn, nodeFor(conn, __VU));
const select = `SELECT k, v FROM ${table} WHERE k = $1`;
const update = `UPDATE ${table} SET v = $1 WHERE k = $2`;
const sql = runners(db, conn, nodeFor(conn, __VU));
const updateArgs = [update, "", ""], selectArgs = [select, ""];
const schedule = updateSchedule(maxWrittenKey, writePercent);
// OPS_PER_ITERATION > 1: iteration n runs steps n x N .. n x N + N - 1 in Go.
const loop = innerLoop("sql-updates", conn, nodeFor(conn, __VU), { table, prefix: keyPrefix, keys: maxWrittenKey, writePercent });

export function setup() {
  checkReachable(conn);
  requireKey(db, table, select, key(keyPrefix, maxWrittenKey - 1));
  // What was written, for summary.json and `ybbench verify`: iteration i
  // touches key schedule.key(i), an update when schedule.isUpdate(i), which
  // sets v to `val:<n>:<tag>.<i>`. Every generator of a split run has the
  // same testid, so the same tag.
  const tag = runTag(testid());
  return { tag, written: { scheme: "sql-updates", table, prefix: keyPrefix, keys: maxWrittenKey, write_percent: writePercent,
    multiplier: schedule.multiplier, shift: schedule.shift, tag, ...(loop ? { ops_per_iteration: opsPerIteration } : {}),
    ...where(conn) } };
}

let step;
export default function (data) {
  if (loop) return loop(data.tag);
  if (!step) step = sqlUpdatesStep(keyPrefix, maxWrittenKey, writePercent, data.tag);
  const i = iterationInTest();
  const expect = step(i, selectArgs, updateArgs); // "": an update
  if (expect === "") {
    tagIteration("update");
    const r = attempt("update", sql.exec, updateArgs);
    if (r === undefined) unacknowledged(i, 1);
    else if (r.rowsAffected() !== 1) keysMissing.add(1, { op: "update" });
  } else {
    tagIteration("select");
    const rows = attempt("select", sql.query, selectArgs);
    if (rows !== undefined && (rows.length !== 1 || !rows[0].v.startsWith(expect))) keysMissing.add(1, { op: "select" });
  }
}

export function teardown() {
  db.close();
}
