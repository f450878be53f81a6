"""`ybbench compare` on real runs of the native stack: three runs of
sql-selects at 1 VU against three at 8 VUs (a difference made on purpose),
interleaved, compared run against run; a single pair (no verdict without a
history, a planted history's spread with one); the numbers read back
against k6's summary.json, per-second.json and PromQL written here; and
every bad input (exit 2, a message, nothing written)."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import statistics
import time
import uuid

import numpy as np
import pytest
from scipy import stats

from ..support import promrate
from ..support.kernel import Sampler, busy_cpu_seconds
from ..support.stack import free_port
from ..support.ybbench_cli import ybbench, ybbench_run

# Quiet (tests/lanes.sh): its runs' ops/s are the VUs' and the view's only with no neighbour but idle-priority builds.
pytestmark = pytest.mark.quiet

# compare's unit is the run (core/run_stats.py), so a run need not be long: 10 s make 8 or 9 whole seconds
# of per-second.json and a mean per run.
DURATION = "10s"
SIDES = {"vu1": ("vu1", "vu1b", "vu1c"), "vu8": ("vu8", "vu8b", "vu8c")}


@pytest.fixture(scope="module")
def kernel_cpu():
    """The host's busy CPU seconds from /proc/stat, read every 0.1 s from
    before the runs to the module's end: the CPU overlay's ground truth."""
    cpu = Sampler(busy_cpu_seconds)
    time.sleep(15)  # the CPU chart's windows (13 s: 2.5 scrape intervals) reach back before the first run's start
    yield cpu
    cpu.stop()


@pytest.fixture(scope="module")
def runs(postgres, prometheus, kernel_cpu, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    rid = f"cmp{uuid.uuid4().hex[:8]}"
    ins = ybbench_run("sql-inserts", postgres, results, testid=f"{rid}-ins", prometheus=prometheus.url,
                      knobs={"VUS": 4, "DURATION": "3s", "KEY_PREFIX": rid})
    assert ins.code == 0, ins.output
    # The selects read through a view that sleeps 2 ms a row on the server: a VU's ops/s is then about
    # 1 / 2 ms whatever else this 2-core host runs, so 8 VUs are faster than 1 by several times (read
    # straight from the table, client and server fight for the same cores and 8 VUs were once slower).
    view = f"sleepy_{rid}"
    postgres.query(f"CREATE VIEW {view} AS SELECT k, v FROM postgresqlkeyvalue WHERE pg_sleep(0.002) IS NOT NULL")
    sel = {"KEY_PREFIX": rid, "MAX_WRITTEN_KEY": ins.digest()["rows_written"], "DURATION": DURATION, "TABLE": view}
    out = {"results": results, "ins": ins}
    # One after the other, in the order A B B A A B (as `ybbench ab` makes them), so that a drift of this
    # shared machine falls on both sides alike.
    for name in ("vu1", "vu8", "vu8b", "vu1b", "vu1c", "vu8c"):
        out[name] = ybbench_run("sql-selects", postgres, results, testid=f"{rid}-{name}", prometheus=prometheus.url,
                                knobs={**sel, "VUS": 8 if name.startswith("vu8") else 1})
        assert out[name].code == 0, out[name].output
    return out


def ids(runs, side: str) -> str:
    """A side of runs as compare takes it: the run ids, comma-separated."""
    return ",".join(runs[n].folder.name for n in SIDES[side])


def log_mean_ratio(base: list[float], other: list[float]) -> float:
    return math.exp(np.log(other).mean() - np.log(base).mean())


def welch_interval(base: list[float], other: list[float], alpha: float = 0.05) -> tuple[float, float, float]:
    """(ratio, low, high) of other/base by the documented statistic, written out here: Welch's t on the log of
    each run's value, d = mean log other - mean log base, SE^2 = s_b^2/n_b + s_o^2/n_o, df Welch-Satterthwaite,
    interval exp(d +- t(1 - alpha/2, df) SE) (docs/reports.md)."""
    lb, lo = np.log(base), np.log(other)
    d = lo.mean() - lb.mean()
    vb, vo = lb.var(ddof=1) / len(lb), lo.var(ddof=1) / len(lo)
    df = (vb + vo) ** 2 / (vb ** 2 / (len(lb) - 1) + vo ** 2 / (len(lo) - 1))
    half = stats.t.ppf(1 - alpha / 2, df) * math.sqrt(vb + vo)
    return math.exp(d), math.exp(d - half), math.exp(d + half)


def p99_verdict(low: float, high: float) -> str:
    """The documented verdict for p99: higher or lower when the interval excludes 1."""
    return "higher" if low > 1 else "lower" if high < 1 else "no significant difference"


def without_own_series(runs, *names) -> dict:
    """Copies of runs without their per-second.json, as a k6 without our Go
    module (Grafana Cloud's) leaves them: compare then reads Prometheus."""
    results = runs["results"] / f"prom-only-{uuid.uuid4().hex[:6]}"
    results.mkdir()
    for n in names:
        shutil.copytree(runs[n].folder, results / runs[n].folder.name, ignore=shutil.ignore_patterns("per-second.json"))
    return {"results": results, **{n: runs[n] for n in names}}


def compare(runs, *ids, out=None, prometheus=None, extra=()):
    args = ["compare", *ids, "--results", str(runs["results"])]
    if out:
        args += ["--out", str(out)]
    if prometheus:
        args += ["--prometheus", prometheus]
    return ybbench(*args, *extra)


@pytest.fixture(scope="module")
def eight_vs_one(runs, prometheus, tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp") / "vu8"
    p = compare(runs, ids(runs, "vu1"), ids(runs, "vu8"), out=out, prometheus=prometheus.url)
    assert p.returncode == 0, p.stderr
    print(p.stdout)
    return p, json.loads((out / "compare.json").read_text()), out


@pytest.fixture(scope="module")
def eight_vs_one_prometheus(runs, prometheus, tmp_path_factory):
    """The same runs without their own series: throughput from Prometheus."""
    copies = without_own_series(runs, *SIDES["vu1"], *SIDES["vu8"])
    out = tmp_path_factory.mktemp("cmp") / "vu8-prom"
    p = compare(copies, ids(runs, "vu1"), ids(runs, "vu8"), out=out, prometheus=prometheus.url)
    assert p.returncode == 0, p.stderr
    return p, json.loads((out / "compare.json").read_text()), out


def _window(done) -> tuple[float, float]:
    params = json.loads((done.folder / "params.json").read_text())
    return params["started_unix_s"], params["finished_unix_s"]


def _whole_seconds_mean(done) -> float:
    """A run's select ops/s over its whole seconds, from its per-second.json, written here."""
    own = json.loads((done.folder / "per-second.json").read_text())["ops"]["select"]
    counts = {t: n for t, n, _, _ in own}
    inner = range(own[0][0] + 1, own[-1][0])  # the first and last seconds are partial
    return sum(counts.get(t, 0) for t in inner) / len(inner)


def test_eight_vus_are_faster_than_one(runs, eight_vs_one):
    p, doc, out = eight_vs_one
    # The direction from k6's own counts over k6's own durations, run by run.
    k6 = {n: runs[n].digest()["ops"]["select"]["count"] / runs[n].digest()["duration_s"] for n in runs if n != "ins"
          and n != "results"}
    assert min(k6[n] for n in SIDES["vu8"]) > 1.2 * max(k6[n] for n in SIDES["vu1"]), k6
    (c,) = doc["comparisons"]
    s = c["ops"]["select"]
    assert s["verdict"] == "faster", s
    assert 1 < s["low"] <= s["ratio"] <= s["high"]
    assert s["runs"] == {"base": 3, "other": 3} and s["method"].startswith("Welch's t")
    assert c["base_runs"] == [runs[n].folder.name for n in SIDES["vu1"]]
    assert c["other_runs"] == [runs[n].folder.name for n in SIDES["vu8"]]
    # Each run's value is its whole seconds' mean (per-second.json, arithmetic here); the ratio and interval are
    # Welch's t on their logs, written out here.
    vb = [_whole_seconds_mean(runs[n]) for n in SIDES["vu1"]]
    vo = [_whole_seconds_mean(runs[n]) for n in SIDES["vu8"]]
    assert s["values"] == {"base": pytest.approx(vb, rel=1e-12), "other": pytest.approx(vo, rel=1e-12)}
    assert s["ratio"] == pytest.approx(log_mean_ratio(vb, vo), rel=1e-12)
    lb, lo = np.log(vb), np.log(vo)
    vb_, vo_ = lb.var(ddof=1) / 3, lo.var(ddof=1) / 3
    df = (vb_ + vo_) ** 2 / (vb_ ** 2 / 2 + vo_ ** 2 / 2)
    half = stats.t.ppf(0.975, df) * math.sqrt(vb_ + vo_)
    assert (s["low"], s["high"]) == (pytest.approx(s["ratio"] * math.exp(-half)),
                                     pytest.approx(s["ratio"] * math.exp(half)))
    assert s["spread"]["base"] == pytest.approx(math.expm1(lb.std(ddof=1)))
    assert c["differences"] == {"knobs": {"VUS": {"base": "1", "other": "8"}}}
    # The table: the verdict, the ratio and the runs as printed.
    row = [line for line in p.stdout.splitlines() if line.startswith("select")]
    assert len(row) == 1 and row[0].endswith("faster") and " 3+3 " in row[0]
    assert f"{s['ratio']:.3f} [{s['low']:.3f}, {s['high']:.3f}]" in row[0]
    assert f"{s['base_ops_per_s']:.1f}" in row[0] and f"{s['other_ops_per_s']:.1f}" in row[0]
    assert "ops/s: 3 + 3 runs, base runs" in p.stdout and f"p {s['pvalue']:.2g}" in p.stdout
    assert "VUS 1 -> 8" in p.stdout
    assert p.stdout.strip().endswith(f"compare: {out}")
    page = (out / "compare.html").read_text()
    # ops/s and p99 of select, and CPU per node: each run overlaid at its start.
    assert "faster" in page and page.count("data:image/png;base64,") == 3 and "3 + 3 runs" in page
    assert [c["id"] for c in doc["charts"]] == ["select-ops", "select-p99", "cpu-cores-busy"]


def test_numbers_read_back_against_summary_and_promql(runs, prometheus, eight_vs_one_prometheus):
    _, doc, _ = eight_vs_one_prometheus
    s = doc["comparisons"][0]["ops"]["select"]
    # The tests' k6 pushes every second (ybbench_cli: K6_PROMETHEUS_RW_PUSH_INTERVAL=1s), and the label says so.
    assert s["resolution_s"] == {"base": 1, "other": 1}
    means = {}
    for name in (*SIDES["vu1"], *SIDES["vu8"]):
        done = runs[name]
        tid = done.folder.name
        fig = doc["runs"][tid]["ops"]["select"]
        started, finished = _window(done)
        t0, t1 = math.ceil(started), math.floor(finished)
        sel = f'k6_iterations_total{{testid="{tid}", op="select"}}'

        def at(t):
            got = prometheus.api("query", query=f"sum({sel})", time=str(t))["result"]
            return float(got[0]["value"][1]) if got else 0.0  # before k6's first push: none yet

        def pushed(t):
            """When the sample PromQL reads at t was pushed (None before k6's first push)."""
            got = prometheus.api("query", query=f"max(timestamp({sel}))", time=str(t))["result"]
            return float(got[0]["value"][1]) if got else None

        mine = (at(t1) - at(t0)) / (t1 - t0)
        means[name] = fig["throughput"]["mean_ops_per_s"]
        assert means[name] == pytest.approx(mine, rel=1e-9)
        series = fig["throughput"]["series"]
        assert len(series["v"]) == t1 - t0 and series["t"][-1] == t1 and "file" not in series
        count = done.digest()["ops"]["select"]["count"]
        last = prometheus.api("query", query=f"sum(last_over_time({sel}[1h]))", time=str(finished + 60))["result"]
        assert float(last[0]["value"][1]) == count  # k6's final push holds the summary's count
        # The window's whole seconds hold all of k6's count but the ops after the last push read at t1 and those
        # before the push read at t0: at the run's mean rate, with half as much again for its ups and downs (a CI
        # machine's late push once left two seconds' worth out, past a fixed one-and-a-half-second bound).
        covered = mine * (t1 - t0)
        p0, p1 = pushed(t0), pushed(t1)
        unseen = (finished - p1) + (p0 - started if p0 is not None else 0.0)
        assert count - 1.5 * unseen * count / (finished - started) <= covered <= count, (p0, p1, started, finished)
        # Latency: the whole run's native histogram (Prometheus, compare's figure) against the run's own
        # quantiles (summary.json: our Go module's histograms of every select, 3 significant digits). A
        # histogram_quantile() lies in the bucket that holds its rank, at most 1.1 wide (k6's remote write asks
        # for it: test_report's _bucket_factor); the summary may rank a sample apart, in the next bucket: two
        # buckets' width, 21%, either way. A x1000 slip, or another run's or op's histogram, is far outside.
        own = done.digest()["ops"]["select"]["latency_ms"]
        for q in ("p50", "p95", "p99"):
            ratio = fig["latency_ms"][q] / own[q]
            assert 1 / (1.1 ** 2 * 1.001) <= ratio <= 1.1 ** 2 * 1.001, (q, fig["latency_ms"][q], own[q])
        # Without per-second.json a run's p99 for the comparison is that whole-run figure.
        assert fig["p99_ms"] == fig["latency_ms"]["p99"]
    # A side's ops/s is the geometric mean of its runs' (the ratio's own centre), its latency the mean of theirs.
    gm = lambda names: math.exp(sum(math.log(means[n]) for n in names) / len(names))  # noqa: E731
    assert s["base_ops_per_s"] == pytest.approx(gm(SIDES["vu1"]), rel=1e-12)
    assert s["other_ops_per_s"] == pytest.approx(gm(SIDES["vu8"]), rel=1e-12)
    assert s["ratio"] == pytest.approx(gm(SIDES["vu8"]) / gm(SIDES["vu1"]), rel=1e-12)
    p99s = [doc["runs"][runs[n].folder.name]["ops"]["select"]["latency_ms"]["p99"] for n in SIDES["vu1"]]
    assert s["latency_ms"]["p99"]["base"] == pytest.approx(sum(p99s) / 3, rel=1e-12)


def test_overlay_charts_read_back_against_compare_json_and_promql(runs, prometheus, kernel_cpu, eight_vs_one,
                                                                  tmp_path):
    """The p99 and CPU overlays: each run's line is its over_time data in
    compare.json; its p99 is held to the run's own latency (summary.json),
    its CPU to the kernel's busy time (/proc/stat, read here through the
    runs); --png writes the page's images."""
    _, doc, _ = eight_vs_one
    charts = {c["id"]: c for c in doc["charts"]}
    assert sorted(charts["select-ops"]["lines"]) == sorted(runs[n].folder.name for n in (*SIDES["vu1"], *SIDES["vu8"]))
    for done in (runs["vu1"], runs["vu8"]):
        tid = done.folder.name
        start, end = _window(done)
        over = doc["runs"][tid]["over_time"]
        p99 = over["p99_ms"]
        line = p99["data"]["select"]
        assert charts["select-p99"]["lines"][tid] == line
        assert line["v"] and all(start <= t <= end for t in line["t"])
        # The run's own select latency (summary.json: our Go module's histograms of every select, 3 significant
        # digits): every window's p99 is under the slowest select (with a native-histogram bucket's width, ~9%,
        # and a margin), and the windows' median is not under a quarter of the run's p50. A x1000 slip either way
        # (seconds read as ms, or the reverse) fails one of the two.
        own = done.digest()["ops"]["select"]["latency_ms"]
        assert max(line["v"]) <= 1.2 * own["max"], (max(line["v"]), own)
        assert statistics.median(line["v"]) >= own["p50"] / 4, (statistics.median(line["v"]), own)
        # CPU per node: node_exporter's busy cores, held to the kernel's. A point at t is rate() of the
        # instance's non-idle CPU seconds over (t - R, t] (R from the chart's query): the counters' increase
        # between the first and last scrape in that window, scaled to R as rate() extrapolates (promrate,
        # written out here, on the scrapes' times). node_exporter read /proc/stat somewhere in
        # [stamp - 2 ms, stamp + D] (Prometheus' timestamp tolerance; D the longest scrape_duration_seconds);
        # the kernel's busy seconds were read here every 0.1 s, so the increase lies between the samples that
        # bracket those reads (Sampler.bounds): the tolerance is exactly what the two reads' timing leaves
        # open, plus a tick (10 ms) a CPU at each end for /proc/stat's rounding and iowait's known small steps
        # back. Busy cores of the wrong modes (user alone, or idle) fall far outside it.
        cpu = over["cpu_cores_busy"]
        rng = int(re.search(r"\[(\d+)s\]", cpu["query"]).group(1))
        span = math.ceil(end - start) + 60
        assert cpu["data"]
        for instance, line in cpu["data"].items():
            assert charts["cpu-cores-busy"]["lines"][f"{tid} {instance}"] == line
            raw = prometheus.api("query", query=f'node_cpu_seconds_total{{instance="{instance}", mode!="idle"}}'
                                 f'[{span}s]', time=f"{end:.3f}")["result"]
            summed: dict[float, float] = {}
            for series in raw:
                for t, v in series["values"]:
                    summed[float(t)] = summed.get(float(t), 0.0) + float(v)
            scrapes = sorted(summed.items())
            # A point whose window holds a scrape from before the run is partial (left off the overlay):
            # the instance's last scrape at or before the start.
            before = max(t for t, _ in scrapes if t <= start)
            assert line["partial"] == [t - rng < before for t in line["t"]]
            late = prometheus.api("query", query=f'max_over_time(scrape_duration_seconds{{instance="{instance}"}}'
                                  f'[{span}s])', time=f"{end:.3f}")["result"]
            d = float(late[0]["value"][1]) + 0.002
            tick = 0.01 * os.cpu_count()  # a 10 ms USER_HZ tick on every CPU
            for t, v in zip(line["t"], line["v"]):
                w = promrate.window(scrapes, t, rng)
                assert w is not None, (t, scrapes)
                (a_lo, a_hi), (b_lo, b_hi) = kernel_cpu.bounds(w.first - 0.002), kernel_cpu.bounds(w.first + d)
                (c_lo, c_hi), (e_lo, e_hi) = kernel_cpu.bounds(w.last - 0.002), kernel_cpu.bounds(w.last + d)
                lo, hi = (c_lo - b_hi - 2 * tick) * w.scale, (e_hi - a_lo + 2 * tick) * w.scale
                assert lo <= v <= hi, (f"{tid} {instance} at {t - start:+.1f} s: {v:.3f} cores, the kernel's "
                                       f"{lo:.3f} to {hi:.3f} (scrapes {w.first - start:+.2f} to "
                                       f"{w.last - start:+.2f} s, D {d:.3f} s)")
    # --png: the page's images as files, named by the compare folder and chart.
    pngs, out = tmp_path / "png", tmp_path / "again"
    p = compare(runs, ids(runs, "vu1"), ids(runs, "vu8"), out=out, prometheus=prometheus.url,
                extra=("--png", str(pngs)))
    assert p.returncode == 0, p.stderr
    files = sorted(f.name for f in pngs.iterdir())
    assert files == sorted(f"again-{c}.png" for c in ("select-ops", "select-p99", "cpu-cores-busy"))
    page = (out / "compare.html").read_text()
    inline = sorted(base64.b64decode(b) for b in re.findall(r'src="data:image/png;base64,([^"]*)"', page))
    assert sorted(f.read_bytes() for f in pngs.iterdir()) == inline
    assert all(b.startswith(b"\x89PNG\r\n\x1a\n") for b in inline)


def test_a_single_pair_gets_no_verdict_without_a_history(runs, tmp_path):
    """One run a side cannot separate a change from run-to-run variation:
    the ratio, no interval, the advice; the gate cannot judge (exit 2). The
    results folder's history store holds vu1c of the same series: too few."""
    p = compare(runs, runs["vu1"].folder.name, runs["vu1b"].folder.name, out=tmp_path / "same",
                extra=("--fail-on", "slower:5%"))
    assert p.returncode == 2, (p.stdout, p.stderr)
    doc = json.loads((tmp_path / "same" / "compare.json").read_text())
    c = doc["comparisons"][0]
    s = c["ops"]["select"]
    assert c["differences"] == {}
    assert s["verdict"].startswith("no verdict: one run per side cannot separate a change from run-to-run "
                                   "variation; use `ybbench ab ... --repeat N`")
    assert s["low"] is s["high"] is None and s["runs"] == {"base": 1, "other": 1}
    assert s["ratio"] == pytest.approx(_whole_seconds_mean(runs["vu1b"]) / _whole_seconds_mean(runs["vu1"]))
    assert s["p99"]["verdict"].startswith("no verdict: one run per side")
    assert "UNDECIDED select" in p.stdout and "cannot be judged: no verdict: one run per side" in p.stdout
    assert '<td class="verdict-none text">no verdict' in (tmp_path / "same" / "compare.html").read_text()


def _planted_history(runs, path, name: str, values: dict[str, float], knobs: dict | None = None) -> None:
    """A history store holding runs of `name`'s series (or other knobs) with the planted ops/s and p99."""
    from ybbench.core import history_record, history_store

    with history_store.Store(str(path)) as store:
        for i, (tid, v) in enumerate(values.items()):
            fig = history_record.figures(runs[name].folder)
            fig["knobs"] = {**fig["knobs"], **(knobs or {})}
            fig["series_key"] = history_record.series_key(fig["workload"], fig["knobs"])
            fig["testid"], fig["started_unix_s"] = tid, fig["started_unix_s"] - 1000 + i
            fig["ops"]["select"] = {**fig["ops"]["select"], "ops_per_s": v, "p99_ms": v / 1000}
            store.record(fig)


def test_a_single_pair_takes_the_run_to_run_spread_of_its_series_from_the_history(runs, tmp_path):
    """A history of earlier runs of the same series gives a single pair its
    spread: the interval is Student's t on the pooled sd of their logs
    (arithmetic here), and compare.json names the runs; runs of another
    series are not taken."""
    planted = {"h1": 1000.0, "h2": 1030.0, "h3": 985.0, "h4": 1012.0, "h5": 970.0, "h6": 1003.0}
    store = tmp_path / "history.sqlite"
    _planted_history(runs, store, "vu1", planted)
    _planted_history(runs, store, "vu1", {"x1": 10.0, "x2": 5000.0, "x3": 100.0}, knobs={"VUS": "4"})
    p = compare(runs, runs["vu1"].folder.name, runs["vu8"].folder.name, out=tmp_path / "h",
                extra=("--history", str(store), "--fail-on", "slower:5%"))
    assert p.returncode == 0, (p.stdout, p.stderr)
    s = json.loads((tmp_path / "h" / "compare.json").read_text())["comparisons"][0]["ops"]["select"]
    logs = np.log(list(planted.values()))
    sd = math.sqrt(((logs - logs.mean()) ** 2).sum() / 5)
    half = stats.t.ppf(0.975, 5) * sd * math.sqrt(2)
    ratio = _whole_seconds_mean(runs["vu8"]) / _whole_seconds_mean(runs["vu1"])
    assert s["ratio"] == pytest.approx(ratio, rel=1e-12)
    assert (s["low"], s["high"]) == (pytest.approx(ratio * math.exp(-half)), pytest.approx(ratio * math.exp(half)))
    assert s["spread"]["history_runs"] == list(planted) and s["df"] == 5
    assert s["spread"]["pooled"] == pytest.approx(math.expm1(sd))
    assert s["verdict"] == ("faster" if ratio * math.exp(-half) > 1 else "no significant difference")
    assert "6 earlier runs of the series in the history store (h1, h2" in p.stdout
    # A wide spread of the same series: the same pair is not called different.
    wide = tmp_path / "wide.sqlite"
    _planted_history(runs, wide, "vu1", {"w1": 100.0, "w2": 1000.0, "w3": 10000.0, "w4": 300.0, "w5": 3000.0})
    p = compare(runs, runs["vu1"].folder.name, runs["vu8"].folder.name, out=tmp_path / "w",
                extra=("--history", str(wide)))
    s = json.loads((tmp_path / "w" / "compare.json").read_text())["comparisons"][0]["ops"]["select"]
    assert s["verdict"] == "no significant difference" and s["low"] < 1 < s["high"], s


def _p99_of_whole_seconds(done) -> float:
    """p99 of the select latencies in the run's whole seconds, from its per-second.json, written here: every
    latency as its bucket's value 2 g^i / (g + 1) µs, sorted, the round(0.99 n)-th (HdrHistogram's rank)."""
    doc = json.loads((done.folder / "per-second.json").read_text())
    g, rows = doc["histogram"]["gamma"], doc["ops"]["select"][1:-1]
    values = sorted(v for r in rows for i, c in r[3] for v in [2 * g ** i / (g + 1) / 1000] * c)
    return values[max(1, int(0.99 * len(values) + 0.5)) - 1]


def test_without_prometheus_the_runs_own_series_at_one_second(runs, eight_vs_one, tmp_path):
    """No --prometheus: each run's per-second.json gives its mean (its whole
    seconds' counts, arithmetic here on the file) and its p99."""
    p = compare(runs, ids(runs, "vu1"), ids(runs, "vu8"), out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "c" / "compare.json").read_text())
    s = doc["comparisons"][0]["ops"]["select"]
    assert s["verdict"] == "faster" and s["resolution_s"] == {"base": 1, "other": 1}
    for name in (*SIDES["vu1"], *SIDES["vu8"]):
        fig = doc["runs"][runs[name].folder.name]["ops"]["select"]
        assert fig["throughput"]["mean_ops_per_s"] == pytest.approx(_whole_seconds_mean(runs[name]), rel=1e-12)
        own = json.loads((runs[name].folder / "per-second.json").read_text())["ops"]["select"]
        # Every op k6 counted is in the file; the inner seconds hold all but the two edges'.
        assert sum(n for _, n, _, _ in own) == runs[name].digest()["ops"]["select"]["count"]
        series = fig["throughput"]["series"]
        assert series["step_s"] == 1 and series["file"] == f"{runs[name].folder.name}/per-second.json"
        # p99 from the run's 1 s histograms over the same whole seconds (the first, with the connections'
        # warm-up, left out: so not k6's whole-run p99; test_per_second holds all seconds to k6's).
        assert fig["p99_ms"] == pytest.approx(_p99_of_whole_seconds(runs[name]), rel=1e-12)
    # The same ratio, with Prometheus given, as the 1 s series wins when every run has one.
    _, with_prom, _ = eight_vs_one
    assert with_prom["comparisons"][0]["ops"]["select"]["ratio"] == s["ratio"]
    row = next(line for line in p.stdout.splitlines() if line.startswith("select"))
    assert row.endswith("faster")
    q = s["p99"]
    p99b = [_p99_of_whole_seconds(runs[n]) for n in SIDES["vu1"]]
    p99o = [_p99_of_whole_seconds(runs[n]) for n in SIDES["vu8"]]
    # The verdict from the interval worked out here on each run's p99 (read from its per-second.json above), not
    # compare's: a verdict turned around (higher for lower), or one from another interval, fails.
    ratio, low, high = welch_interval(p99b, p99o)
    assert q["ratio"] == pytest.approx(ratio, rel=1e-9) == pytest.approx(log_mean_ratio(p99b, p99o), rel=1e-9)
    assert (q["low"], q["high"]) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    assert q["runs"] == {"base": 3, "other": 3} and q["verdict"] == p99_verdict(low, high), (q, low, high)
    page = (tmp_path / "c" / "compare.html").read_text()
    assert '<table class="compare">' in page and '<td class="verdict-faster text">faster</td>' in page
    assert "<pre>" not in page


def test_without_prometheus_nor_own_series_the_summary_numbers_still_count_runs(runs, tmp_path):
    copies = without_own_series(runs, *SIDES["vu1"], *SIDES["vu8"])
    p = compare(copies, ids(runs, "vu1"), ids(runs, "vu8"), out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "c" / "compare.json").read_text())["comparisons"][0]["ops"]["select"]
    per_second = {n: runs[n].digest()["ops"]["select"]["per_second"] for n in (*SIDES["vu1"], *SIDES["vu8"])}
    assert s["values"] == {"base": [per_second[n] for n in SIDES["vu1"]], "other": [per_second[n] for n in SIDES["vu8"]]}
    assert s["ratio"] == pytest.approx(log_mean_ratio(*s["values"].values()), rel=1e-12)
    assert s["verdict"] == "faster" and s["resolution_s"] == {"base": None, "other": None}
    p99 = [runs[n].digest()["ops"]["select"]["latency_ms"]["p99"] for n in SIDES["vu1"]]
    assert s["p99"]["values"]["base"] == p99 and s["latency_ms"]["p99"]["base"] == pytest.approx(sum(p99) / 3)


def test_default_folder_is_under_results(runs):
    before = set(runs["results"].iterdir())
    p = compare(runs, runs["vu1"].folder.name, runs["vu1b"].folder.name)
    assert p.returncode == 0, p.stderr
    (new,) = set(runs["results"].iterdir()) - before
    assert new.name.startswith("compare-") and sorted(f.name for f in new.iterdir()) == ["compare.html",
                                                                                          "compare.json"]
    shutil.rmtree(new)


def _refused(runs, tmp_path, *ids, words, prometheus=None, extra=()):
    before = set(runs["results"].iterdir())
    out = tmp_path / "out"
    p = compare(runs, *ids, out=out, prometheus=prometheus, extra=extra)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and p.stdout == ""
    for w in words:
        assert w in p.stderr, p.stderr
    assert not list(tmp_path.iterdir()) and set(runs["results"].iterdir()) == before
    return p


def test_report_links_the_compares_of_its_run(runs, tmp_path):
    """`ybbench report` of a run links every compare page in results/ that
    names it (as base or other), relative to the report; a run no compare
    names links none."""
    results = tmp_path / "results"
    for name in ("vu1", "vu8", "ins"):
        shutil.copytree(runs[name].folder, results / runs[name].folder.name)
    vu1, vu8, ins = (runs[n].folder.name for n in ("vu1", "vu8", "ins"))
    made = ybbench("compare", vu1, vu8, "--results", str(results), "--out", str(results / "cmp-a"))
    assert made.returncode == 0, made.stderr
    (results / "broken").mkdir()
    (results / "broken" / "compare.json").write_text("{not json")  # not linked, not an error
    for tid, want in ((vu8, ["../cmp-a/compare.html"]), (ins, [])):
        p = ybbench("report", tid, "--results", str(results))
        assert p.returncode == 0, p.stderr
        page = (results / tid / "report.html").read_text()
        (run,) = json.loads((results / tid / "report.json").read_text())["runs"]
        assert run["compares"] == want
        hrefs = [h for h in re.findall(r'href="([^"]*)"', page) if "compare" in h]
        assert hrefs == want and all((results / tid / h).resolve().is_file() for h in hrefs)


def test_unknown_run(runs, prometheus, tmp_path):
    _refused(runs, tmp_path, runs["vu1"].folder.name, "nosuchrun", words=["no run 'nosuchrun'"],
             prometheus=prometheus.url)


def test_run_without_summary(runs, tmp_path_factory, tmp_path):
    broken = runs["results"] / f"{runs['vu1'].folder.name}-nosummary"
    shutil.copytree(runs["vu1"].folder, broken)
    (broken / "summary.json").unlink()
    try:
        _refused(runs, tmp_path, runs["vu1"].folder.name, broken.name,
                 words=[f"run {broken.name}: summary.json is missing"])
    finally:
        shutil.rmtree(broken)


def test_no_operation_in_common(runs, tmp_path):
    other = runs["results"] / f"{runs['vu1'].folder.name}-otherop"
    shutil.copytree(runs["vu1"].folder, other)
    summary = json.loads((other / "summary.json").read_text())
    summary["ops"] = {"update": summary["ops"]["select"]}
    (other / "summary.json").write_text(json.dumps(summary))
    try:
        _refused(runs, tmp_path, runs["vu1"].folder.name, other.name, words=["no operation in common", "select",
                                                                            "update"])
    finally:
        shutil.rmtree(other)


def test_different_workloads(runs, tmp_path):
    ids = (runs["ins"].folder.name, runs["vu1"].folder.name)
    _refused(runs, tmp_path, *ids, words=["different workloads", "sql-inserts", "sql-selects",
                                          "--allow-different-workloads"])
    # Allowed, these two still share no op: insert against select.
    _refused(runs, tmp_path, *ids, words=["no operation in common"], extra=["--allow-different-workloads"])


def test_sides_of_runs_refused(runs, tmp_path):
    one, two, eight = (runs[n].folder.name for n in ("vu1", "vu1b", "vu8"))
    _refused(runs, tmp_path, f"{one},{two}", f"{two},{eight}", words=[f"run {two} is on two sides"])
    _refused(runs, tmp_path, f"{one},,{two}", eight, words=["a run id, or run ids separated by commas"])
    _refused(runs, tmp_path, f"{one},{one}", eight, words=["a run named twice"])
    _refused(runs, tmp_path, one, words=["give the runs to compare with it, or the id of an `ybbench ab`"])


def test_prometheus_unreachable(runs, tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    _refused(runs, tmp_path, runs["vu1"].folder.name, runs["vu8"].folder.name, words=["Prometheus", down,
                                                                                      "not reachable"],
             prometheus=down)


# --- the gate for CI: --fail-on ----------------------------------------------

def test_gate_fails_on_slower_runs_naming_the_op(runs, tmp_path):
    # The 8-VU runs as base, the 1-VU runs as the other: a slowdown planted by running 1 VU instead of 8.
    p = compare(runs, ids(runs, "vu8"), ids(runs, "vu1"), out=tmp_path / "g", extra=("--fail-on", "slower:5%"))
    assert p.returncode == 1, (p.stdout, p.stderr)
    doc = json.loads((tmp_path / "g" / "compare.json").read_text())
    s = doc["comparisons"][0]["ops"]["select"]
    # k6's own counts over k6's durations say how much slower (outside compare's series).
    k6 = {n: runs[n].digest()["ops"]["select"]["count"] / runs[n].digest()["duration_s"] for n in SIDES["vu1"] + SIDES["vu8"]}
    assert log_mean_ratio([k6[n] for n in SIDES["vu8"]], [k6[n] for n in SIDES["vu1"]]) < 0.8 and s["ratio"] < 0.8
    (failed,) = doc["gate"]["failed"]
    said = f"select: {ids(runs, 'vu1')} against {ids(runs, 'vu8')}: {100 * (1 - s['ratio']):.1f}% slower"
    assert failed.startswith(said) and "more than 5%" in failed and "(3 + 3 runs)" in failed
    assert f"FAILED {failed}" in p.stdout
    assert 'class="gate-fail"' in (tmp_path / "g" / "compare.html").read_text()


def test_gate_passes_identical_runs(runs, tmp_path):
    # Runs against exact copies of themselves: ratio 1, p 1, whatever the machine did.
    copies = []
    for n in ("vu1", "vu1b"):
        copies.append(runs["results"] / f"{runs[n].folder.name}-copy")
        shutil.copytree(runs[n].folder, copies[-1])
    try:
        p = compare(runs, f"{runs['vu1'].folder.name},{runs['vu1b'].folder.name}", ",".join(c.name for c in copies),
                    out=tmp_path / "same", extra=("--fail-on", "slower:5%", "--fail-on", "p99:+10%"))
        assert p.returncode == 0, (p.stdout, p.stderr)
        doc = json.loads((tmp_path / "same" / "compare.json").read_text())
        assert doc["gate"]["failed"] == [] == doc["gate"]["undecided"] and len(doc["gate"]["messages"]) == 2
        s = doc["comparisons"][0]["ops"]["select"]
        assert s["ratio"] == 1.0 and s["pvalue"] == 1.0 and s["verdict"] == "no significant difference"
    finally:
        for c in copies:
            shutil.rmtree(c)


def test_gate_on_p99_says_what_the_runs_show(runs, tmp_path):
    """The p99 gate on real runs: each run's p99 from its 1 s histograms
    (written out in _p99_of_whole_seconds), Welch's t over runs (written
    out in welch_interval), and exit 1 exactly when that interval lies above
    1 and the ratio is 1.1 or more. Which way these runs go is the machine's:
    tests/unit/test_compare_gate.py plants p99 up and down 20%."""
    p = compare(runs, ids(runs, "vu1"), ids(runs, "vu8"), out=tmp_path / "p", extra=("--fail-on", "p99:+10%"))
    doc = json.loads((tmp_path / "p" / "compare.json").read_text())
    q = doc["comparisons"][0]["ops"]["select"]["p99"]
    assert q["values"]["base"] == pytest.approx([_p99_of_whole_seconds(runs[n]) for n in SIDES["vu1"]], rel=1e-12)
    assert q["values"]["other"] == pytest.approx([_p99_of_whole_seconds(runs[n]) for n in SIDES["vu8"]], rel=1e-12)
    # The expected exit from the interval worked out here on the runs' own p99 (the rule itself is held to
    # planted rises and falls in tests/unit/test_compare_gate.py).
    ratio, low, high = welch_interval(q["values"]["base"], q["values"]["other"])
    assert (q["ratio"], q["low"], q["high"]) == (pytest.approx(ratio, rel=1e-9), pytest.approx(low, rel=1e-9),
                                                 pytest.approx(high, rel=1e-9))
    fails = low > 1 and ratio >= 1.1
    assert p.returncode == (1 if fails else 0), (p.stdout, p.stderr)
    if fails:
        (failed,) = doc["gate"]["failed"]
        assert failed.startswith(f"select: {ids(runs, 'vu8')} against {ids(runs, 'vu1')}: "
                                 f"p99 {100 * (q['ratio'] - 1):.1f}% higher, more than 10%")
    else:
        assert doc["gate"]["failed"] == [] and "p99:+10% passes" in p.stdout


@pytest.mark.parametrize("rule, words", [
    ("slower:abc", ["--fail-on 'slower:abc': not a rule", "slower:N%"]),
    ("faster:5%", ["faster is not a gate"]),
    ("slower:-5%", ["not a rule"]),
    ("slower:0%", ["N must be above 0"]),
    ("slower:100%", ["below 100"]),
    ("slower:+5%", ["without a sign"]),
    ("p99:abc", ["not a rule"]),
])
def test_gate_bad_rules(runs, tmp_path, rule, words):
    _refused(runs, tmp_path, runs["vu1"].folder.name, runs["vu8"].folder.name, words=words,
             extra=("--fail-on", rule))
