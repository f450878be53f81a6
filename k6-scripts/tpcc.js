// TPC-C's five transactions (TPC-C v5.11, clauses 2.4-2.8) on the tables a
// tpcc-load run filled, in one of two modes (TPCC_MODE):
//   throughput  no keying or think time: each VU one terminal that runs the
//               next transaction as soon as the last one ends (capacity;
//               tpmC is not bound by 12.86 x WAREHOUSES, so no efficiency)
//   spec        the specification's terminals: 10 a warehouse, each keying
//               and thinking (clause 5.2.5) between its transactions, many
//               to a VU (lib/tpcc_terminals.js); tpmC is at most 12.86 x
//               WAREHOUSES, and efficiency = tpmC / (12.86 x WAREHOUSES)
//
//   WAREHOUSES  the warehouses tpcc-load loaded (required; --keys-from gives it)
//   C_LOAD      the C of C_LAST's NURand at load (required; the load's
//               summary.json written.c_load; --keys-from gives it)
//   TPCC_MODE   throughput (default) or spec
//   TPCC_STYLE  procedures (default): each transaction one call of its
//               PL/pgSQL function (lib/tpcc_procs.js), as HammerDB runs it;
//               statements: BEGIN, the specification's statements one round
//               trip each, COMMIT (lib/tpcc_statements.js), as yugabyte/tpcc
//               runs it; needs DB_DRIVER=pgconn (one connection a VU that
//               never re-sends a statement on a new one)
//   VUS         spec mode: the connections the terminals share (default
//               WAREHOUSES / 5, rounded up: 50 terminals a VU)
//   TABLE_PREFIX  the load's (""), and the common knobs (docs/workloads.md)
//
// Throughput mode: VU v's (v of the whole test) home warehouse is ((v - 1)
// mod WAREHOUSES) + 1 (clause 2.4.1.1: a terminal's fixed W_ID), its
// Stock-Level district the next of 1..10 for each VU of that warehouse;
// the transactions are dealt from a deck of 23 (lib/tpcc_terminals.js).
// Each iteration is one transaction (spec mode: or an idle wait for the
// next terminal due, op=idle), tagged op=new_order,
// payment, order_status, delivery or stock_level, so k6's iteration count
// and latency are each transaction's (with its retries). A transaction is
// one statement, a call of its PL/pgSQL function (lib/tpcc_procs.js), or
// with TPCC_STYLE=statements its statements between BEGIN and COMMIT;
// either retried whole on 40001 and 40P01 (counted in ybbench_retries{op}).
// New-Orders rolled back by their unused item (1%) are counted in
// ybbench_rollbacks{op="new_order"}, not as errors.
//
// tpmC in summary.json: New-Orders committed per minute of the run. With
// a warm-up (`ybbench run --warmup`, YBBENCH_WARMUP_S: yugabyte/tpcc's
// --warmup-time-secs), tpcc.measured also gives tpmC and efficiency over
// the run after it: New-Orders that committed from the scenario's start +
// the warm-up on, over the seconds from then to the run's end.
import exec from "k6/execution";
import { sleep } from "k6";
import { ConfigError, connection, int, oneOf, required } from "./lib/config.js";
import { open, nodeFor, checkReachable, dsn, ensure, where, errorMessage, pgconnModule, sqlstate } from "./lib/db.js";
import { attempt, idle, lastRetries, maxRetries, tagIteration, EXPECTED } from "./lib/metrics.js";
import { options as runOptions, testid } from "./lib/run.js";
import { runHash } from "./lib/keys.js";
import { summaryHandler } from "./lib/summary.js";
import { Counter, Gauge } from "k6/metrics";
import { CUSTOMERS, DISTRICTS, INDEXES, ITEMS, T, lastName, nurand, randInt, tablePrefix } from "./lib/tpcc.js";
import { CALLS, PROCS, ROLLBACK } from "./lib/tpcc_procs.js";
import { statementsExec } from "./lib/tpcc_statements.js";
import { MAX_TPMC_PER_WAREHOUSE, SPEC_DECK, TERMINALS_PER_WAREHOUSE, THROUGHPUT_DECK, advance, deck, nextDue,
  terminalsOf } from "./lib/tpcc_terminals.js";

const conn = connection();
const warehouses = required("WAREHOUSES", int("WAREHOUSES", undefined, { min: 1, max: 100000 }));
const cLoad = required("C_LOAD", int("C_LOAD", undefined, { min: 0, max: 255 }));

export const TRANSACTIONS = ["new_order", "payment", "order_status", "delivery", "stock_level"];
const spec = oneOf("TPCC_MODE", "throughput", ["throughput", "spec"]) === "spec";
const style = oneOf("TPCC_STYLE", "procedures", ["procedures", "statements"]);
if (style === "statements" && conn.driver !== "pgconn") {
  throw new ConfigError(`TPCC_STYLE=statements needs DB_DRIVER=pgconn (DB_DRIVER=${conn.driver} is set): a ` +
    "transaction of several statements must stay on one connection, and xk6-sql's pool (lib/pq, pgx) runs a " +
    "statement again on a new connection when its own broke, outside the transaction (half of one would commit); " +
    "use DB_DRIVER=pgconn, a k6 with our module (native/build.sh), or TPCC_STYLE=procedures");
}
const terminals = TERMINALS_PER_WAREHOUSE * warehouses;
export const options = runOptions("tpcc", { ops: TRANSACTIONS, vus: spec ? Math.ceil(warehouses / 5) : 16 });
const vus = options.scenarios.tpcc.vus;
if (spec && vus === undefined) {
  throw new ConfigError("TPCC_MODE=spec runs its terminals on a fixed set of VUs: use LOAD_MODEL=closed");
}
if (spec && vus > terminals) {
  throw new ConfigError(`VUS=${vus} is more than the ${terminals} terminals of WAREHOUSES=${warehouses} ` +
    `(10 a warehouse): a VU would have none; give at most ${terminals}`);
}
for (const op of TRANSACTIONS) options.thresholds[`ybbench_rollbacks{op:${op}}`] = ["count>=0"];
// The statements style's retry histogram: one sample a transaction, tagged
// with its retries (0 to 10 apart, more than 10 in one bucket "11+"), so the
// buckets are k6's counts of the transactions (thresholds make them
// submetrics, in the summary; a bounded set of Prometheus labels).
const RETRY_BUCKETS = Math.min(maxRetries, 10);
const OVER = `${RETRY_BUCKETS + 1}+`;
const buckets = [...Array(RETRY_BUCKETS + 1).keys()].map(String).concat(maxRetries > RETRY_BUCKETS ? [OVER] : []);
if (style === "statements") {
  for (const op of TRANSACTIONS) {
    options.thresholds[`ybbench_tpcc_attempt{op:${op}}`] = ["max>=0"];
    options.thresholds[`ybbench_tpcc_failed_attempt_ms{op:${op}}`] = ["count>=0"];
    options.thresholds[`ybbench_tpcc_failed_attempt{op:${op}}`] = ["max>=0"];
    for (const b of buckets) options.thresholds[`ybbench_tpcc_retried{op:${op},retries:${b}}`] = ["count>=0"];
  }
}
options.thresholds.ybbench_terminal_wait = ["count>=0"];
const rollbacks = new Counter("ybbench_rollbacks");
const retried = new Counter("ybbench_tpcc_retried");
// Spec mode: how long past its due time each transaction started (s,
// summed): the VU was running another of its terminals' transactions.
const terminalWait = new Counter("ybbench_terminal_wait");
// The warm-up: New-Orders committed after it, and when it ended (ms since
// the epoch, the same in every VU: the scenario's start + the warm-up).
const warmupS = Number(__ENV.YBBENCH_WARMUP_S || 0);
if (!(warmupS >= 0)) throw new ConfigError(`YBBENCH_WARMUP_S=${__ENV.YBBENCH_WARMUP_S}: a number of seconds`);
const measuredNewOrders = new Counter("ybbench_tpcc_measured_new_orders");
const warmupEnd = new Gauge("ybbench_tpcc_warmup_end_ms");
let cutMs;

export const handleSummary = summaryHandler("tpcc", { extra: tpccSummary });

const db = open(conn, nodeFor(conn, __VU));
// The statements style: the VU's own connection (our module's session),
// and its monotonic clock where the module has one (whole ms otherwise).
const session = style === "statements" ? pgconnModule.pgconnSession(dsn(conn, nodeFor(conn, __VU))) : null;
const clock = pgconnModule && typeof pgconnModule.clockMs === "function" ? pgconnModule.clockMs : Date.now;
const execStatement = session ? statementsExec(session, clock) : db.exec;

// C for the run's NURand (clause 2.1.6.1): C_LAST's differs from the load's
// by 65..119 but not 96 or 112; C_ID's and OL_I_ID's are free. Drawn from
// a hash of the testid, so that every generator of a split run (which
// share it) draws the same ids.
function runC() {
  const h = runHash(testid());
  for (let k = 0; ; k++) {
    const last = (h + k) % 256;
    const delta = Math.abs(last - cLoad);
    if (delta >= 65 && delta <= 119 && delta !== 96 && delta !== 112) {
      return { last, id: Math.floor(h / 256) % 1024, item: Math.floor(h / 262144) % 8192 };
    }
  }
}

// CREATE OR REPLACE FUNCTION from two sessions at once (the generators of a
// split run start together) fails one of them with XX000 "tuple concurrently
// updated": the other made the same function, so trying again succeeds.
function replace(ddl) {
  for (let tries = 1; ; tries++) {
    try {
      return ensure(db, ddl);
    } catch (e) {
      if (sqlstate(e) !== "XX000" || tries === 5) throw e;
      sleep(0.1 * tries);
    }
  }
}

export function setup() {
  checkReachable(conn);
  let got;
  try {
    got = db.query(`SELECT count(*)::float8 AS n, coalesce(max(w_id), 0)::float8 AS top FROM ${T.warehouse}`)[0];
  } catch (e) {
    throw new Error(`cannot read ${T.warehouse}: ${errorMessage(e)}; load the tables with tpcc-load ` +
      "(and the same TABLE_PREFIX) first");
  }
  if (Number(got.n) !== warehouses || Number(got.top) !== warehouses) {
    throw new ConfigError(`WAREHOUSES=${warehouses}, but ${T.warehouse} holds ${got.n} warehouse(s) up to W_ID ` +
      `${got.top}: give the load's WAREHOUSES (ybbench run --keys-from <the tpcc-load run>)`);
  }
  for (const ddl of [...INDEXES, ...(style === "procedures" ? PROCS : [])]) replace(ddl);
  // Where each district's orders stood: the run's New-Orders are those from
  // here on (ybbench verify), W_ID-major.
  const next = db.query(`SELECT d_w_id, d_id, d_next_o_id FROM ${T.district} ORDER BY d_w_id, d_id`);
  const c = runC();
  console.log(`tpcc: ${warehouses} warehouse(s) in ${T.warehouse}, ... on ${conn.nodes.length} node(s), ${style}; ` +
    `C_LAST's C ${c.last} (the load's ${cLoad})`);
  return { c, written: { scheme: "tpcc", phase: "run", table_prefix: tablePrefix, tables: T, warehouses, c_load: cLoad,
    c, next_o_id_at_start: next.map((r) => Number(r.d_next_o_id)), ...where(conn) } };
}

// --- the terminal's inputs (clauses 2.4.1, 2.5.1, 2.6.1, 2.7.1, 2.8.1) -----------

// Set at the VU's first transaction from its number in the whole test
// (exec.vu.idInTest: a split run's generators number their VUs apart;
// __VU restarts at 1 in each, which would put every generator's first VU
// on warehouse 1).
let home, slDistrict;
function terminal() {
  const v = exec.vu.idInTest;
  home = ((v - 1) % warehouses) + 1;
  slDistrict = (Math.floor((v - 1) / warehouses) % DISTRICTS) + 1;
}

// Another warehouse than the home one, uniformly; the home one when it is the only one.
function remote() {
  if (warehouses === 1) return home;
  const w = randInt(1, warehouses - 1);
  return w >= home ? w + 1 : w;
}

// The statements' argument arrays, kept and refilled (lib/metrics.js attempt).
const args = Object.fromEntries(TRANSACTIONS.map((t) => [t, [CALLS[t]]]));

function newOrder(c) {
  const n = randInt(5, 15);
  const rollback = randInt(1, 100) === 1;
  const lines = [];
  for (let i = 0; i < n; i++) {
    // The last item of 1% of orders is unused (ITEMS + 1): the order rolls back.
    const item = rollback && i === n - 1 ? ITEMS + 1 : nurand(8191, 1, ITEMS, c.item);
    lines.push([randInt(1, 100) === 1 ? remote() : home, item, randInt(1, 10)]);
  }
  // Stock rows in one order in every transaction: two New-Orders then wait
  // for each other instead of deadlocking (the unused item sorts last).
  lines.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  const a = args.new_order;
  a[1] = home;
  a[2] = randInt(1, DISTRICTS);
  a[3] = nurand(1023, 1, CUSTOMERS, c.id);
  a[4] = `{${lines.map((l) => l[1]).join(",")}}`;
  a[5] = `{${lines.map((l) => l[0]).join(",")}}`;
  a[6] = `{${lines.map((l) => l[2]).join(",")}}`;
  return a;
}

// A customer as clauses 2.5.1.2 and 2.6.1.2 pick one: 60% by last name
// (C_ID 0 to the function), 40% by NURand id.
function customer(a, at, c) {
  if (randInt(1, 100) <= 60) {
    a[at] = 0;
    a[at + 1] = lastName(nurand(255, 0, 999, c.last));
  } else {
    a[at] = nurand(1023, 1, CUSTOMERS, c.id);
    a[at + 1] = "";
  }
}

function payment(c) {
  const a = args.payment;
  const d = randInt(1, DISTRICTS);
  a[1] = home;
  a[2] = d;
  // 85% the home warehouse's customers, 15% a remote one's (clause 2.5.1.2).
  const local = warehouses === 1 || randInt(1, 100) <= 85;
  a[3] = local ? home : remote();
  a[4] = local ? d : randInt(1, DISTRICTS);
  customer(a, 5, c);
  a[7] = (randInt(100, 500000) / 100).toFixed(2);
  return a;
}

function orderStatus(c) {
  const a = args.order_status;
  a[1] = home;
  a[2] = randInt(1, DISTRICTS);
  customer(a, 3, c);
  return a;
}

function delivery() {
  const a = args.delivery;
  a[1] = home;
  a[2] = randInt(1, 10);
  return a;
}

function stockLevel() {
  const a = args.stock_level;
  a[1] = home;
  a[2] = slDistrict;
  a[3] = randInt(10, 20);
  return a;
}

const INPUTS = { new_order: newOrder, payment, order_status: orderStatus, delivery, stock_level: stockLevel };

const pick = deck(spec ? SPEC_DECK : THROUGHPUT_DECK);

function run(op, c) {
  tagIteration(op);
  if (warmupS > 0 && op === "new_order") runNewOrderMeasured(c);
  else if (attempt(op, execStatement, INPUTS[op](c), op === "new_order" ? ROLLBACK : undefined) === EXPECTED) {
    rollbacks.add(1, { op });
  }
  if (session) {
    const k = lastRetries();
    retried.add(1, { op, retries: k <= RETRY_BUCKETS ? String(k) : OVER });
  }
}

// With a warm-up: a New-Order that commits after it counts in tpcc.measured.
function execDone() {
  execStatement.apply(undefined, arguments);
  return true;
}
function runNewOrderMeasured(c) {
  if (cutMs === undefined) {
    cutMs = exec.scenario.startTime + warmupS * 1000;
    warmupEnd.add(cutMs);
  }
  const r = attempt("new_order", execDone, INPUTS.new_order(c), ROLLBACK);
  if (r === EXPECTED) rollbacks.add(1, { op: "new_order" });
  else if (r === true && Date.now() >= cutMs) measuredNewOrders.add(1);
}

// Spec mode: this VU's terminals, from its first iteration on.
let terms;
function specIteration(c) {
  const now = Date.now();
  if (!terms) terms = terminalsOf(exec.vu.idInTest, vus, warehouses, pick, now);
  const t = nextDue(terms);
  if (t.due > now) {
    // Waited out in iterations of their own, at most 1 s each (the run's
    // end is never long after DURATION), so that a transaction's iteration
    // times the transaction alone.
    idle();
    sleep(Math.min(t.due - now, 1000) / 1000);
    return;
  }
  home = t.w;
  slDistrict = t.d;
  terminalWait.add((now - t.due) / 1000);
  run(t.op, c);
  advance(t, pick, Date.now());
}

export default function (data) {
  if (spec) return specIteration(data.c);
  if (home === undefined) terminal();
  run(pick(), data.c);
}

export function teardown() {
  db.close();
  if (session) session.close();
}

// summary.json's tpcc: tpmC from the New-Orders that committed (neither
// rolled back nor failed), and each transaction's rollbacks; spec mode's
// efficiency and how late its terminals' transactions started.
function tpccSummary(data, d) {
  const count = (name) => ((data.metrics[name] || {}).values || {}).count || 0;
  const no = d.ops.new_order || { count: 0, errors: 0 };
  const rolled = count("ybbench_rollbacks{op:new_order}");
  const committed = no.count - no.errors - rolled;
  const tpmc = d.duration_s > 0 ? committed / (d.duration_s / 60) : null;
  const efficiency = efficiencyOf(tpmc);
  const transactions = TRANSACTIONS.reduce((n, t) => n + ((d.ops[t] || {}).count || 0), 0);
  const waitMs = spec && transactions ? (count("ybbench_terminal_wait") * 1000) / transactions : null;
  const pct = (x) => `${(100 * x).toFixed(2)}%`;
  const measured = warmupS > 0 ? measuredSummary(data, count, d) : undefined;
  return {
    fields: { tpcc: { mode: spec ? "spec" : "throughput", style, tpmc, efficiency, warehouses,
      ...(spec ? { terminals, terminal_wait_ms: waitMs } : {}),
      ...(measured ? { measured: measured.fields } : {}),
      new_orders: { committed, rolled_back: rolled, failed: no.errors },
      rollbacks: Object.fromEntries(TRANSACTIONS.map((t) => [t, count(`ybbench_rollbacks{op:${t}}`)])),
      ...(style === "statements" ? { attempts: attempts(data, d) } : {}) } },
    text: `  tpmC ${tpmc === null ? "-" : tpmc.toFixed(1)} ` +
      (spec ? `efficiency ${efficiency === null ? "-" : pct(efficiency)} (spec mode: ${terminals} terminals on ${vus} VU${vus === 1 ? "" : "s"}, ` +
        `a transaction started ${waitMs === null ? "-" : waitMs.toFixed(1)} ms after its terminal's due time on average)  `
        : "(throughput mode: no think time, no efficiency)  ") +
      `New-Orders committed ${committed}, rolled back ${rolled}, failed ${no.errors}\n` +
      (style === "statements" ? attemptsText(attempts(data, d)) : "  (procedures: one call a transaction)\n") +
      (measured ? measured.text : ""),
  };
}

// Spec mode's efficiency: tpmC over the most the warehouses' terminals make.
function efficiencyOf(tpmc) {
  return spec && tpmc !== null ? tpmc / (MAX_TPMC_PER_WAREHOUSE * warehouses) : null;
}

// After the warm-up: from its end (the gauge) to the run's end (now, as
// handleSummary runs when the test is over).
function measuredSummary(data, count, d) {
  const end = ((data.metrics.ybbench_tpcc_warmup_end_ms || {}).values || {}).value;
  const committed = count("ybbench_tpcc_measured_new_orders");
  const seconds = end ? Math.max(0, (Date.now() - end) / 1000) : Math.max(0, d.duration_s - warmupS);
  const tpmc = seconds > 0 ? committed / (seconds / 60) : null;
  const efficiency = efficiencyOf(tpmc);
  const fields = { warmup_s: warmupS, seconds, new_orders_committed: committed, tpmc, efficiency };
  const text = `  after the ${warmupS} s warm-up (left out): tpmC ${tpmc === null ? "-" : tpmc.toFixed(1)}` +
    (spec ? ` efficiency ${efficiency === null ? "-" : `${(100 * efficiency).toFixed(2)}%`}` : "") +
    ` over ${seconds.toFixed(1)} s, New-Orders committed ${committed}\n`;
  return { fields, text };
}

// The statements style, per transaction: the latency of its final attempt
// alone (yugabyte/tpcc's "operation"; ops.<op>.latency_ms is the whole
// transaction with its retries, its "operation with retries"), its retries,
// and the time its failed attempts took.
function attempts(data, d) {
  const ms = (v) => (v.max !== undefined ? { avg: v.avg, p50: v.med, p90: v["p(90)"], p95: v["p(95)"], p99: v["p(99)"], max: v.max } : null);
  const values = (name) => ((data.metrics[name] || {}).values) || {};
  return Object.fromEntries(TRANSACTIONS.map((t) => {
    const summed = values(`ybbench_tpcc_failed_attempt_ms{op:${t}}`).count || 0;
    const failed = values(`ybbench_tpcc_failed_attempt{op:${t}}`);
    // k6's Trend summary has no count: the summed ms over their mean.
    const n = summed > 0 && failed.avg > 0 ? Math.round(summed / failed.avg) : 0;
    return [t, { latency_ms: ms(values(`ybbench_tpcc_attempt{op:${t}}`)), retries: (d.ops[t] || {}).retries || 0,
      failed_attempts_ms: summed, failed_attempts: { count: n, latency_ms: n ? ms(failed) : null },
      retry_histogram: Object.fromEntries(buckets.map((b) => [b, values(`ybbench_tpcc_retried{op:${t},retries:${b}}`).count || 0])) }];
  }));
}

function attemptsText(a) {
  const f = (x) => (x === null || x === undefined ? "-" : x.toFixed(3));
  const lat = (l) => `avg ${f((l || {}).avg)} ms  p50 ${f((l || {}).p50)} ms  p99 ${f((l || {}).p99)} ms`;
  const hist = (h) => Object.entries(h).filter(([k, n]) => n > 0 && k !== "0").map(([k, n]) => `${k}:${n}`).join(" ");
  return "  statements, each transaction's final attempt alone (its retries apart; the table above: with them):\n" +
    TRANSACTIONS.map((t) => `    ${t.padEnd(13)} ${lat(a[t].latency_ms)}  retries ${a[t].retries}` +
      (a[t].failed_attempts.count ? `, their attempts ${a[t].failed_attempts_ms.toFixed(1)} ms (each ${lat(a[t].failed_attempts.latency_ms)}),` +
        ` transactions by retries ${hist(a[t].retry_histogram)}` : "") + "\n").join("");
}
