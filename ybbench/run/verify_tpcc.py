"""`ybbench verify` after tpcc-load: TPC-C's consistency conditions 1-4
(TPC-C v5.11, clause 3.3.2), and the rows of the tables whose size no
transaction changes.

  cardinality   ITEM holds 100,000 rows; each warehouse 1..WAREHOUSES the run
                loaded is there with 10 districts, 3,000 customers a district
                and 100,000 stock rows (clause 4.3.3.1), and no other
  condition_1   per warehouse: W_YTD = sum(D_YTD) of its districts
  condition_2   per district: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID)
  condition_3   per district: count(*) of NEW_ORDER = max(NO_O_ID) - min(NO_O_ID) + 1
  condition_4   per district: sum(O_OL_CNT) = count(*) of ORDER_LINE

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
CHECKS = {
    "cardinality": "rows: ITEM 100,000; per warehouse 10 districts, 3,000 customers a district, 100,000 stock",
    "condition_1": "W_YTD = sum(D_YTD), per warehouse",
    "condition_2": "D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID), per district",
    "condition_3": "count(NEW_ORDER) = max(NO_O_ID) - min(NO_O_ID) + 1, per district",
    "condition_4": "sum(O_OL_CNT) = count(ORDER_LINE), per district",
}


def check(folder: Path, *, node: str | None = None, chunk: int = 10000, show: int = 20) -> dict:
    w = run_folder.read(folder).summary["written"]
    t = w["tables"]
    loaded = int(w["warehouses"])
    c = {k: Count() for k in CHECKS}
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
    return {"testid": folder.name, "scheme": "tpcc", "workload_keys": w, "ok": not any(v.n for v in c.values()),
            "warehouses_checked": len(warehouses), "districts_checked": len(districts),
            **{k: {"count": v.n, "examples": v.examples} for k, v in c.items()}}


def lines(r: dict) -> list[str]:
    w = r["workload_keys"]
    out = [f"verify {r['testid']}: tpcc, {w['warehouses']} warehouse(s) loaded into {w['tables']['warehouse']}, ...; "
           f"{r['warehouses_checked']} warehouse(s), {r['districts_checked']} district(s) in the tables"]
    for k, what in CHECKS.items():
        n = r[k]["count"]
        out.append(f"  {k} ({what}): " + ("OK" if n == 0 else f"FAILED, {n} broken"))
    out += example_lines(r, tuple(CHECKS), sep="; ")
    failed = [k for k in CHECKS if r[k]["count"]]
    out.append("  OK: the load's rows are there and consistency conditions 1-4 hold" if r["ok"] else
               f"  FAILED: {', '.join(failed)}")
    return out
