// TPC-C's five transactions (clauses 2.4-2.8) as PL/pgSQL functions, made
// by tpcc.js's setup: one statement a transaction, so that a transaction
// is all or nothing whatever the driver (xk6-sql has no transactions, and
// a pool that reconnects mid-transaction would commit half of one), costs
// one round trip, and a serialization failure (40001) is retried whole.
// HammerDB runs TPC-C on PostgreSQL the same way; yugabyte/tpcc sends each
// statement from the client (docs/workloads.md lists what differs).
//
// A New-Order with an unused item rolls back with SQLSTATE TPC01 (clause
// 2.4.2.3: "Item number is not valid"), which the script counts as a
// rollback, not an error. Customers by last name: the one at position
// ceil(n / 2) of those with it, ordered by C_FIRST (clause 2.5.2.2).
import { T, tablePrefix } from "./tpcc.js";

export const ROLLBACK = "TPC01";
// Our names: tpcc_ and at most 4 letters, so that the 53-byte prefix +
// name stays a 63-byte SQL name.
export const F = Object.fromEntries(["no", "pay", "os", "dl", "sl"].map((n) => [n, `${tablePrefix}tpcc_${n}`]));

const byName = `
    SELECT array_agg(c_id ORDER BY c_first) INTO v_ids FROM ${T.customer}
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_last = p_last;
    IF v_ids IS NULL THEN
      RAISE EXCEPTION 'no customer with C_LAST % in warehouse % district %', p_last, p_c_w, p_c_d USING ERRCODE = 'TPC02';
    END IF;
    v_c := v_ids[(array_length(v_ids, 1) + 1) / 2];`;

const dist = `CASE p_d ${[...Array(10).keys()].map((i) => `WHEN ${i + 1} THEN s_dist_${String(i + 1).padStart(2, "0")}`).join(" ")} END`;

export const PROCS = [
  // New-Order (clause 2.4.2.2); returns O_ID.
  `CREATE OR REPLACE FUNCTION ${F.no}(p_w int, p_d int, p_c int, p_items int[], p_supply int[], p_qty int[])
  RETURNS int LANGUAGE plpgsql AS $$
  DECLARE
    v_w_tax numeric; v_d_tax numeric; v_o_id int; v_discount numeric; v_last text; v_credit text;
    v_n int := array_length(p_items, 1); v_price numeric; v_name text; v_data text; v_dist text; v_s_data text;
  BEGIN
    SELECT w_tax INTO v_w_tax FROM ${T.warehouse} WHERE w_id = p_w;
    UPDATE ${T.district} SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = p_w AND d_id = p_d
      RETURNING d_tax, d_next_o_id - 1 INTO v_d_tax, v_o_id;
    SELECT c_discount, c_last, c_credit INTO v_discount, v_last, v_credit FROM ${T.customer}
      WHERE c_w_id = p_w AND c_d_id = p_d AND c_id = p_c;
    INSERT INTO ${T.orders} (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, o_all_local)
      VALUES (v_o_id, p_d, p_w, p_c, now(), NULL, v_n, CASE WHEN p_w = ALL (p_supply) THEN 1 ELSE 0 END);
    INSERT INTO ${T.new_order} (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d, p_w);
    FOR i IN 1 .. v_n LOOP
      SELECT i_price, i_name, i_data INTO v_price, v_name, v_data FROM ${T.item} WHERE i_id = p_items[i];
      IF NOT FOUND THEN
        RAISE EXCEPTION 'Item number is not valid' USING ERRCODE = '${ROLLBACK}';
      END IF;
      UPDATE ${T.stock} SET
          s_quantity = CASE WHEN s_quantity >= p_qty[i] + 10 THEN s_quantity - p_qty[i] ELSE s_quantity - p_qty[i] + 91 END,
          s_ytd = s_ytd + p_qty[i], s_order_cnt = s_order_cnt + 1, s_remote_cnt = s_remote_cnt + (p_supply[i] <> p_w)::int
        WHERE s_i_id = p_items[i] AND s_w_id = p_supply[i]
        RETURNING ${dist}, s_data INTO v_dist, v_s_data;
      INSERT INTO ${T.order_line} (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_delivery_d,
          ol_quantity, ol_amount, ol_dist_info)
        VALUES (v_o_id, p_d, p_w, i, p_items[i], p_supply[i], NULL, p_qty[i], p_qty[i] * v_price, v_dist);
    END LOOP;
    RETURN v_o_id;
  END $$`,
  // Payment (clause 2.5.2.2): p_c 0 finds the customer by p_last; returns C_ID.
  `CREATE OR REPLACE FUNCTION ${F.pay}(p_w int, p_d int, p_c_w int, p_c_d int, p_c int, p_last text, p_amount numeric)
  RETURNS int LANGUAGE plpgsql AS $$
  DECLARE v_w_name text; v_d_name text; v_c int := p_c; v_ids int[]; v_credit text;
  BEGIN
    UPDATE ${T.warehouse} SET w_ytd = w_ytd + p_amount WHERE w_id = p_w RETURNING w_name INTO v_w_name;
    UPDATE ${T.district} SET d_ytd = d_ytd + p_amount WHERE d_w_id = p_w AND d_id = p_d RETURNING d_name INTO v_d_name;
    IF p_c = 0 THEN${byName}
    END IF;
    UPDATE ${T.customer} SET c_balance = c_balance - p_amount, c_ytd_payment = c_ytd_payment + p_amount,
        c_payment_cnt = c_payment_cnt + 1
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c RETURNING c_credit INTO v_credit;
    IF v_credit = 'BC' THEN
      UPDATE ${T.customer} SET c_data = left(format('%s %s %s %s %s %s|', v_c, p_c_d, p_c_w, p_d, p_w, p_amount) || c_data, 500)
        WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    END IF;
    INSERT INTO ${T.history} (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
      VALUES (v_c, p_c_d, p_c_w, p_d, p_w, now(), p_amount, v_w_name || '    ' || v_d_name);
    RETURN v_c;
  END $$`,
  // Order-Status (clause 2.6.2.2): the customer's newest order and its lines; returns their count.
  `CREATE OR REPLACE FUNCTION ${F.os}(p_c_w int, p_c_d int, p_c int, p_last text)
  RETURNS int LANGUAGE plpgsql AS $$
  DECLARE v_c int := p_c; v_ids int[]; v_balance numeric; v_first text; v_o_id int; v_lines int;
  BEGIN
    IF p_c = 0 THEN${byName}
    END IF;
    SELECT c_balance, c_first INTO v_balance, v_first FROM ${T.customer}
      WHERE c_w_id = p_c_w AND c_d_id = p_c_d AND c_id = v_c;
    SELECT o_id INTO v_o_id FROM ${T.orders} WHERE o_w_id = p_c_w AND o_d_id = p_c_d AND o_c_id = v_c
      ORDER BY o_id DESC LIMIT 1;
    SELECT count(*) INTO v_lines FROM (SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d
      FROM ${T.order_line} WHERE ol_w_id = p_c_w AND ol_d_id = p_c_d AND ol_o_id = v_o_id) l;
    RETURN v_lines;
  END $$`,
  // Delivery (clause 2.7.4.2), in one transaction: each district's oldest
  // undelivered order, if it has one; returns the districts delivered.
  `CREATE OR REPLACE FUNCTION ${F.dl}(p_w int, p_carrier int)
  RETURNS int LANGUAGE plpgsql AS $$
  DECLARE v_o_id int; v_c int; v_sum numeric; v_done int := 0;
  BEGIN
    FOR v_d IN 1 .. 10 LOOP
      DELETE FROM ${T.new_order} WHERE no_w_id = p_w AND no_d_id = v_d
          AND no_o_id = (SELECT min(no_o_id) FROM ${T.new_order} WHERE no_w_id = p_w AND no_d_id = v_d)
        RETURNING no_o_id INTO v_o_id;
      CONTINUE WHEN v_o_id IS NULL;  -- none left, or another Delivery took it first
      UPDATE ${T.orders} SET o_carrier_id = p_carrier WHERE o_w_id = p_w AND o_d_id = v_d AND o_id = v_o_id
        RETURNING o_c_id INTO v_c;
      UPDATE ${T.order_line} SET ol_delivery_d = now() WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o_id;
      SELECT sum(ol_amount) INTO v_sum FROM ${T.order_line} WHERE ol_w_id = p_w AND ol_d_id = v_d AND ol_o_id = v_o_id;
      UPDATE ${T.customer} SET c_balance = c_balance + v_sum, c_delivery_cnt = c_delivery_cnt + 1
        WHERE c_w_id = p_w AND c_d_id = v_d AND c_id = v_c;
      v_done := v_done + 1;
    END LOOP;
    RETURN v_done;
  END $$`,
  // Stock-Level (clause 2.8.2.2): distinct items of the district's last 20 orders below the threshold.
  `CREATE OR REPLACE FUNCTION ${F.sl}(p_w int, p_d int, p_threshold int)
  RETURNS int LANGUAGE plpgsql AS $$
  DECLARE v_next int; v_low int;
  BEGIN
    SELECT d_next_o_id INTO v_next FROM ${T.district} WHERE d_w_id = p_w AND d_id = p_d;
    SELECT count(DISTINCT s_i_id) INTO v_low FROM ${T.order_line} JOIN ${T.stock} ON s_w_id = p_w AND s_i_id = ol_i_id
      WHERE ol_w_id = p_w AND ol_d_id = p_d AND ol_o_id >= v_next - 20 AND ol_o_id < v_next AND s_quantity < p_threshold;
    RETURN v_low;
  END $$`,
];

// Each transaction's statement: the function's arguments, arrays and
// numeric as text (every driver sends a string as text).
export const CALLS = {
  new_order: `SELECT ${F.no}($1, $2, $3, $4::text::int[], $5::text::int[], $6::text::int[])`,
  payment: `SELECT ${F.pay}($1, $2, $3, $4, $5, $6, $7::text::numeric)`,
  order_status: `SELECT ${F.os}($1, $2, $3, $4)`,
  delivery: `SELECT ${F.dl}($1, $2)`,
  stock_level: `SELECT ${F.sl}($1, $2, $3)`,
};
