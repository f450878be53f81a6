"""tpcc-load and its verify against the session's PostgreSQL: one warehouse
loaded by 2 VUs (one the warehouse, one ITEM) holds TPC-C v5.11's
cardinalities (clause 4.3.3.1, the arithmetic written here) and its
random-data rules; `ybbench verify` passes it (all twelve consistency
conditions of clause 3.3.2), and finds and names each planted break of
conditions 1-4 (condition 2 through each of its three terms) and the other
conditions each plant breaks with it (tests/native/test_tpcc_conditions.py
breaks each of the twelve alone). Bad input is refused before anything is
written."""

from __future__ import annotations

import json
import uuid

import pytest

from ..support.stack import BIN
from ..support.ybbench_cli import USERS_K6, verify, ybbench_run

pytestmark = pytest.mark.late  # k6 v1.1.0 (native/build.sh late)

TABLES = ("warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock")
SYLLABLES = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"]


@pytest.fixture(scope="module")
def loaded(binaries, postgres, tmp_path_factory):
    """One warehouse, 2 VUs, under a prefix of its own; (prefix, results, testid, summary)."""
    prefix, tid = f"tp{uuid.uuid4().hex[:6]}_", f"tpcc{uuid.uuid4().hex[:8]}"
    results = tmp_path_factory.mktemp("tpcc") / "results"
    r = ybbench_run("tpcc-load", postgres, results, testid=tid,
                    knobs={"WAREHOUSES": "1", "VUS": "2", "TABLE_PREFIX": prefix}, extra_env=USERS_K6)
    assert r.code == 0, r.output + ((r.folder / "k6.log").read_text() if (r.folder / "k6.log").exists() else "")
    return prefix, results, tid, json.loads((r.folder / "summary.json").read_text())


def _count(pg, sql: str) -> int:
    return int(pg.query(sql))


def test_one_warehouse_holds_the_specs_cardinalities_and_random_data_rules(postgres, loaded):
    p, _, _, summary = loaded
    w, districts = 1, 10
    expected = {
        "item": 100_000,                      # once, whatever the warehouses
        "warehouse": w,
        "district": w * districts,
        "customer": w * districts * 3_000,
        "history": w * districts * 3_000,     # one a customer
        "orders": w * districts * 3_000,
        "new_order": w * districts * 900,     # orders 2,101 .. 3,000 of each district
        "stock": w * 100_000,
    }
    counts = {t: _count(postgres, f"SELECT count(*) FROM {p}{t}") for t in TABLES}
    assert {t: counts[t] for t in expected} == expected
    # ORDER_LINE: O_OL_CNT lines an order, each count 5..15, numbered 1..O_OL_CNT.
    assert counts["order_line"] == _count(postgres, f"SELECT sum(o_ol_cnt) FROM {p}orders")
    assert 5 * expected["orders"] <= counts["order_line"] <= 15 * expected["orders"]
    assert postgres.query(f"SELECT min(o_ol_cnt) || ' ' || max(o_ol_cnt) FROM {p}orders") == "5 15"
    assert _count(postgres, f"""SELECT count(*) FROM {p}orders o JOIN (SELECT ol_w_id, ol_d_id, ol_o_id, count(*) n,
        max(ol_number) top FROM {p}order_line GROUP BY 1, 2, 3) l ON (l.ol_w_id, l.ol_d_id, l.ol_o_id) =
        (o.o_w_id, o.o_d_id, o.o_id) WHERE l.n = o.o_ol_cnt AND l.top = o.o_ol_cnt""") == expected["orders"]
    # The run's own count of what it wrote: every row of every table.
    assert summary["rows_written"] == sum(counts.values())
    assert summary["errors"] == 0 and summary["written"]["warehouses"] == 1

    # 10% "ORIGINAL", exactly: of ITEM, and of each warehouse's STOCK; 10% bad credit a district.
    assert _count(postgres, f"SELECT count(*) FROM {p}item WHERE i_data LIKE '%ORIGINAL%'") == 10_000
    assert _count(postgres, f"SELECT count(*) FROM {p}stock WHERE s_data LIKE '%ORIGINAL%'") == 10_000
    assert postgres.query(f"SELECT DISTINCT count(*) FILTER (WHERE c_credit = 'BC') FROM {p}customer "
                          "GROUP BY c_d_id") == "300"
    assert postgres.query(f"SELECT DISTINCT c_credit FROM {p}customer ORDER BY 1").split() == ["BC", "GC"]
    # a-strings: alphanumeric, in their length ranges.
    for table, column, lo, hi in [("item", "i_name", 14, 24), ("item", "i_data", 26, 50), ("stock", "s_data", 26, 50),
                                  ("stock", "s_dist_07", 24, 24), ("customer", "c_data", 300, 500),
                                  ("customer", "c_first", 8, 16), ("history", "h_data", 12, 24)]:
        assert postgres.query(f"SELECT min(length({column})) || ' ' || max(length({column})) || ' ' || "
                              f"count(*) FILTER (WHERE {column} !~ '^[A-Za-z0-9]+$') FROM {p}{table}") == f"{lo} {hi} 0"
    # C_LAST: customers 1..1000 take 0..999 in order, the rest NURand(255, 0, 999): three syllables.
    names = {f"{SYLLABLES[n // 100]}{SYLLABLES[n // 10 % 10]}{SYLLABLES[n % 10]}": n for n in range(1000)}
    rows = [r.split("|") for r in postgres.query(f"SELECT c_id, c_last FROM {p}customer WHERE c_d_id = 4").splitlines()]
    assert len(rows) == 3_000
    assert all(names[last] == int(c) - 1 for c, last in rows if int(c) <= 1000)
    assert all(last in names for _, last in rows)
    # Orders: each district's customers once each; carrier and delivery date only for orders before 2,101.
    assert postgres.query(f"SELECT DISTINCT count(DISTINCT o_c_id) FROM {p}orders GROUP BY o_d_id") == "3000"
    assert _count(postgres, f"SELECT count(*) FROM {p}orders WHERE (o_carrier_id IS NULL) <> (o_id >= 2101)") == 0
    assert _count(postgres, f"SELECT count(*) FROM {p}order_line WHERE (ol_delivery_d IS NULL) <> (ol_o_id >= 2101) "
                            "OR (ol_amount = 0) <> (ol_o_id < 2101)") == 0
    assert postgres.query(f"SELECT DISTINCT min(no_o_id) || '-' || max(no_o_id) FROM {p}new_order GROUP BY no_d_id") \
        == "2101-3000"
    assert postgres.query(f"SELECT w_ytd FROM {p}warehouse") == "300000.00"
    assert postgres.query(f"SELECT DISTINCT d_ytd || ' ' || d_next_o_id FROM {p}district") == "30000.00 3001"


CHECKS = ("cardinality", *(f"condition_{i}" for i in range(1, 13)))


def _verify_fails(postgres, results, tid, check: str, named: str, also: dict | None = None) -> None:
    """check broken once, named; also: the other checks the plant breaks once, each with how its
    first example starts; every other check holds."""
    also = also or {}
    p, r = verify(results, tid, postgres)
    assert p.returncode == 1, p.stdout + p.stderr
    assert r["ok"] is False
    assert {k: r[k]["count"] for k in CHECKS} == {k: int(k == check or k in also) for k in CHECKS}, p.stdout
    for k, first in {check: named, **also}.items():
        assert r[k]["examples"][0].startswith(first), r[k]
        assert f"{k} (" in p.stdout and first in p.stdout
    assert "FAILED, 1 broken" in p.stdout
    assert p.stdout.rstrip().endswith(f"FAILED: {', '.join(k for k in CHECKS if k == check or k in also)}")


def test_verify_passes_the_load_and_names_each_planted_fault(postgres, loaded):
    p, results, tid, _ = loaded
    out, r = verify(results, tid, postgres)
    assert out.returncode == 0, out.stdout + out.stderr
    assert r["ok"] is True and r["scheme"] == "tpcc"
    assert {k: r[k] for k in CHECKS} == {k: {"count": 0, "examples": []} for k in CHECKS}
    assert r["warehouses_checked"] == 1 and r["districts_checked"] == 10
    assert all(f"{k} (" in out.stdout for k in CHECKS) and "OK: " in out.stdout

    # An order line deleted: sum(O_OL_CNT) of district 3 is one more than its lines (4), and order
    # 500's O_OL_CNT one more than its own (6).
    one = f"ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id = 500 AND ol_number = 1"
    postgres.query(f"CREATE TABLE {p}saved AS SELECT * FROM {p}order_line WHERE {one}; "
                   f"DELETE FROM {p}order_line WHERE {one}")
    _verify_fails(postgres, results, tid, "condition_4", "W_ID=1 D_ID=3:",
                  also={"condition_6": "W_ID=1 D_ID=3 O_ID=500: O_OL_CNT"})
    postgres.query(f"INSERT INTO {p}order_line SELECT * FROM {p}saved; DROP TABLE {p}saved")

    # A district's D_YTD changed: its warehouse's W_YTD is no longer the sum (1), nor is D_YTD its
    # HISTORY rows' (9).
    postgres.query(f"UPDATE {p}district SET d_ytd = d_ytd + 1 WHERE d_w_id = 1 AND d_id = 7")
    _verify_fails(postgres, results, tid, "condition_1", "W_ID=1:",
                  also={"condition_9": "W_ID=1 D_ID=7: D_YTD 30001.00 != sum(H_AMOUNT) 30000.00"})
    postgres.query(f"UPDATE {p}district SET d_ytd = d_ytd - 1 WHERE d_w_id = 1 AND d_id = 7")

    # A new_order row deleted from the middle breaks condition 3 alone. District 5 as loaded:
    # D_NEXT_O_ID 3001, O_ID 1..3000, NO_O_ID 2101..3000 (900 rows). Without NO_O_ID 2500:
    #   3: 899 rows != max(NO_O_ID) - min(NO_O_ID) + 1 = 3000 - 2101 + 1 = 900   broken
    #   2: D_NEXT_O_ID - 1 = 3001 - 1 = 3000 = max(O_ID) 3000 = max(NO_O_ID) 3000 (the max
    #      is not the row deleted)                                                 holds
    #   1 (W_YTD, D_YTD) and 4 (ORDERS, ORDER_LINE) read no NEW_ORDER row          hold
    #   5: order 2500 has no carrier and now no NEW_ORDER row                      broken
    #  11: count(ORDER) 3000 - count(NEW_ORDER) 899 = 2101, not 2100               broken
    # Condition 2 holding here is the point of deleting from the middle, not an accident:
    # _verify_fails asserts 3, 5 and 11 are the only checks broken. 2 is broken alone below
    # (3 alone, delivering an order out of turn, in test_tpcc_conditions.py).
    postgres.query(f"DELETE FROM {p}new_order WHERE no_w_id = 1 AND no_d_id = 5 AND no_o_id = 2500")
    _verify_fails(postgres, results, tid, "condition_3", "W_ID=1 D_ID=5: 899 NEW_ORDER rows",
                  also={"condition_5": "W_ID=1 D_ID=5 O_ID=2500: O_CARRIER_ID null, no NEW_ORDER row",
                        "condition_11": "W_ID=1 D_ID=5: count(ORDER) 3000 - count(NEW_ORDER) 899 = 2101"})
    postgres.query(f"INSERT INTO {p}new_order VALUES (2500, 5, 1)")

    out, r = verify(results, tid, postgres)
    assert out.returncode == 0 and r["ok"] is True, out.stdout


def test_verify_names_a_break_of_condition_2_alone(postgres, loaded):
    """Condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID), per district) broken through
    each of its three terms in turn, conditions 1, 3 and 4 left holding (the first plant breaks
    2 alone; the other two also 11, and the second 5, named with it); each plant undone.
    As loaded, each district: D_NEXT_O_ID 3001, O_ID 1..3000, NO_O_ID 2101..3000 (900 rows),
    D_YTD 30,000.00 and W_YTD 300,000.00 = 10 x 30,000.00. (After a tpcc run the first plant
    would also break orders_whole, the run's O_IDs against D_NEXT_O_ID: on the load only the
    consistency conditions are checked, so 2 can be broken alone.)"""
    p, results, tid, _ = loaded
    try:
        # D_NEXT_O_ID of district 8 bumped, 3001 -> 3002:
        #   2: D_NEXT_O_ID - 1 = 3001 != max(O_ID) 3000 (= max(NO_O_ID) 3000)      broken
        #   1: D_YTD untouched: W_YTD 300,000.00 = sum(D_YTD) 10 x 30,000.00        holds
        #   3: NEW_ORDER untouched: 900 rows = 3000 - 2101 + 1 = 900                holds
        #   4: ORDERS, ORDER_LINE untouched: sum(O_OL_CNT) = count(ORDER_LINE)      holds
        #   5-12: no order, line, HISTORY row or customer touched                   hold
        postgres.query(f"UPDATE {p}district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 1 AND d_id = 8")
        _verify_fails(postgres, results, tid, "condition_2",
                      "W_ID=1 D_ID=8: D_NEXT_O_ID - 1 3001, max(O_ID) 3000, max(NO_O_ID) 3000")
    finally:
        postgres.query(f"UPDATE {p}district SET d_next_o_id = 3001 WHERE d_w_id = 1 AND d_id = 8")

    try:
        # The last NEW_ORDER row of district 2 (NO_O_ID 3000) deleted: only max(NO_O_ID) moves.
        #   2: D_NEXT_O_ID - 1 = 3000 = max(O_ID) 3000 != max(NO_O_ID) 2999         broken
        #   3: 899 rows = max(NO_O_ID) - min(NO_O_ID) + 1 = 2999 - 2101 + 1 = 899   holds
        #   1, 4: no NEW_ORDER row in them                                          hold
        #   5: order 3000, no carrier, has no NEW_ORDER row                          broken
        #  11: count(ORDER) 3000 - count(NEW_ORDER) 899 = 2101                       broken
        # (2 alone through this term, the order delivered out of turn: test_tpcc_conditions.py)
        postgres.query(f"DELETE FROM {p}new_order WHERE no_w_id = 1 AND no_d_id = 2 AND no_o_id = 3000")
        _verify_fails(postgres, results, tid, "condition_2",
                      "W_ID=1 D_ID=2: D_NEXT_O_ID - 1 3000, max(O_ID) 3000, max(NO_O_ID) 2999",
                      also={"condition_5": "W_ID=1 D_ID=2 O_ID=3000: O_CARRIER_ID null, no NEW_ORDER row",
                            "condition_11": "W_ID=1 D_ID=2: count(ORDER) 3000 - count(NEW_ORDER) 899 = 2101"})
    finally:
        postgres.query(f"INSERT INTO {p}new_order (no_o_id, no_d_id, no_w_id) SELECT 3000, 2, 1 WHERE NOT EXISTS "
                       f"(SELECT 1 FROM {p}new_order WHERE no_w_id = 1 AND no_d_id = 2 AND no_o_id = 3000)")

    # Order 3000 of district 6 and its O_OL_CNT = n order lines deleted, its NEW_ORDER row kept:
    # only max(O_ID) moves.
    #   2: D_NEXT_O_ID - 1 = 3000 != max(O_ID) 2999 (max(NO_O_ID) 3000)           broken
    #   4: sum(O_OL_CNT) - n = count(ORDER_LINE) - n                                holds
    #   3: NEW_ORDER untouched: 900 rows = 3000 - 2101 + 1 = 900                    holds
    #   1: D_YTD untouched                                                          holds
    #   5-7: the order is gone with its lines; 10, 12: it was undelivered            hold
    #  11: count(ORDER) 2999 - count(NEW_ORDER) 900 = 2099                           broken
    order, lines = "o_w_id = 1 AND o_d_id = 6 AND o_id = 3000", "ol_w_id = 1 AND ol_d_id = 6 AND ol_o_id = 3000"
    postgres.query(f"CREATE TABLE {p}saved_o AS SELECT * FROM {p}orders WHERE {order}; "
                   f"CREATE TABLE {p}saved_ol AS SELECT * FROM {p}order_line WHERE {lines}")
    try:
        assert _count(postgres, f"SELECT count(*) FROM {p}saved_ol") == \
            _count(postgres, f"SELECT o_ol_cnt FROM {p}saved_o") >= 5
        postgres.query(f"DELETE FROM {p}order_line WHERE {lines}; DELETE FROM {p}orders WHERE {order}")
        _verify_fails(postgres, results, tid, "condition_2",
                      "W_ID=1 D_ID=6: D_NEXT_O_ID - 1 3000, max(O_ID) 2999, max(NO_O_ID) 3000",
                      also={"condition_11": "W_ID=1 D_ID=6: count(ORDER) 2999 - count(NEW_ORDER) 900 = 2099"})
    finally:
        postgres.query(f"DELETE FROM {p}order_line WHERE {lines}; DELETE FROM {p}orders WHERE {order}; "
                       f"INSERT INTO {p}orders SELECT * FROM {p}saved_o; "
                       f"INSERT INTO {p}order_line SELECT * FROM {p}saved_ol; "
                       f"DROP TABLE {p}saved_o; DROP TABLE {p}saved_ol")

    out, r = verify(results, tid, postgres)
    assert out.returncode == 0 and r["ok"] is True, out.stdout


def test_a_second_load_into_loaded_tables_is_refused(binaries, postgres, loaded, tmp_path):
    p = loaded[0]
    before = _count(postgres, f"SELECT count(*) FROM {p}item")
    r = ybbench_run("tpcc-load", postgres, tmp_path / "results", testid=f"again{uuid.uuid4().hex[:6]}",
                    knobs={"WAREHOUSES": "1", "VUS": "2", "TABLE_PREFIX": p})
    assert r.code != 0 and f"table {p}warehouse already holds rows" in r.output, r.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    assert _count(postgres, f"SELECT count(*) FROM {p}item") == before


@pytest.mark.parametrize("knobs,message", [
    ({"WAREHOUSES": "0"}, 'invalid WAREHOUSES="0": must be between 1'),
    ({"WAREHOUSES": "abc"}, 'invalid WAREHOUSES="abc": not a whole number'),
    ({"TABLE_PREFIX": "Bad-"}, 'invalid TABLE_PREFIX="Bad-"'),
    ({"LOAD_MODEL": "constant-arrival-rate", "RATE": "10"}, "LOAD_MODEL=constant-arrival-rate: tpcc-load loads"),
], ids=["warehouses-0", "warehouses-abc", "prefix", "open-model"])
def test_bad_input_is_named_and_nothing_is_written(binaries, postgres, tmp_path, knobs, message):
    prefix = f"bad{uuid.uuid4().hex[:6]}_"
    r = ybbench_run("tpcc-load", postgres, tmp_path / "results", testid=f"bad{uuid.uuid4().hex[:6]}",
                    knobs={"TABLE_PREFIX": prefix, **knobs})
    assert r.code != 0 and message in r.output, r.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    assert postgres.query(f"SELECT count(*) FROM pg_class WHERE relname LIKE '{prefix}%' "
                          f"OR relname LIKE 'bad-%'") == "0"


@pytest.mark.parametrize("k6", ["k6-v1.1", "k6-official"])
def test_the_load_writes_what_it_says_on_the_oldest_k6_and_one_without_pgx(binaries, postgres, tmp_path, k6):
    """The other k6s every workload runs on (test_k6_matrix, test_official_extensions: those load
    through every driver; this one always writes through lib/pq): the rows in the nine tables are
    the summary's rows_written and the load verifies."""
    prefix, tid = f"tk{uuid.uuid4().hex[:6]}_", f"tpk{uuid.uuid4().hex[:8]}"
    r = ybbench_run("tpcc-load", postgres, tmp_path / "results", testid=tid,
                    knobs={"WAREHOUSES": "1", "VUS": "2", "TABLE_PREFIX": prefix}, extra_env={"K6": str(BIN / k6)})
    assert r.code == 0, r.output
    rows = sum(_count(postgres, f"SELECT count(*) FROM {prefix}{t}") for t in TABLES)
    assert rows == r.digest()["rows_written"] > 0
    p, _ = verify(tmp_path / "results", tid, postgres)
    assert p.returncode == 0, p.stdout + p.stderr

