"""`ybbench compare` on real runs of the native stack: sql-selects at 1 VU
against 8 VUs (a difference made on purpose), two runs of the same
settings, the numbers read back against k6's summary.json and against
PromQL written here, and every bad input (exit 2, a message, nothing
written)."""

from __future__ import annotations

import base64
import json
import math
import os
import re
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..support.stack import free_port
from ..support.ybbench_cli import ybbench, ybbench_run

# A verdict needs 9 whole seconds in the window (3 blocks of 3: core/bootstrap.py). k6 adds ~0.1 s to DURATION
# here (8 s runs had windows of 8.06 s: 7 whole seconds, no verdict). A run's own per-second.json leaves out
# its first and last seconds (partial): a 10 s run's ops end in 10 or 11 distinct seconds, 8 or 9 whole
# (8 was seen: no verdict); 11 s make 9 or 10. 26 s make 24 or 25 whole seconds, 4 or 5 blocks of 5: at 9 s
# (3 blocks) 8 VUs against 1 once came out not significant while other sessions loaded the 2 cores (seen
# 1 in 4 there); the interval is about half as wide at 25 s.
DURATION = "26s"


@pytest.fixture(scope="module")
def runs(postgres, prometheus, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    rid = f"cmp{uuid.uuid4().hex[:8]}"
    ins = ybbench_run("sql-inserts", postgres, results, testid=f"{rid}-ins", prometheus=prometheus.url,
                      knobs={"VUS": 4, "DURATION": "3s", "KEY_PREFIX": rid})
    assert ins.code == 0, ins.output
    sel = {"KEY_PREFIX": rid, "MAX_WRITTEN_KEY": ins.digest()["rows_written"], "DURATION": DURATION}
    out = {"results": results, "ins": ins}

    def select(name: str, vus: int):
        return ybbench_run("sql-selects", postgres, results, testid=f"{rid}-{name}", prometheus=prometheus.url,
                           knobs={**sel, "VUS": vus})

    # The two runs of one setting run side by side: whatever else the machine does then (its exporters,
    # Prometheus, a CI host's neighbours) it does to both, so they differ only by chance. One after the
    # other, a busy machine can make them differ for real (seen: 1.098 [0.769, 1.569]).
    with ThreadPoolExecutor(2) as pool:
        pair = dict(zip(("vu1", "vu1b"), pool.map(select, ("vu1", "vu1b"), (1, 1))))
    out.update(pair, vu8=select("vu8", 8))
    for name in ("vu1", "vu1b", "vu8"):
        assert out[name].code == 0, out[name].output
    return out


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
    p = compare(runs, runs["vu1"].folder.name, runs["vu8"].folder.name, out=out, prometheus=prometheus.url)
    assert p.returncode == 0, p.stderr
    print(p.stdout)
    return p, json.loads((out / "compare.json").read_text()), out


@pytest.fixture(scope="module")
def eight_vs_one_prometheus(runs, prometheus, tmp_path_factory):
    """The same runs without their own series: throughput from Prometheus."""
    copies = without_own_series(runs, "vu1", "vu8")
    out = tmp_path_factory.mktemp("cmp") / "vu8-prom"
    p = compare(copies, runs["vu1"].folder.name, runs["vu8"].folder.name, out=out, prometheus=prometheus.url)
    assert p.returncode == 0, p.stderr
    return p, json.loads((out / "compare.json").read_text()), out


def _window(done) -> tuple[float, float]:
    params = json.loads((done.folder / "params.json").read_text())
    return params["started_unix_s"], params["finished_unix_s"]


def test_eight_vus_are_faster_than_one(runs, eight_vs_one):
    p, doc, out = eight_vs_one
    # The direction from k6's own counts over k6's own durations.
    one, eight = runs["vu1"].digest(), runs["vu8"].digest()
    k6_ratio = (eight["ops"]["select"]["count"] / eight["duration_s"]) / (one["ops"]["select"]["count"] / one["duration_s"])
    assert k6_ratio > 1.2, k6_ratio
    (c,) = doc["comparisons"]
    s = c["ops"]["select"]
    assert s["verdict"] == "faster", s
    assert 1 < s["low"] <= s["ratio"] <= s["high"]
    assert s["seconds"]["base"] >= 9 and s["seconds"]["other"] >= 9
    assert s["block_length"] == {"base": 3, "other": 3} or s["seconds"]["base"] >= 12
    assert c["differences"] == {"knobs": {"VUS": {"base": "1", "other": "8"}}}
    # The table: the verdict and the ratio as printed.
    row = [line for line in p.stdout.splitlines() if line.startswith("select")]
    assert len(row) == 1 and row[0].endswith("faster")
    assert f"{s['ratio']:.3f} [{s['low']:.3f}, {s['high']:.3f}]" in row[0]
    assert f"{s['base_ops_per_s']:.1f}" in row[0] and f"{s['other_ops_per_s']:.1f}" in row[0]
    assert "VUS 1 -> 8" in p.stdout
    assert p.stdout.strip().endswith(f"compare: {out}")
    assert "moving-block bootstrap" in p.stdout and "B = 10000" in p.stdout
    page = (out / "compare.html").read_text()
    # ops/s and p99 of select, and CPU per node: each run overlaid at its start.
    assert "faster" in page and page.count("data:image/png;base64,") == 3
    assert [c["id"] for c in doc["charts"]] == ["select-ops", "select-p99", "cpu-cores-busy"]


def test_numbers_read_back_against_summary_and_promql(runs, prometheus, eight_vs_one_prometheus):
    _, doc, _ = eight_vs_one_prometheus
    s = doc["comparisons"][0]["ops"]["select"]
    # The tests' k6 pushes every second (ybbench_cli: K6_PROMETHEUS_RW_PUSH_INTERVAL=1s), and the label says so.
    assert s["resolution_s"] == {"base": 1, "other": 1}
    for key, done in (("base_ops_per_s", runs["vu1"]), ("other_ops_per_s", runs["vu8"])):
        tid = done.folder.name
        started, finished = _window(done)
        t0, t1 = math.ceil(started), math.floor(finished)
        sel = f'k6_iterations_total{{testid="{tid}", op="select"}}'

        def at(t):
            got = prometheus.api("query", query=f"sum({sel})", time=str(t))["result"]
            return float(got[0]["value"][1]) if got else 0.0  # before k6's first push: none yet

        mine = (at(t1) - at(t0)) / (t1 - t0)
        assert s[key] == pytest.approx(mine, rel=1e-9)
        series = doc["runs"][tid]["ops"]["select"]["throughput"]["series"]
        assert len(series["v"]) == t1 - t0 and series["t"][-1] == t1 and "file" not in series
        # Each second's ops from PromQL's increase over no more than that second's own samples.
        count = done.digest()["ops"]["select"]["count"]
        last = prometheus.api("query", query=f"sum(last_over_time({sel}[1h]))", time=str(finished + 60))["result"]
        assert float(last[0]["value"][1]) == count  # k6's final push holds the summary's count
        # The window's whole seconds hold all but its edges' ops: k6's count over the window, within a second's worth.
        covered = s[key] * (t1 - t0)
        assert count - 1.5 * count / (finished - started) <= covered <= count
        assert s[key] == pytest.approx(count / (finished - started), rel=0.25)
        # Latency: the whole run's native histogram, quantiles from PromQL written here.
        span = math.ceil(finished - started) + 15
        hist = f'sum(last_over_time(k6_iteration_duration_seconds{{testid="{tid}", op="select"}}[{span}s]))'
        lat = s["latency_ms"]["p99"]["base" if key == "base_ops_per_s" else "other"]
        for q, name in ((0.5, "p50"), (0.95, "p95"), (0.99, "p99")):
            got = prometheus.api("query", query=f"histogram_quantile({q}, {hist})", time=str(finished + 1))["result"]
            mine_ms = float(got[0]["value"][1]) * 1000
            assert s["latency_ms"][name]["base" if key == "base_ops_per_s" else "other"] == pytest.approx(mine_ms)
        k6_p99 = done.digest()["ops"]["select"]["latency_ms"]["p99"]
        assert 0.5 * k6_p99 < lat < 2 * k6_p99  # the histogram's buckets against k6's exact p99


def test_overlay_charts_read_back_against_compare_json_and_promql(runs, prometheus, eight_vs_one, tmp_path):
    """The p99 and CPU overlays: each run's line is its over_time data in
    compare.json, that data is PromQL written here over the run's window,
    its p99 is k6's within the buckets' reach, and --png writes the
    page's images."""
    _, doc, _ = eight_vs_one
    charts = {c["id"]: c for c in doc["charts"]}
    for done in (runs["vu1"], runs["vu8"]):
        tid = done.folder.name
        start, end = _window(done)
        over = doc["runs"][tid]["over_time"]
        p99 = over["p99_ms"]
        assert charts["select-p99"]["lines"][tid] == p99["data"]["select"]
        rng = re.search(r"\[(\d+)s\]", p99["query"]).group(1)
        mine = (f'histogram_quantile(0.99, sum by (op) (rate(k6_iteration_duration_seconds{{testid="{tid}"}}'
                f'[{rng}s]))) * 1000')
        got = prometheus.api("query_range", query=mine, start=f"{start:.3f}", end=f"{end:.3f}",
                             step=f"{p99['step']:g}")["result"]
        values = [float(v) for _, v in got[0]["values"] if v != "NaN"]
        assert p99["data"]["select"]["v"] == pytest.approx(values)
        assert all(start <= t <= end for t in p99["data"]["select"]["t"])
        k6_p99 = done.digest()["ops"]["select"]["latency_ms"]["p99"]
        median = sorted(values)[len(values) // 2]
        assert 0.5 * k6_p99 < median < 2 * k6_p99
        # CPU per node: node_exporter's busy cores, the report's query and partial marks.
        cpu = over["cpu_cores_busy"]
        rng = re.search(r"\[(\d+)s\]", cpu["query"]).group(1)
        mine = f'sum by (instance) (rate(node_cpu_seconds_total{{mode!="idle"}}[{rng}s]))'
        got = prometheus.api("query_range", query=mine, start=f"{start:.3f}", end=f"{end:.3f}",
                             step=f"{cpu['step']:g}")["result"]
        for s in got:
            line = cpu["data"][s["metric"]["instance"]]
            assert charts["cpu-cores-busy"]["lines"][f"{tid} {s['metric']['instance']}"] == line
            assert line["v"] == pytest.approx([float(v) for _, v in s["values"]])
            # A point whose window holds a scrape from before the run is partial (left off the overlay):
            # the instance's last scrape at or before the start, read from its raw samples here.
            span = math.ceil(end - start) + 60
            raw = prometheus.api("query", query=f'node_cpu_seconds_total{{instance="{s["metric"]["instance"]}", '
                                 f'mode!="idle"}}[{span}s]', time=f"{end:.3f}")["result"]
            before = max(float(t) for t, _ in raw[0]["values"] if float(t) <= start)
            assert line["partial"] == [t - int(rng) < before for t in line["t"]]
            # Busy cores stay within the machine's, but for the scrapes' own lateness: a sample is stamped when
            # its scrape starts and /proc/stat read up to scrape_duration_seconds (D) later, so over stamps Δt apart
            # (at least the window less two 5 s intervals) a rate can reach cores x (1 + D / Δt) on a loaded machine.
            late = prometheus.api("query", query=f'max_over_time(scrape_duration_seconds{{instance="'
                                  f'{s["metric"]["instance"]}"}}[{span}s])', time=f"{end:.3f}")["result"]
            d = float(late[0]["value"][1])
            bound = os.cpu_count() * (1 + d / (int(rng) - 2 * 5)) + 1e-6
            assert all(0 <= v <= bound for v in line["v"]), (max(line["v"]), d, bound)
    # --png: the page's images as files, named by the compare folder and chart.
    pngs, out = tmp_path / "png", tmp_path / "again"
    p = compare(runs, runs["vu1"].folder.name, runs["vu8"].folder.name, out=out, prometheus=prometheus.url,
                extra=("--png", str(pngs)))
    assert p.returncode == 0, p.stderr
    files = sorted(f.name for f in pngs.iterdir())
    assert files == sorted(f"again-{c}.png" for c in ("select-ops", "select-p99", "cpu-cores-busy"))
    page = (out / "compare.html").read_text()
    inline = sorted(base64.b64decode(b) for b in re.findall(r'src="data:image/png;base64,([^"]*)"', page))
    assert sorted(f.read_bytes() for f in pngs.iterdir()) == inline
    assert all(b.startswith(b"\x89PNG\r\n\x1a\n") for b in inline)


def test_same_settings_show_no_significant_difference(runs, prometheus, tmp_path):
    # Observed on this shared 2-core machine, the runs one after the other: 1.014 [0.950, 1.083] and
    # 1.098 [0.769, 1.569]. Side by side (the fixture): 1.011 [0.926, 1.103], and beside two busy loops
    # 1.011 [0.824, 1.240].
    p = compare(runs, runs["vu1"].folder.name, runs["vu1b"].folder.name, out=tmp_path / "same",
                prometheus=prometheus.url)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "same" / "compare.json").read_text())
    s = doc["comparisons"][0]["ops"]["select"]
    print(f"same settings: ratio {s['ratio']:.3f} [{s['low']:.3f}, {s['high']:.3f}] {s['verdict']}")
    assert doc["comparisons"][0]["differences"] == {}
    # Two runs of one setting side by side share the host's other work, yet at alpha 0.05 the bootstrap
    # still calls a difference about 7.5% of the time where there is none (test_compare_stats measures
    # that rate on synthetic series). So a verdict is allowed
    # here only for a small change; vu1 against vu8 (2.3x) could not pass this.
    if s["verdict"] != "no significant difference":
        assert 0.85 < s["ratio"] < 1.15, s
    assert s["low"] < 1.15 and s["high"] > 0.85, s


def _p99_of_whole_seconds(done) -> float:
    """p99 of the select latencies in the run's whole seconds, from its per-second.json, written here: every
    latency as its bucket's value 2 g^i / (g + 1) µs, sorted, the round(0.99 n)-th (HdrHistogram's rank)."""
    doc = json.loads((done.folder / "per-second.json").read_text())
    g, rows = doc["histogram"]["gamma"], doc["ops"]["select"][1:-1]
    values = sorted(v for r in rows for i, c in r[3] for v in [2 * g ** i / (g + 1) / 1000] * c)
    return values[max(1, int(0.99 * len(values) + 0.5)) - 1]


def test_without_prometheus_the_runs_own_series_at_one_second(runs, eight_vs_one, tmp_path):
    """No --prometheus: the runs' per-second.json gives the series, its
    whole seconds' counts (arithmetic here on the file), and the verdict."""
    p = compare(runs, runs["vu1"].folder.name, runs["vu8"].folder.name, out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "c" / "compare.json").read_text())
    s = doc["comparisons"][0]["ops"]["select"]
    assert s["verdict"] == "faster" and s["resolution_s"] == {"base": 1, "other": 1}
    for key, name in (("base_ops_per_s", "vu1"), ("other_ops_per_s", "vu8")):
        own = json.loads((runs[name].folder / "per-second.json").read_text())["ops"]["select"]
        counts = {t: n for t, n, _, _ in own}
        inner = range(own[0][0] + 1, own[-1][0])  # the whole seconds: the first and last are partial
        assert s[key] == pytest.approx(sum(counts.get(t, 0) for t in inner) / len(inner), rel=1e-12)
        # Every op k6 counted is in the file; the inner seconds hold all but the two edges'.
        assert sum(counts.values()) == runs[name].digest()["ops"]["select"]["count"]
        series = doc["runs"][runs[name].folder.name]["ops"]["select"]["throughput"]["series"]
        assert series["step_s"] == 1 and series["file"] == f"{runs[name].folder.name}/per-second.json"
    # The same ratio, with Prometheus given, as the 1 s series wins when both runs have one.
    _, with_prom, _ = eight_vs_one
    assert with_prom["comparisons"][0]["ops"]["select"]["ratio"] == s["ratio"]
    row = next(line for line in p.stdout.splitlines() if line.startswith("select"))
    assert " 1 s " in row and row.endswith("faster")
    # p99 from both runs' 1 s histograms over the same whole seconds (the first, with the connections'
    # warm-up, left out: so not k6's whole-run p99; test_per_second holds all seconds to k6's).
    q = s["p99"]
    assert q["ratio"] == pytest.approx(q["other_ms"] / q["base_ms"])
    assert q["base_ms"] == pytest.approx(_p99_of_whole_seconds(runs["vu1"]), rel=1e-12)
    assert q["other_ms"] == pytest.approx(_p99_of_whole_seconds(runs["vu8"]), rel=1e-12)
    page = (tmp_path / "c" / "compare.html").read_text()
    assert '<table class="compare">' in page and '<td class="verdict-faster text">faster</td>' in page
    assert "<pre>" not in page


def test_without_prometheus_nor_own_series_no_verdict_and_the_summary_numbers(runs, tmp_path):
    copies = without_own_series(runs, "vu1", "vu8")
    p = compare(copies, runs["vu1"].folder.name, runs["vu8"].folder.name, out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "c" / "compare.json").read_text())["comparisons"][0]["ops"]["select"]
    one, eight = runs["vu1"].digest()["ops"]["select"], runs["vu8"].digest()["ops"]["select"]
    assert (s["base_ops_per_s"], s["other_ops_per_s"]) == (one["per_second"], eight["per_second"])
    assert s["ratio"] == pytest.approx(eight["per_second"] / one["per_second"])
    assert s["low"] is None and s["verdict"].startswith("no verdict: a per-second series is needed")
    assert s["resolution_s"] == {"base": None, "other": None} and "p99" not in s
    assert s["latency_ms"]["p99"] == {"base": one["latency_ms"]["p99"], "other": eight["latency_ms"]["p99"]}
    assert '<td class="verdict-none text">no verdict' in (tmp_path / "c" / "compare.html").read_text()


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


def test_prometheus_unreachable(runs, tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    _refused(runs, tmp_path, runs["vu1"].folder.name, runs["vu8"].folder.name, words=["Prometheus", down,
                                                                                      "not reachable"],
             prometheus=down)


# --- the gate for CI: --fail-on ----------------------------------------------

def test_gate_fails_on_a_slower_run_naming_the_op(runs, tmp_path):
    # vu8 as base, vu1 as the other: a slowdown planted by running 1 VU instead of 8.
    p = compare(runs, runs["vu8"].folder.name, runs["vu1"].folder.name, out=tmp_path / "g",
                extra=("--fail-on", "slower:5%"))
    assert p.returncode == 1, (p.stdout, p.stderr)
    doc = json.loads((tmp_path / "g" / "compare.json").read_text())
    s = doc["comparisons"][0]["ops"]["select"]
    # k6's own counts over k6's durations say how much slower (outside compare's series).
    one, eight = runs["vu1"].digest(), runs["vu8"].digest()
    k6_ratio = (one["ops"]["select"]["count"] / one["duration_s"]) / (eight["ops"]["select"]["count"] / eight["duration_s"])
    assert k6_ratio < 0.8 and s["ratio"] < 0.8  # the whole seconds' mean against k6's count over its duration
    (failed,) = doc["gate"]["failed"]
    said = f"select: {runs['vu1'].folder.name} against {runs['vu8'].folder.name}: {100 * (1 - s['ratio']):.1f}% slower"
    assert failed.startswith(said) and "more than 5%" in failed and "(1 s series)" in failed
    assert f"FAILED {failed}" in p.stdout
    assert 'class="gate-fail"' in (tmp_path / "g" / "compare.html").read_text()


def test_gate_passes_identical_runs(runs, tmp_path):
    # A run against an exact copy of itself: ratio 1 whatever the machine did.
    copy = runs["results"] / f"{runs['vu1'].folder.name}-copy"
    shutil.copytree(runs["vu1"].folder, copy)
    try:
        p = compare(runs, runs["vu1"].folder.name, copy.name, out=tmp_path / "same",
                    extra=("--fail-on", "slower:5%", "--fail-on", "p99:+10%"))
        assert p.returncode == 0, (p.stdout, p.stderr)
        doc = json.loads((tmp_path / "same" / "compare.json").read_text())
        assert doc["gate"]["failed"] == [] == doc["gate"]["undecided"] and len(doc["gate"]["messages"]) == 2
        assert doc["comparisons"][0]["ops"]["select"]["ratio"] == 1.0
    finally:
        shutil.rmtree(copy)
    # Two runs of one setting: the same as test_same_settings_show_no_significant_difference allows
    # (0.85 < ratio < 1.15), so a gate at 20% passes them.
    p = compare(runs, runs["vu1"].folder.name, runs["vu1b"].folder.name, out=tmp_path / "two",
                extra=("--fail-on", "slower:20%"))
    assert p.returncode == 0, (p.stdout, p.stderr)


def test_gate_on_p99_says_what_the_histograms_show(runs, tmp_path):
    """The p99 gate on real runs: its ratio from both runs' 1 s histograms,
    and exit 1 exactly when that ratio is significantly above 1.1. A shared
    machine's p99 over a few seconds is often not significant (seen: 6.05 [0.93, 39.2], one run's per-second p99 from 5.4
    down to 0.3 ms): the statistics are tests/unit/test_quantile_bootstrap.py's,
    on series with a known shift; each p99 here is the whole seconds' (written
    out in _p99_of_whole_seconds)."""
    p = compare(runs, runs["vu1"].folder.name, runs["vu8"].folder.name, out=tmp_path / "p",
                extra=("--fail-on", "p99:+10%"))
    doc = json.loads((tmp_path / "p" / "compare.json").read_text())
    q = doc["comparisons"][0]["ops"]["select"]["p99"]
    assert q["base_ms"] == pytest.approx(_p99_of_whole_seconds(runs["vu1"]), rel=1e-12)
    assert q["other_ms"] == pytest.approx(_p99_of_whole_seconds(runs["vu8"]), rel=1e-12)
    assert q["low"] <= q["ratio"] <= q["high"]
    fails = q["low"] > 1 and q["ratio"] >= 1.1
    assert p.returncode == (1 if fails else 0), (p.stdout, p.stderr)
    if fails:
        (failed,) = doc["gate"]["failed"]
        assert failed.startswith(f"select: {runs['vu8'].folder.name} against {runs['vu1'].folder.name}: "
                                 f"p99 {100 * (q['ratio'] - 1):.1f}% higher, more than 10%")
    else:
        assert doc["gate"]["failed"] == [] and "p99:+10% passes" in p.stdout


def test_gate_without_a_series_cannot_judge(runs, tmp_path):
    copies = without_own_series(runs, "vu8", "vu1")
    p = compare(copies, runs["vu8"].folder.name, runs["vu1"].folder.name, out=tmp_path / "u",
                extra=("--fail-on", "slower:5%"))
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "UNDECIDED select" in p.stdout and "cannot be judged: no verdict: a per-second series is needed" in p.stdout


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
