// TPC-C's initial database (TPC-C v5.11, clause 1.3 tables and keys, clause
// 4.3.3.1 population): the nine tables, ITEM once and WAREHOUSES warehouses,
// each with 10 districts, 3,000 customers and a history row each, 100,000
// stock rows, 3,000 orders a district (5-15 order lines each, the last 900
// in new_order), and the secondary indexes tpcc.js's transactions read by.
//
//   WAREHOUSES     warehouses to load (1)
//   TABLE_PREFIX   put before every table's name ("": warehouse, district,
//                  customer, history, new_order, orders, order_line, item, stock)
//   VUS            k6 VUs (WAREHOUSES + 1, at most 16): VU v loads warehouses
//                  v, v + VUS, ...; the last VU loads ITEM before its share
//   DURATION       an upper bound (24h): the load ends when its rows are in
//   and the common knobs (docs/workloads.md)
//
// One iteration is one multi-row INSERT of a few hundred rows, tagged with
// what it loads (op=item, warehouse, stock, customer, order); a warehouse and
// its districts, a customer batch and its history rows, an order batch with
// its order lines and new_order rows are each one statement (data-modifying
// WITH), so a failed statement never leaves one half of a consistency
// condition (clause 3.3.2) in the tables. Values are SQL literals: each
// statement's text differs, so it goes over lib/pq's simple protocol, which
// prepares nothing (pgx and our pgconn path would prepare and cache every
// text); whatever DB_DRIVER says, the load is on lib/pq.
// The tables must be absent or empty: setup refuses tables holding rows.
import exec from "k6/execution";
import { randomBytes } from "k6/crypto";
import { b64encode } from "k6/encoding";
import { Counter } from "k6/metrics";
import { ConfigError, connection, duration, int } from "./lib/config.js";
import { open, nodeFor, checkReachable, ensure, where, errorMessage } from "./lib/db.js";
import { attempt, tagIteration, pastBound } from "./lib/metrics.js";
import { loadModel, options as runOptions } from "./lib/run.js";
import { summaryHandler } from "./lib/summary.js";
import { CUSTOMERS, DISTRICTS, INDEXES, ITEMS, NAMES, ORDERS, T, lastName, nurand, randInt, shuffle, tablePrefix } from "./lib/tpcc.js";

const conn = connection();
const warehouses = int("WAREHOUSES", 1, { min: 1, max: 100000 });
const defaultVus = Math.min(warehouses + 1, 16);
const model = loadModel(defaultVus);
if (model.model !== "closed") {
  throw new ConfigError(`LOAD_MODEL=${model.model}: tpcc-load loads a fixed set of rows with VUS VUs; unset LOAD_MODEL`);
}
const vus = model.vus;
const maxDuration = duration("DURATION", "24h");

// Spec cardinalities (clause 4.3.3.1) and our batch sizes (rows a statement).
const NEW_ORDER_FROM = 2101;
const ITEM_BATCH = 1000, STOCK_BATCH = 1000, CUSTOMER_BATCH = 300, ORDER_BATCH = 100;
const UNITS_PER_WAREHOUSE = 1 + ITEMS / STOCK_BATCH + DISTRICTS * (CUSTOMERS / CUSTOMER_BATCH + ORDERS / ORDER_BATCH);
const ITEM_UNITS = ITEMS / ITEM_BATCH;

// Warehouses of VU v (1-based): v, v + vus, ...; ITEM goes to the last VU,
// which has no more warehouses than any other.
function warehousesOf(v) {
  return v > warehouses ? 0 : Math.floor((warehouses - v) / vus) + 1;
}
function unitsOf(v) {
  return (v === vus ? ITEM_UNITS : 0) + warehousesOf(v) * UNITS_PER_WAREHOUSE;
}
let iterations = 0;
for (let v = 1; v <= vus; v++) iterations = Math.max(iterations, unitsOf(v));

export const options = runOptions("tpcc-load", {
  ops: ["item", "warehouse", "stock", "customer", "order"],
  vus: defaultVus,
  // VU v runs its own list of statements, in order: iteration i is the i-th.
  extra: { scenarios: { "tpcc-load": { executor: "per-vu-iterations", vus, iterations, maxDuration, gracefulStop: "10s" } } },
});
export const handleSummary = summaryHandler("tpcc-load", { rowsMetric: "ybbench_rows_loaded" });
// Rows of the statements that did not fail: one sample a statement (a few
// hundred rows), nothing per row.
const rowsLoaded = new Counter("ybbench_rows_loaded");

// lib/pq, whatever DB_DRIVER says (see the top of this file).
const loadConn = Object.assign({}, conn, { driver: "postgres" });
const db = open(loadConn, nodeFor(conn, __VU));
const execStatement = db.exec;

const DDL = {
  warehouse: `w_id int NOT NULL, w_name varchar(10), w_street_1 varchar(20), w_street_2 varchar(20), w_city varchar(20),
    w_state char(2), w_zip char(9), w_tax numeric(4,4), w_ytd numeric(12,2), PRIMARY KEY (w_id)`,
  district: `d_id int NOT NULL, d_w_id int NOT NULL, d_name varchar(10), d_street_1 varchar(20), d_street_2 varchar(20),
    d_city varchar(20), d_state char(2), d_zip char(9), d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id int,
    PRIMARY KEY (d_w_id, d_id)`,
  customer: `c_id int NOT NULL, c_d_id int NOT NULL, c_w_id int NOT NULL, c_first varchar(16), c_middle char(2),
    c_last varchar(16), c_street_1 varchar(20), c_street_2 varchar(20), c_city varchar(20), c_state char(2),
    c_zip char(9), c_phone char(16), c_since timestamp, c_credit char(2), c_credit_lim numeric(12,2),
    c_discount numeric(4,4), c_balance numeric(12,2), c_ytd_payment numeric(12,2), c_payment_cnt int,
    c_delivery_cnt int, c_data varchar(500), PRIMARY KEY (c_w_id, c_d_id, c_id)`,
  // The spec gives HISTORY no primary key.
  history: `h_c_id int, h_c_d_id int, h_c_w_id int, h_d_id int, h_w_id int, h_date timestamp, h_amount numeric(6,2),
    h_data varchar(24)`,
  new_order: `no_o_id int NOT NULL, no_d_id int NOT NULL, no_w_id int NOT NULL, PRIMARY KEY (no_w_id, no_d_id, no_o_id)`,
  orders: `o_id int NOT NULL, o_d_id int NOT NULL, o_w_id int NOT NULL, o_c_id int, o_entry_d timestamp,
    o_carrier_id int, o_ol_cnt int, o_all_local int, PRIMARY KEY (o_w_id, o_d_id, o_id)`,
  order_line: `ol_o_id int NOT NULL, ol_d_id int NOT NULL, ol_w_id int NOT NULL, ol_number int NOT NULL, ol_i_id int,
    ol_supply_w_id int, ol_delivery_d timestamp, ol_quantity int, ol_amount numeric(6,2), ol_dist_info char(24),
    PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number)`,
  item: `i_id int NOT NULL, i_im_id int, i_name varchar(24), i_price numeric(5,2), i_data varchar(50), PRIMARY KEY (i_id)`,
  stock: `s_i_id int NOT NULL, s_w_id int NOT NULL, s_quantity int, ${[...Array(10).keys()].map((i) => `s_dist_${String(i + 1).padStart(2, "0")} char(24)`).join(", ")},
    s_ytd int, s_order_cnt int, s_remote_cnt int, s_data varchar(50), PRIMARY KEY (s_w_id, s_i_id)`,
};

export function setup() {
  checkReachable(conn);
  // Refused before anything is created: a second load into the same tables
  // would collide with the first one's keys half-way through.
  for (const t of NAMES) {
    let rows;
    try {
      rows = db.query(`SELECT count(*)::float8 AS n FROM pg_class WHERE oid = to_regclass('${T[t]}')`);
      if (Number(rows[0].n) > 0) rows = db.query(`SELECT 1 AS one FROM ${T[t]} LIMIT 1`);
      else rows = [];
    } catch (e) {
      throw new Error(`cannot read table ${T[t]}: ${errorMessage(e)}`);
    }
    if (rows.length > 0) {
      throw new Error(`table ${T[t]} already holds rows: tpcc-load loads into absent or empty tables; ` +
        "drop the TPC-C tables or set another TABLE_PREFIX");
    }
  }
  for (const t of NAMES) ensure(db, `CREATE TABLE IF NOT EXISTS ${T[t]} (${DDL[t]})`);
  for (const ddl of INDEXES) ensure(db, ddl);
  // C for C_LAST's NURand at load (clause 2.1.6): the transactions' C must
  // differ from it by 65..119, not 96 or 112 (clause 2.1.6.1), so it is kept.
  const cLoad = randInt(0, 255);
  // "the current date and time" (clause 4.3.3.1), one for the whole load:
  // O_ENTRY_D and OL_DELIVERY_D of an order are then equal, as the spec has them.
  const loadTime = new Date().toISOString().replace("T", " ").replace(/\..*/, "");
  console.log(`tpcc-load: ${warehouses} warehouse(s) into ${T.warehouse}, ... on ${conn.nodes.length} node(s) with ${vus} VU(s)`);
  return { cLoad, loadTime, written: { scheme: "tpcc", phase: "load", table_prefix: tablePrefix, tables: T, warehouses,
    c_load: cLoad, ...where(conn) } };
}

// --- random data (clause 4.3.2) -----------------------------------------------

// a-strings (clause 4.3.2.2): windows at random offsets of a pool of random
// alphanumeric characters, made anew for ITEM and each warehouse (as lib/ycsb.js's
// fields): one Math.random a string, not one a character. The pool is
// random bytes in base64 without its + and /: both in Go, where a loop over
// the bytes in JavaScript took 3 s a pool.
const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const POOL = 1 << 20;
let pool = "";
function newPool() {
  let p = "";
  while (p.length < POOL) p += b64encode(randomBytes(POOL), "rawstd").replace(/[+/]/g, "");
  pool = p.substring(0, POOL);
}
function aString(lo, hi) {
  const n = lo === hi ? lo : randInt(lo, hi);
  const off = Math.floor(Math.random() * (POOL - n));
  return pool.substring(off, off + n);
}
// I_DATA, S_DATA: a-string [26 .. 50], "ORIGINAL" at a random place in the chosen 10%.
function data(original) {
  const s = aString(26, 50);
  if (!original) return s;
  const at = randInt(0, s.length - 8);
  return s.substring(0, at) + "ORIGINAL" + s.substring(at + 8);
}
function state() {
  return LETTERS[randInt(0, 25)] + LETTERS[randInt(0, 25)];
}
// Clause 4.3.2.7: four random digits, then 11111.
function zip() {
  return String(randInt(0, 9999)).padStart(4, "0") + "11111";
}
function digits(n) {
  let s = "";
  while (s.length < n) s += String(randInt(0, 99999999)).padStart(8, "0");
  return s.substring(0, n);
}
// A random fraction with `scale` decimals in [lo, hi], lo and hi in units of 10^-scale.
function decimal(lo, hi, scale) {
  return (randInt(lo, hi) / 10 ** scale).toFixed(scale);
}

// Exactly k of the next n draws true, every k-subset alike (selection
// sampling, Knuth's Algorithm S): "10% of the rows, selected at random".
function chooser(k, n) {
  let seen = 0, chosen = 0;
  return () => {
    const take = Math.random() * (n - seen) < k - chosen;
    seen++;
    if (take) chosen++;
    return take;
  };
}

function permutation(n) {
  return shuffle(Array.from({ length: n }, (_, i) => i + 1));
}

// --- the statements ---------------------------------------------------------------

// This VU's statements in order: {op, w, d, from}, each a few hundred rows.
function planOf(v) {
  const units = [];
  if (v === vus) for (let from = 0; from < ITEMS; from += ITEM_BATCH) units.push({ op: "item", from });
  for (let w = v; w <= warehouses; w += vus) {
    units.push({ op: "warehouse", w });
    for (let from = 0; from < ITEMS; from += STOCK_BATCH) units.push({ op: "stock", w, from });
    for (let d = 1; d <= DISTRICTS; d++) {
      for (let from = 0; from < CUSTOMERS; from += CUSTOMER_BATCH) units.push({ op: "customer", w, d, from });
    }
    for (let d = 1; d <= DISTRICTS; d++) {
      for (let from = 0; from < ORDERS; from += ORDER_BATCH) units.push({ op: "order", w, d, from });
    }
  }
  return units;
}

// Per stream of rows (ITEM, a warehouse's STOCK, a district's customers and
// orders), what spans its statements: the 10% chooser, the C_ID permutation.
const streams = {};

function itemRows(u) {
  if (u.from === 0) {
    newPool();
    streams.item = chooser(ITEMS / 10, ITEMS);
  }
  const rows = [];
  for (let i = u.from + 1; i <= u.from + ITEM_BATCH; i++) {
    rows.push(`(${i},${randInt(1, 10000)},'${aString(14, 24)}',${decimal(100, 10000, 2)},'${data(streams.item())}')`);
  }
  return [`INSERT INTO ${T.item} (i_id, i_im_id, i_name, i_price, i_data) VALUES ${rows.join(",")}`, rows.length];
}

function address() {
  return `'${aString(10, 20)}','${aString(10, 20)}','${aString(10, 20)}','${state()}','${zip()}'`;
}

function warehouseRows(u) {
  newPool();
  const w = u.w;
  const districts = [];
  for (let d = 1; d <= DISTRICTS; d++) {
    districts.push(`(${d},${w},'${aString(6, 10)}',${address()},${decimal(0, 2000, 4)},30000.00,${ORDERS + 1})`);
  }
  return [`WITH w AS (INSERT INTO ${T.warehouse} (w_id, w_name, w_street_1, w_street_2, w_city, w_state, w_zip, w_tax, w_ytd) ` +
    `VALUES (${w},'${aString(6, 10)}',${address()},${decimal(0, 2000, 4)},300000.00)) ` +
    `INSERT INTO ${T.district} (d_id, d_w_id, d_name, d_street_1, d_street_2, d_city, d_state, d_zip, d_tax, d_ytd, ` +
    `d_next_o_id) VALUES ${districts.join(",")}`, 1 + DISTRICTS];
}

const STOCK_COLUMNS = `s_i_id, s_w_id, s_quantity, ${[...Array(10).keys()].map((i) => `s_dist_${String(i + 1).padStart(2, "0")}`).join(", ")}, ` +
  "s_ytd, s_order_cnt, s_remote_cnt, s_data";

function stockRows(u) {
  const key = `stock.${u.w}`;
  if (u.from === 0) streams[key] = chooser(ITEMS / 10, ITEMS);
  const original = streams[key];
  const rows = [];
  for (let i = u.from + 1; i <= u.from + STOCK_BATCH; i++) {
    let dists = "";
    for (let k = 0; k < 10; k++) dists += `'${aString(24, 24)}',`;
    rows.push(`(${i},${u.w},${randInt(10, 100)},${dists}0,0,0,'${data(original())}')`);
  }
  return [`INSERT INTO ${T.stock} (${STOCK_COLUMNS}) VALUES ${rows.join(",")}`, rows.length];
}

function customerRows(u, setupData) {
  const key = `customer.${u.w}.${u.d}`;
  if (u.from === 0) streams[key] = chooser(CUSTOMERS / 10, CUSTOMERS);
  const badCredit = streams[key];
  const ts = setupData.loadTime;
  const customers = [], history = [];
  for (let c = u.from + 1; c <= u.from + CUSTOMER_BATCH; c++) {
    // The first 1,000 customers' last names go through 0..999 in order; the
    // others' are NURand(255, 0, 999) with the load's C.
    const last = lastName(c <= 1000 ? c - 1 : nurand(255, 0, 999, setupData.cLoad));
    customers.push(`(${c},${u.d},${u.w},'${aString(8, 16)}','OE','${last}',${address()},'${digits(16)}','${ts}',` +
      `'${badCredit() ? "BC" : "GC"}',50000.00,${decimal(0, 5000, 4)},-10.00,10.00,1,0,'${aString(300, 500)}')`);
    history.push(`(${c},${u.d},${u.w},${u.d},${u.w},'${ts}',10.00,'${aString(12, 24)}')`);
  }
  if (u.from + CUSTOMER_BATCH >= CUSTOMERS) delete streams[key];
  return [`WITH h AS (INSERT INTO ${T.history} (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data) ` +
    `VALUES ${history.join(",")}) ` +
    `INSERT INTO ${T.customer} (c_id, c_d_id, c_w_id, c_first, c_middle, c_last, c_street_1, c_street_2, c_city, ` +
    "c_state, c_zip, c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_ytd_payment, c_payment_cnt, " +
    `c_delivery_cnt, c_data) VALUES ${customers.join(",")}`, customers.length + history.length];
}

function orderRows(u, setupData) {
  const key = `orders.${u.w}.${u.d}`;
  // O_C_ID: the district's customers in a random order, one each.
  if (u.from === 0) streams[key] = permutation(CUSTOMERS);
  const customerOf = streams[key];
  const ts = `'${setupData.loadTime}'`;
  const orders = [], lines = [], newOrders = [];
  for (let o = u.from + 1; o <= u.from + ORDER_BATCH; o++) {
    const delivered = o < NEW_ORDER_FROM;
    const count = randInt(5, 15);
    orders.push(`(${o},${u.d},${u.w},${customerOf[o - 1]},${ts},${delivered ? randInt(1, 10) : "NULL"},${count},1)`);
    for (let n = 1; n <= count; n++) {
      lines.push(`(${o},${u.d},${u.w},${n},${randInt(1, ITEMS)},${u.w},${delivered ? ts : "NULL"},5,` +
        `${delivered ? "0.00" : decimal(1, 999999, 2)},'${aString(24, 24)}')`);
    }
    if (!delivered) newOrders.push(`(${o},${u.d},${u.w})`);
  }
  if (u.from + ORDER_BATCH >= ORDERS) delete streams[key];
  const withNew = newOrders.length ? `, n AS (INSERT INTO ${T.new_order} (no_o_id, no_d_id, no_w_id) VALUES ${newOrders.join(",")})` : "";
  return [`WITH o AS (INSERT INTO ${T.orders} (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local) ` +
    `VALUES ${orders.join(",")})${withNew} ` +
    `INSERT INTO ${T.order_line} (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d, ` +
    `ol_quantity, ol_amount, ol_dist_info) VALUES ${lines.join(",")}`, orders.length + lines.length + newOrders.length];
}

const BUILD = { item: itemRows, warehouse: warehouseRows, stock: stockRows, customer: customerRows, order: orderRows };

let plan;
const args = [""];

export default function (setupData) {
  if (!plan) plan = planOf(__VU);
  // exec.vu is a new object on each access (~20 µs): nothing beside a statement of a few hundred rows.
  const i = exec.vu.iterationInScenario;
  if (pastBound(i, plan.length)) return;
  const u = plan[i];
  tagIteration(u.op);
  const [text, rows] = BUILD[u.op](u, setupData);
  args[0] = text;
  if (attempt(u.op, execStatement, args) === undefined) {
    // Counted (ybbench_errors) and the run fails its threshold; say which rows.
    console.warn(`tpcc-load: ${u.op} rows not loaded: warehouse ${u.w || "-"} district ${u.d || "-"} from ${(u.from || 0) + 1}`);
    return;
  }
  rowsLoaded.add(rows);
  if (u.op === "order" && u.d === DISTRICTS && u.from + ORDER_BATCH >= ORDERS) console.log(`tpcc-load: warehouse ${u.w} loaded`);
}

export function teardown() {
  db.close();
}
