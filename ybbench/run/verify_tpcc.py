"""`ybbench verify` after tpcc-load or tpcc: TPC-C's twelve consistency
conditions (TPC-C v5.11, clause 3.3.2.1-12), the rows of the tables whose
size no transaction changes, and after a tpcc run its New-Orders.

  cardinality   ITEM holds 100,000 rows; each warehouse 1..WAREHOUSES the run
                loaded is there with 10 districts, 3,000 customers a district
                and 100,000 stock rows (clause 4.3.3.1), and no other
  condition_1   per warehouse: W_YTD = sum(D_YTD) of its districts
  condition_2   per district: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)
                (max(NO_O_ID) left out where the district has no NEW_ORDER row)
  condition_3   per district with NEW_ORDER rows: their count = max(NO_O_ID) - min(NO_O_ID) + 1
  condition_4   per district: sum(O_OL_CNT) = count(*) of ORDER_LINE
  condition_5   per order: O_CARRIER_ID is null if and only if the order has a NEW_ORDER row
  condition_6   per order: O_OL_CNT = count(*) of its ORDER_LINE rows
  condition_7   per order line: OL_DELIVERY_D is null if and only if its order's
                O_CARRIER_ID is (counted in order lines, named by their order)
  condition_8   per warehouse: W_YTD = sum(H_AMOUNT) of HISTORY rows with H_W_ID = W_ID
  condition_9   per district: D_YTD = sum(H_AMOUNT) of HISTORY rows with (H_W_ID, H_D_ID) = (D_W_ID, D_ID)
  condition_10  per customer: C_BALANCE = sum(OL_AMOUNT) - sum(H_AMOUNT): the
                amounts of the order lines of its orders that have an
                OL_DELIVERY_D, and of the HISTORY rows with its (H_C_W_ID, H_C_D_ID, H_C_ID)
  condition_11  per district: count(*) of ORDER - count(*) of NEW_ORDER = 2100;
                the spec's relationship holds only before the first Delivery:
                checked after tpcc-load, and after a tpcc run that made no
                Delivery and started on the load's tables; "skipped: why" otherwise
  condition_12  per customer: C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT) of its
                delivered order lines, as in condition 10

After a tpcc run (its summary.json says where each district's orders
stood when it started, and how many New-Orders committed and failed):

  new_orders    the run's orders in the tables (O_ID from where the district
                stood) are at least the New-Orders it committed (acknowledged:
                none lost) and at most those plus the failed ones (a failed
                statement may have committed)
  orders_whole  per district: the run's O_IDs have no gap (D_NEXT_O_ID less
                where it stood) and its orders' O_OL_CNT sum to their lines

Each is a count of what breaks it (warehouses, districts, orders, order
lines or customers), the first few named (W_ID, D_ID, O_ID or C_ID and the
two values compared); verify.json keeps them by these names.

A warehouse at a time: each table is read by warehouse (W_ID = n, the
first column of every key, so a point range in PostgreSQL and one hash key
in YugabyteDB) with the sums done by the server, per district or per order;
back come ten rows a district table, the orders that break 5-7 (none in a
sound database) and the warehouse's customers with their delivered amounts
(30,000 rows). HISTORY has no key to read a warehouse by: it is read twice
in all, once summed per (H_W_ID, H_D_ID), once summed per customer in key
order through a server-side cursor that the customers are merged with.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from ybbench.core import run_folder
from ybbench.core.errors import UserError
from ybbench.run.verify_base import Count, connect, example_lines

ITEMS, DISTRICTS, CUSTOMERS, STOCK = 100000, 10, 3000, 100000
ZERO = Decimal("0.00")  # a sum of no amounts, as the server writes one
ORDERS, DELIVERED = 3000, 2100  # each district's orders as loaded, and the delivered ones (clause 4.3.3.1)
RUN_CHECKS = {
    "new_orders": "committed <= the run's orders in the tables <= committed + failed",
    "orders_whole": "the run's O_IDs without a gap, sum(O_OL_CNT) = their ORDER_LINE rows, per district",
}
CHECKS = {
    "cardinality": "rows: ITEM 100,000; per warehouse 10 districts, 3,000 customers a district, 100,000 stock",
    "condition_1": "W_YTD = sum(D_YTD), per warehouse",
    "condition_2": "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID), per district",
    "condition_3": "count(NEW_ORDER) = max(NO_O_ID) - min(NO_O_ID) + 1, per district",
    "condition_4": "sum(O_OL_CNT) = count(ORDER_LINE), per district",
    "condition_5": "O_CARRIER_ID null if and only if a NEW_ORDER row, per order",
    "condition_6": "O_OL_CNT = count(ORDER_LINE), per order",
    "condition_7": "OL_DELIVERY_D null if and only if its order's O_CARRIER_ID, per order line",
    "condition_8": "W_YTD = sum(H_AMOUNT), per warehouse",
    "condition_9": "D_YTD = sum(H_AMOUNT), per district",
    "condition_10": "C_BALANCE = sum(OL_AMOUNT delivered) - sum(H_AMOUNT), per customer",
    "condition_11": "count(ORDER) - count(NEW_ORDER) = 2100, per district, before any Delivery",
    "condition_12": "C_BALANCE + C_YTD_PAYMENT = sum(OL_AMOUNT delivered), per customer",
}


def check(folder: Path, *, node: str | None = None, chunk: int = 10000, show: int = 20) -> dict:
    summary = run_folder.read(folder).summary
    w = summary["written"]
    t = w["tables"]
    loaded = int(w["warehouses"])
    ran = w.get("phase") == "run"
    starts = [int(o) for o in w["next_o_id_at_start"]] if ran else []
    if ran and len(starts) != loaded * DISTRICTS:
        raise UserError(f"the run's summary.json has {len(starts)} districts' starting O_IDs for "
                        f"{loaded} warehouse(s) ({loaded * DISTRICTS} districts): not a summary tpcc wrote")
    c = {k: Count() for k in _checks(ran)}
    skipped = {"condition_11": why} if (why := _why_not_11(summary, starts)) else {}
    n = {"warehouses": 0, "districts": 0, "customers": 0, "orders": 0, "run_orders": 0}
    with connect(w, node) as conn:
        missing = [name for name in t.values()
                   if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", [name]).fetchone()[0]]
        if missing:
            raise UserError(f"no table {', '.join(missing)} in database {w['database']!r}: not the tables "
                            f"run {folder.name} loaded (TABLE_PREFIX {w['table_prefix']!r})")
        warehouses = {r[0]: r[1] for r in conn.execute(f"SELECT w_id, w_ytd FROM {t['warehouse']}")}
        n["warehouses"] = len(warehouses)
        n["districts"] = conn.execute(f"SELECT count(*) FROM {t['district']}").fetchone()[0]
        _cardinality(conn, t, c["cardinality"], loaded, warehouses, show)
        # Sums of H_AMOUNT by the paying district: ten rows a warehouse.
        paid = {(r[0], r[1]): r[2] for r in conn.execute(
            f"SELECT h_w_id, h_d_id, coalesce(sum(h_amount), 0.00) FROM {t['history']} GROUP BY 1, 2")}
        paid_w: dict = {}
        for (hw, _), v in paid.items():
            paid_w[hw] = paid_w.get(hw, 0) + v
        with conn.cursor(name="ybbench_verify_history") as history:
            history.itersize = chunk
            history.execute(f"SELECT h_c_w_id, h_c_d_id, h_c_id, coalesce(sum(h_amount), 0.00) FROM {t['history']} "
                            "WHERE h_c_w_id IS NOT NULL AND h_c_d_id IS NOT NULL AND h_c_id IS NOT NULL "
                            "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3")
            payments = _Merge(history)
            for wid in sorted(set(range(1, loaded + 1)) | set(warehouses)):
                at = starts[(wid - 1) * DISTRICTS:wid * DISTRICTS] if ran and wid <= loaded else None
                _warehouse(conn, t, c, n, wid, wid <= loaded, warehouses.get(wid), (paid, paid_w), payments, at,
                           skipped, show)
    extra = {"run_new_orders": _check_new_orders(c, summary["tpcc"]["new_orders"], n["run_orders"], show)} \
        if ran else {}
    tallies = {k: {"count": v.n, "examples": v.examples, **({"skipped": skipped[k]} if k in skipped else {})}
               for k, v in c.items()}
    return {**extra, "testid": folder.name, "scheme": "tpcc", "phase": w.get("phase", "load"), "workload_keys": w,
            "ok": not any(v.n for v in c.values()),
            "warehouses_checked": n["warehouses"], "districts_checked": n["districts"],
            "orders_checked": n["orders"], "customers_checked": n["customers"], **tallies}


def _checks(ran: bool) -> dict[str, str]:
    return {**CHECKS, **(RUN_CHECKS if ran else {})}


def _why_not_11(summary: dict, starts: list[int]) -> str | None:
    """Why condition 11 cannot hold here, or None: it is TPC-C's initial
    state (every Delivery moves an order out of NEW_ORDER and leaves it in
    ORDER), so it is checked after tpcc-load and after a tpcc run that made
    no Delivery and began where the load left every district."""
    if not starts:
        return None
    deliveries = int(((summary.get("ops") or {}).get("delivery") or {}).get("count", 0))
    if deliveries:
        return (f"skipped: the run made {deliveries} Delivery transaction(s), and the condition holds only "
                "before the first (clause 3.3.2.11)")
    for i, o in enumerate(starts):
        if o != ORDERS + 1:
            return (f"skipped: W_ID={i // DISTRICTS + 1} D_ID={i % DISTRICTS + 1} stood at O_ID {o}, not "
                    f"{ORDERS + 1}, when the run started: the tables had been run on, and the condition "
                    "holds only before any Delivery (clause 3.3.2.11)")
    return None


def _cardinality(conn, t: dict, bad: Count, loaded: int, warehouses: dict, show: int) -> None:
    """ITEM's rows; warehouses and districts the run did not load (each
    warehouse's own districts, customers and stock: _warehouse)."""
    items = conn.execute(f"SELECT count(*) FROM {t['item']}").fetchone()[0]
    if items != ITEMS:
        bad.add(f"ITEM: {items} rows, not {ITEMS}", show)
    for wid in sorted(set(range(1, loaded + 1)) - set(warehouses)):
        bad.add(f"W_ID={wid}: no WAREHOUSE row", show)
    for wid in sorted(set(warehouses) - set(range(1, loaded + 1))):
        bad.add(f"W_ID={wid}: a warehouse the run did not load (it loaded 1..{loaded})", show)
    # Districts of other warehouses, or numbered outside 1..10: none in a sound database.
    for wid, did in conn.execute(f"SELECT d_w_id, d_id FROM {t['district']} WHERE d_w_id NOT BETWEEN 1 AND %s "
                                 f"OR d_id NOT BETWEEN 1 AND {DISTRICTS} ORDER BY 1, 2", [loaded]):
        bad.add(f"W_ID={wid} D_ID={did}: a district the run did not load", show)


class _Merge:
    """Sums of H_AMOUNT per customer, in key order from a server-side
    cursor: sum_for(key) for keys asked in increasing order."""

    def __init__(self, cursor):
        self.rows = iter(cursor)
        self.head = next(self.rows, None)

    def sum_for(self, key: tuple) -> Decimal:
        while self.head is not None and self.head[:3] < key:  # a customer the CUSTOMER table does not have
            self.head = next(self.rows, None)
        if self.head is not None and self.head[:3] == key:
            return self.head[3]
        return ZERO


def _warehouse(conn, t: dict, c: dict, n: dict, wid: int, loaded: bool, w_ytd, paid: tuple, payments: _Merge,
               starts: list[int] | None, skipped: dict, show: int) -> None:
    """Every check of one warehouse, from its rows alone (W_ID = wid);
    loaded: one of the run's warehouses, whose rows are counted."""
    paid, paid_w = paid
    w = [wid]
    first = f"W_ID={wid}"
    districts = {r[0]: (r[1], r[2]) for r in conn.execute(
        f"SELECT d_id, d_ytd, d_next_o_id FROM {t['district']} WHERE d_w_id = %s ORDER BY 1", w)}
    # The run's orders: O_ID from where the district stood ((starts)[D_ID]; null: none).
    s = [starts or []]
    orders = {r[0]: r[1:] for r in conn.execute(
        f"SELECT o_d_id, max(o_id), sum(o_ol_cnt), count(*), count(*) FILTER (WHERE o_id >= (%s::int[])[o_d_id]), "
        f"coalesce(sum(o_ol_cnt) FILTER (WHERE o_id >= (%s::int[])[o_d_id]), 0) FROM {t['orders']} "
        "WHERE o_w_id = %s GROUP BY 1", [*s, *s, wid])}
    new_orders = {r[0]: r[1:] for r in conn.execute(
        f"SELECT no_d_id, max(no_o_id), min(no_o_id), count(*) FROM {t['new_order']} WHERE no_w_id = %s GROUP BY 1",
        w)}
    lines = {r[0]: r[1:] for r in conn.execute(
        f"SELECT ol_d_id, count(*), count(*) FILTER (WHERE ol_o_id >= (%s::int[])[ol_d_id]) FROM {t['order_line']} "
        "WHERE ol_w_id = %s GROUP BY 1", [*s, wid])}
    stock = conn.execute(f"SELECT count(*) FROM {t['stock']} WHERE s_w_id = %s", w).fetchone()[0]
    n["orders"] += sum(o[2] for o in orders.values())

    if w_ytd is not None:
        total = sum((ytd for ytd, _ in districts.values() if ytd is not None), ZERO)
        if w_ytd != total:
            c["condition_1"].add(f"{first}: W_YTD {w_ytd} != sum(D_YTD) {total}", show)
        h = paid_w.get(wid, ZERO)
        if w_ytd != h:
            c["condition_8"].add(f"{first}: W_YTD {w_ytd} != sum(H_AMOUNT) {h}", show)
    if loaded and stock != STOCK:
        c["cardinality"].add(f"{first}: {stock} STOCK rows, not {STOCK}", show)
    for did, (d_ytd, next_o_id) in districts.items():
        at = f"{first} D_ID={did}"
        max_o, _, n_o, _, _ = orders.get(did, (None, None, 0, 0, 0))
        max_no, _, n_no = new_orders.get(did, (None, None, 0))
        if next_o_id is None or not (next_o_id - 1 == max_o and (max_no is None or max_no == max_o)):
            nxt = None if next_o_id is None else next_o_id - 1
            c["condition_2"].add(f"{at}: D_NEXT_O_ID - 1 {nxt}, max(O_ID) {max_o}, max(NO_O_ID) "
                                 + (f"{max_no}" if max_no is not None else "- (no NEW_ORDER rows)"), show)
        h = paid.get((wid, did), ZERO)
        if d_ytd != h:
            c["condition_9"].add(f"{at}: D_YTD {d_ytd} != sum(H_AMOUNT) {h}", show)
        if "condition_11" not in skipped and n_o - n_no != DELIVERED:
            c["condition_11"].add(f"{at}: count(ORDER) {n_o} - count(NEW_ORDER) {n_no} = {n_o - n_no}, "
                                  f"not {DELIVERED}", show)
    for did, (max_no, min_no, n_no) in sorted(new_orders.items()):
        if n_no != max_no - min_no + 1:
            c["condition_3"].add(f"{first} D_ID={did}: {n_no} NEW_ORDER rows, max(NO_O_ID) - min(NO_O_ID) + 1 = "
                                 f"{max_no - min_no + 1}", show)
    for did in sorted(set(orders) | set(lines)):
        ol_cnt, n_lines = (orders.get(did, (None, None))[1] or 0), lines.get(did, (0, 0))[0]
        if ol_cnt != n_lines:
            c["condition_4"].add(f"{first} D_ID={did}: sum(O_OL_CNT) {ol_cnt} != {n_lines} ORDER_LINE rows", show)
    if starts is not None:
        for did in range(1, DISTRICTS + 1):
            _, _, _, run_n, run_ol_cnt = orders.get(did, (None, None, 0, 0, 0))
            n["run_orders"] += run_n
            _check_orders_whole(c["orders_whole"], f"{first} D_ID={did}", starts[did - 1], run_n, run_ol_cnt,
                                lines.get(did, (0, 0))[1], districts.get(did, (None, None))[1], show)
    _orders(conn, t, c, wid, show)
    _customers(conn, t, c, n, wid, payments, districts if loaded else None, show)


def _orders(conn, t: dict, c: dict, wid: int, show: int) -> None:
    """Conditions 5-7: the warehouse's orders with their NEW_ORDER row and
    their lines summed per order, only those that break one come back."""
    for did, oid, carrier, ol_cnt, is_new, n_lines, undelivered in conn.execute(
            f"SELECT o_d_id, o_id, o_carrier_id, o_ol_cnt, n.no_o_id IS NOT NULL, coalesce(l.n, 0), "
            f"coalesce(l.undelivered, 0) FROM {t['orders']} o "
            f"LEFT JOIN (SELECT no_d_id, no_o_id FROM {t['new_order']} WHERE no_w_id = %(w)s) n "
            "ON (n.no_d_id, n.no_o_id) = (o.o_d_id, o.o_id) "
            "LEFT JOIN (SELECT ol_d_id, ol_o_id, count(*) AS n, count(*) FILTER (WHERE ol_delivery_d IS NULL) "
            f"AS undelivered FROM {t['order_line']} WHERE ol_w_id = %(w)s GROUP BY 1, 2) l "
            "ON (l.ol_d_id, l.ol_o_id) = (o.o_d_id, o.o_id) "
            "WHERE o.o_w_id = %(w)s AND ((o.o_carrier_id IS NULL) <> (n.no_o_id IS NOT NULL) "
            "OR o.o_ol_cnt IS DISTINCT FROM coalesce(l.n, 0) "
            "OR CASE WHEN o.o_carrier_id IS NULL THEN coalesce(l.n, 0) - coalesce(l.undelivered, 0) "
            "ELSE coalesce(l.undelivered, 0) END > 0) ORDER BY 1, 2", {"w": wid}):
        at = f"W_ID={wid} D_ID={did} O_ID={oid}"
        if (carrier is None) != is_new:
            c["condition_5"].add(f"{at}: O_CARRIER_ID null, no NEW_ORDER row" if carrier is None else
                                 f"{at}: O_CARRIER_ID {carrier}, a NEW_ORDER row", show)
        if ol_cnt != n_lines:
            c["condition_6"].add(f"{at}: O_OL_CNT {ol_cnt} != {n_lines} ORDER_LINE rows", show)
        if carrier is None and n_lines - undelivered:
            c["condition_7"].add(f"{at}: O_CARRIER_ID null, {n_lines - undelivered} of its {n_lines} ORDER_LINE "
                                 "rows with an OL_DELIVERY_D", show, n_lines - undelivered)
        elif carrier is not None and undelivered:
            c["condition_7"].add(f"{at}: O_CARRIER_ID {carrier}, {undelivered} of its {n_lines} ORDER_LINE rows "
                                 "without OL_DELIVERY_D", show, undelivered)


def _customers(conn, t: dict, c: dict, n: dict, wid: int, payments: _Merge, districts: dict | None,
               show: int) -> None:
    """Conditions 10 and 12, and each district's customers (cardinality):
    the warehouse's customers in key order with the OL_AMOUNT of their
    delivered order lines summed by the server, merged with their HISTORY sums."""
    per_district: dict[int, int] = {}
    for did, cid, balance, ytd, delivered in conn.execute(
            f"SELECT c_d_id, c_id, c_balance, c_ytd_payment, coalesce(l.amount, 0.00) FROM {t['customer']} c "
            f"LEFT JOIN (SELECT o_d_id, o_c_id, sum(ol_amount) AS amount FROM {t['orders']} JOIN {t['order_line']} "
            "ON (ol_w_id, ol_d_id, ol_o_id) = (o_w_id, o_d_id, o_id) "
            "WHERE o_w_id = %(w)s AND ol_w_id = %(w)s AND ol_delivery_d IS NOT NULL GROUP BY 1, 2) l "
            "ON (l.o_d_id, l.o_c_id) = (c.c_d_id, c.c_id) WHERE c.c_w_id = %(w)s ORDER BY 1, 2", {"w": wid}):
        per_district[did] = per_district.get(did, 0) + 1
        at = f"W_ID={wid} D_ID={did} C_ID={cid}"
        h = payments.sum_for((wid, did, cid))
        if balance != delivered - h:
            c["condition_10"].add(f"{at}: C_BALANCE {balance} != sum(OL_AMOUNT) {delivered} - sum(H_AMOUNT) {h} "
                                  f"= {delivered - h}", show)
        if balance is None or ytd is None or balance + ytd != delivered:
            both = None if balance is None or ytd is None else balance + ytd
            c["condition_12"].add(f"{at}: C_BALANCE + C_YTD_PAYMENT {balance} + {ytd} = {both} != "
                                  f"sum(OL_AMOUNT) {delivered}", show)
    n["customers"] += sum(per_district.values())
    if districts is not None:
        for did in range(1, DISTRICTS + 1):
            if did not in districts:
                c["cardinality"].add(f"W_ID={wid} D_ID={did}: no DISTRICT row", show)
            if per_district.get(did, 0) != CUSTOMERS:
                c["cardinality"].add(f"W_ID={wid} D_ID={did}: {per_district.get(did, 0)} CUSTOMER rows, "
                                     f"not {CUSTOMERS}", show)


def _check_orders_whole(bad: Count, at: str, start: int, n: int, ol_cnt: int, n_lines: int, next_o_id,
                        show: int) -> None:
    if next_o_id is not None and n != next_o_id - start:
        bad.add(f"{at}: {n} of the run's orders, O_ID {start} .. {next_o_id - 1} ({next_o_id - start})", show)
    if ol_cnt != n_lines:
        bad.add(f"{at}: the run's orders' sum(O_OL_CNT) {ol_cnt} != their {n_lines} ORDER_LINE rows", show)


def _check_new_orders(c: dict, new_orders: dict, there: int, show: int) -> dict:
    """new_orders into c; the counts verify.json keeps."""
    committed, failed = int(new_orders["committed"]), int(new_orders["failed"])
    if there < committed:
        c["new_orders"].add(f"{committed - there} acknowledged New-Order(s) lost: the run committed {committed}, "
                            f"the tables hold {there} of its orders", show)
    elif there > committed + failed:
        c["new_orders"].add(f"the tables hold {there} of the run's orders: more than the {committed} it committed "
                            f"and the {failed} that failed", show)
    return {"committed": committed, "failed": failed, "in_tables": there}


def lines(r: dict) -> list[str]:
    w = r["workload_keys"]
    ran = r.get("phase") == "run"
    checks = _checks(ran)
    what_run = (f"a tpcc run on {w['warehouses']} warehouse(s) of {w['tables']['warehouse']}, ..." if ran else
                f"tpcc, {w['warehouses']} warehouse(s) loaded into {w['tables']['warehouse']}, ...")
    out = [f"verify {r['testid']}: {what_run}; "
           f"{r['warehouses_checked']} warehouse(s), {r['districts_checked']} district(s)"
           + (f", {r['orders_checked']} order(s), {r['customers_checked']} customer(s)" if "orders_checked" in r
              else "") + " in the tables"]
    if ran:
        n = r["run_new_orders"]
        out.append(f"  the run's New-Orders: {n['committed']} committed, {n['failed']} failed; "
                   f"{n['in_tables']} of its orders in the tables")
    for k, what in checks.items():
        n = r[k]["count"]
        said = r[k].get("skipped") or ("OK" if n == 0 else f"FAILED, {n} broken")
        out.append(f"  {k} ({what}): {said}")
    out += example_lines(r, tuple(checks), sep="; ")
    failed = [k for k in checks if r[k]["count"]]
    held = "consistency conditions 1-10 and 12 hold (11 skipped)" if r.get("condition_11", {}).get("skipped") \
        else "consistency conditions 1-12 hold"
    ok = (f"the tables hold every New-Order the run acknowledged, and {held}" if ran else
          f"the load's rows are there and {held}")
    out.append(f"  OK: {ok}" if r["ok"] else f"  FAILED: {', '.join(failed)}")
    return out
