// TPC-C's five transactions as client-side statements (TPCC_STYLE=statements),
// as yugabyte/tpcc (a BenchBase fork) sends them: BEGIN, each statement of
// the specification's reference code (clauses A.1-A.5) in its own round
// trip, COMMIT, on the VU's own connection; the same logic as the
// procedures of lib/tpcc_procs.js (TPCC_STYLE=procedures, the default),
// statement by statement. Rows the reference code reads and then updates
// are locked as it reads them (SELECT ... FOR UPDATE): the district in
// New-Order, each stock row before its update, the warehouse, district and
// customer in Payment, each district's oldest NEW_ORDER row in Delivery.
//
// The connection: our module's pgconnSession (DB_DRIVER=pgconn), which
// holds one connection and never re-sends a statement: a connection that
// breaks fails the statement, and the session connects anew only at the
// next one, which is this file's ROLLBACK. xk6-sql (v1.0.5) has no
// transactions and hands each statement to database/sql's pool, which on a
// broken connection (driver.ErrBadConn: lib/pq's answer to the server's
// FATAL after pg_terminate_backend) runs the statement again on a new
// connection, outside the transaction: half a transaction would commit.
// So this style refuses the other drivers (tpcc.js).
//
// exec(call, ...arguments) takes the procedures' statement (CALLS) and
// arguments, so that tpcc.js draws the same inputs for both styles and
// lib/metrics.js attempt retries a transaction the same way: each call is
// one attempt, rolled back whole when any statement fails, then the error
// thrown on (40001 or 40P01: attempt runs the transaction again from BEGIN;
// TPC01, the New-Order's unused item, rolled back as the specification
// asks: counted as a rollback). Each attempt's time goes to
// ybbench_tpcc_attempt (the final attempt's: yugabyte/tpcc's "operation")
// or ybbench_tpcc_failed_attempt (each failed one's; _ms: summed); k6's
// iteration_duration{op} is the whole transaction with its retries
// (yugabyte/tpcc's "operation with retries").
import { Counter, Trend } from "k6/metrics";
import { sqlstate } from "./db.js";
import { T } from "./tpcc.js";
import { CALLS, ROLLBACK } from "./tpcc_procs.js";

const dist = `CASE $3::int ${[...Array(10).keys()].map((i) => `WHEN ${i + 1} THEN s_dist_${String(i + 1).padStart(2, "0")}`).join(" ")} END`;

// The statements, by transaction, in the order they run.
export const SQL = {
  begin: "BEGIN",
  commit: "COMMIT",
  rollback: "ROLLBACK",
  // New-Order (A.1): 5 statements, then 4 an order line.
  noCustomer: `SELECT c_discount, c_last, c_credit, w_tax FROM ${T.customer}, ${T.warehouse}
    WHERE w_id = $1 AND c_w_id = w_id AND c_d_id = $2 AND c_id = $3`,
  noDistrict: `SELECT d_next_o_id, d_tax FROM ${T.district} WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE`,
  noDistrictNext: `UPDATE ${T.district} SET d_next_o_id = $3 + 1 WHERE d_w_id = $1 AND d_id = $2`,
  noOrder: `INSERT INTO ${T.orders} (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
    VALUES ($1, $2, $3, $4, now(), NULL, $5, $6)`,
  noNewOrder: `INSERT INTO ${T.new_order} (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)`,
  noItem: `SELECT i_price, i_name, i_data FROM ${T.item} WHERE i_id = $1`,
  noStock: `SELECT s_quantity, s_data, ${dist} AS s_dist FROM ${T.stock} WHERE s_i_id = $1 AND s_w_id = $2 FOR UPDATE`,
  noStockUpdate: `UPDATE ${T.stock} SET s_quantity = $1, s_ytd = s_ytd + $2, s_order_cnt = s_order_cnt + 1,
    s_remote_cnt = s_remote_cnt + $3 WHERE s_i_id = $4 AND s_w_id = $5`,
  noLine: `INSERT INTO ${T.order_line} (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
    ol_quantity, ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, NULL, $7, $8::text::numeric, $9)`,
  // Payment (A.2): 7 statements, one more by last name, one more for a bad-credit customer.
  payWarehouse: `SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM ${T.warehouse} WHERE w_id = $1 FOR UPDATE`,
  payWarehouseYtd: `UPDATE ${T.warehouse} SET w_ytd = w_ytd + $2::text::numeric WHERE w_id = $1`,
  payDistrict: `SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM ${T.district}
    WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE`,
  payDistrictYtd: `UPDATE ${T.district} SET d_ytd = d_ytd + $3::text::numeric WHERE d_w_id = $1 AND d_id = $2`,
  payByName: `SELECT c_id FROM ${T.customer} WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first`,
  payCustomer: `SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_since,
    c_credit, c_credit_lim, c_discount, c_balance FROM ${T.customer} WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 FOR UPDATE`,
  payCData: `SELECT c_data FROM ${T.customer} WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
  payCustomerUpdate: `UPDATE ${T.customer} SET c_balance = c_balance - $4::text::numeric,
    c_ytd_payment = c_ytd_payment + $4::text::numeric, c_payment_cnt = c_payment_cnt + 1
    WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
  payCustomerBC: `UPDATE ${T.customer} SET c_balance = c_balance - $4::text::numeric,
    c_ytd_payment = c_ytd_payment + $4::text::numeric, c_payment_cnt = c_payment_cnt + 1, c_data = $5
    WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
  payHistory: `INSERT INTO ${T.history} (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
    VALUES ($1, $2, $3, $4, $5, now(), $6::text::numeric, $7)`,
  // Order-Status (A.3): 3 statements.
  osByName: `SELECT c_id, c_balance, c_first, c_middle, c_last FROM ${T.customer}
    WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY c_first`,
  osCustomer: `SELECT c_balance, c_first, c_middle, c_last FROM ${T.customer} WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
  osOrder: `SELECT o_id, o_carrier_id, o_entry_d FROM ${T.orders} WHERE o_w_id = $1 AND o_d_id = $2 AND o_c_id = $3
    ORDER BY o_id DESC LIMIT 1`,
  osLines: `SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM ${T.order_line}
    WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3`,
  // Delivery (A.4): 7 statements a district with an undelivered order, 1 one without.
  dlOldest: `SELECT no_o_id FROM ${T.new_order} WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id LIMIT 1 FOR UPDATE`,
  dlDelete: `DELETE FROM ${T.new_order} WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3`,
  dlCustomer: `SELECT o_c_id FROM ${T.orders} WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3`,
  dlCarrier: `UPDATE ${T.orders} SET o_carrier_id = $4 WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3`,
  dlLines: `UPDATE ${T.order_line} SET ol_delivery_d = now() WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3`,
  dlSum: `SELECT sum(ol_amount)::text AS total FROM ${T.order_line} WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3`,
  dlBalance: `UPDATE ${T.customer} SET c_balance = c_balance + $4::text::numeric, c_delivery_cnt = c_delivery_cnt + 1
    WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3`,
  // Stock-Level (A.5): 2 statements.
  slNext: `SELECT d_next_o_id FROM ${T.district} WHERE d_w_id = $1 AND d_id = $2`,
  slLow: `SELECT count(DISTINCT s_i_id) AS low FROM ${T.order_line} JOIN ${T.stock} ON s_w_id = $1 AND s_i_id = ol_i_id
    WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id >= $3 - 20 AND ol_o_id < $3 AND s_quantity < $4`,
};

// Thrown after the statements' own failure to find a row the transaction
// needs: SQLSTATE as lib/db.js sqlstate reads it.
function fail(message, state) {
  return new Error(`${message} (SQLSTATE ${state})`);
}

// The procedures' text arrays ("{1,2,3}") as numbers.
function ints(s) {
  return s.slice(1, -1).split(",").map(Number);
}

// A customer by last name: the one at position ceil(n / 2) of those with
// it, ordered by C_FIRST (clause 2.5.2.2), as the procedures pick it.
function middle(rows, w, d, last) {
  if (rows.length === 0) throw fail(`no customer with C_LAST ${last} in warehouse ${w} district ${d}`, "TPC02");
  return rows[Math.floor((rows.length + 1) / 2) - 1];
}

function cents(price) {
  return Math.round(Number(price) * 100);
}

function newOrder(q, x, a) {
  const w = a[1], d = a[2], c = a[3];
  const items = ints(a[4]), supply = ints(a[5]), qty = ints(a[6]);
  const n = items.length;
  q(SQL.noCustomer, w, d, c);
  const o = Number(q(SQL.noDistrict, w, d)[0].d_next_o_id);
  x(SQL.noDistrictNext, w, d, o);
  x(SQL.noOrder, o, d, w, c, n, supply.every((s) => s === w) ? 1 : 0);
  x(SQL.noNewOrder, o, d, w);
  for (let i = 0; i < n; i++) {
    const item = q(SQL.noItem, items[i]);
    // Clause 2.4.2.3: the unused item (the last) rolls the order back.
    if (item.length === 0) throw fail("Item number is not valid", ROLLBACK);
    const s = q(SQL.noStock, items[i], supply[i], d)[0];
    const have = Number(s.s_quantity);
    x(SQL.noStockUpdate, have >= qty[i] + 10 ? have - qty[i] : have - qty[i] + 91, qty[i], supply[i] !== w ? 1 : 0,
      items[i], supply[i]);
    x(SQL.noLine, o, d, w, i + 1, items[i], supply[i], qty[i], ((qty[i] * cents(item[0].i_price)) / 100).toFixed(2),
      s.s_dist);
  }
  return o;
}

function payment(q, x, a) {
  const w = a[1], d = a[2], cw = a[3], cd = a[4], last = a[6], amount = a[7];
  const wh = q(SQL.payWarehouse, w)[0];
  x(SQL.payWarehouseYtd, w, amount);
  const di = q(SQL.payDistrict, w, d)[0];
  x(SQL.payDistrictYtd, w, d, amount);
  const c = a[5] === 0 ? Number(middle(q(SQL.payByName, cw, cd, last), cw, cd, last).c_id) : a[5];
  const cu = q(SQL.payCustomer, cw, cd, c)[0];
  if (cu.c_credit === "BC") {
    const data = q(SQL.payCData, cw, cd, c)[0].c_data;
    x(SQL.payCustomerBC, cw, cd, c, amount, `${c} ${cd} ${cw} ${d} ${w} ${amount}|${data}`.slice(0, 500));
  } else {
    x(SQL.payCustomerUpdate, cw, cd, c, amount);
  }
  x(SQL.payHistory, c, cd, cw, d, w, amount, `${wh.w_name}    ${di.d_name}`);
  return c;
}

function orderStatus(q, x, a) {
  const w = a[1], d = a[2], last = a[4];
  const c = a[3] === 0 ? Number(middle(q(SQL.osByName, w, d, last), w, d, last).c_id) : (q(SQL.osCustomer, w, d, a[3]), a[3]);
  const o = q(SQL.osOrder, w, d, c);
  return o.length ? q(SQL.osLines, w, d, o[0].o_id).length : 0;
}

function delivery(q, x, a) {
  const w = a[1], carrier = a[2];
  let done = 0;
  for (let d = 1; d <= 10; d++) {
    const no = q(SQL.dlOldest, w, d);
    if (no.length === 0) continue; // none left, or another Delivery took it first
    const o = no[0].no_o_id;
    x(SQL.dlDelete, w, d, o);
    const c = q(SQL.dlCustomer, w, d, o)[0].o_c_id;
    x(SQL.dlCarrier, w, d, o, carrier);
    x(SQL.dlLines, w, d, o);
    x(SQL.dlBalance, w, d, c, q(SQL.dlSum, w, d, o)[0].total);
    done++;
  }
  return done;
}

function stockLevel(q, x, a) {
  const w = a[1], d = a[2];
  const next = q(SQL.slNext, w, d)[0].d_next_o_id;
  return q(SQL.slLow, w, d, next, a[3])[0].low;
}

const BODIES = new Map([[CALLS.new_order, newOrder], [CALLS.payment, payment], [CALLS.order_status, orderStatus],
  [CALLS.delivery, delivery], [CALLS.stock_level, stockLevel]]);

const attemptTime = new Trend("ybbench_tpcc_attempt", true);
const failedTime = new Counter("ybbench_tpcc_failed_attempt_ms");
// Each failed attempt's latency too (its mean and p99; failures are rare).
const failedLatency = new Trend("ybbench_tpcc_failed_attempt", true);

// The VU's transactions on `session` ({query, exec, close} of one
// connection: our module's pgconnSession); clock() in ms.
export function statementsExec(session, clock) {
  const q = session.query, x = session.exec;
  return function exec(call) {
    const body = BODIES.get(call);
    const a = arguments;
    const start = clock();
    try {
      x(SQL.begin);
      const out = body(q, x, a);
      x(SQL.commit);
      attemptTime.add(clock() - start);
      return out;
    } catch (e) {
      // Whatever failed, the transaction ends here: on the same connection
      // if it is still there; on a broken one the server has rolled it
      // back, and this ROLLBACK (on a new connection, or failing to make
      // one) changes nothing.
      try {
        x(SQL.rollback);
      } catch (ignored) {
        // the error that matters is e
      }
      const ms = clock() - start;
      if (sqlstate(e) === ROLLBACK) attemptTime.add(ms);
      else {
        failedTime.add(ms);
        failedLatency.add(ms);
      }
      throw e;
    }
  };
}
