"""The generated dashboards: committed JSON is what the code generates, the
hygiene Grafana users rely on, and every query returns data from real
components: every PromQL query from k6 runs, node_exporter,
postgres_exporter, recording rules and the YugabyteDB captures in the
native Prometheus; every LogQL query from the services' log lines, shipped
through the project's Promtail pipeline, and a k6 run's log in the native
Loki."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
import uuid

import pytest

from ybbench.core import per_second
from ybbench.dashboards import OUT, render
from ybbench.run import faults as events

from ..compose.images.yugabytedb.yb_standin import ADVANCE_PER_S  # the fixtures' setting
from ..support import log_samples, promtail
from ..support import yb_panels
from ..support.captures import capture_names
from ..support.dashboards import all_queries, boards, fill, logql_failures, logql_queries, panels, promql_queries, run_logql
from ..support.kernel import Sampler, busy_cpu_seconds
from ..support.known_rates import (ANY, KNOWN_RATES, counters_read, counts_statements, known_rate,
                                   per_instance, read_by_ybbench)
from ..support.stack import BIN, REPO, wait_until
from ..support.ybbench_cli import ybbench_run

# Loki and Promtail; alone: its CPU stat is the kernel's on a host that only k6 keeps busy.
pytestmark = [pytest.mark.late, pytest.mark.alone]

RATE_WINDOW = "20s"  # Grafana's $__rate_interval for a 5s scrape interval
PROMETHEUS_REF = {"type": "prometheus", "uid": "${datasource}"}
LOKI_REF = {"type": "loki", "uid": "${loki}"}
HISTORY_REF = {"type": "grafana-postgresql-datasource", "uid": "${history}"}
HISTORY_BOARD = "history.json"


def test_committed_json_is_what_the_code_generates():
    committed = {p.name: p.read_text() for p in OUT.glob("*.json")}
    generated = render()
    assert sorted(committed) == sorted(generated), "run: python -m ybbench.dashboards"
    for name, text in generated.items():
        assert committed[name] == text, f"{name} is stale: run python -m ybbench.dashboards"


def test_uids_are_unique_and_panels_have_ids():
    uids = [b["uid"] for b in boards().values()]
    assert len(uids) == len(set(uids)), uids
    for b in boards().values():
        ids = [p["id"] for p in panels(b)]
        assert len(ids) == len(set(ids)), f"{b['title']}: duplicate panel ids"
        assert b["schemaVersion"] == 41, b["title"]


def test_every_dashboard_has_datasource_cluster_and_testid_variables_and_run_annotations():
    for name, b in boards().items():
        if name == HISTORY_BOARD:  # on the history store, not Prometheus: its own test below
            continue
        variables = {v["name"]: v for v in b["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource", b["title"]
        assert {"testid", "cluster"} <= set(variables), b["title"]
        names = {a["name"] for a in b["annotations"]["list"]}
        assert {"k6 runs", "k6 phases"} <= names, b["title"]


def test_the_history_dashboard_reads_the_history_datasource_by_variable_with_change_point_annotations():
    """Pinned uid; every panel, target, variable and annotation on the
    PostgreSQL datasource through its `history` variable (compose provisions
    uid ybbench-history); a workload variable; change points drawn."""
    b = boards()[HISTORY_BOARD]
    assert b["uid"] == "ybbench-history"
    variables = {v["name"]: v for v in b["templating"]["list"]}
    assert variables["history"]["type"] == "datasource" and variables["history"]["query"] == HISTORY_REF["type"]
    assert variables["workload"]["datasource"] == HISTORY_REF and variables["workload"]["includeAll"]
    assert [a["name"] for a in b["annotations"]["list"]] == ["change points"]
    queries = [q for q in all_queries() if q.dashboard == b["title"]]
    assert {q.datasource for q in queries} == {HISTORY_REF["type"]}
    assert {q.panel for q in queries} == {p["title"] for p in panels(b) if p["type"] != "row"} | {
        "annotation change points", "variable workload"}


def test_every_dashboard_links_the_others_keeping_time_and_variables():
    for b in boards().values():
        assert any(link["type"] == "dashboards" and link["tags"] == ["ybbench"] and link["keepTime"]
                   and link["includeVars"] for link in b.get("links") or []), b["title"]


def test_yugabytedb_events_are_drawn_on_the_throughput_charts():
    overview = boards()["overview.json"]
    ids = {p["id"]: p["title"] for p in panels(overview)}
    events = {a["name"]: a for a in overview["annotations"]["list"] if a["datasource"]["type"] == "loki"}
    assert set(events) == {"YugabyteDB restarts", "YugabyteDB leader changes", "ybbench events"}
    for a in events.values():
        assert a["filter"]["exclude"] is False
        assert {ids[i] for i in a["filter"]["ids"]} == {"Total YSQL ops/s by statement type", "k6 ops/s by operation"}


def test_datasource_by_variable_units_everywhere_no_instance_names():
    for b in boards().values():
        variables = {v["name"]: v for v in b["templating"]["list"]}
        refs = [(v["name"], v["datasource"]) for v in variables.values() if "datasource" in v]
        refs += [(a["name"], a["datasource"]) for a in b["annotations"]["list"]]
        for p in panels(b):
            if p["type"] == "row":
                continue
            where = f"{b['title']} / {p['title']}"
            if p["type"] != "logs":  # log lines have no unit
                assert p["fieldConfig"]["defaults"].get("unit"), f"{where}: no unit"
            refs.append((p["title"], p["datasource"]))
            assert all(t["datasource"] == p["datasource"] for t in p["targets"]), f"{where}: mixed datasources"
        for what, ds in refs:
            assert ds in (PROMETHEUS_REF, LOKI_REF, HISTORY_REF), f"{b['title']} / {what}: datasource {ds}"
        if any(ds == HISTORY_REF for _, ds in refs):
            assert variables.get("history", {}).get("query") == HISTORY_REF["type"], f"{b['title']}: no history variable"
        if any(ds == LOKI_REF for _, ds in refs):
            assert variables.get("loki", {}).get("query") == "loki", f"{b['title']}: Loki queries, no loki variable"
    for q in all_queries():
        assert not re.search(r'instance\s*=~?\s*"[^$]', q.expr), f"{q}: hard-coded instance: {q.expr}"
        assert not re.search(r"\d+\.\d+\.\d+\.\d+|localhost|:\d{2,5}\b", q.expr), f"{q}: host in {q.expr}"


def test_windows_follow_grafanas_intervals():
    """PromQL rates over $__rate_interval (or a recording rule); LogQL
    counts over $__interval, the step, so that no line counts twice."""
    for q in all_queries():
        want = "$__rate_interval" if q.datasource == "prometheus" else "$__interval"
        for window in re.findall(r"\[([^\]]+)\]", q.expr):
            assert window == want, f"{q}: window [{window}] in {q.expr}"


# The panels read what the users' k6 pushes: k6 v2 (compose's), native
# histograms asked for as v2 takes them, every series with its feature tag.
USERS_K6 = {"K6": str(BIN / "k6-v2")}


def _k6_open_model(testid: str, prometheus_url: str) -> None:
    env = dict(os.environ, K6_PROMETHEUS_RW_SERVER_URL=f"{prometheus_url}/api/v1/write",
               K6_PROMETHEUS_RW_PUSH_INTERVAL="1s", K6_FEATURES="native-histograms")
    subprocess.run([USERS_K6["K6"], "run", "--quiet", "--summary-mode=disabled", "--tag", f"testid={testid}",
                    "-o", "experimental-prometheus-rw", str(REPO / "tests" / "k6" / "dropped_iterations.js")],
                   check=True, capture_output=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def live(prometheus, postgres, tmp_path_factory):
    """Real k6 runs into the native Prometheus: inserts, selects of which
    some miss their key, inserts of keys that exist (SQLSTATE 23505),
    contended updates that retry (40001), and an open-model run that drops
    iterations. Returns the query window."""
    results = tmp_path_factory.mktemp("dash-results")
    run = f"d{uuid.uuid4().hex[:8]}"
    start = time.time()
    common = {"VUS": 4, "KEY_PREFIX": run}
    # 30 s: longer than two rate windows, so the overview's run stats have instants inside it;
    # the kernel's CPU time is read meanwhile, their ground truth.
    cpu = Sampler(busy_cpu_seconds)
    try:
        ins = ybbench_run("sql-inserts", postgres, results, testid=f"{run}-ins", prometheus=prometheus.url,
                          extra_env=USERS_K6, knobs={**common, "DURATION": "30s"})
        time.sleep(0.3)  # a kernel sample after the run's recorded end
    finally:
        cpu.stop()
    assert ins.code == 0, ins.output
    written = ins.digest()["rows_written"]
    # Delete every odd key but the last (the workload's setup checks it):
    # about half the selects then find nothing.
    postgres.query(f"DELETE FROM postgresqlkeyvalue WHERE k LIKE '{run}:%' "
                   f"AND split_part(k, ':', 2)::bigint % 2 = 1 AND split_part(k, ':', 2)::bigint < {written - 1}")
    sel = ybbench_run("sql-selects", postgres, results, testid=f"{run}-sel", prometheus=prometheus.url,
                      extra_env=USERS_K6, knobs={**common, "DURATION": "4s", "MAX_WRITTEN_KEY": written})
    assert sel.code == 0, sel.output
    assert sel.metric("ybbench_keys_missing").get("count", 0) > 0, sel.output
    # The same keys again: every insert fails with a unique violation.
    dup = ybbench_run("sql-inserts", postgres, results, testid=f"{run}-dup", prometheus=prometheus.url,
                      extra_env=USERS_K6, knobs={**common, "DURATION": "3s"})
    assert dup.metric("ybbench_errors").get("count", 0) > 0, dup.output
    # Every VU updating the same two rows under repeatable read: PostgreSQL
    # answers concurrent updates with 40001, which the workload retries.
    upd = ybbench_run("sql-updates", postgres, results, testid=f"{run}-upd", prometheus=prometheus.url,
                      extra_env=USERS_K6, knobs={"VUS": 8, "DURATION": "3s", "KEY_PREFIX": run, "MAX_WRITTEN_KEY": 2,
                             "WRITE_PERCENT": 100, "ISOLATION": "repeatable_read"})
    assert upd.metric("ybbench_retries").get("count", 0) > 0, upd.output
    # The last of the runs' SQL: what PostgreSQL's statements took from here on
    # bounds what the stand-in adds to YSQL's latency panels read later.
    statements_read = (time.time(), _pg_statements(postgres))
    _k6_open_model(f"{run}-open", prometheus.url)
    # What the panels below read is k6 v2's: every series with the feature's run tag.
    series = prometheus.api("series", **{"match[]": f'{{testid=~"{run}-.*"}}'})
    assert series and all(x.get("k6_feature_native_histograms") == "true" for x in series), series[:3]
    # Rules evaluate every 5s: wait until they have evaluated after the runs.
    done = time.time()
    wait_until(lambda: prometheus.query(f"timestamp(cluster:ybbench_ysql_ops:rate1m) > {done:.3f}"),
               "the recording rules to evaluate after the runs", timeout=60)
    end = time.time() + 1
    # Compare runs: the selects drawn over the inserts, shifted by what Grafana computes.
    pair = {"base": f"{run}-ins", "other": f"{run}-sel"}
    shift = _query_result_variable(prometheus, "compare-runs.json", "shift", pair, start - 30, end)
    return {"testid": f"{run}-.*", "start": start - 30, "end": end, "ins": ins, "sel": sel, "cpu": cpu,
            "ins_testid": f"{run}-ins", **pair, "shift": shift, "statements_read": statements_read}


def _pg_statements(postgres) -> tuple[float, float, float]:
    """The test PostgreSQL's own figures of every statement it ran
    (pg_stat_statements, ms): least min_exec_time, greatest max_exec_time,
    total_exec_time summed."""
    got = postgres.query("SELECT min(min_exec_time), max(max_exec_time), sum(total_exec_time) "
                         "FROM pg_stat_statements")
    return tuple(float(x) for x in got.split("|"))


def _query_result_variable(prometheus, board: str, name: str, values: dict, start: float, end: float) -> str:
    """A query_result() variable as Grafana evaluates it (its Prometheus
    datasource's metric_find_query): the inner PromQL as an instant query at
    the range's end, each series as the text '{labels} value ms', the
    variable's regex keeping its first group."""
    (var,) = [v for v in boards()[board]["templating"]["list"] if v["name"] == name]
    inner = re.fullmatch(r"query_result\((.*)\)", var["query"]["query"]).group(1)
    expr = fill(inner, {**values, "__range_s": str(round(end - start))})
    result = prometheus.api("query", query=expr, time=f"{end:.3f}")["result"]
    texts = ["{" + ",".join(f'{k}="{v}"' for k, v in s["metric"].items() if k != "__name__") + "}"
             + f" {s['value'][1]} {float(s['value'][0]) * 1000:.0f}" for s in result]
    found = [m.group(1) for t in texts if (m := re.search(var["regex"].strip("/"), t))]
    assert len(found) == 1, f"{board} ${name}: {expr} gave {texts}"
    return found[0]


def _values(live: dict) -> dict[str, str]:
    """Grafana's variables as a user opening the dashboard would have them."""
    return {"testid": live["testid"], "cluster": "native", "device": ".*", "database": ".*",
            "__rate_interval": RATE_WINDOW, "base": live["base"], "other": live["other"], "shift": live["shift"]}


@pytest.mark.parametrize("query", promql_queries(), ids=str)  # the TPC-C panels: test_tpcc_run
def test_every_panel_query_returns_data(live, prometheus, query):
    expr = fill(query.expr, _values(live))
    try:
        result = prometheus.api("query_range", query=expr, start=live["start"], end=live["end"], step="2s")["result"]
    except Exception as e:  # noqa: BLE001 - reported with the panel's name
        pytest.fail(f"{query}: query failed: {expr}\n{e}")
    assert result, f"{query}: no series for {expr}"
    # A number somewhere, not only NaN (every YugabyteDB counter moves: yb_standin.py).
    values = [float(v) for s in result for _, v in s["values"]]
    assert any(v == v for v in values), f"{query}: only NaN from {expr}"


def _medians(prometheus, expr: str, start: float, end: float, by) -> dict[str, float]:
    """Each series' median over the range, by one label's value or by a
    function naming a series from its labels."""
    got = prometheus.api("query_range", query=expr, start=start, end=end, step="2")["result"]
    name = by if callable(by) else (lambda labels: labels.get(by, ""))
    out = {}
    for s in got:
        values = sorted(float(v) for _, v in s["values"] if v != "NaN")
        if values:
            out[name(s["metric"])] = values[len(values) // 2]
    return out


def _full_rule_windows(prometheus) -> float:
    """Now, once every YugabyteDB endpoint has been scraped for more than the
    rules' 1m window and a rate interval (80 s at 5 s scrapes): earlier, a
    window holding a series' first sample reads low."""
    wait_until(lambda: len(prometheus.query('count_over_time(up{job="yugabytedb"}[80s]) >= 16')) == 4,
               "80 s of scrapes of each YugabyteDB endpoint", timeout=120)
    return time.time()


def test_every_counter_ybbench_reads_moves_at_a_rate_of_its_own(prometheus):
    """Issue 32: the counters that ybbench's dashboards, recording rules and
    report read (as Prometheus resolves their selectors) are exactly those
    known_rates.py gives a rate of their own, no two the same; and the
    stand-in serves each at that rate: the slope between a series' first and
    last raw samples of 30 s (each sample carries its own time) is
    ADVANCE_PER_S x its rate, or more for YSQL's statement counters, which
    the test PostgreSQL's statements also move."""
    wait_until(lambda: len(prometheus.query('count_over_time(up{job="yugabytedb"}[30s]) >= 4')) == 4,
               "four scrapes of each YugabyteDB endpoint", timeout=60)
    read = read_by_ybbench(prometheus)
    assert set(read) == set(KNOWN_RATES), {n: read.get(n) for n in set(read) ^ set(KNOWN_RATES)}
    rates = [known_rate(n) for n in read]
    assert len(set(rates)) == len(rates), sorted(rates)
    at = time.time()
    for name in read:
        series = prometheus.api("query", query=f'{{saved_name="{name}"}}[30s]', time=f"{at:.3f}")["result"]
        assert series, name
        for s in series:
            (t0, v0), (t1, v1) = [(float(t), float(v)) for t, v in (s["values"][0], s["values"][-1])]
            slope, want = (v1 - v0) / (t1 - t0), ADVANCE_PER_S * known_rate(name)
            if counts_statements(name):
                assert slope >= want * (1 - 1e-3), (name, s["metric"])
            else:
                assert slope == pytest.approx(want, rel=1e-3), (name, s["metric"])


def test_yugabytedb_rate_panels_move_at_the_stand_ins_known_rates(live, prometheus, postgres):
    """Every panel query that reads a counter the YugabyteDB stand-in moves,
    whatever its shape (a rate per tserver, a ratio, a recording rule by
    statement type), reads the counters tests/support/yb_panels.py names
    for it (as Prometheus resolves its selectors) and shows, per legend, the
    value worked out there from the rates of known_rates.py: each series of
    the capture grows by ADVANCE_PER_S x its counter's rate, no two counters
    read at the same rate, so a panel reading one for another (index misses
    for hits) is off by a whole factor. A YugabyteDB panel this test does
    not know fails. YSQL's statement counters also count the test
    PostgreSQL's statements: their ops/s are bounded below, their latencies
    by what PostgreSQL says its statements took (yb_panels._mediant). Read
    over the last 20 s with the rules' windows full and after the live runs'
    SQL; the selected-runs stat over the live runs, the only time it has
    values."""
    now = _full_rule_windows(prometheus)
    # A value at now - 20 reads a rule evaluated up to 5 s before over 60 s of
    # samples, each the stand-in's read of pg_stat_statements just before its
    # stamp (or its last good one): 100 s after the first read of PostgreSQL,
    # every sample read is newer than it.
    read_at, (_, _, exec_before) = live["statements_read"]
    time.sleep(max(0.0, read_at + 100 - now))
    now = max(now, time.time())
    # Every PromQL target that reads a moving YugabyteDB counter; the others
    # read k6, the hosts, PostgreSQL or sizes (tested above and below).
    targets = [((name, panel["title"], t["legendFormat"]), t["expr"], read) for name, board in boards().items()
               for panel in panels(board) for t in panel.get("targets", []) if t["datasource"]["type"] == "prometheus"
               if (read := counters_read(prometheus, fill(t["expr"], ANY)))]
    medians = {}
    for key, expr, read in targets:
        title, fmt = key[1:]
        stat = "selected runs" in title  # values only while a selected run runs
        values = _values(live) if stat else {**_values(live), "testid": ".*"}
        start, end = (live["start"], live["end"]) if stat else (now - 20, now)
        medians[key] = _medians(prometheus, fill(expr, values), start, end,
                                lambda labels: yb_panels.legend(fmt, labels))
    # PostgreSQL's figures after every window read (ms; the stand-in adds µs).
    least, most, exec_after = _pg_statements(postgres)
    expected = yb_panels.expectations(yb_panels.Statements(least * 1000, most * 1000,
                                                           (exec_after - exec_before) * 1000))
    seen = set()
    for key, expr, read in targets:
        assert key in expected, f"a YugabyteDB panel this test does not know: {key} reads {sorted(read)}"
        seen.add(key)
        reads, want = expected[key]
        assert read == reads, f"{key} reads {sorted(read ^ reads)} (expected or not)"
        got = medians[key]
        assert set(got) == set(want), key
        for series, v in got.items():
            lo, hi = want[series]
            assert lo < v < hi, f"{key} {series}: {v}, expected in ({lo}, {hi})"
    assert seen == set(expected)


def test_block_cache_hit_ratio_is_hits_over_lookups_of_the_known_rates(live, prometheus):
    """hits / (hits + misses) of the known rates, and no other counter that
    ybbench reads, taken for the hits or the misses, gives the same ratio."""
    (panel,) = [p for p in panels(boards()["disk-cache.json"]) if p["title"] == "Block cache hit ratio"]
    (target,) = panel["targets"]
    now = _full_rule_windows(prometheus)
    got = _medians(prometheus, fill(target["expr"], _values(live)), now - 20, now, "exported_instance")
    hits, misses = per_instance("rocksdb_block_cache_hit"), per_instance("rocksdb_block_cache_miss")
    assert got and set(got) == set(hits)
    for inst, ratio in got.items():
        h, m = hits[inst], misses[inst]
        assert ratio == pytest.approx(h / (h + m), rel=1e-3), inst
        for other in set(KNOWN_RATES) - {"rocksdb_block_cache_hit", "rocksdb_block_cache_miss"}:
            x = per_instance(other, capture_names()[other]).get(inst, 0.0)
            for wrong in (x / (x + m), h / (h + x)):
                assert wrong != pytest.approx(ratio, rel=0.01), (other, wrong)


def _run_windows(doc: dict, op: str, lo: float, hi: float, q: float | None) -> float:
    """What a 20 s rate window ending at each of _medians' instants holds in
    the run's own per-second.json (ops/s, or the q-quantile in s), median."""
    width = int(RATE_WINDOW.rstrip("s"))
    got = []
    t = lo
    while t <= hi:
        if q is None:
            got.append(sum(n for sec, n, _, _ in doc["ops"][op] if t - width <= sec < t) / width)
        else:
            got.append(per_second.quantile(doc, per_second.buckets_of(doc, op, t - width, t), q) / 1000)
        t += 2
    return sorted(got)[len(got) // 2]


def test_k6_panels_mid_run_read_the_runs_summary(live, prometheus):
    """The k6 ops/s and latency panels, at the instants whose rate window
    lies inside the 30 s insert run, against the same seconds of the run's
    own per-second.json (not the whole run's figures: on a shared machine a
    window's p99 can differ from the run's by far more than any reading)."""
    ins = live["ins"]
    params = json.loads((ins.folder / "params.json").read_text())
    lo, hi = params["started_unix_s"] + 21, params["finished_unix_s"] - 1  # windows of 20 s inside the run
    values = {**_values(live), "testid": live["ins_testid"]}
    doc = per_second.load(ins.folder)
    assert sum(n for _, n, _, _ in doc["ops"]["insert"]) == ins.digest()["ops"]["insert"]["count"]
    for board in ("overview.json", "k6-client.json"):
        (panel,) = [p for p in panels(boards()[board]) if p["title"] == "k6 ops/s by operation"]
        got = _medians(prometheus, fill(panel["targets"][0]["expr"], values), lo, hi, "op")
        # A push every second: a 20 s window's rate is within a second of ops at each end.
        assert got["insert"] == pytest.approx(_run_windows(doc, "insert", lo, hi, None), rel=0.1), board
    (panel,) = [p for p in panels(boards()["k6-client.json"]) if p["title"].startswith("k6 latency p50 / p95 / p99")]
    for target, name, q in zip(panel["targets"], ("p50", "p95", "p99"), (0.50, 0.95, 0.99)):
        got = _medians(prometheus, fill(target["expr"], values), lo, hi, "op")
        # k6's native histogram buckets are 1.0905 wide (schema 3) and
        # histogram_quantile interpolates inside one; per-second.json reads
        # back within 1%; the window's ends within a second: 15%.
        assert got["insert"] == pytest.approx(_run_windows(doc, "insert", lo, hi, q), rel=0.15), name


def _stat(prometheus, board: str, title: str, values: dict, start: float, end: float, step: float = 2) -> float:
    """A stat panel's value as Grafana shows it: its query over the time
    range, reduced by the panel's calc (mean or max of the non-null points)."""
    (panel,) = [p for p in panels(boards()[board]) if p["title"] == title]
    (target,) = panel["targets"]
    calc = panel["options"]["reduceOptions"]["calcs"][0]
    (series,) = prometheus.api("query_range", query=fill(target["expr"], values), start=start, end=end,
                               step=f"{step:g}")["result"]
    points = [float(v) for _, v in series["values"]]
    return {"mean": sum(points) / len(points), "max": max(points)}[calc]


def test_run_stats_read_the_runs_own_window(live, prometheus):
    """The overview's stats for one selected run, over a range that holds idle time before and after
    it, against the kernel and k6's summary (issue 26)."""
    ins, cpu = live["ins"], live["cpu"]
    params = json.loads((ins.folder / "params.json").read_text())
    start, end = params["started_unix_s"], params["finished_unix_s"]
    values = {**_values(live), "testid": live["ins_testid"]}
    lo, hi = start - 60, end + 60  # the dashboard's range: a minute of other time each side
    # CPU: the mean of busy fractions over 20 s windows inside the run is the run's busy
    # fraction from /proc/stat (the host is steady under k6): 0.1 covers the windows
    # weighting the run's middle over its edges, and the sampler's 0.1 s.
    busy = _stat(prometheus, "overview.json", "Average CPU busy (selected runs)", values, lo, hi)
    assert busy == pytest.approx(cpu.rate(start, end) / os.cpu_count(), abs=0.1)
    # k6 ops/s: the summary's whole-run rate; 15% covers the first seconds, which the stat leaves out.
    ops = _stat(prometheus, "overview.json", "k6 ops/s (client, selected runs)", values, lo, hi)
    assert ops == pytest.approx(ins.digest()["ops"]["insert"]["per_second"], rel=0.15)
    assert _stat(prometheus, "overview.json", "k6 VUs (selected runs, most)", values, lo, hi) == 4
    # YSQL ops/s: the statements PostgreSQL counted (pg_stat_statements, served by the stand-in
    # as YSQL's SQLProcessor counters) are k6's inserts, on top of the stand-in's own advance of
    # those counters (known_rates.py); 15% as for k6's own rate.
    ysql = _stat(prometheus, "overview.json", "YSQL ops/s (cluster, selected runs)", values, lo, hi)
    advance = sum(yb_panels.ysql_advance_per_node().values())
    assert ysql == pytest.approx(ins.digest()["ops"]["insert"]["per_second"] + advance, rel=0.15)
    # The control: the stat as it was (the last value of a 1m rate, once a per-run recording rule,
    # removed for this) reads far from the run.
    old = prometheus.api("query_range", query=f'sum(rate(k6_iterations_total{{testid="{live["ins_testid"]}", '
                         f'op!=""}}[1m]))', start=lo, end=hi, step="2")["result"]
    last = float(old[0]["values"][-1][1]) if old else 0.0
    assert abs(last - ins.digest()["ops"]["insert"]["per_second"]) > 0.15 * ins.digest()["ops"]["insert"]["per_second"]


def test_compare_board_draws_the_other_run_from_the_base_runs_start(live, prometheus):
    """Compare runs with base = the 4 s selects and other = the 30 s inserts
    that ran earlier: the shift is the two runs' start difference (their
    params.json), and the inserts are drawn from the selects' start at the
    inserts' own rate (k6's summary); unshifted, nothing of them is there."""
    ins, sel = live["ins"], live["sel"]
    started = {r.folder.name: json.loads((r.folder / "params.json").read_text())["started_unix_s"] for r in (ins, sel)}
    t_ins, t_sel = started[ins.folder.name], started[sel.folder.name]
    pair = {"base": sel.folder.name, "other": ins.folder.name}
    shift = int(_query_result_variable(prometheus, "compare-runs.json", "shift", pair, live["start"], live["end"]))
    # Each start is k6's first push, about a push interval (1 s) after ybbench recorded it.
    assert abs(shift - (t_sel - t_ins)) <= 2, (shift, started)
    (panel,) = [p for p in panels(boards()["compare-runs.json"]) if p["title"].startswith("ops/s")]
    other = next(t["expr"] for t in panel["targets"] if t["legendFormat"].startswith("other"))
    values = {**_values(live), **pair, "shift": str(shift)}
    lo, hi = t_sel - 10, t_sel + 40

    def points(expr: str) -> list[tuple[float, float]]:
        got = prometheus.api("query_range", query=fill(expr, values), start=lo, end=hi, step="1")["result"]
        return [(float(t), float(v)) for s in got for t, v in s["values"] if v != "NaN"]

    drawn = points(other)
    assert drawn and min(t for t, _ in drawn) >= t_sel - 1.5, drawn[:3]
    # Rates whose 20 s window lies inside the shifted run are the inserts' whole-run rate.
    inside = sorted(v for t, v in drawn if t_sel + 22 <= t <= t_sel + 29)
    assert inside and inside[len(inside) // 2] == pytest.approx(ins.digest()["ops"]["insert"]["per_second"],
                                                                rel=0.15)
    # The control: without the shift, the inserts ended before the selects' start.
    assert not [t for t, _ in points(other.replace(" offset ${shift}s", "")) if t >= t_sel + 22]


@pytest.fixture(scope="module")
def logs_live(loki, postgres, tmp_path_factory):
    """Every compose service's kind of log line (tests/support/log_samples.py)
    shipped through the project's Promtail pipeline, labelled as its
    docker_sd job labels a container (service, container; testid for k6),
    and a k6 run's log through `ybbench run --loki`. Returns the variable
    values and the query window."""
    run = f"l{uuid.uuid4().hex[:8]}"
    start = time.time()
    for service, samples in log_samples.BY_SERVICE.items():
        labels = {"service": service, "container": f"ybbench-{service}-1"}
        if service == "k6":
            labels["testid"] = f"{run}-compose"
        promtail.push([line for line, _ in samples], loki.url, labels)
    cli = ybbench_run("sql-inserts", postgres, tmp_path_factory.mktemp("logs-results"), testid=f"{run}-cli",
                      knobs={"VUS": 2, "DURATION": "2s"}, extra_args=["--loki", loki.url])
    assert cli.code == 0, cli.output
    # An event as `ybbench run --event` ships it (ybbench/run/faults.py; a real one
    # needs the compose stack: tests/compose/test_compose_stack.py).
    events.to_loki(loki.url, f"{run}-cli", [{"at_s": 1.0, "action": "stop", "service": "yb-tserver-2",
                                             "time_unix_s": time.time(), "ok": True}])
    wait_until(lambda: loki.lines(f'{{testid="{run}-cli"}}'), "the run's k6 log in Loki", timeout=30)
    values = {"testid": f"{run}-.*", "service": ".+", "__interval": "20s"}
    return {"values": values, "start": start - 30, "end": time.time() + 1}


@pytest.mark.parametrize("query", logql_queries(), ids=str)
def test_every_logql_query_returns_data(logs_live, loki, query):
    try:
        result = run_logql(loki.url, query, logs_live["values"], logs_live["start"], logs_live["end"])
    except Exception as e:  # noqa: BLE001 - reported with the panel's name
        pytest.fail(f"{query}: {e}")
    assert result, f"{query}: no data for {fill(query.expr, logs_live['values'])}"


def _logql(title: str, live: dict, loki) -> list[dict]:
    query = next(q for q in logql_queries() if q.panel == title)
    return run_logql(loki.url, query, live["values"], live["start"], live["end"])


def test_the_k6_log_panel_shows_compose_and_ybbench_runs(logs_live, loki):
    streams = _logql("k6 log of the selected run", logs_live, loki)
    sources = {"compose" if s["stream"].get("service") == "k6" else s["stream"].get("job") for s in streams}
    assert sources == {"compose", "ybbench"}, [s["stream"] for s in streams]


def test_yugabytedb_annotations_mark_each_start_and_election(logs_live, loki):
    for name, message, count in (("YugabyteDB restarts", "server successfully started.", 2),
                                 ("YugabyteDB leader changes", "Becoming Leader.", 2)):
        lines = [(s["stream"]["service"], line) for s in _logql(f"annotation {name}", logs_live, loki)
                 for _, line in s["values"]]
        assert {service for service, _ in lines} == {"yb-master-1", "yb-tserver-1"}, lines
        assert len(lines) == count and all(message in line for _, line in lines), lines


def test_the_compose_helper_reports_every_query_without_data(logs_live, loki):
    """logql_failures, for the compose stack's Loki: nothing on live data,
    every query, by name, a day before any line."""
    live = logs_live
    assert logql_failures(loki.url, live["values"], live["start"], live["end"]) == []
    failures = logql_failures(loki.url, live["values"], live["start"] - 86400, live["start"] - 82800)
    assert len(failures) == len(logql_queries()), failures
    assert all("no data" in f for f in failures), failures
