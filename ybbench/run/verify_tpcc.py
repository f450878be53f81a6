"""`ybbench verify` after tpcc-load or tpcc: TPC-C's consistency conditions
1-4 (TPC-C v5.11, clause 3.3.2), the rows of the tables whose size no
transaction changes, and after a tpcc run its New-Orders.

  cardinality   ITEM holds 100,000 rows; each warehouse 1..WAREHOUSES the run
                loaded is there with 10 districts, 3,000 customers a district
                and 100,000 stock rows (clause 4.3.3.1), and no other
  condition_1   per warehouse: W_YTD = sum(D_YTD) of its districts
  condition_2   per district: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)
  condition_3   per district: count(*) of NEW_ORDER = max(NO_O_ID) - min(NO_O_ID) + 1
  condition_4   per district: sum(O_OL_CNT) = count(*) of ORDER_LINE

After a tpcc run (its summary.json says where each district's orders
stood when it started, and how many New-Orders committed and failed):

  new_orders    the run's orders in the tables (O_ID from where the district
                stood) are at least the New-Orders it committed (acknowledged:
                none lost) and at most those plus the failed ones (a failed
                statement may have committed)
  orders_whole  per district: the run's O_IDs have no gap (D_NEXT_O_ID less
                where it stood) and its orders' O_OL_CNT sum to their lines

Each is a count of the warehouses or districts that break it, with the first
few named (W_ID, D_ID and the numbers); verify.json keeps them by these names.
A district with no NEW_ORDER row breaks 2 and 3 (the spec's max and min have
no value). One aggregate query per table, grouped by district: the tables are
read once each, whatever their size; per district only the sums come back.
"""

from __future__ import annotations

from pathlib import Path

from ybbench.core import run_folder
from ybbench.core.errors import UserError
from ybbench.run.verify_base import Count, connect, example_lines

ITEMS, DISTRICTS, CUSTOMERS, STOCK = 100000, 10, 3000, 100000
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
}


def check(folder: Path, *, node: str | None = None, chunk: int = 10000, show: int = 20) -> dict:
    summary = run_folder.read(folder).summary
    w = summary["written"]
    t = w["tables"]
    loaded = int(w["warehouses"])
    ran = w.get("phase") == "run"
    if ran and len(w["next_o_id_at_start"]) != loaded * DISTRICTS:
        raise UserError(f"the run's summary.json has {len(w['next_o_id_at_start'])} districts' starting O_IDs for "
                        f"{loaded} warehouse(s) ({loaded * DISTRICTS} districts): not a summary tpcc wrote")
    c = {k: Count() for k in _checks(ran)}
    with connect(w, node) as conn:
        missing = [name for name in t.values()
                   if not conn.execute("SELECT to_regclass(%s) IS NOT NULL", [name]).fetchone()[0]]
        if missing:
            raise UserError(f"no table {', '.join(missing)} in database {w['database']!r}: not the tables "
                            f"run {folder.name} loaded (TABLE_PREFIX {w['table_prefix']!r})")
        warehouses = {r[0]: r[1] for r in conn.execute(f"SELECT w_id, w_ytd FROM {t['warehouse']}")}
        districts = {(r[0], r[1]): (r[2], r[3]) for r in
                     conn.execute(f"SELECT d_w_id, d_id, d_ytd, d_next_o_id FROM {t['district']}")}
        items = conn.execute(f"SELECT count(*) FROM {t['item']}").fetchone()[0]
        customers = {(r[0], r[1]): r[2] for r in conn.execute(
            f"SELECT c_w_id, c_d_id, count(*) FROM {t['customer']} GROUP BY 1, 2")}
        stock = {r[0]: r[1] for r in conn.execute(f"SELECT s_w_id, count(*) FROM {t['stock']} GROUP BY 1")}
        orders = {(r[0], r[1]): (r[2], r[3]) for r in conn.execute(
            f"SELECT o_w_id, o_d_id, max(o_id), sum(o_ol_cnt) FROM {t['orders']} GROUP BY 1, 2")}
        new_orders = {(r[0], r[1]): (r[2], r[3], r[4]) for r in conn.execute(
            f"SELECT no_w_id, no_d_id, max(no_o_id), min(no_o_id), count(*) FROM {t['new_order']} GROUP BY 1, 2")}
        lines = {(r[0], r[1]): r[2] for r in conn.execute(
            f"SELECT ol_w_id, ol_d_id, count(*) FROM {t['order_line']} GROUP BY 1, 2")}
        if ran:
            run_orders = _run_orders(conn, t, w["next_o_id_at_start"], loaded)

    # cardinality: what the load acknowledged, against what is there.
    if items != ITEMS:
        c["cardinality"].add(f"ITEM: {items} rows, not {ITEMS}", show)
    for wid in range(1, loaded + 1):
        if wid not in warehouses:
            c["cardinality"].add(f"W_ID={wid}: no WAREHOUSE row", show)
        if stock.get(wid, 0) != STOCK:
            c["cardinality"].add(f"W_ID={wid}: {stock.get(wid, 0)} STOCK rows, not {STOCK}", show)
        for did in range(1, DISTRICTS + 1):
            if (wid, did) not in districts:
                c["cardinality"].add(f"W_ID={wid} D_ID={did}: no DISTRICT row", show)
            if customers.get((wid, did), 0) != CUSTOMERS:
                c["cardinality"].add(f"W_ID={wid} D_ID={did}: {customers.get((wid, did), 0)} CUSTOMER rows, "
                                     f"not {CUSTOMERS}", show)
    wanted = set(range(1, loaded + 1))
    for wid in sorted(set(warehouses) - wanted):
        c["cardinality"].add(f"W_ID={wid}: a warehouse the run did not load (it loaded 1..{loaded})", show)
    for wid, did in sorted(set(districts) - {(x, d) for x in wanted for d in range(1, DISTRICTS + 1)}):
        c["cardinality"].add(f"W_ID={wid} D_ID={did}: a district the run did not load", show)

    district_ytd: dict = {}
    for (wid, _), (ytd, _) in districts.items():
        district_ytd[wid] = district_ytd.get(wid, 0) + ytd
    for wid, ytd in sorted(warehouses.items()):
        total = district_ytd.get(wid, 0)
        if ytd != total:
            c["condition_1"].add(f"W_ID={wid}: W_YTD {ytd} != sum(D_YTD) {total}", show)
    for (wid, did), (_, next_o_id) in sorted(districts.items()):
        at = f"W_ID={wid} D_ID={did}"
        max_o, ol_cnt = orders.get((wid, did), (None, None))
        max_no, min_no, n_no = new_orders.get((wid, did), (None, None, 0))
        if not (next_o_id - 1 == max_o == max_no):
            c["condition_2"].add(f"{at}: D_NEXT_O_ID - 1 {next_o_id - 1}, max(O_ID) {max_o}, max(NO_O_ID) {max_no}",
                                 show)
        if max_no is None or n_no != max_no - min_no + 1:
            span = "no NEW_ORDER rows" if max_no is None else f"max(NO_O_ID) - min(NO_O_ID) + 1 = {max_no - min_no + 1}"
            c["condition_3"].add(f"{at}: {n_no} NEW_ORDER rows, {span}", show)
        n_lines = lines.get((wid, did), 0)
        if (ol_cnt or 0) != n_lines:
            c["condition_4"].add(f"{at}: sum(O_OL_CNT) {ol_cnt or 0} != {n_lines} ORDER_LINE rows", show)
    extra = {"run_new_orders": _check_run(c, summary["tpcc"]["new_orders"], run_orders, districts, show)} if ran else {}
    return {**extra, "testid": folder.name, "scheme": "tpcc", "phase": w.get("phase", "load"), "workload_keys": w,
            "ok": not any(v.n for v in c.values()),
            "warehouses_checked": len(warehouses), "districts_checked": len(districts),
            **{k: {"count": v.n, "examples": v.examples} for k, v in c.items()}}


def _checks(ran: bool) -> dict[str, str]:
    return {**CHECKS, **(RUN_CHECKS if ran else {})}


def _run_orders(conn, t: dict, starts: list[int], loaded: int) -> dict:
    """Per district, where it stood and the run's orders (O_ID from there):
    (start, count, sum(O_OL_CNT), their ORDER_LINE rows). One query a table."""
    keys = [(wid, did) for wid in range(1, loaded + 1) for did in range(1, DISTRICTS + 1)]
    start = "unnest(%s::int[], %s::int[], %s::int[]) AS s(w, d, o)"
    params = [[k[0] for k in keys], [k[1] for k in keys], list(starts)]
    orders = {(r[0], r[1]): (r[2], r[3]) for r in conn.execute(
        f"SELECT s.w, s.d, count(o_id), coalesce(sum(o_ol_cnt), 0) FROM {start} LEFT JOIN {t['orders']} "
        "ON o_w_id = s.w AND o_d_id = s.d AND o_id >= s.o GROUP BY 1, 2", params)}
    lines = {(r[0], r[1]): r[2] for r in conn.execute(
        f"SELECT s.w, s.d, count(ol_o_id) FROM {start} LEFT JOIN {t['order_line']} "
        "ON ol_w_id = s.w AND ol_d_id = s.d AND ol_o_id >= s.o GROUP BY 1, 2", params)}
    return {k: (o, *orders.get(k, (0, 0)), lines.get(k, 0)) for k, o in zip(keys, starts)}


def _check_run(c: dict, new_orders: dict, run_orders: dict, districts: dict, show: int) -> dict:
    """new_orders and orders_whole into c; the counts verify.json keeps."""
    committed, failed = int(new_orders["committed"]), int(new_orders["failed"])
    there = sum(n for _, n, _, _ in run_orders.values())
    if there < committed:
        c["new_orders"].add(f"{committed - there} acknowledged New-Order(s) lost: the run committed {committed}, "
                            f"the tables hold {there} of its orders", show)
    elif there > committed + failed:
        c["new_orders"].add(f"the tables hold {there} of the run's orders: more than the {committed} it committed "
                            f"and the {failed} that failed", show)
    for key, (start, n, ol_cnt, n_lines) in sorted(run_orders.items()):
        at = f"W_ID={key[0]} D_ID={key[1]}"
        next_o_id = districts.get(key, (None, None))[1]
        if next_o_id is not None and n != next_o_id - start:
            c["orders_whole"].add(f"{at}: {n} of the run's orders, O_ID {start} .. {next_o_id - 1} "
                                  f"({next_o_id - start})", show)
        if ol_cnt != n_lines:
            c["orders_whole"].add(f"{at}: the run's orders' sum(O_OL_CNT) {ol_cnt} != their {n_lines} ORDER_LINE rows",
                                  show)
    return {"committed": committed, "failed": failed, "in_tables": there}


def lines(r: dict) -> list[str]:
    w = r["workload_keys"]
    ran = r.get("phase") == "run"
    checks = _checks(ran)
    what_run = (f"a tpcc run on {w['warehouses']} warehouse(s) of {w['tables']['warehouse']}, ..." if ran else
                f"tpcc, {w['warehouses']} warehouse(s) loaded into {w['tables']['warehouse']}, ...")
    out = [f"verify {r['testid']}: {what_run}; "
           f"{r['warehouses_checked']} warehouse(s), {r['districts_checked']} district(s) in the tables"]
    if ran:
        n = r["run_new_orders"]
        out.append(f"  the run's New-Orders: {n['committed']} committed, {n['failed']} failed; "
                   f"{n['in_tables']} of its orders in the tables")
    for k, what in checks.items():
        n = r[k]["count"]
        out.append(f"  {k} ({what}): " + ("OK" if n == 0 else f"FAILED, {n} broken"))
    out += example_lines(r, tuple(checks), sep="; ")
    failed = [k for k in checks if r[k]["count"]]
    ok = ("the tables hold every New-Order the run acknowledged, and consistency conditions 1-4 hold" if ran else
          "the load's rows are there and consistency conditions 1-4 hold")
    out.append(f"  OK: {ok}" if r["ok"] else f"  FAILED: {', '.join(failed)}")
    return out
