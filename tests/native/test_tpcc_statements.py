"""tpcc with TPCC_STYLE=statements (each transaction BEGIN, its statements one
round trip each, COMMIT, as yugabyte/tpcc sends them) on two warehouses that
tpcc-load filled, against the session's PostgreSQL 15: the mix, NURand's ids
and the rollback and remote rates pass the checks the procedures style
passes (tests/support/tpcc_stats.py, as test_tpcc_run.py); `ybbench verify`
passes every run; at ISOLATION=serializable the serialization failures are
retried whole and counted, and a transaction out of retries is an error that
left nothing behind; the server's count of statements per committed
transaction (pg_stat_statements, which the test PostgreSQL preloads) is the
specification's statement list, written out here; a New-Order whose
connection is killed between its statements leaves nothing behind and is
not counted as committed; other drivers are refused."""

from __future__ import annotations

import json
import threading
import uuid

import numpy as np
import pytest

from ..support.dashboards import fill, promql_queries
from ..support.stack import wait_until
from ..support.tpcc_orders import run_orders
from ..support.tpcc_stats import DECK, FALSE_FAILURE, chi_square_p, nurand_probabilities, q, within
from ..support.ybbench_cli import verify, ybbench_run

W, VUS = 2, 4
STATEMENTS = {"TPCC_STYLE": "statements", "DB_DRIVER": "pgconn"}


@pytest.fixture(scope="module")
def loaded(binaries, postgres, tmp_path_factory):
    """Two warehouses under a prefix of their own: (prefix, results, load testid)."""
    prefix, tag = f"ts{uuid.uuid4().hex[:6]}_", uuid.uuid4().hex[:6]
    results = tmp_path_factory.mktemp("tpcc-statements") / "results"
    load = ybbench_run("tpcc-load", postgres, results, testid=f"load{tag}",
                       knobs={"WAREHOUSES": str(W), "VUS": "2", "TABLE_PREFIX": prefix})
    assert load.code == 0, load.output
    return prefix, results, f"load{tag}"


def run(postgres, loaded, name: str, knobs: dict, expect: int = 0, prometheus: str | None = None):
    prefix, results, load = loaded
    tid = f"{load.replace('load', name, 1)}"
    r = ybbench_run("tpcc", postgres, results, testid=tid, knobs={**STATEMENTS, **knobs},
                    extra_args=["--keys-from", load], prometheus=prometheus)
    log = (r.folder / "k6.log").read_text() if (r.folder / "k6.log").exists() else ""
    assert r.code == expect, r.output + log
    return tid, r.digest(), log


@pytest.fixture(scope="module")
def ran(postgres, loaded):
    """20 s at 4 VUs (two a warehouse), the server's default isolation (read committed)."""
    tid, s, _ = run(postgres, loaded, "run", {"VUS": str(VUS), "DURATION": "20s"})
    return tid, s


def test_the_mix_nurand_and_rates_are_the_procedures_styles(postgres, loaded, ran):
    prefix = loaded[0]
    _, s = ran
    assert s["tpcc"]["style"] == "statements" and s["errors"] == 0, s["tpcc"]
    counts = {op: s["ops"][op]["count"] for op in DECK}
    n = sum(counts.values())
    assert n > 1_500, counts
    for op, cards in DECK.items():
        assert abs(counts[op] - n * cards / 23) <= VUS * cards, (op, counts)

    c = s["written"]["c"]
    observed = np.zeros(3000)
    for row in postgres.query(f"SELECT o_c_id, count(*) FROM {run_orders(prefix, s)} GROUP BY 1").splitlines():
        v, k = map(int, row.split("|"))
        observed[v - 1] = k
    assert chi_square_p(observed, nurand_probabilities(1023, 1, 3000, c["id"])) > FALSE_FAILURE
    assert chi_square_p(observed, np.full(3000, 1 / 3000)) < FALSE_FAILURE

    t = s["tpcc"]
    no = s["ops"]["new_order"]["count"]
    assert t["new_orders"]["rolled_back"] > 0 and within(t["new_orders"]["rolled_back"], no, 0.01), t
    assert t["new_orders"]["failed"] == 0
    # Committed is what the tables hold: the rolled-back orders left nothing.
    assert q(postgres, f"SELECT count(*) FROM {run_orders(prefix, s)}") == t["new_orders"]["committed"]
    # NOPM: the database's D_NEXT_O_ID advance is those orders, over tpmC's minutes.
    assert t["nopm"]["new_orders"] == t["new_orders"]["committed"] and t["nopm"]["agrees"], t["nopm"]
    assert t["nopm"]["nopm"] == pytest.approx(t["new_orders"]["committed"] / (s["duration_s"] / 60), rel=1e-9)
    lines, remote = map(int, postgres.query(
        f"SELECT count(*), count(*) FILTER (WHERE ol_supply_w_id <> ol_w_id) FROM {run_orders(prefix, s)} "
        f"JOIN {prefix}order_line ON (ol_w_id, ol_d_id, ol_o_id) = (o_w_id, o_d_id, o_id)").split("|"))
    assert remote > 0 and within(remote, lines, 0.01), (remote, lines)
    payments = s["ops"]["payment"]["count"]
    assert q(postgres, f"SELECT count(*) FROM {prefix}history") - W * 10 * 3000 == payments
    # Both latencies reported: the final attempt's alone, and the transaction's with its retries.
    for op in DECK:
        a = t["attempts"][op]
        assert a["latency_ms"]["p50"] > 0 and a["latency_ms"]["p50"] <= s["ops"][op]["latency_ms"]["p99"], (op, a)
        assert a["latency_ms"]["avg"] > 0 and s["ops"][op]["latency_ms"]["avg"] >= a["latency_ms"]["avg"], (op, a)
        assert a["retries"] == s["ops"][op]["retries"]


def test_verify_passes_the_run(postgres, loaded, ran):
    tid, _ = ran
    out, r = verify(loaded[1], tid, postgres)
    assert out.returncode == 0 and r["ok"] is True and r["phase"] == "run", out.stdout + out.stderr
    assert all(r[f"condition_{i}"]["count"] == 0 for i in range(1, 13)), out.stdout


def test_serialization_failures_are_retried_whole_and_counted(postgres, loaded, prometheus):
    """ISOLATION=serializable, 4 VUs on the two warehouses, MAX_RETRIES=2 (yugabyte/tpcc's default):
    every Payment of a warehouse updates its W_YTD, so concurrent ones fail with 40001 at the update or the
    commit; each is retried from BEGIN, and one that fails a third time is an error (SQLSTATE class 40),
    rolled back whole. Both happen in every run: PostgreSQL's serializable cancels some transactions again
    and again (on a busy host one New-Order in eight needed more than 10 retries, two more than 100), so
    a test that waited for none to give up failed on such a host. The retry histogram adds up to k6's
    counts, the tables hold only what committed, and the statements style's TPC-C panels show the run."""
    prefix = loaded[0]
    history = q(postgres, f"SELECT count(*) FROM {prefix}history")
    tid, s, _ = run(postgres, loaded, "ser", {"VUS": str(VUS), "DURATION": "10s", "ISOLATION": "serializable",
                                               "MAX_RETRIES": "2"}, expect=99, prometheus=prometheus.url)
    retries = {op: s["ops"][op]["retries"] for op in DECK}
    gave_up = {op: s["ops"][op]["errors"] for op in DECK}
    print(f"serializable, {VUS} VUs on {W} warehouses: retries {retries}, gave up {gave_up}, "
          f"transactions {sum(s['ops'][op]['count'] for op in DECK)}")
    # Exit 99 is k6's crossed threshold on ybbench_errors: the transactions that gave up, all class 40.
    assert retries["payment"] > 0 and s["errors"] == sum(gave_up.values()) > 0, (retries, gave_up)
    assert s["errors_by_class"] == {"40": s["errors"]}, s["errors_by_class"]
    t = s["tpcc"]
    for op in DECK:
        a = t["attempts"][op]
        assert a["retries"] == retries[op], (op, a)
        # Each transaction in the bucket of its retries, 0 to 2; one that gave up in bucket 2.
        h = a["retry_histogram"]
        assert sum(h.values()) == s["ops"][op]["count"], (op, h)
        assert all(n == 0 for k, n in h.items() if k not in ("0", "1", "2")), (op, h)
        assert sum(int(k) * n for k, n in h.items() if n) == retries[op], (op, h)
        assert gave_up[op] <= h["2"], (op, h, gave_up[op])
        # Every failed attempt timed: each retried one, and each transaction's last when it gave up.
        f = a["failed_attempts"]
        assert f["count"] == retries[op] + gave_up[op], (op, f)
        assert (a["failed_attempts_ms"] > 0) == (f["count"] > 0), (op, a)
        if f["count"]:
            lat = f["latency_ms"]
            assert 0 < lat["avg"] <= lat["max"] and lat["p99"] <= lat["max"], (op, f)
            assert lat["avg"] * f["count"] == pytest.approx(a["failed_attempts_ms"], rel=1e-6), (op, f)
    print(f"retry histogram: { {op: {k: n for k, n in t['attempts'][op]['retry_histogram'].items() if n} for op in DECK} }")
    _the_statements_panels_answer(prometheus, loaded[1], tid)
    # Each retried transaction committed once, and one that gave up left nothing: the HISTORY rows are
    # the Payments that did not give up, the orders the committed New-Orders (neither given up nor
    # rolled back).
    paid = s["ops"]["payment"]["count"] - gave_up["payment"]
    assert q(postgres, f"SELECT count(*) FROM {prefix}history") - history == paid
    no = t["new_orders"]
    assert no["failed"] == gave_up["new_order"]
    assert no["committed"] == s["ops"]["new_order"]["count"] - no["failed"] - no["rolled_back"], no
    assert q(postgres, f"SELECT count(*) FROM {run_orders(prefix, s)}") == no["committed"]
    out, r = verify(loaded[1], tid, postgres)
    assert out.returncode == 0 and r["ok"] is True, out.stdout + out.stderr


def _the_statements_panels_answer(prometheus, results, tid):
    """The statements style's TPC-C panels (retries, attempts) on the run: each query has a point above 0."""
    params = json.loads((results / tid / "params.json").read_text())
    for query in promql_queries(tpcc=True, statements=True):
        expr = fill(query.expr, {"testid": tid, "cluster": "native", "__rate_interval": "6s"})
        got = prometheus.api("query_range", query=expr, start=params["started_unix_s"],
                             end=params["finished_unix_s"] + 5, step="2")["result"]
        assert got and any(float(v) > 0 for s in got for _, v in s["values"]), f"{query}: no data from {expr}"


# The specification's statements a transaction (clauses A.1-A.5; lib/tpcc_statements.js sends one a
# round trip), BEGIN and COMMIT not included:
#   New-Order    customer and warehouse, district (FOR UPDATE), district's D_NEXT_O_ID, ORDER row,
#                NEW_ORDER row: 5; then per order line item, stock (FOR UPDATE), stock update, ORDER_LINE
#                row: 4. Rolled back: the 4 of each line before the unused item's, that item's 1 query.
#   Payment      warehouse (FOR UPDATE), W_YTD, district (FOR UPDATE), D_YTD, customer (FOR UPDATE), its
#                update, HISTORY row: 7; + 1 by last name (the ids, C_FIRST order); + 1 a bad-credit
#                customer's C_DATA.
#   Order-Status customer (by id, or by last name), newest order, its lines: 3.
#   Delivery     per district with an undelivered order: oldest NEW_ORDER (FOR UPDATE), its delete, the
#                order's customer, O_CARRIER_ID, OL_DELIVERY_D, sum(OL_AMOUNT), the customer's balance: 7.
#   Stock-Level  D_NEXT_O_ID, the count of low stock: 2.
NEW_ORDER_FIXED, NEW_ORDER_PER_LINE, PAYMENT, ORDER_STATUS, DELIVERY_PER_DISTRICT, STOCK_LEVEL = 5, 4, 7, 3, 7, 2


# Each statement by a piece of its text no other has (as pg_stat_statements shows it: constants as
# $n), and what it belongs to.
KINDS = [
    ("SELECT c_discount, c_last, c_credit, w_tax", "no"), ("SELECT d_next_o_id, d_tax", "no"),
    ("SET d_next_o_id", "no"), ("INSERT INTO {p}orders", "no"), ("INSERT INTO {p}new_order", "no"),
    ("SELECT i_price", "no_item"), ("SELECT s_quantity", "no_line"), ("UPDATE {p}stock", "no_line"),
    ("INSERT INTO {p}order_line", "no_line"),
    ("SELECT w_name", "pay"), ("SET w_ytd", "pay"), ("SELECT d_name", "pay"), ("SET d_ytd", "pay"),
    ("SELECT c_first, c_middle, c_last, c_street_1", "pay"), ("c_payment_cnt + $5 WHERE", "pay_update"),
    ("c_data = $5 WHERE", "pay_update_bc"), ("INSERT INTO {p}history", "pay"),
    ("SELECT c_id FROM", "pay_by_name"), ("SELECT c_data", "pay_bc"),
    ("SELECT c_id, c_balance", "os_by_name"), ("SELECT c_balance, c_first", "os_by_id"),
    ("SELECT o_id, o_carrier_id", "os"), ("SELECT ol_i_id", "os"),
    ("SELECT no_o_id", "dl"), ("DELETE FROM {p}new_order", "dl"), ("SELECT o_c_id", "dl"),
    ("SET o_carrier_id", "dl"), ("SET ol_delivery_d", "dl"), ("sum(ol_amount)", "dl"), ("c_delivery_cnt = c_delivery_cnt +", "dl"),
    ("SELECT d_next_o_id FROM", "sl"), ("count(DISTINCT s_i_id)", "sl"),
]


def _calls(postgres, prefix: str) -> dict[str, int]:
    """pg_stat_statements' calls of the statements on this module's tables (their prefix), by text."""
    rows = postgres.query("SELECT calls, regexp_replace(query, '\\s+', ' ', 'g') FROM pg_stat_statements "
                          f"WHERE query LIKE '%{prefix}%'").splitlines()
    return {text: int(calls) for calls, text in (row.split("|", 1) for row in rows)}


# The run's setup (tpcc.js): its indexes, its check of the warehouses, where each district stood.
SETUP = ("CREATE ", "SELECT count(*)::float8", "SELECT d_w_id, d_id, d_next_o_id")


def _by_piece(before: dict, after: dict, prefix: str) -> dict[str, int]:
    """The statements' calls between the two, by KINDS' piece; each statement that ran is one of them."""
    out = dict.fromkeys((k.format(p=prefix) for k, _ in KINDS), 0)
    for text, calls in after.items():
        delta = calls - before.get(text, 0)
        if delta == 0 or text.startswith(SETUP):
            continue
        pieces = [k for k in out if k in text]
        assert len(pieces) == 1, (text, pieces)
        out[pieces[0]] += delta
    return out


def _sessions_sampled(folder) -> int:
    """The transactions of the run's lock-wait sampler (run/db_sessions.py, autocommit): its SET, a query
    a sample."""
    sessions = json.loads((folder / "usage.json").read_text())["sessions"]
    return (1 + len(sessions["samples"])) * len(sessions["nodes"])


def _xacts(postgres) -> tuple[int, int]:
    """The database's committed and rolled-back transactions (pg_stat_database). pg_stat_statements
    counts BEGIN and COMMIT only the first times a connection runs them as prepared statements."""
    return tuple(map(int, postgres.query("SELECT xact_commit, xact_rollback FROM pg_stat_database "
                                         "WHERE datname = current_database()").split("|")))


def test_the_servers_round_trips_a_transaction_are_the_specifications_statements(postgres, loaded):
    """One VU, so no retry and no wait: each statement the server ran (pg_stat_statements' calls, before and
    after the run) against the list above, with BEGIN and COMMIT (or ROLLBACK) two more round trips a
    transaction; the procedures style sends one (test_tpcc_run.py counts its calls)."""
    prefix = loaded[0]
    kinds = {k.format(p=prefix): kind for k, kind in KINDS}
    # Autovacuum's and autoanalyze's transactions count in pg_stat_database too, one a table a worker
    # visits (a busy host's full suite saw 89 beyond the run's): off for the count, and the workers already
    # started (the setting stops new ones only) gone.
    postgres.query("ALTER SYSTEM SET autovacuum = off")
    postgres.query("SELECT pg_reload_conf()")
    try:
        wait_until(lambda: postgres.query("SELECT count(*) FROM pg_stat_activity "
                                          "WHERE backend_type = 'autovacuum worker'") == "0",
                   "the autovacuum workers finished", timeout=120)
        _count_round_trips(postgres, loaded, prefix, kinds)
    finally:
        postgres.query("ALTER SYSTEM RESET autovacuum")
        postgres.query("SELECT pg_reload_conf()")


def _count_round_trips(postgres, loaded, prefix, kinds):
    calls0, xacts0 = _calls(postgres, prefix), _xacts(postgres)
    since = postgres.query("SELECT localtimestamp")
    tid, s, _ = run(postgres, loaded, "trips", {"VUS": "1", "DURATION": "8s"})
    sampled = _sessions_sampled(loaded[1] / tid)
    calls = _by_piece(calls0, _calls(postgres, prefix), prefix)
    assert s["errors"] == 0 and all(s["ops"][op]["retries"] == 0 for op in DECK), s["ops"]
    by = {}
    for k, n in calls.items():
        by.setdefault(kinds[k], []).append(n)
    t = s["tpcc"]
    n = {op: s["ops"][op]["count"] for op in DECK}
    committed, rolled = t["new_orders"]["committed"], t["new_orders"]["rolled_back"]
    lines = q(postgres, f"SELECT coalesce(sum(o_ol_cnt), 0) FROM {run_orders(prefix, s)}")
    bc = q(postgres, f"SELECT count(*) FROM {prefix}history h JOIN {prefix}customer c ON (c_w_id, c_d_id, c_id) = "
                     f"(h_c_w_id, h_c_d_id, h_c_id) WHERE c_credit = 'BC' AND h_date >= '{since}'")
    assert min(n.values()) > 0 and committed > 0 and rolled >= 0, n

    # New-Order: its 5 fixed statements once each, an item query a line (the unused item's too), the
    # other 3 of a line for each committed line and each rolled-back order's lines before the unused one.
    assert by["no"] == [committed + rolled] * 5, by["no"]
    assert by["no_line"][0] == by["no_line"][1] == by["no_line"][2] == by["no_item"][0] - rolled
    before_unused = by["no_line"][0] - lines
    assert 4 * rolled <= before_unused <= 14 * rolled, (before_unused, rolled)
    # Payment: 7 a payment, the ids by last name ~60% of them, C_DATA for each bad-credit customer's.
    assert by["pay"] == [n["payment"]] * 6 and by["pay_update"][0] + by["pay_update_bc"][0] == n["payment"]
    assert by["pay_bc"] == by["pay_update_bc"] == [bc], (by["pay_bc"], bc)
    assert within(by["pay_by_name"][0], n["payment"], 0.6), (by["pay_by_name"], n["payment"])
    # Order-Status: the customer (by last name or by id), the newest order, its lines.
    assert by["os_by_name"][0] + by["os_by_id"][0] == n["order_status"] and by["os"] == [n["order_status"]] * 2
    # Delivery: every district still has undelivered orders (the load left 900 each): 7 statements each.
    assert by["dl"] == [10 * n["delivery"]] * 7, by["dl"]
    assert by["sl"] == [n["stock_level"]] * 2
    # BEGIN and COMMIT (ROLLBACK for the rolled-back New-Orders): two more round trips a transaction, so
    # each of k6's transactions is one of the server's. The server's count holds, besides: the lock-wait
    # sampler's (one a second for as long as the run took, its SET one more: usage.json lists each
    # sample), this test's reads of the count while the backends flush theirs (each a transaction:
    # counted), the run's setup and NOPM read and this test's other queries (25 here, more on a busy
    # host's full suite: 57 once). The bound, 5% of the run's, is far below what the fault it guards
    # against adds: statements sent without BEGIN, each its own transaction, some 27 more a transaction.
    total = sum(n.values())
    reads = []

    def counted() -> bool:
        reads.append(1)
        return _xacts(postgres)[0] - xacts0[0] >= total - rolled

    wait_until(counted, "the run's commits counted", timeout=15)
    commits, rollbacks = (a - b for a, b in zip(_xacts(postgres), xacts0))
    others = commits - (total - rolled) - sampled - len(reads)
    print(f"commits {commits}, the run's {total - rolled}, the sampler's {sampled}, the count's reads "
          f"{len(reads)}, others {others}")
    assert 0 <= others <= 0.05 * total and rollbacks == rolled, (commits, rollbacks, total, rolled, sampled,
                                                                  len(reads))

    trips = {
        "new_order": 2 + sum(by["no"]) / (committed + rolled) + (sum(by["no_line"]) + by["no_item"][0]) / (committed + rolled),
        "payment": 2 + sum(sum(by[k]) for k in ("pay", "pay_update", "pay_update_bc", "pay_by_name", "pay_bc")) / n["payment"],
        "order_status": 2 + (by["os_by_name"][0] + by["os_by_id"][0] + sum(by["os"])) / n["order_status"],
        "delivery": 2 + sum(by["dl"]) / n["delivery"],
        "stock_level": 2 + sum(by["sl"]) / n["stock_level"],
    }
    # The specification's counts written out: New-Order 2 + 5 + 4 a line (10 lines on average), Payment
    # 2 + 7 + 0.6 + 0.1, Order-Status 2 + 3, Delivery 2 + 70, Stock-Level 2 + 2.
    assert trips["new_order"] == pytest.approx(2 + NEW_ORDER_FIXED + NEW_ORDER_PER_LINE * 10, abs=1.5)
    assert trips["payment"] == pytest.approx(2 + PAYMENT + 0.6 + 0.1, abs=0.25)
    assert trips["order_status"] == 2 + ORDER_STATUS
    assert trips["delivery"] == 2 + 10 * DELIVERY_PER_DISTRICT
    assert trips["stock_level"] == 2 + STOCK_LEVEL
    every = (sum(trips[op] * n[op] for op in DECK)) / total
    print(f"round trips a transaction, statements style (server-counted): "
          f"{ {op: round(v, 2) for op, v in trips.items()} }, all {every:.2f}; procedures style: 1 each")


def test_a_new_order_killed_between_its_statements_leaves_nothing_half_done(postgres, loaded):
    """While 2 VUs run, another session terminates (pg_terminate_backend) backends that sit idle in a
    transaction right after one of a New-Order's writing statements: the server rolls each back; k6 counts
    it failed, never committed; the orders the tables hold are the committed ones, and verify passes."""
    prefix, results, _ = loaded
    # The New-Order's statements after its first write, as pg_stat_activity shows the last one sent.
    after_write = " OR ".join(f"query LIKE '{x}%'" for x in (
        f"UPDATE {prefix}district SET d_next_o_id", f"INSERT INTO {prefix}orders", f"INSERT INTO {prefix}new_order",
        "SELECT i_price", "SELECT s_quantity", f"UPDATE {prefix}stock", f"INSERT INTO {prefix}order_line"))
    postgres.query(f"CREATE TABLE {prefix}kills (pid int, query text)")
    killer = threading.Thread(target=postgres.query, args=(f"""DO $$
        DECLARE r record; n int := 0;
        BEGIN
          PERFORM pg_sleep(4);  -- past the run's setup
          FOR i IN 1 .. 1500 LOOP
            PERFORM pg_stat_clear_snapshot();
            FOR r IN SELECT pid, query FROM pg_stat_activity WHERE state = 'idle in transaction' AND ({after_write}) LOOP
              IF pg_terminate_backend(r.pid) THEN
                INSERT INTO {prefix}kills VALUES (r.pid, r.query);
                n := n + 1;
              END IF;
            END LOOP;
            EXIT WHEN n >= 5;
            PERFORM pg_sleep(0.005);
          END LOOP;
        END $$""",))
    killer.start()
    tid, s, log = run(postgres, loaded, "kill", {"VUS": "2", "DURATION": "12s"}, expect=99)
    killer.join()
    kills = q(postgres, f"SELECT count(*) FROM {prefix}kills")
    print(f"killed {kills} New-Order(s) mid-transaction; k6: {s['tpcc']['new_orders']}, {s['errors_by_class']}")
    assert kills > 0
    t = s["tpcc"]
    assert t["new_orders"]["failed"] >= 1 and s["errors"] == s["errors_by_class"].get("57", 0) + \
        s["errors_by_class"].get("none", 0) + s["errors_by_class"].get("08", 0), s["errors_by_class"]
    assert "57P01" in log or "terminating connection" in log, log[-2000:]
    assert q(postgres, f"SELECT count(*) FROM {run_orders(prefix, s)}") == t["new_orders"]["committed"] > 0
    out, r = verify(results, tid, postgres)
    assert out.returncode == 0 and r["ok"] is True, out.stdout + out.stderr


def test_other_drivers_are_refused(binaries, postgres, loaded, tmp_path):
    prefix, _, load = loaded
    r = ybbench_run("tpcc", postgres, loaded[1], testid=f"{load}-pq",
                    knobs={"TPCC_STYLE": "statements", "DB_DRIVER": "postgres", "DURATION": "2s"},
                    extra_args=["--keys-from", load])
    assert r.code != 0 and "TPCC_STYLE=statements needs DB_DRIVER=pgconn (DB_DRIVER=postgres is set)" in \
        r.output + ((r.folder / "k6.log").read_text() if (r.folder / "k6.log").exists() else ""), r.output
