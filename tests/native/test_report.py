"""`ybbench report` on real runs of the native stack: the numbers of every
chart (report.json) against the run's summary.json and against PromQL
queried here; one HTML file with its images inline; bad inputs."""

from __future__ import annotations

import html
import itertools
import json
import math
import re
import subprocess
import sys
import uuid

import pytest

from ..support import promrate
from ..support.stack import REPO, free_port
from ..support.ybbench_cli import USERS_K6, ybbench, ybbench_run


# Quiet (tests/lanes.sh): k6's pushes reach Prometheus on time, so the windows of the k6 charts cover the
# run, only with no neighbour but idle-priority builds (beside the compose tests a run's update p99 was 41.9
# ms where every window's was 58.5 to 161).
pytestmark = pytest.mark.quiet


@pytest.fixture(scope="module")
def runs(postgres, prometheus, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    rid = f"rep{uuid.uuid4().hex[:8]}"
    knobs = {"VUS": 4, "DURATION": "8s", "KEY_PREFIX": rid, "TABLE": f"kv_{rid}"}
    ins = ybbench_run("sql-inserts", postgres, results, testid=f"{rid}-ins", prometheus=prometheus.url, knobs=knobs,
                      extra_env=USERS_K6)
    assert ins.code == 0, ins.output
    # Two ops in one run, a quarter of them updates, each of which a trigger makes sleep 2 ms:
    # an op's latency chart drawn from the other op's series is off by several times.
    postgres.query(f"CREATE FUNCTION kv_{rid}_slow() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN PERFORM pg_sleep(0.002); RETURN NEW; END $$; "
                   f"CREATE TRIGGER slow BEFORE UPDATE ON kv_{rid} FOR EACH ROW EXECUTE FUNCTION kv_{rid}_slow()")
    mix = ybbench_run("sql-updates", postgres, results, testid=f"{rid}-mix", prometheus=prometheus.url,
                      knobs={**knobs, "MAX_WRITTEN_KEY": ins.digest()["rows_written"], "WRITE_PERCENT": 25},
                      extra_env=USERS_K6)
    assert mix.code == 0, mix.output
    return {"results": results, "ins": ins, "mix": mix}


@pytest.fixture(scope="module")
def with_prom(runs, prometheus):
    out = runs["results"] / "both.html"
    p = ybbench("report", runs["ins"].folder.name, runs["mix"].folder.name, "--results", str(runs["results"]),
                "--prometheus", prometheus.url, "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(out)
    return out, json.loads(out.with_suffix(".json").read_text())


def test_the_page_opens_each_run_with_what_limited_it(runs, with_prom):
    out, data = with_prom
    page = out.read_text()
    for r, run in zip((runs["ins"], runs["mix"]), data["runs"]):
        verdict = json.loads((r.folder / "limits.json").read_text())["verdict"]
        assert run["limits"] == verdict
        section = page[page.index(f'id="run-{run["testid"]}"'):]
        # The first thing under the run's heading and window, before k6's summary table.
        assert section.index("What limited this run") < section.index("k6 summary (summary.json)")
        assert html.escape(verdict["text"]) in section[:section.index("k6 summary (summary.json)")]


def _chart(run: dict, cid: str) -> dict:
    found = [c for c in run["charts"] if c["id"] == cid]
    assert found, f"{run['testid']}: no chart {cid}; missing: {run['missing']}"
    return found[0]


def test_summary_charts_hold_the_runs_summary_numbers(runs, with_prom):
    _, data = with_prom
    assert [r["testid"] for r in data["runs"]] == [runs["ins"].folder.name, runs["mix"].folder.name]
    for run, done in zip(data["runs"], (runs["ins"], runs["mix"])):
        digest = done.digest()
        ops = _chart(run, "summary_ops_per_second")["data"]
        assert ops == {op: o["per_second"] for op, o in digest["ops"].items()}
        assert run["summary"]["rows_written"] == digest["rows_written"]
        lat = _chart(run, "summary_latency_ms")["data"]
        for op, o in digest["ops"].items():
            assert lat[op]["p99"] == pytest.approx(o["latency_ms"]["p99"])
            assert lat[op]["p50"] == pytest.approx(o["latency_ms"]["p50"])


# ybbench_run's K6_PROMETHEUS_RW_PUSH_INTERVAL: k6 pushes every second.
PUSH_S = 1.0


def _bucket_factor(prometheus, testid: str, at: float) -> float:
    """The widest bucket of the run's k6 histograms, upper over lower bound,
    as Prometheus holds them: a histogram_quantile() lies in the bucket of
    the true quantile, so within this factor of it. k6's remote write asks
    for buckets at most 1.1 wide (NativeHistogramBucketFactor 1.1,
    xk6-output-prometheus-remote pkg/remotewrite/trend.go), which
    client_golang meets with schema 3: 2^(1/8), 1.0905."""
    got = prometheus.api("query", query=f'k6_iteration_duration_seconds{{testid="{testid}"}}',
                         time=f"{at:.3f}")["result"]
    widths = [float(hi) / float(lo) for s in got for _, lo, hi, _ in s["histogram"][1]["buckets"] if float(lo) > 0]
    assert widths, got
    assert 1 < max(widths) <= 1.1, max(widths)
    return max(widths)


def _tiles(series: dict, rng: int) -> tuple[float, float]:
    """The windows that split the run from its last point back, one range
    apart: the iterations they hold (each point's rate times the range), and
    the time from which they do."""
    at = {round(t * 1000): v for t, v in zip(series["t"], series["v"])}
    t, held = series["t"][-1], 0.0
    while round(t * 1000) in at:
        held += at[round(t * 1000)] * rng
        t -= rng
    return held, t


def test_k6_charts_hold_the_runs_own_k6_numbers(runs, prometheus, with_prom):
    """Issue 32: the ops/s, latency avg and p99 charts of each op against
    the run's k6 summary (summary.json), not against their own query run
    again. A point at t is k6's counter or histogram over (t - R, t], R the
    charts' range, so:
    - the points lie on the run's step grid, from its start to its end;
    - the run's avg and p99 lie between the smallest and the largest
      window's, and so do the ratios of two ops' (one run, the same VUs
      and moments: a mixture's mean and quantiles lie between its parts',
      and a ratio of two mixtures of the same weights between its parts'
      ratios), give or take one bucket of k6's native histogram (a window's
      p99 is known to its bucket: two buckets for a ratio of p99s) and, for
      the avg, the same margin for the run's edges, which no window sees
      whole;
    - every ops/s point is rate() written out here (tests/support/promrate)
      over k6's raw pushes of the op's counter, which end at the summary's
      count, to 1e-9 (a 25% undercount fails it; the old lower bound,
      90% of the run's share the windows cover, passed one on 8 s runs);
      the windows that split the run hold at most 10% more than its
      iterations (extrapolation to their edges); each op's share of them
      is its share of the run's.
    Not by chance: in 7 runs on a busy 2-core host the closest any run's
    figure came to its bound was 9% (the avg next to its largest window's),
    the counts 6% inside theirs (1.03 of the run's against 1.1)."""
    _, data = with_prom
    for run, done in zip(data["runs"], (runs["ins"], runs["mix"])):
        params = json.loads((done.folder / "params.json").read_text())
        start, end = params["started_unix_s"], params["finished_unix_s"]
        assert run["window"] == {"start": start, "end": end}
        ops = done.digest()["ops"]
        step = max(1, math.ceil((end - start) / 120))
        last = start + (end - start) // step * step  # the run's last point
        charts = {cid: _chart(run, cid) for cid in ("ops_per_second", "latency_avg_ms", "latency_p99_ms")}
        ranges = {int(re.search(r"\[(\d+)s\]", c["query"]).group(1)) for c in charts.values()}
        assert len(ranges) == 1, ranges  # one window for the three
        (rng,) = ranges
        # Three of k6's pushes (a busy host pushes late: up to six), not 15 s of mostly empty time.
        assert 3 * PUSH_S <= rng <= 6 * PUSH_S, rng
        assert all(c["query"] in c["source"] for c in charts.values())  # every figure names its query
        bucket = _bucket_factor(prometheus, done.folder.name, end + 1)
        for cid, c in charts.items():
            assert set(c["data"]) == set(ops), cid
            for op, s in c["data"].items():
                assert all(abs((t - start) / step - round((t - start) / step)) < 1e-3 for t in s["t"]), (cid, op)
                assert s["t"] and abs(s["t"][-1] - last) < 1e-3 and s["t"][0] >= start - 1e-3, (cid, op, s["t"])
        for cid, stat, margin in (("latency_avg_ms", "avg", bucket), ("latency_p99_ms", "p99", bucket)):
            v = {op: dict(zip(s["t"], s["v"])) for op, s in charts[cid]["data"].items()}
            for op, o in ops.items():
                k6 = o["latency_ms"][stat]
                assert min(v[op].values()) / margin <= k6 <= max(v[op].values()) * margin, (cid, op, k6, v[op])
            for a, b in itertools.combinations(sorted(ops), 2):
                ratios = [v[a][t] / v[b][t] for t in v[a] if t in v[b]]
                k6 = ops[a]["latency_ms"][stat] / ops[b]["latency_ms"][stat]
                pair = margin if stat == "avg" else margin * margin
                assert min(ratios) / pair <= k6 <= max(ratios) * pair, (cid, a, b, k6, ratios)
        seen = {}
        for op, o in ops.items():
            s = charts["ops_per_second"]["data"][op]
            # Every point is rate() over k6's own pushes of the op's counter, written out here (promrate) on the
            # raw samples, whose last values sum to k6's count: exact (1e-9), as the window's edges are the
            # pushes' own times. A bound from per-second.json cannot be this tight: its seconds do not line up
            # with the pushes, and each edge of the ~6 s the windows cover can hold up to a second's worth of
            # ops either way (+-33%), so a 25% undercount would pass it.
            raw = prometheus.api("query", query=f'k6_iterations_total{{testid="{done.folder.name}", op="{op}"}}'
                                 f'[{math.ceil(end - start) + 60}s]', time=f"{end + 30:.3f}")["result"]
            pushes = [[(float(t), float(v)) for t, v in x["values"]] for x in raw]
            assert sum(p[-1][1] for p in pushes) == o["count"], op  # k6's final pushes hold the summary's count
            for t, v in zip(s["t"], s["v"]):
                ws = [w for w in (promrate.window(p, t, rng) for p in pushes) if w is not None]
                assert ws and v == pytest.approx(sum(w.rate for w in ws), rel=1e-9), (op, t, v, ws)
            seen[op], _ = _tiles(s, rng)
            assert seen[op] <= 1.1 * o["count"], (op, seen[op], o)
        for op, o in ops.items():
            share = seen[op] / sum(seen.values())
            assert share == pytest.approx(o["count"] / sum(x["count"] for x in ops.values()), abs=0.03), op
        # Points whose window reaches before the run (k6 had no series there) are marked partial.
        s = charts["ops_per_second"]["data"][next(iter(ops))]
        assert s["partial"] == [t - rng < start for t in s["t"]] and not all(s["partial"])
        assert {op: w["value"] for op, w in charts["ops_per_second"]["whole_run"].items()} == \
            {op: o["per_second"] for op, o in ops.items()}
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
    tid = runs["mix"].folder.name
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
                       knobs={"VUS": 2, "DURATION": "6s", "KEY_PREFIX": rid}, extra_args=["--report"],
                       extra_env=USERS_K6)
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
                       knobs={"VUS": 2, "DURATION": "2s", "KEY_PREFIX": rid}, extra_env=USERS_K6)
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
