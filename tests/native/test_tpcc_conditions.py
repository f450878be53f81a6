"""`ybbench verify` and TPC-C's twelve consistency conditions (TPC-C v5.11,
clause 3.3.2.1-12) on two warehouses that tpcc-load filled and a short tpcc
run changed, in a database of their own: the load and the run pass all
twelve (condition 11 skipped after the run's Deliveries, with the reason),
and for each condition a plant that breaks it alone (every other condition
and check still passing) fails verify, exit 1, naming the condition and the
first warehouse, district, order or customer that breaks it with the two
values compared. Each plant is made in a copy of the database (CREATE
DATABASE ... TEMPLATE) that a copy of the run's folder points at, so the
plants are independent of each other and of the clean tables."""

from __future__ import annotations

import dataclasses
import json
import shutil
import uuid

import pytest

from ..support.ybbench_cli import USERS_K6, verify, ybbench_run

W = 2
CONDITIONS = tuple(f"condition_{i}" for i in range(1, 13))
CHECKS = ("cardinality", *CONDITIONS)
RUN_CHECKS = (*CHECKS, "new_orders", "orders_whole")


@pytest.fixture(scope="module")
def tables(binaries, postgres, tmp_path_factory):
    """Two warehouses loaded by 2 VUs into a database of their own, copied as loaded (the load's
    tables: <database>_l), then 6 s of tpcc at 2 VUs; (postgres on that database, results, load
    testid, run testid)."""
    db, tag = f"tc{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:6]
    postgres.psql("postgres", f"CREATE DATABASE {db}")
    pg = dataclasses.replace(postgres, database=db)
    results = tmp_path_factory.mktemp("tpcc-conditions") / "results"
    load = ybbench_run("tpcc-load", pg, results, testid=f"load{tag}", knobs={"WAREHOUSES": str(W), "VUS": "2"},
                       extra_env=USERS_K6)
    assert load.code == 0, load.output
    postgres.psql("postgres", f"CREATE DATABASE {db}_l TEMPLATE {db}")
    run = ybbench_run("tpcc", pg, results, testid=f"run{tag}", knobs={"VUS": "2", "DURATION": "6s"},
                      extra_env=USERS_K6, extra_args=["--keys-from", f"load{tag}"])
    assert run.code == 0, run.output + (run.folder / "k6.log").read_text()
    assert run.digest()["ops"]["delivery"]["count"] > 0 and run.digest()["ops"]["payment"]["count"] > 0
    yield pg, results, f"load{tag}", f"run{tag}"
    for name in (db, f"{db}_l"):
        postgres.psql("postgres", f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture
def planted(postgres, tables, tmp_path):
    """plant(testid, sql): sql run in a copy of the tables that testid left (the load's or the run's),
    then `ybbench verify` of a copy of its folder whose summary names that copy; (the process,
    verify.json). The copy is dropped after."""
    pg, results, load, _ = tables
    copies = []

    def plant(tid: str, sql: str):
        copy = f"{pg.database}_{uuid.uuid4().hex[:6]}"
        source = f"{pg.database}_l" if tid == load else pg.database
        postgres.psql("postgres", f"CREATE DATABASE {copy} TEMPLATE {source}")
        copies.append(copy)
        target = dataclasses.replace(pg, database=copy)
        sql = sql(target) if callable(sql) else sql
        target.query(f"BEGIN; {sql}; COMMIT")
        mine = tmp_path / "results"
        shutil.copytree(results / tid, mine / tid)
        summary = json.loads((mine / tid / "summary.json").read_text())
        summary["written"]["database"] = copy
        (mine / tid / "summary.json").write_text(json.dumps(summary))
        return verify(mine, tid, pg)

    yield plant
    for copy in copies:
        postgres.psql("postgres", f"DROP DATABASE IF EXISTS {copy}")


def test_the_load_and_the_run_pass_all_twelve_conditions(postgres, tables, planted):
    pg, results, load, run = tables
    out, r = planted(load, "SELECT 1")  # nothing planted
    assert out.returncode == 0 and r["ok"] is True and r["phase"] == "load", out.stdout + out.stderr
    assert {k: r[k] for k in CHECKS} == {k: {"count": 0, "examples": []} for k in CHECKS}  # 11 checked, too
    assert (r["warehouses_checked"], r["districts_checked"], r["orders_checked"], r["customers_checked"]) == \
        (W, W * 10, W * 10 * 3000, W * 10 * 3000)
    assert all(f"  {k} (" in out.stdout and "): OK" in out.stdout for k in CHECKS)
    assert out.stdout.rstrip().endswith("OK: the load's rows are there and consistency conditions 1-12 hold")

    out, r = verify(results, run, pg)
    assert out.returncode == 0 and r["ok"] is True and r["phase"] == "run", out.stdout + out.stderr
    assert {k: r[k]["count"] for k in RUN_CHECKS} == dict.fromkeys(RUN_CHECKS, 0)
    deliveries = json.loads((results / run / "summary.json").read_text())["ops"]["delivery"]["count"]
    assert r["condition_11"]["skipped"] == (f"skipped: the run made {deliveries} Delivery transaction(s), and the "
                                            "condition holds only before the first (clause 3.3.2.11)")
    assert f"condition_11 (count(ORDER) - count(NEW_ORDER) = 2100, per district, before any Delivery): " \
           f"skipped: the run made {deliveries}" in out.stdout
    assert "consistency conditions 1-10 and 12 hold (11 skipped)" in out.stdout.splitlines()[-1]
    # The run did what conditions 8-10 and 12 are about: payments (remote ones too) and deliveries.
    assert int(pg.query("SELECT count(*) FROM history WHERE h_amount <> 10.00")) > 0
    assert int(pg.query("SELECT count(*) FROM orders WHERE o_id > 2100 AND o_carrier_id IS NOT NULL")) > 0


def one(pg, sql: str) -> int:
    return int(pg.query(sql))


def deliver(pg, d: int, o: int) -> str:
    """Order o of warehouse 1's district d delivered as the Delivery transaction would (clause 2.7.4.2),
    whichever order it is: its NEW_ORDER row gone, a carrier, its lines' delivery date, and their
    amount on its customer's balance."""
    where = f"o_w_id = 1 AND o_d_id = {d} AND o_id = {o}"
    lines = f"ol_w_id = 1 AND ol_d_id = {d} AND ol_o_id = {o}"
    assert one(pg, f"SELECT count(*) FROM new_order WHERE no_w_id = 1 AND no_d_id = {d} AND no_o_id = {o}") == 1
    return (f"DELETE FROM new_order WHERE no_w_id = 1 AND no_d_id = {d} AND no_o_id = {o}; "
            f"UPDATE orders SET o_carrier_id = 7 WHERE {where}; "
            f"UPDATE order_line SET ol_delivery_d = now() WHERE {lines}; "
            f"UPDATE customer SET c_balance = c_balance + (SELECT sum(ol_amount) FROM order_line WHERE {lines}), "
            "c_delivery_cnt = c_delivery_cnt + 1 WHERE (c_w_id, c_d_id, c_id) = "
            f"(SELECT o_w_id, o_d_id, o_c_id FROM orders WHERE {where})")


def newest(pg, d: int) -> int:
    return one(pg, f"SELECT max(o_id) FROM orders WHERE o_w_id = 1 AND o_d_id = {d}")


def of_order(pg, d: int, o: int, column: str) -> int:
    return one(pg, f"SELECT {column} FROM orders WHERE o_w_id = 1 AND o_d_id = {d} AND o_id = {o}")


def in_district(pg, table: str, d: int, what: str = "count(*)") -> int:
    w, dd = {"new_order": ("no_w_id", "no_d_id"), "orders": ("o_w_id", "o_d_id"),
             "order_line": ("ol_w_id", "ol_d_id")}[table]
    return one(pg, f"SELECT {what} FROM {table} WHERE {w} = 1 AND {dd} = {d}")


HISTORY_1 = "SELECT sum(h_amount) FROM history WHERE h_w_id = 1"
DISTRICT_7 = "SELECT d_ytd FROM district WHERE d_w_id = 1 AND d_id = 7"
CUSTOMER = "SELECT {} FROM customer WHERE c_w_id = 1 AND c_d_id = {} AND c_id = {}"

# Each condition's plant (SQL, or a function of the copy's database giving it), what breaks, how many,
# and how verify names the first. Warehouse 1 throughout; orders 1..2100 are the load's delivered ones,
# whose lines' amounts are 0.00 (clause 4.3.3.1), so undelivering one moves no balance.
PLANTS = {
    # A payment of 5.00 on warehouse 1's W_YTD and in HISTORY, but for no district and no customer:
    # W_YTD = sum(H_AMOUNT) still (8), each D_YTD untouched (9), no customer's history changed (10).
    "condition_1": ("INSERT INTO history (h_w_id, h_date, h_amount, h_data) VALUES (1, now(), 5.00, 'planted'); "
                    "UPDATE warehouse SET w_ytd = w_ytd + 5.00 WHERE w_id = 1", 1,
                    lambda pg: f"W_ID=1: W_YTD {pg.query('SELECT w_ytd + 5.00 FROM warehouse WHERE w_id = 1')} != "
                               f"sum(D_YTD) {pg.query('SELECT sum(d_ytd) FROM district WHERE d_w_id = 1')}"),
    # District 1's newest order (undelivered, so also max(NO_O_ID)) delivered ahead of its turn:
    # max(NO_O_ID) drops by one, the rest of NEW_ORDER stays gapless (3), carrier, dates and the
    # customer's balance follow (5, 7, 10, 12); O_ID and D_NEXT_O_ID untouched (orders_whole).
    "condition_2": (lambda pg: deliver(pg, 1, newest(pg, 1)), 1,
                    lambda pg: f"W_ID=1 D_ID=1: D_NEXT_O_ID - 1 {newest(pg, 1)}, max(O_ID) {newest(pg, 1)}, "
                               f"max(NO_O_ID) {newest(pg, 1) - 1}"),
    # District 2's fifth-oldest undelivered order delivered ahead of its turn: a gap in NEW_ORDER.
    "condition_3": (lambda pg: deliver(pg, 2, 4 + in_district(pg, "new_order", 2, "min(no_o_id)")), 1,
                    lambda pg: f"W_ID=1 D_ID=2: {in_district(pg, 'new_order', 2) - 1} NEW_ORDER rows"),
    # An order line of no order (O_ID 0) in district 3: no order's O_OL_CNT is off (6).
    "condition_4": ("INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
                    "ol_quantity, ol_amount, ol_dist_info) VALUES (0, 3, 1, 1, 1, 1, 5, 0.00, 'planted')", 1,
                    lambda pg: f"W_ID=1 D_ID=3: sum(O_OL_CNT) {in_district(pg, 'orders', 3, 'sum(o_ol_cnt)')} "
                               f"!= {in_district(pg, 'order_line', 3) + 1} ORDER_LINE rows"),
    # A delivered order of the load's without its carrier, and its lines without their date (7),
    # and no NEW_ORDER row.
    "condition_5": ("UPDATE orders SET o_carrier_id = NULL WHERE o_w_id = 1 AND o_d_id = 4 AND o_id = 100; "
                    "UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 4 AND ol_o_id = 100",
                    1, "W_ID=1 D_ID=4 O_ID=100: O_CARRIER_ID null, no NEW_ORDER row"),
    # One order's O_OL_CNT one up, the next one's one down: the district's sum (4) unchanged.
    "condition_6": ("UPDATE orders SET o_ol_cnt = o_ol_cnt + 1 WHERE o_w_id = 1 AND o_d_id = 5 AND o_id = 200; "
                    "UPDATE orders SET o_ol_cnt = o_ol_cnt - 1 WHERE o_w_id = 1 AND o_d_id = 5 AND o_id = 201", 2,
                    lambda pg: f"W_ID=1 D_ID=5 O_ID=200: O_OL_CNT {of_order(pg, 5, 200, 'o_ol_cnt') + 1} "
                               f"!= {of_order(pg, 5, 200, 'o_ol_cnt')} ORDER_LINE rows"),
    # One line of a delivered order of the load's (amount 0.00) without its delivery date.
    "condition_7": ("UPDATE order_line SET ol_delivery_d = NULL WHERE ol_w_id = 1 AND ol_d_id = 6 AND ol_o_id = 300 "
                    "AND ol_number = 1", 1,
                    lambda pg: f"W_ID=1 D_ID=6 O_ID=300: O_CARRIER_ID {of_order(pg, 6, 300, 'o_carrier_id')}, "
                               f"1 of its {of_order(pg, 6, 300, 'o_ol_cnt')} ORDER_LINE rows without OL_DELIVERY_D"),
    # A HISTORY row of 5.00 on warehouse 1, of no district and no customer, W_YTD left as it was.
    "condition_8": ("INSERT INTO history (h_w_id, h_date, h_amount, h_data) VALUES (1, now(), 5.00, 'planted')", 1,
                    lambda pg: f"W_ID=1: W_YTD {pg.query('SELECT w_ytd FROM warehouse WHERE w_id = 1')} != "
                               f"sum(H_AMOUNT) {pg.query(HISTORY_1 + ' + 5.00')}"),
    # One payment of district 7's moved to district 8 of the same warehouse: W_YTD's sum (8) and the
    # customer's (10) unchanged; districts 7 and 8 both off.
    "condition_9": ("UPDATE history SET h_d_id = 8 WHERE ctid = (SELECT ctid FROM history WHERE h_w_id = 1 "
                    "AND h_d_id = 7 LIMIT 1)", 2,
                    lambda pg: f"W_ID=1 D_ID=7: D_YTD {pg.query(DISTRICT_7)} != sum(H_AMOUNT) "),
    # A customer's C_BALANCE one up and C_YTD_PAYMENT one down: their sum (12) unchanged.
    "condition_10": ("UPDATE customer SET c_balance = c_balance + 1, c_ytd_payment = c_ytd_payment - 1 "
                     "WHERE c_w_id = 1 AND c_d_id = 8 AND c_id = 42", 1,
                     lambda pg: f"W_ID=1 D_ID=8 C_ID=42: C_BALANCE "
                                f"{pg.query(CUSTOMER.format('c_balance + 1', 8, 42))} != sum(OL_AMOUNT) "),
    # A customer's C_YTD_PAYMENT one up: C_BALANCE (10) untouched.
    "condition_12": ("UPDATE customer SET c_ytd_payment = c_ytd_payment + 1 WHERE c_w_id = 1 AND c_d_id = 10 "
                     "AND c_id = 7", 1,
                     lambda pg: "W_ID=1 D_ID=10 C_ID=7: C_BALANCE + C_YTD_PAYMENT "
                                f"{pg.query(CUSTOMER.format('c_balance', 10, 7))} + "
                                f"{pg.query(CUSTOMER.format('c_ytd_payment + 1', 10, 7))} = "
                                f"{pg.query(CUSTOMER.format('c_balance + c_ytd_payment + 1', 10, 7))} != "
                                f"sum(OL_AMOUNT) {pg.query(CUSTOMER.format('c_balance + c_ytd_payment', 10, 7))}"),
}


def _fails_alone(out, r, check: str, count: int, named: str, checks=RUN_CHECKS) -> None:
    assert out.returncode == 1 and r["ok"] is False, out.stdout + out.stderr
    assert {k: r[k]["count"] for k in checks} == {k: count if k == check else 0 for k in checks}, out.stdout
    assert r[check]["examples"][0].startswith(named), (r[check], named)
    assert f"  {check} (" in out.stdout and f"FAILED, {count} broken" in out.stdout and named in out.stdout
    assert out.stdout.rstrip().endswith(f"FAILED: {check}")


@pytest.mark.parametrize("check", list(PLANTS), ids=list(PLANTS))
def test_a_plant_that_breaks_one_condition_after_the_run_is_named(tables, planted, check):
    pg, _, _, run = tables
    sql, count, named = PLANTS[check]
    # What the first example says, from the clean tables (a copy's are the same until planted).
    named = named(pg) if callable(named) else named
    out, r = planted(run, sql)
    _fails_alone(out, r, check, count, named)
    assert r["condition_11"]["skipped"].startswith("skipped: the run made")


def test_a_delivery_after_the_load_breaks_condition_11_alone(tables, planted):
    """Condition 11 holds only on the load's tables: one Delivery, by the book (district 9's oldest
    undelivered order, 2,101), breaks it and nothing else; verify of the load names the district."""
    _, _, load, _ = tables
    out, r = planted(load, lambda pg: deliver(pg, 9, 2101))
    _fails_alone(out, r, "condition_11", 1, "W_ID=1 D_ID=9: count(ORDER) 3000 - count(NEW_ORDER) 899 = 2101, not 2100",
                 checks=CHECKS)
    assert "skipped" not in r["condition_11"]
