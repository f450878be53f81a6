// The analytic query of seed 003: the number of sentences over one field of
// the whole table, as RethinkDB's table.map(r.row("field0").split(".").count()).sum(),
// in one SQL statement. RUNS times (5), one at a time; the summary's mean
// latency of op=scan is the report's "average over five runs".
//
//   RUNS    how many times to run the query (5)
//   FIELD   the field to split (field0)
//   TABLE, and the common knobs (docs/workloads.md); VUS defaults to 1
import { identifier, int, connection } from "./lib/config.js";
import { open, runners, nodeFor, checkReachable, errorMessage } from "./lib/db.js";
import { attempt, tagIteration } from "./lib/metrics.js";
import { Gauge } from "k6/metrics";
import { options as runOptions } from "./lib/run.js";
import { summaryHandler } from "./lib/summary.js";

const conn = connection();
const table = identifier("TABLE", "usertable");
const field = identifier("FIELD", "field0");
const runs = int("RUNS", 5, { min: 1 });

export const options = runOptions("ycsb-analytic", { ops: ["scan"], bound: runs, vus: 1 });
export const handleSummary = summaryHandler("ycsb-analytic");

// The query's answer: min and max in the summary show that every run agreed.
const sentences = new Gauge("ybbench_analytic_sentences");

const db = open(conn, nodeFor(conn, __VU));
// split(".") keeps empty pieces, as string_to_array does; the cast makes
// both drivers return a number.
const query = `SELECT coalesce(sum(array_length(string_to_array(${field}, '.'), 1)), 0)::float8 AS sentences FROM ${table}`;
const sql = runners(db, conn, nodeFor(conn, __VU));
const args = [query];

export function setup() {
  checkReachable(conn);
  try {
    db.query(`SELECT ${field} FROM ${table} LIMIT 1`);
  } catch (e) {
    throw new Error(`cannot read ${field} of ${table}: ${errorMessage(e)}`);
  }
}

export default function () {
  tagIteration("scan");
  const rows = attempt("scan", sql.query, args);
  if (rows !== undefined) sentences.add(rows[0].sentences);
}

export function teardown() {
  db.close();
}
