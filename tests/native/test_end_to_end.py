"""The walking skeleton, end to end: k6 runs sql-inserts then sql-selects
against a real PostgreSQL, writing its metrics into a real Prometheus that
runs the project's prometheus.yml and also scrapes node_exporter."""

from __future__ import annotations

import json
import os
import uuid

import pytest

from ybbench.core import latency, per_second

from ..support.ybbench_cli import ybbench_run

INSERT_VUS, SELECT_VUS, DURATION = 8, 8, "8s"


@pytest.fixture(scope="module", params=["pgconn", "pgx", "postgres"])
def runs(request, postgres, prometheus, tmp_path_factory):
    """One insert run and one select run over the keys it wrote, on each
    statement path: our Go helpers module's pgconn (ybbench run's choice where
    k6 has it), pgx under xk6-sql, and lib/pq (DB_DRIVER=postgres, the
    scripts' default)."""
    driver = request.param
    results = tmp_path_factory.mktemp("results")
    run_id = f"e2e{uuid.uuid4().hex[:8]}"
    inserts = ybbench_run("sql-inserts", postgres, results, testid=f"{run_id}-ins", prometheus=prometheus.url,
                          knobs={"DB_DRIVER": driver, "VUS": INSERT_VUS, "DURATION": DURATION, "KEY_PREFIX": run_id})
    assert inserts.code == 0, inserts.output
    written = inserts.digest()["rows_written"]
    selects = ybbench_run("sql-selects", postgres, results, testid=f"{run_id}-sel", prometheus=prometheus.url,
                          knobs={"DB_DRIVER": driver, "VUS": SELECT_VUS, "DURATION": DURATION, "KEY_PREFIX": run_id,
                                 "MAX_WRITTEN_KEY": written})
    assert selects.code == 0, selects.output
    return {"prefix": run_id, "inserts": inserts, "selects": selects, "written": written, "driver": driver}


def test_table_holds_exactly_the_rows_k6_reports_inserted(runs, postgres):
    prefix, written = runs["prefix"], runs["written"]
    assert written > 1000, "the run inserted too little to say anything"
    in_table = int(postgres.query(f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{prefix}:%'"))
    assert in_table == written
    # Keys are <prefix>:<n>, n dense from 0: iterationInTest, no gaps, no repeats.
    bad_shape = postgres.query(
        f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{prefix}:%' AND k !~ '^{prefix}:(0|[1-9][0-9]*)$'")
    assert bad_shape == "0"
    top = postgres.query(
        f"SELECT max(split_part(k, ':', 2)::bigint) FROM postgresqlkeyvalue WHERE k LIKE '{prefix}:%'")
    assert int(top) == written - 1
    # Rows of 64 bytes (key + value), values val:<n> padded, as yb-sample-apps' val:<n>.
    sizes = postgres.query(
        f"SELECT DISTINCT length(k) + length(v) FROM postgresqlkeyvalue WHERE k LIKE '{prefix}:%'")
    assert sizes == "64"
    mismatched = postgres.query(
        f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{prefix}:%' "
        f"AND v NOT LIKE 'val:' || split_part(k, ':', 2) || '%'")
    assert mismatched == "0"


def test_no_sql_errors_and_every_select_found_its_key(runs):
    for run in (runs["inserts"], runs["selects"]):
        assert run.metric("ybbench_errors").get("count", 0) == 0, run.output
    sel = runs["selects"]
    assert sel.metric("iterations{op:select}")["count"] > 1000
    assert sel.metric("ybbench_keys_missing").get("count", 0) == 0


def test_results_folder_records_the_run_without_secrets(runs, postgres):
    folder = runs["inserts"].folder
    params = (folder / "params.json").read_text()
    assert '"workload": "sql-inserts"' in params and runs["prefix"] in params
    # k6 ran with ybbench's GC setting unless the environment chose one.
    knobs = json.loads(params)["knobs"]
    assert knobs["GOGC"] == os.environ.get("GOGC", "400")
    assert knobs["GOMEMLIMIT"].endswith("MiB") and int(knobs["GOMEMLIMIT"][:-3]) > 256
    for f in folder.iterdir():
        assert postgres.password not in f.read_text(), f"password leaked into {f.name}"


def _samples(prometheus, promql: str) -> list[tuple[float, float]]:
    result = prometheus.api("query", query=f"{promql}[10m]")["result"]
    assert len(result) == 1, f"{promql}: expected one series, got {result}"
    return [(float(t), float(v)) for t, v in result[0]["values"]]


@pytest.mark.parametrize("run_key,op", [("inserts", "insert"), ("selects", "select")])
def test_prometheus_holds_the_run_and_agrees_with_the_k6_summary(runs, prometheus, run_key, op):
    run = runs[run_key]
    testid = run.folder.name
    summary = run.metric(f"iterations{{op:{op}}}")  # one statement per iteration
    samples = _samples(prometheus, f'k6_iterations_total{{testid="{testid}", op="{op}"}}')
    # Counters are cumulative from the start of the run: the last pushed
    # value is the run's total.
    assert samples[-1][1] == summary["count"]
    # Every push against the run's own per-second counts (per-second.json,
    # by each sample's time). k6 stamps a push with the time of its latest
    # sample, so its value is the ops done by then: all of the seconds
    # before that one, and part of that second. (Not against the summary's
    # rate, whose time includes setup and teardown: 0.8 s is 10% of a run.)
    doc = per_second.load(run.folder)
    assert doc is not None and doc["ops"].get(op), f"{run.folder}: no per-second series for {op}"
    counts = {r[0]: r[1] for r in doc["ops"][op]}
    assert sum(counts.values()) == summary["count"]
    assert samples[-1][0] - samples[0][0] >= 4, f"too few pushes: {samples}"
    vus = INSERT_VUS if op == "insert" else SELECT_VUS
    for t, v in samples:
        done_before = sum(n for sec, n in counts.items() if sec < int(t))
        done_by_then = done_before + counts.get(int(t), 0)
        # A VU's sample can reach k6's buffer a moment after another VU's
        # later one: a few ops either way, at most one per VU.
        assert done_before - vus <= v <= done_by_then + vus, (t, v, done_before, done_by_then)
    # Latency arrives as a native histogram in seconds, tagged with the run;
    # its count is the statements counted.
    count = prometheus.query(f'histogram_count(sum(k6_iteration_duration_seconds{{testid="{testid}", op="{op}"}}))')
    assert float(count[0]["value"][1]) == summary["count"]
    p99 = prometheus.query(f'histogram_quantile(0.99, sum(rate(k6_iteration_duration_seconds{{testid="{testid}", op="{op}"}}[1m])))')
    assert p99 and 0 < float(p99[0]["value"][1]) < 1


def test_every_k6_series_carries_the_testid(runs, prometheus):
    testid = runs["inserts"].folder.name
    names = {r["metric"]["__name__"] for r in prometheus.query(f'{{__name__=~"k6_.+", testid="{testid}"}}')}
    assert {"k6_iterations_total", "k6_iteration_duration_seconds", "k6_vus"} <= names
    untagged = prometheus.query('count({__name__=~"k6_.+", testid=""})')
    assert not untagged, untagged


def test_node_exporter_series_are_present(prometheus):
    cpu = prometheus.query('node_cpu_seconds_total{job="node", mode="idle"}')
    assert cpu, "no node_exporter CPU series"
    assert cpu[0]["metric"]["node_prefix"] == "native"
    disks = prometheus.query('node_disk_reads_completed_total{job="node"}')
    assert disks, "no node_exporter disk series"


def final_histogram(prometheus, testid: str, op: str) -> tuple[float, float, dict]:
    """k6's last push of op's latency histogram (cumulative over the run),
    summed over its series, from Prometheus' raw samples: count, sum in
    seconds, and the count in each (lower, upper] bucket."""
    series = prometheus.query(f'k6_iteration_duration_seconds{{testid="{testid}", op="{op}"}}[10m]')
    assert series, (testid, op)
    count = total = 0.0
    buckets: dict[tuple[float, float], float] = {}
    for s in series:
        _, h = s["histograms"][-1]
        count, total = count + float(h["count"]), total + float(h["sum"])
        for _, lo, hi, n in h.get("buckets", []):
            buckets[(float(lo), float(hi))] = buckets.get((float(lo), float(hi)), 0.0) + float(n)
    return count, total, buckets


def bucket_of_rank(buckets: dict[tuple[float, float], float], rank: float) -> tuple[float, float]:
    """The bucket where the cumulative count reaches rank: a quantile's
    value lies within its bounds, however it is interpolated."""
    seen = 0.0
    for (lo, hi), n in sorted(buckets.items()):
        seen += n
        if seen >= rank:
            return lo, hi
    raise AssertionError(f"rank {rank} past the histogram's {seen}")


def test_per_op_latency_of_a_mixed_run_comes_from_prometheus(runs, postgres, prometheus, tmp_path):
    """sql-updates mixes selects and updates: without OP_LATENCY_SUMMARY its
    k6 summary has no per-op latency, and `ybbench run --prometheus` fills it
    from the native histograms. With it on, k6's exact numbers are there to
    hold Prometheus' quantiles against."""
    if runs["driver"] != "pgx":
        pytest.skip("the histograms are k6's whatever the driver: one is enough")
    # k6's own summary (the official extensions' path): the Go helpers'
    # per-op histograms would fill it themselves (test_go_helpers.py).
    knobs = {"VUS": 4, "DURATION": "4s", "KEY_PREFIX": runs["prefix"], "MAX_WRITTEN_KEY": runs["written"],
             "DB_DRIVER": runs["driver"], "YBBENCH_GO_HELPERS": "0"}
    run_id = f"lat{uuid.uuid4().hex[:8]}"
    filled = ybbench_run("sql-updates", postgres, tmp_path, testid=f"{run_id}-p", prometheus=prometheus.url,
                         knobs=knobs)
    assert filled.code == 0, filled.output
    for op in ("select", "update"):
        o = filled.digest()["ops"][op]
        lat = o["latency_ms"]
        assert lat["source"] == "prometheus" and lat["max"] is None, (op, lat)
        # What fill() wrote for this op is k6's last histogram of this op in Prometheus, read raw:
        # its mean exactly, each quantile inside the bucket that holds its rank.
        count, total, buckets = final_histogram(prometheus, filled.folder.name, op)
        assert count == o["count"], (op, count, o["count"])  # the histogram of this op: k6's count of it
        assert lat["avg"] == pytest.approx(total / count * 1000, rel=1e-9), (op, lat)
        for q, share in (("p50", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)):
            lo, hi = bucket_of_rank(buckets, share * count)
            assert lo * 1000 * (1 - 1e-9) <= lat[q] <= hi * 1000 * (1 + 1e-9), (op, q, lat[q], lo, hi)
    exact = ybbench_run("sql-updates", postgres, tmp_path, testid=f"{run_id}-k", prometheus=prometheus.url,
                        knobs={**knobs, "OP_LATENCY_SUMMARY": "on"})
    assert exact.code == 0, exact.output
    params = json.loads((exact.folder / "params.json").read_text())
    for op in ("select", "update"):
        k6 = exact.digest()["ops"][op]["latency_ms"]
        assert "source" not in k6
        prom = latency.from_prometheus(prometheus.url, exact.folder.name, op, params["started_unix_s"], params["finished_unix_s"])
        # Native histogram buckets at k6's resolution: within a few percent.
        for q in ("p50", "p95", "p99"):
            assert prom[q] == pytest.approx(k6[q], rel=0.15), (op, q, prom, k6)
        assert prom["avg"] == pytest.approx(k6["avg"], rel=0.02), (op, prom, k6)


def test_k6_sends_no_usage_report_unless_asked(monkeypatch):
    """ybbench run and make bench start k6 with K6_NO_USAGE_REPORT=true (k6
    posts a usage report to Grafana after every run otherwise)."""
    from ybbench.run.k6_process import k6_env
    monkeypatch.delenv("K6_NO_USAGE_REPORT", raising=False)
    assert k6_env({})["K6_NO_USAGE_REPORT"] == "true"
    monkeypatch.setenv("K6_NO_USAGE_REPORT", "false")
    assert k6_env({})["K6_NO_USAGE_REPORT"] == "false"


def test_k6_asks_no_build_service_for_a_binary_unless_asked(monkeypatch):
    """A k6 without an extension a script imports would ask Grafana's build
    service for one (automatic extension resolution): off, unless the user
    turns it on."""
    from ybbench.run.k6_process import k6_env
    monkeypatch.delenv("K6_AUTO_EXTENSION_RESOLUTION", raising=False)
    assert k6_env({})["K6_AUTO_EXTENSION_RESOLUTION"] == "false"
    monkeypatch.setenv("K6_AUTO_EXTENSION_RESOLUTION", "true")
    assert k6_env({})["K6_AUTO_EXTENSION_RESOLUTION"] == "true"
