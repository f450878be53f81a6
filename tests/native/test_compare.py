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

import pytest

from ..support.stack import free_port
from ..support.ybbench_cli import ybbench, ybbench_run

# A verdict needs 9 whole seconds in the window (3 blocks of 3: core/bootstrap.py). k6 adds ~0.1 s to DURATION
# here (8 s runs had windows of 8.06 s: 7 whole seconds, no verdict); 10 s make 9 or 10.
DURATION = "10s"


@pytest.fixture(scope="module")
def runs(postgres, prometheus, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    rid = f"cmp{uuid.uuid4().hex[:8]}"
    ins = ybbench_run("sql-inserts", postgres, results, testid=f"{rid}-ins", prometheus=prometheus.url,
                      knobs={"VUS": 4, "DURATION": "3s", "KEY_PREFIX": rid})
    assert ins.code == 0, ins.output
    sel = {"KEY_PREFIX": rid, "MAX_WRITTEN_KEY": ins.digest()["rows_written"], "DURATION": DURATION}
    out = {"results": results, "ins": ins}
    for name, vus in (("vu1", 1), ("vu8", 8), ("vu1b", 1)):
        done = ybbench_run("sql-selects", postgres, results, testid=f"{rid}-{name}", prometheus=prometheus.url,
                           knobs={**sel, "VUS": vus})
        assert done.code == 0, done.output
        out[name] = done
    return out


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


def test_numbers_read_back_against_summary_and_promql(runs, prometheus, eight_vs_one):
    _, doc, _ = eight_vs_one
    s = doc["comparisons"][0]["ops"]["select"]
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
        assert len(series["v"]) == t1 - t0 and series["t"][-1] == t1
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
            assert all(0 <= v <= os.cpu_count() + 0.1 for v in line["v"])
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
    # Observed on this shared 2-core machine, in two sessions: 1.014 [0.950, 1.083] and 1.098 [0.769, 1.569].
    p = compare(runs, runs["vu1"].folder.name, runs["vu1b"].folder.name, out=tmp_path / "same",
                prometheus=prometheus.url)
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "same" / "compare.json").read_text())
    s = doc["comparisons"][0]["ops"]["select"]
    print(f"same settings: ratio {s['ratio']:.3f} [{s['low']:.3f}, {s['high']:.3f}] {s['verdict']}")
    assert doc["comparisons"][0]["differences"] == {}
    # Two runs of one setting, one after the other on a shared machine, can still differ for real
    # (the host's other work), and at alpha 0.05 the bootstrap says so falsely about 7.5% of the
    # time (test_compare_stats measures that rate on synthetic series). So a verdict is allowed
    # here only for a small change; vu1 against vu8 (2.3x) could not pass this.
    if s["verdict"] != "no significant difference":
        assert 0.85 < s["ratio"] < 1.15, s
    assert s["low"] < 1.15 and s["high"] > 0.85, s


def test_without_prometheus_no_verdict_and_the_summary_numbers(runs, tmp_path):
    p = compare(runs, runs["vu1"].folder.name, runs["vu8"].folder.name, out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "c" / "compare.json").read_text())["comparisons"][0]["ops"]["select"]
    one, eight = runs["vu1"].digest()["ops"]["select"], runs["vu8"].digest()["ops"]["select"]
    assert (s["base_ops_per_s"], s["other_ops_per_s"]) == (one["per_second"], eight["per_second"])
    assert s["ratio"] == pytest.approx(eight["per_second"] / one["per_second"])
    assert s["low"] is None and s["verdict"].startswith("no verdict: the per-second series is needed")
    assert s["latency_ms"]["p99"] == {"base": one["latency_ms"]["p99"], "other": eight["latency_ms"]["p99"]}


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
