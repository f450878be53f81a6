"""tpcc (TPC-C's five transactions, throughput mode) on two warehouses that
tpcc-load filled, against the session's PostgreSQL: the mix is the deck's,
NURand's ids follow its definition, rollbacks and remote lines and payments
come at their rates, tpmC is the New-Orders the tables hold, each
transaction's count is the server's, and `ybbench verify` passes the run and
names each planted loss. Expected values are TPC-C v5.11's numbers and
arithmetic written here, and what the database says."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid

import numpy as np
import pytest

from ..support.dashboards import fill, promql_queries
from ..support.pg_kill import kill, killable, restart  # noqa: F401 (killable: a fixture)
from ..support.stack import BIN, REPO, wait_until
from ..support.tpcc_orders import run_orders
from ..support.tpcc_stats import DECK, FALSE_FAILURE, chi_square_p, nurand_probabilities, q, within
from ..support.ybbench_cli import USERS_K6, verify, ybbench, ybbench_run

pytestmark = pytest.mark.late  # k6 v1.1.0 (native/build.sh late)

W, VUS = 2, 4


@pytest.fixture(scope="module")
def ran(binaries, postgres, prometheus, tmp_path_factory):
    """Two warehouses loaded under a prefix of their own, then 20 s of tpcc at 4 VUs, pushed to Prometheus
    by k6 v2 (the dashboards' TPC-C panels read it)."""
    prefix, tag = f"tr{uuid.uuid4().hex[:6]}_", uuid.uuid4().hex[:6]
    results = tmp_path_factory.mktemp("tpcc-run") / "results"
    load = ybbench_run("tpcc-load", postgres, results, testid=f"load{tag}",
                       knobs={"WAREHOUSES": str(W), "VUS": "2", "TABLE_PREFIX": prefix}, extra_env=USERS_K6)
    assert load.code == 0, load.output
    r = ybbench_run("tpcc", postgres, results, testid=f"run{tag}", knobs={"VUS": str(VUS), "DURATION": "20s"},
                    extra_env=USERS_K6, extra_args=["--keys-from", f"load{tag}"], prometheus=prometheus.url)
    assert r.code == 0, r.output + (r.folder / "k6.log").read_text()
    return prefix, results, f"run{tag}", r.digest()


def test_the_mix_is_the_decks_and_never_under_the_specs_minimums(ran):
    _, _, _, s = ran
    counts = {op: s["ops"][op]["count"] for op in DECK}
    n = sum(counts.values())
    assert n > 2_000, counts
    for op, cards in DECK.items():
        # Each VU deals whole decks but for its last: at most `cards` of an op off its share, a VU.
        assert abs(counts[op] - n * cards / 23) <= VUS * cards, (op, counts)
    # Clause 5.2.3's minimums, with the same slack for the VUs' last decks.
    for op, least in {"payment": 0.43, "order_status": 0.04, "delivery": 0.04, "stock_level": 0.04}.items():
        assert counts[op] + VUS * DECK[op] >= least * n, (op, counts)


def test_customer_and_item_ids_follow_nurand_with_the_runs_c(postgres, ran):
    prefix, _, _, s = ran
    c = s["written"]["c"]
    ids = postgres.query(f"SELECT o_c_id, count(*) FROM {run_orders(prefix, s)} GROUP BY 1").splitlines()
    observed = np.zeros(3000)
    for row in ids:
        v, k = map(int, row.split("|"))
        observed[v - 1] = k
    assert observed.sum() > 1_000
    assert chi_square_p(observed, nurand_probabilities(1023, 1, 3000, c["id"])) > FALSE_FAILURE
    # The same test tells another C, and uniform ids, apart: it can fail.
    assert chi_square_p(observed, nurand_probabilities(1023, 1, 3000, (c["id"] + 512) % 1024)) < FALSE_FAILURE
    assert chi_square_p(observed, np.full(3000, 1 / 3000)) < FALSE_FAILURE

    items = postgres.query(f"SELECT ol_i_id, count(*) FROM {run_orders(prefix, s)} JOIN {prefix}order_line "
                           "ON (ol_w_id, ol_d_id, ol_o_id) = (o_w_id, o_d_id, o_id) GROUP BY 1").splitlines()
    observed = np.zeros(100_000)
    for row in items:
        v, k = map(int, row.split("|"))
        observed[v - 1] = k
    p = nurand_probabilities(8191, 1, 100_000, c["item"])
    assert chi_square_p(observed, p) > FALSE_FAILURE
    assert chi_square_p(observed, np.roll(p, 4096)) < FALSE_FAILURE


def test_rollbacks_remote_lines_and_remote_payments_come_at_the_specs_rates(postgres, ran):
    prefix, _, _, s = ran
    t = s["tpcc"]
    no = s["ops"]["new_order"]["count"]
    assert t["new_orders"]["rolled_back"] > 0 and within(t["new_orders"]["rolled_back"], no, 0.01), t
    assert t["new_orders"]["failed"] == 0 and t["rollbacks"]["payment"] == 0

    lines, remote = map(int, postgres.query(
        f"SELECT count(*), count(*) FILTER (WHERE ol_supply_w_id <> ol_w_id) FROM {run_orders(prefix, s)} "
        f"JOIN {prefix}order_line ON (ol_w_id, ol_d_id, ol_o_id) = (o_w_id, o_d_id, o_id)").split("|"))
    assert remote > 0 and within(remote, lines, 0.01), (remote, lines)
    # An order is all-local exactly when none of its lines is remote (clause 2.4.2.2).
    assert q(postgres, f"SELECT count(*) FROM {run_orders(prefix, s)} WHERE (o_all_local = 1) <> NOT EXISTS "
                       f"(SELECT 1 FROM {prefix}order_line WHERE (ol_w_id, ol_d_id, ol_o_id) = (o_w_id, o_d_id, o_id) "
                       "AND ol_supply_w_id <> ol_w_id)") == 0

    payments = s["ops"]["payment"]["count"] - s["ops"]["payment"]["errors"]
    history = q(postgres, f"SELECT count(*) FROM {prefix}history") - W * 10 * 3000  # the load's: one a customer
    assert history == payments
    remote = q(postgres, f"SELECT count(*) FROM {prefix}history WHERE h_c_w_id <> h_w_id")
    assert remote > 0 and within(remote, payments, 0.15), (remote, payments)


def test_tpmc_is_the_new_orders_the_tables_hold_and_counts_are_the_servers(postgres, ran):
    prefix, _, _, s = ran
    there = q(postgres, f"SELECT count(*) FROM {run_orders(prefix, s)}")
    assert there == s["tpcc"]["new_orders"]["committed"] > 0
    assert s["tpcc"]["tpmc"] == pytest.approx(there / (s["duration_s"] / 60), rel=1e-9)
    assert s["tpcc"]["efficiency"] is None and s["tpcc"]["mode"] == "throughput"
    # NOPM: the database's D_NEXT_O_ID advance is the same orders; nobody else wrote them: they agree.
    n = s["tpcc"]["nopm"]
    assert n["new_orders"] == there and n["agrees"] and "disagreement" not in n, n
    assert n["nopm"] == pytest.approx(s["tpcc"]["tpmc"], rel=1e-9)
    # pg_stat_statements counts the calls that completed: each transaction's committed ones.
    for op, fn in {"new_order": "no", "payment": "pay", "order_status": "os", "delivery": "dl",
                   "stock_level": "sl"}.items():
        o = s["ops"][op]
        done = o["count"] - o["errors"] - s["tpcc"]["rollbacks"][op]
        server = q(postgres, "SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                             f"WHERE query LIKE 'SELECT {prefix}tpcc\\_{fn}(%'")
        assert server == done > 0, (op, server, done)


def test_deliveries_take_the_oldest_new_orders_and_pay_their_customers(postgres, ran):
    prefix, _, _, s = ran
    # The load left orders 2,101..3,000 of each district undelivered; a delivery sets a carrier.
    delivered = q(postgres, f"SELECT count(*) FROM {prefix}orders WHERE o_id >= 2101 AND o_carrier_id IS NOT NULL")
    assert delivered > 0
    assert q(postgres, f"SELECT count(*) FROM {prefix}new_order") == \
        W * 10 * 900 + s["tpcc"]["new_orders"]["committed"] - delivered
    # Each district's undelivered orders are its newest: the delivered ones are all older.
    assert q(postgres, f"SELECT count(*) FROM {prefix}orders o JOIN {prefix}new_order n ON (no_w_id, no_d_id) = "
                       "(o_w_id, o_d_id) AND no_o_id < o_id WHERE o_carrier_id IS NOT NULL AND o_id >= 2101") == 0
    assert q(postgres, f"SELECT sum(c_delivery_cnt) FROM {prefix}customer") == delivered
    assert q(postgres, f"SELECT count(*) FROM {prefix}order_line JOIN {prefix}orders ON (ol_w_id, ol_d_id, ol_o_id) = "
                       "(o_w_id, o_d_id, o_id) WHERE o_id >= 2101 AND (o_carrier_id IS NULL) <> "
                       "(ol_delivery_d IS NULL)") == 0


RUN_CHECKS = ("cardinality", "condition_1", "condition_2", "condition_3", "condition_4", "new_orders",
              "orders_whole")


def test_verify_passes_the_run_and_names_a_lost_new_order(postgres, ran):
    prefix, results, tid, s = ran
    out, r = verify(results, tid, postgres)
    assert out.returncode == 0 and r["ok"] is True and r["phase"] == "run", out.stdout + out.stderr
    assert {k: r[k]["count"] for k in RUN_CHECKS} == dict.fromkeys(RUN_CHECKS, 0)

    # One of the run's acknowledged orders removed (its row and lines, kept aside to put back).
    w, d = 2, 6
    o = s["written"]["next_o_id_at_start"][(w - 1) * 10 + d - 1]
    key = f"o_w_id = {w} AND o_d_id = {d} AND o_id = {o}"
    lines = f"ol_w_id = {w} AND ol_d_id = {d} AND ol_o_id = {o}"
    postgres.query(f"CREATE TABLE {prefix}saved_o AS SELECT * FROM {prefix}orders WHERE {key}; "
                   f"CREATE TABLE {prefix}saved_l AS SELECT * FROM {prefix}order_line WHERE {lines}; "
                   f"DELETE FROM {prefix}order_line WHERE {lines}; DELETE FROM {prefix}orders WHERE {key}")
    try:
        out, r = verify(results, tid, postgres)
        assert out.returncode == 1 and r["ok"] is False, out.stdout
        assert r["new_orders"]["count"] == 1 and r["new_orders"]["examples"][0].startswith(
            "1 acknowledged New-Order(s) lost"), r["new_orders"]
        assert r["orders_whole"]["examples"][0].startswith(f"W_ID={w} D_ID={d}:"), r["orders_whole"]
        assert "FAILED: " in out.stdout and "new_orders" in out.stdout.splitlines()[-1]
    finally:
        postgres.query(f"INSERT INTO {prefix}orders SELECT * FROM {prefix}saved_o; "
                       f"INSERT INTO {prefix}order_line SELECT * FROM {prefix}saved_l; "
                       f"DROP TABLE {prefix}saved_o, {prefix}saved_l")
    out, r = verify(results, tid, postgres)
    assert out.returncode == 0 and r["ok"] is True, out.stdout


# The builds and statement paths every other workload runs on (test_k6_matrix, test_official_extensions).
PATHS = [("k6-v1.1", "postgres", "0"), ("k6", "pgx", "0"), ("k6-v2", "pgconn", "1"), ("k6-official", "postgres", "0")]


def test_the_transactions_run_on_every_k6_and_driver_and_verify(binaries, postgres, ran):
    prefix, results, tid, _ = ran
    load = tid.replace("run", "load", 1)
    for k6, driver, helpers in PATHS:
        one = f"{tid}-{k6}-{driver}"
        r = ybbench_run("tpcc", postgres, results, testid=one,
                        knobs={"VUS": "2", "DURATION": "3s", "DB_DRIVER": driver, "YBBENCH_GO_HELPERS": helpers},
                        extra_env={"K6": str(BIN / k6)}, extra_args=["--keys-from", load])
        assert r.code == 0, (k6, driver, r.output)
        s = r.digest()
        assert s["errors"] == 0 and s["tpcc"]["new_orders"]["committed"] > 0, (k6, driver, s["tpcc"])
        assert q(postgres, f"SELECT count(*) FROM {run_orders(prefix, s)}") == s["tpcc"]["new_orders"]["committed"]
        out, v = verify(results, one, postgres)
        assert out.returncode == 0 and v["ok"] is True, (k6, driver, out.stdout)


@pytest.mark.parametrize("knobs,message", [
    ({"C_LOAD": "7"}, "WAREHOUSES"),
    ({"WAREHOUSES": "3", "C_LOAD": "7"}, "WAREHOUSES=3, but"),
    ({"WAREHOUSES": "2", "C_LOAD": "300"}, 'invalid C_LOAD="300"'),
    ({"WAREHOUSES": "1", "C_LOAD": "7", "TABLE_PREFIX": "absent_"}, "cannot read absent_warehouse"),
], ids=["no-warehouses", "wrong-warehouses", "c-load", "no-tables"])
def test_bad_input_is_named_and_nothing_is_written(binaries, postgres, ran, tmp_path, knobs, message):
    prefix = ran[0]
    knobs = {"TABLE_PREFIX": prefix, **knobs}
    before = q(postgres, f"SELECT count(*) FROM {prefix}orders")
    r = ybbench_run("tpcc", postgres, tmp_path / "results", testid=f"bad{uuid.uuid4().hex[:6]}", knobs=knobs)
    assert r.code != 0 and message in r.output, r.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    assert q(postgres, f"SELECT count(*) FROM {prefix}orders") == before


def test_the_runs_files_validate(ran):
    _, results, tid, _ = ran
    p = ybbench("validate", str(results / tid))
    assert p.returncode == 0, p.stdout + p.stderr


def test_no_acknowledged_new_order_is_lost_when_postgres_is_killed_mid_run(binaries, killable, tmp_path):
    pg, results, tag = killable, tmp_path / "results", uuid.uuid4().hex[:6]
    load = ybbench_run("tpcc-load", pg, results, testid=f"load{tag}", knobs={"WAREHOUSES": "1", "VUS": "2"},
                       extra_env=USERS_K6)
    assert load.code == 0, load.output
    cmd = [sys.executable, "-m", "ybbench", "run", "tpcc", "--testid", f"run{tag}", "--results", str(results),
           "--quiet", "--keys-from", f"load{tag}"]
    for k, v in {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database, "VUS": 4,
                 "DURATION": "20s", "DB_CONNECT_TIMEOUT": 2}.items():
        cmd += ["--set", f"{k}={v}"]
    run = subprocess.Popen(cmd, cwd=REPO, env=dict(pg.env(), **USERS_K6), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    wait_until(lambda: q(pg, "SELECT count(*) FROM orders WHERE o_id > 3000") > 500, "the run's New-Orders",
               timeout=60)
    kill(pg)
    time.sleep(1.5)  # the terminals keep going: calls fail, connections are refused
    restart(pg)
    before = q(pg, "SELECT count(*) FROM orders WHERE o_id > 3000")
    assert run.poll() is None, "the run ended before the server was back"
    out, _ = run.communicate(timeout=120)
    assert run.returncode == 99, out  # errors cross the run's threshold; the run went on
    s = json.loads((results / f"run{tag}" / "summary.json").read_text())
    assert s["tpcc"]["new_orders"]["failed"] > 0, s["tpcc"]
    assert q(pg, "SELECT count(*) FROM orders WHERE o_id > 3000") > before  # New-Orders after the restart
    p, r = verify(results, f"run{tag}", pg)
    assert p.returncode == 0 and r["ok"] is True, p.stdout + p.stderr
    print(p.stdout)  # the numbers, with -s


def test_two_generators_share_the_warehouses_and_their_summary_adds_up(binaries, postgres, ran):
    """--generators 2, one VU each, in the statements style after a 1 s warm-up: the VUs' numbers in
    the whole test give them warehouses 1 and 2 (each process's own __VU would put both on 1); the merged
    tpcc figures are the generators' sums (New-Orders, those after the warm-up, retries, failed attempts,
    the retry histogram), and verify reads the run from where its districts stood first."""
    prefix, results, tid, _ = ran
    one = f"{tid}-gen"
    r = ybbench_run("tpcc", postgres, results, testid=one, extra_env=USERS_K6,
                    knobs={"VUS": "2", "DURATION": "4s", "TPCC_STYLE": "statements", "DB_DRIVER": "pgconn"},
                    extra_args=["--keys-from", tid.replace("run", "load", 1), "--generators", "2", "--warmup", "1s"])
    assert r.code == 0, r.output
    merged = r.digest()
    each = [json.loads((r.folder / "generators" / f"g{i}" / "summary.json").read_text()) for i in (1, 2)]
    assert each[0]["written"]["c"] == each[1]["written"]["c"]  # one C for the run, from its testid
    for k in ("committed", "rolled_back", "failed"):
        assert merged["tpcc"]["new_orders"][k] == sum(p["tpcc"]["new_orders"][k] for p in each)
    assert merged["tpcc"]["tpmc"] == pytest.approx(merged["tpcc"]["new_orders"]["committed"] /
                                                   (merged["duration_s"] / 60), rel=1e-12)
    m = merged["tpcc"]["measured"]
    assert m["new_orders_committed"] == sum(p["tpcc"]["measured"]["new_orders_committed"] for p in each) > 0
    assert m["tpmc"] == pytest.approx(m["new_orders_committed"] / (m["seconds"] / 60), rel=1e-12)
    for op, a in merged["tpcc"]["attempts"].items():
        parts = [p["tpcc"]["attempts"][op] for p in each]
        assert a["retries"] == sum(x["retries"] for x in parts) == merged["ops"][op]["retries"], op
        assert a["failed_attempts"]["count"] == sum(x["failed_attempts"]["count"] for x in parts), op
        # Every transaction in one bucket of the histogram: the buckets add up to the op's count.
        assert sum(a["retry_histogram"].values()) == merged["ops"][op]["count"], (op, a["retry_histogram"])
        assert a["latency_ms"] is None  # percentiles are not mergeable from the generators' summaries
    by_w = dict(map(int, row.split("|")) for row in postgres.query(
        f"SELECT o_w_id, count(*) FROM {run_orders(prefix, merged)} GROUP BY 1").splitlines())
    assert sum(by_w.values()) == merged["tpcc"]["new_orders"]["committed"]
    assert set(by_w) == {1, 2} and min(by_w.values()) > 0, by_w
    out, v = verify(results, one, postgres)
    assert out.returncode == 0 and v["ok"] is True, out.stdout


WINDOW = 8  # s: the panels' rate window here, short enough for several inside a 20 s run


@pytest.mark.parametrize("query", promql_queries(tpcc=True), ids=str)
def test_the_tpcc_panels_answer_on_the_run(prometheus, ran, query):
    _, results, tid, _ = ran
    params = json.loads((results / tid / "params.json").read_text())
    expr = fill(query.expr, {"testid": tid, "cluster": "native", "__rate_interval": f"{WINDOW}s"})
    got = prometheus.api("query_range", query=expr, start=params["started_unix_s"],
                         end=params["finished_unix_s"] + 5, step="2")["result"]
    assert got and any(float(v) > 0 for s in got for _, v in s["values"]), f"{query}: no data from {expr}"


def test_the_tpmc_panel_is_the_databases_new_orders_per_minute(postgres, prometheus, ran):
    """At instants whose window lies inside the run: the panel against the run's orders the
    database stamped (O_ENTRY_D) inside the same window, x 60 / window."""
    prefix, results, tid, s = ran
    params = json.loads((results / tid / "params.json").read_text())
    (query,) = [x for x in promql_queries(tpcc=True) if x.panel.startswith("tpmC")]
    expr = fill(query.expr, {"testid": tid, "cluster": "native", "__rate_interval": f"{WINDOW}s"})
    lo, hi = params["started_unix_s"] + WINDOW + 1, params["finished_unix_s"] - 1
    (series,) = prometheus.api("query_range", query=expr, start=lo, end=hi, step="2")["result"]
    stamps = np.array([float(x) for x in postgres.query(
        f"SELECT extract(epoch FROM o_entry_d::timestamptz) FROM {run_orders(prefix, s)}").split()])
    # Later tests' runs add orders after this run's end: the windows below are inside it.
    assert np.count_nonzero(stamps <= params["finished_unix_s"]) == s["tpcc"]["new_orders"]["committed"]
    panel, tables = [], []
    for t, v in series["values"]:
        t = float(t)
        database = 60 * np.count_nonzero((stamps >= t - WINDOW) & (stamps < t)) / WINDOW
        # A push every second: the window's rate is within a second's New-Orders at each end.
        assert float(v) == pytest.approx(database, rel=0.25), (t, v, database)
        panel.append(float(v))
        tables.append(database)
    # Summed over the instants the ends' second-long errors average out: within 5%, which a rate
    # per second x 50 in place of x 60 (-17%) or a window's count in place of its rate fails.
    print(f"tpmC panel over the database, summed: {sum(panel) / sum(tables):.4f} ({len(panel)} instants)")
    assert sum(panel) == pytest.approx(sum(tables), rel=0.05), (panel, tables)


def test_the_reports_tpcc_section_is_the_databases_new_orders(postgres, prometheus, ran, tmp_path):
    """`ybbench report`'s tpmC chart: its whole-run figure is the run's orders in the tables over the run's
    minutes, and every point whose window lies inside the run is the orders stamped (O_ENTRY_D) in its
    window, give or take those stamped within a second of either end of it (k6 pushes once a second)."""
    prefix, results, tid, s = ran
    out = tmp_path / "r.html"
    p = ybbench("report", tid, "--results", str(results), "--prometheus", prometheus.url, "--out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    (c,) = [c for c in json.loads(out.with_suffix(".json").read_text())["runs"][0]["charts"] if c["id"] == "tpcc_tpmc"]
    stamps = np.array([float(x) for x in postgres.query(
        f"SELECT extract(epoch FROM o_entry_d::timestamptz) FROM {run_orders(prefix, s)}").split()])
    params = json.loads((results / tid / "params.json").read_text())
    stamps = stamps[stamps <= params["finished_unix_s"]]
    assert c["whole_run"]["tpmC"]["value"] == pytest.approx(len(stamps) / (s["duration_s"] / 60), rel=1e-9)
    window = float(c["query"].split("[")[1].split("s]")[0])
    line = c["data"]["tpmC"]
    inside = [(t, v) for t, v, partial in zip(line["t"], line["v"], line["partial"]) if not partial]
    assert len(inside) >= 5, line
    # Each point's window against the database's count in it: a push a second, so a window's ends are
    # uncertain by up to a second's New-Orders; over the points (their ends fall at every phase of a
    # push) that averages out to within a few %, where a slip in the formula (x 50 for x 60, 17%) does not.
    chart_no = np.array([v * window / 60 for _, v in inside])
    database = np.array([np.count_nonzero((stamps >= t - window) & (stamps < t)) for t, _ in inside])
    assert chart_no.sum() == pytest.approx(database.sum(), rel=0.05), (chart_no, database)
    page = out.read_text()
    assert f"<th>tpmC</th><td>{s['tpcc']['tpmc']:.1f}</td>" in page and "New-Orders committed" in page
    n = s["tpcc"]["nopm"]
    assert (f"<th>NOPM (database: D_NEXT_O_ID)</th><td>{n['nopm']:.1f} ({n['new_orders']} New-Orders; "
            "agrees with tpmC)</td>") in page
    # Per transaction: its count, retries, and mean and p99 with its retries (procedures: no attempts apart).
    o = s["ops"]["new_order"]
    assert (f"<td>new_order</td><td>{o['count']}</td><td>{o['retries']}</td><td>{o['latency_ms']['avg']:.3f}</td>"
            f"<td>{o['latency_ms']['p99']:.3f}</td></tr>") in page


def test_nopm_counts_new_orders_another_session_committed_and_says_they_disagree(binaries, postgres, ran):
    """While a short run runs, a side connection commits N New-Orders of its own (the procedures' function,
    as the run calls it): D_NEXT_O_ID advances by the run's committed + N, so NOPM exceeds tpmC by
    N / the run's minutes, and the summary names the disagreement, keeping both."""
    prefix, results, tid, _ = ran
    n, one = 300, f"{tid}-side"
    before = q(postgres, f"SELECT sum(d_next_o_id) FROM {prefix}district")
    side = threading.Thread(target=lambda: (
        wait_until(lambda: q(postgres, f"SELECT sum(d_next_o_id) FROM {prefix}district") > before + 100,
                   "the run's New-Orders", timeout=30),
        postgres.query(f"SELECT count({prefix}tpcc_no(1, 1, 1, '{{1,2,3}}', '{{1,1,1}}', '{{1,1,1}}')) "
                       f"FROM generate_series(1, {n})")))
    side.start()
    r = ybbench_run("tpcc", postgres, results, testid=one, knobs={"VUS": "2", "DURATION": "6s"}, extra_env=USERS_K6,
                    extra_args=["--keys-from", tid.replace("run", "load", 1)])
    side.join()
    assert r.code == 0, r.output
    s = r.digest()
    t, minutes = s["tpcc"], s["duration_s"] / 60
    assert t["new_orders"]["failed"] == 0 and t["nopm"]["new_orders"] == t["new_orders"]["committed"] + n, t
    assert t["nopm"]["nopm"] - t["tpmc"] == pytest.approx(n / minutes, rel=1e-9), (t["nopm"], t["tpmc"])
    assert t["nopm"]["agrees"] is False and t["tpmc"] == pytest.approx(t["new_orders"]["committed"] / minutes)
    assert t["nopm"]["disagreement"].startswith(
        f"the database's {t['new_orders']['committed'] + n} New-Orders (D_NEXT_O_ID) against k6's "
        f"{t['new_orders']['committed']} committed"), t["nopm"]
    assert "other sessions committed New-Orders" in t["nopm"]["disagreement"]
