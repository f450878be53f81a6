"""`ybbench report` on real runs of the native stack: the numbers of every
chart (report.json) against the run's summary.json and against PromQL
queried here; one HTML file with its images inline; bad inputs."""

from __future__ import annotations

import html
import json
import math
import re
import subprocess
import sys
import uuid

import pytest

from ..support.stack import REPO, free_port
from ..support.ybbench_cli import ybbench, ybbench_run


@pytest.fixture(scope="module")
def runs(postgres, prometheus, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    rid = f"rep{uuid.uuid4().hex[:8]}"
    knobs = {"VUS": 4, "DURATION": "8s", "KEY_PREFIX": rid}
    ins = ybbench_run("sql-inserts", postgres, results, testid=f"{rid}-ins", prometheus=prometheus.url, knobs=knobs)
    assert ins.code == 0, ins.output
    sel = ybbench_run("sql-selects", postgres, results, testid=f"{rid}-sel", prometheus=prometheus.url,
                      knobs={**knobs, "MAX_WRITTEN_KEY": ins.digest()["rows_written"]})
    assert sel.code == 0, sel.output
    return {"results": results, "ins": ins, "sel": sel}


@pytest.fixture(scope="module")
def with_prom(runs, prometheus):
    out = runs["results"] / "both.html"
    p = ybbench("report", runs["ins"].folder.name, runs["sel"].folder.name, "--results", str(runs["results"]),
                "--prometheus", prometheus.url, "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(out)
    return out, json.loads(out.with_suffix(".json").read_text())


def _chart(run: dict, cid: str) -> dict:
    found = [c for c in run["charts"] if c["id"] == cid]
    assert found, f"{run['testid']}: no chart {cid}; missing: {run['missing']}"
    return found[0]


def test_summary_charts_hold_the_runs_summary_numbers(runs, with_prom):
    _, data = with_prom
    assert [r["testid"] for r in data["runs"]] == [runs["ins"].folder.name, runs["sel"].folder.name]
    for run, done in zip(data["runs"], (runs["ins"], runs["sel"])):
        digest = done.digest()
        ops = _chart(run, "summary_ops_per_second")["data"]
        assert ops == {op: o["per_second"] for op, o in digest["ops"].items()}
        assert run["summary"]["rows_written"] == digest["rows_written"]
        lat = _chart(run, "summary_latency_ms")["data"]
        for op, o in digest["ops"].items():
            assert lat[op]["p99"] == pytest.approx(o["latency_ms"]["p99"])
            assert lat[op]["p50"] == pytest.approx(o["latency_ms"]["p50"])


def test_prometheus_charts_match_promql_over_the_run_window(runs, prometheus, with_prom):
    _, data = with_prom
    for run, done, op in zip(data["runs"], (runs["ins"], runs["sel"]), ("insert", "select")):
        params = json.loads((done.folder / "params.json").read_text())
        start, end = params["started_unix_s"], params["finished_unix_s"]
        assert run["window"] == {"start": start, "end": end}
        step = max(1, math.ceil((end - start) / 120))
        tid = done.folder.name
        # k6 pushed every 1 s (ybbench_run): rates over 3 pushes, not 15 s of mostly empty time.
        rng = re.search(r"\[(\d+)s\]", _chart(run, "ops_per_second")["query"]).group(1)
        assert 3 <= int(rng) <= 6
        queries = {
            "ops_per_second": f'sum by (op) (rate(k6_iterations_total{{testid="{tid}"}}[{rng}s]))',
            "latency_p99_ms": f'histogram_quantile(0.99, sum by (op) (rate(k6_iteration_duration_seconds'
                              f'{{testid="{tid}"}}[{rng}s]))) * 1000',
        }
        for cid, promql in queries.items():
            chart = _chart(run, cid)
            got = prometheus.api("query_range", query=promql, start=f"{start:.3f}", end=f"{end:.3f}",
                                 step=f"{step:g}")["result"]
            mine = {s["metric"]["op"]: [float(v) for _, v in s["values"] if v != "NaN"] for s in got}
            assert set(chart["data"]) == {op}
            assert chart["data"][op]["v"] == pytest.approx(mine[op])
            assert promql.split(" * 1000")[0] in chart["source"] or promql in chart["source"]
        # Points whose window reaches before the run (k6 had no series there) are marked partial.
        s = _chart(run, "ops_per_second")["data"][op]
        assert s["partial"] == [t - int(rng) < start for t in s["t"]] and not all(s["partial"])
        assert _chart(run, "ops_per_second")["whole_run"][op]["value"] == done.digest()["ops"][op]["per_second"]
        # The rate over the run is the summary's ops/s, roughly (15 s windows at the edges).
        rates = sorted(_chart(run, "ops_per_second")["data"][op]["v"])
        median, whole = rates[len(rates) // 2], done.digest()["ops"][op]["per_second"]
        assert 0.5 * whole < median < 2 * whole
        avg = _chart(run, "latency_avg_ms")["data"][op]["v"]
        assert all(0 < v < 10_000 for v in avg)
        # node_exporter is scraped by the test Prometheus: CPU per node is charted.
        cpu = _chart(run, "cpu_cores_busy")["data"]
        assert cpu and all(v >= 0 for s in cpu.values() for v in s["v"])


def test_html_is_one_file_with_images_inline(with_prom):
    out, data = with_prom
    page = out.read_text()
    srcs = re.findall(r'src="([^"]*)"', page)
    drawn = [c for r in data["runs"] for c in r["charts"] if c.get("curve", True)]
    assert len(srcs) == len(drawn) >= 10
    # 8 s runs at 5 s scrapes: the host charts are too short for a curve and say so instead.
    undrawn = [c for r in data["runs"] for c in r["charts"] if not c.get("curve", True)]
    assert {c["id"] for c in undrawn} >= {"cpu_cores_busy", "disk_iops"}
    assert page.count("shorter than the scrapes can resolve") == len(undrawn)
    assert all(s.startswith("data:image/png;base64,") for s in srcs)
    # The only links: each run's k6 HTML report, relative, next to its run.
    assert re.findall(r'href="([^"]*)"', page) == [f"{r['testid']}/k6-report.html" for r in data["runs"]]
    assert "<script" not in page and "<link" not in page
    for r in data["runs"]:
        assert r["testid"] in page
    assert "Not in this version" not in page and "SSTable size per tablet server" in page
    assert "k6_iterations_total" in page  # every figure names its query
    assert not list(out.parent.glob(".both.html.*"))


def test_no_password_in_report(runs, postgres, with_prom):
    out, _ = with_prom
    assert postgres.password not in out.read_text()
    assert postgres.password not in out.with_suffix(".json").read_text()


def test_without_prometheus_says_what_is_missing(runs):
    tid = runs["sel"].folder.name
    p = ybbench("report", tid, "--results", str(runs["results"]))
    assert p.returncode == 0, p.stderr
    out = runs["results"] / tid / "report.html"
    assert p.stdout.strip() == str(out)
    data = json.loads(out.with_suffix(".json").read_text())
    (run,) = data["runs"]
    assert {c["id"] for c in run["charts"]} == {"summary_ops_per_second", "summary_latency_ms"}
    assert any("no --prometheus" in m for m in run["missing"])
    assert "no --prometheus" in out.read_text()


def test_unknown_testid_exits_2_and_writes_nothing(runs, tmp_path):
    out = tmp_path / "r.html"
    p = ybbench("report", runs["ins"].folder.name, "nosuchrun", "--results", str(runs["results"]), "--out", str(out))
    assert p.returncode == 2
    assert "nosuchrun" in p.stderr and "Traceback" not in p.stderr
    assert not list(tmp_path.iterdir())


def test_prometheus_down_exits_2_and_writes_nothing(runs, tmp_path):
    out = tmp_path / "r.html"
    down = f"http://127.0.0.1:{free_port()}"
    p = ybbench("report", runs["ins"].folder.name, "--results", str(runs["results"]), "--prometheus", down,
                "--out", str(out))
    assert p.returncode == 2
    assert "Prometheus" in p.stderr and down in p.stderr and "Traceback" not in p.stderr
    assert not list(tmp_path.iterdir())


def test_run_with_report_writes_that_runs_report(postgres, prometheus, tmp_path):
    """`ybbench run ... --report`: one command runs the benchmark and writes its report (issue 25)."""
    results = tmp_path / "results"
    rid = f"rr{uuid.uuid4().hex[:8]}"
    done = ybbench_run("sql-inserts", postgres, results, testid=rid, prometheus=prometheus.url,
                       knobs={"VUS": 2, "DURATION": "6s", "KEY_PREFIX": rid}, extra_args=["--report"])
    assert done.code == 0, done.output
    page = results / rid / "report.html"
    assert f"report: {page}" in done.output.splitlines()
    (run,) = json.loads(page.with_suffix(".json").read_text())["runs"]
    assert run["testid"] == rid
    # The charts hold this run's numbers: k6's own summary and the rows the database has.
    rows = int(postgres.query(f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{rid}:%'"))
    assert rows == done.digest()["rows_written"] > 0
    assert _chart(run, "summary_ops_per_second")["data"]["insert"] == done.digest()["ops"]["insert"]["per_second"]
    assert _chart(run, "ops_per_second")["data"]["insert"]["v"], "no ops/s points from Prometheus"


def test_a_run_too_short_for_k6s_pushes_gets_no_ops_curve_but_its_whole_run_figure(postgres, prometheus, tmp_path):
    """A 2 s run at 1 s pushes: every ops/s point's window (3 pushes) reaches
    before the run, so the page says so instead of drawing a curve, and
    gives k6's own whole-run figure (issue 26)."""
    results = tmp_path / "results"
    rid = f"short{uuid.uuid4().hex[:8]}"
    done = ybbench_run("sql-inserts", postgres, results, testid=rid, prometheus=prometheus.url,
                       knobs={"VUS": 2, "DURATION": "2s", "KEY_PREFIX": rid})
    assert done.code == 0, done.output
    p = ybbench("report", rid, "--results", str(results), "--prometheus", prometheus.url)
    assert p.returncode == 0, p.stderr
    (run,) = json.loads((results / rid / "report.json").read_text())["runs"]
    page = html.unescape((results / rid / "report.html").read_text())
    assert "shorter than k6's pushes can resolve" in page
    # The whole run's figure: k6's own count, in the summary chart.
    assert _chart(run, "summary_ops_per_second")["data"] == {"insert": done.digest()["ops"]["insert"]["per_second"]}
    found = [c for c in run["charts"] if c["id"] == "ops_per_second"]
    if not found:  # no window of 3 pushes fitted at all: said among what is missing
        assert any("ops/s by op (k6): no point" in m and "shorter than k6's pushes" in m for m in run["missing"])
        return
    (ops,) = found
    rng = int(re.search(r"\[(\d+)s\]", ops["query"]).group(1))
    start = run["window"]["start"]
    # Arithmetic here: a point is inside when its window starts at or after the run's start.
    inside = sum(t - rng >= start for t in ops["data"]["insert"]["t"])
    assert inside < 2 and ops["curve"] is False and "png" not in ops, (inside, ops["data"])
    assert ops["whole_run"]["insert"]["value"] == done.digest()["ops"]["insert"]["per_second"]
