"""`ybbench report`'s seed figures on a real run of the native stack:
SSTable size and files and block cache per tablet server against the real
YugabyteDB captures Prometheus scrapes, disk IOPS and the iostat table
against node_exporter's raw samples read here (test_report_rates.py checks
them against the kernel); --png; and a Prometheus
without YugabyteDB or node_exporter, where each figure is listed as missing."""

from __future__ import annotations

import base64
import html
import json
import math
import re
import statistics
import uuid

import pytest

from ..support import promrate
from ..support.captures import capture_names, capture_per_tserver
from ..support.known_rates import KNOWN_RATES, per_instance
from ..support.stack import Prometheus, wait_until
from ..support.ybbench_cli import ybbench, ybbench_run

TSERVER = 'export_type="tserver_export"'


@pytest.fixture(scope="module")
def run(postgres, prometheus, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    tid = f"seed{uuid.uuid4().hex[:8]}"
    # The captures' series must be older than the report's first rate window: a window that
    # holds a series' first sample reads low (Prometheus does not extrapolate past it). Alone,
    # this module can start its run right after the session's Prometheus.
    wait_until(lambda: len(prometheus.query('count_over_time(up{job="yugabytedb"}[20s]) >= 4')) == 4,
               "four scrapes of each YugabyteDB endpoint", timeout=60)
    done = ybbench_run("sql-inserts", postgres, results, testid=tid, prometheus=prometheus.url,
                       knobs={"VUS": 4, "DURATION": "20s", "KEY_PREFIX": tid})
    assert done.code == 0, done.output
    out, png = results / "seed.html", results / "png"
    p = ybbench("report", tid, "--results", str(results), "--prometheus", prometheus.url, "--out", str(out),
                "--png", str(png))
    assert p.returncode == 0, p.stderr
    (data,) = json.loads(out.with_suffix(".json").read_text())["runs"]
    return {"done": done, "out": out, "png": png, "data": data, "window": data["window"]}


def _chart(run: dict, cid: str) -> dict:
    found = [c for c in run["data"]["charts"] if c["id"] == cid]
    assert found, f"no chart {cid}; missing: {run['data']['missing']}"
    return found[0]


def _range(prometheus, promql: str, window: dict, step: float) -> list[dict]:
    return prometheus.api("query_range", query=promql, start=f"{window['start']:.3f}", end=f"{window['end']:.3f}",
                          step=f"{step:g}")["result"]


def test_sstable_size_and_files_are_the_captures_per_tserver(run, prometheus):
    for cid, metric in (("sstable_bytes", "rocksdb_current_version_sst_files_size"),
                        ("sstable_files", "rocksdb_current_version_num_sst_files")):
        chart, want = _chart(run, cid), capture_per_tserver(metric)
        assert set(chart["data"]) == set(want)
        for inst, s in chart["data"].items():
            assert s["v"] and set(s["v"]) == {want[inst]}, (cid, inst)
            assert chart["change"][inst] == {"first": want[inst], "last": want[inst], "change": 0.0}
        # The raw series, queried here without the recording rule, agree.
        raw = _range(prometheus, f"sum by (exported_instance) ({metric}{{{TSERVER}}})", run["window"], chart["step"])
        assert {s["metric"]["exported_instance"]: {float(v) for _, v in s["values"]} for s in raw} == \
            {k: {v} for k, v in want.items()}
    assert "node:ybbench_sst_files_size_bytes:sum" in _chart(run, "sstable_bytes")["source"]


def _raw(prometheus, metric: str, window: dict) -> dict[tuple, list[tuple[float, float]]]:
    """The raw samples of metric around the window, per label set."""
    res = prometheus.api("query", query=f"{metric}[10m]", time=f"{window['end'] + 60:.3f}")["result"]
    return {tuple(sorted(s["metric"].items())): [(float(t), float(v)) for t, v in s["values"]] for s in res}


def _bracket(pts: list[tuple[float, float]], window: dict) -> tuple[tuple, tuple]:
    """The last sample at or before the start and the first after the end."""
    return [p for p in pts if p[0] <= window["start"]][-1], [p for p in pts if p[0] > window["end"]][0]


def _scrape_times(prometheus, metric: str, inst: str, window: dict) -> list[float]:
    """When Prometheus scraped inst's metric around the window: one series'
    raw sample times (one scrape stamps all of an endpoint's series alike)."""
    raw = _raw(prometheus, f'{metric}{{{TSERVER}, exported_instance="{inst}"}}', window)
    return [t for t, _ in next(iter(raw.values()))]


def test_block_cache_is_the_captures_counters_per_tserver(run, prometheus):
    chart = _chart(run, "block_cache")
    hits, misses = capture_per_tserver("rocksdb_block_cache_hit"), capture_per_tserver("rocksdb_block_cache_miss")
    # The counters at the run's end: the capture's, grown since (they only grow).
    assert {k: set(v) for k, v in chart["totals_at_end"].items()} == {"hits": set(hits), "misses": set(misses)}
    for kind, want in (("hits", hits), ("misses", misses)):
        assert all(chart["totals_at_end"][kind][i] > want[i] for i in want)
    assert set(chart["data"]) == {f"{i} hits/s" for i in hits} | {f"{i} misses/s" for i in misses}
    for suffix, metric in (("hits/s", "rocksdb_block_cache_hit"), ("misses/s", "rocksdb_block_cache_miss")):
        for inst, want in per_instance(metric).items():
            # The stand-in's counters each grow by ADVANCE_PER_S x their rate a second, n series
            # summed (known_rates.py: 3/s for hits, 4/s for misses, each counter ybbench reads at
            # a rate of its own): a chart reading another counter (index misses for hits) is caught.
            name = f"{inst} {suffix}"
            assert chart["figures"][name]["whole_run"]["value"] == pytest.approx(want, rel=0.001)
            # Each point is rate() of those counters: want, scaled as Prometheus scales a
            # window's increase (tests/support/promrate.py) at the raw scrapes' times, which
            # is want itself unless a scrape came late or not at all (CI: one point low).
            s = chart["data"][name]
            times = _scrape_times(prometheus, metric, inst, run["window"])
            wins = [promrate.window([(t, want * t) for t in times], t, float(chart["range"][:-1])) for t in s["t"]]
            assert s["v"] and None not in wins, name
            assert s["v"] == pytest.approx([w.rate for w in wins], rel=0.001), name
            others = {o: per_instance(o, capture_names()[o]).get(inst) for o in KNOWN_RATES if o != metric}
            assert not {o: v for o, v in others.items() if v == pytest.approx(want, rel=0.01)}, name


def test_disk_iops_whole_run_and_curve_are_the_raw_counters_arithmetic(run, prometheus):
    chart = _chart(run, "disk_iops")
    window, step = run["window"], chart["step"]
    # The curve's points: every step of the run from its start, in ms as
    # Prometheus evaluates them.
    grid = range(round(window["start"] * 1000), round(window["end"] * 1000) + 1, round(step * 1000))
    for suffix, metric in (("r/s", "node_disk_reads_completed_total"), ("w/s", "node_disk_writes_completed_total")):
        raw = _raw(prometheus, metric, window)
        assert {f"{dict(k)['instance']} {dict(k)['device']} {suffix}" for k in raw} == \
            {n for n in chart["figures"] if n.endswith(suffix)}
        for key, pts in raw.items():
            (t0, v0), (t1, v1) = _bracket(pts, window)
            name = f"{dict(key)['instance']} {dict(key)['device']} {suffix}"
            whole = chart["figures"][name]["whole_run"]
            assert (whole["t0"], whole["t1"]) == (t0, t1)
            assert whole["value"] == pytest.approx((v1 - v0) / (t1 - t0), rel=1e-9, abs=1e-12)
            # Each window holds two and a half scrape intervals (5 s here) and two steps.
            spacing = statistics.median(b[0] - a[0] for a, b in zip(pts, pts[1:]))
            rng = math.ceil(max(2.5 * spacing, 2 * step))
            assert chart["range"] == f"{rng}s"
            # Every point is rate() over (t - range, t] of this series' raw
            # samples (tests/support/promrate.py), at each step where it has two.
            s = chart["data"][name]
            want = {t / 1000: w.rate for t in grid if (w := promrate.window(pts, t / 1000, rng))}
            assert s["t"] == pytest.approx(list(want), abs=1e-3), name
            assert s["v"] == pytest.approx(list(want.values()), rel=1e-9, abs=1e-12), name
            # Points are partial exactly while their window reaches back to t0 (left-open ranges).
            assert s["partial"] == [t - rng < t0 for t in s["t"]]


def test_iostat_table_is_the_counters_difference_over_the_window(run, prometheus):
    (table,) = run["data"]["tables"]
    window = run["window"]

    def delta(metric: str) -> dict[str, tuple[float, float, float]]:
        """(Δvalue, t0, t1) per 'instance device' from the raw samples: the
        last at or before the run's start and the first after its end."""
        out = {}
        for key, pts in _raw(prometheus, metric, window).items():
            (t0, v0), (t1, v1) = _bracket(pts, window)
            out[f"{dict(key)['instance']} {dict(key)['device']}"] = (v1 - v0, t0, t1)
        return out

    d = {k: delta(f"node_disk_{k}") for k in (
        "reads_completed_total", "writes_completed_total", "read_bytes_total", "written_bytes_total",
        "read_time_seconds_total", "write_time_seconds_total", "io_time_seconds_total",
        "io_time_weighted_seconds_total")}
    assert set(table["rows"]) == set(d["reads_completed_total"])
    for name, row in table["rows"].items():
        reads, t0, t1 = d["reads_completed_total"][name]
        writes = d["writes_completed_total"][name][0]
        rb, wb = d["read_bytes_total"][name][0], d["written_bytes_total"][name][0]
        dt = t1 - t0
        assert t0 <= window["start"] and window["start"] - t0 <= 10 and window["end"] < t1 <= window["end"] + 10
        assert (row["t0"], row["t1"]) == (t0, t1)
        want = {
            "r/s": reads / dt, "w/s": writes / dt, "rMB/s": rb / dt / 2**20, "wMB/s": wb / dt / 2**20,
            "areq-sz kB": (rb + wb) / (reads + writes) / 1024 if reads + writes else None,
            "r_await ms": d["read_time_seconds_total"][name][0] / reads * 1000 if reads else None,
            "w_await ms": d["write_time_seconds_total"][name][0] / writes * 1000 if writes else None,
            "aqu-sz": d["io_time_weighted_seconds_total"][name][0] / dt,
            "%util": d["io_time_seconds_total"][name][0] / dt * 100,
        }
        assert set(want) == set(table["formulas"])
        for col, v in want.items():
            assert row[col] == (None if v is None else pytest.approx(v, rel=1e-9, abs=1e-12)), (name, col)


def test_pngs_are_the_pages_images_named_by_chart_id(run):
    tid = run["done"].folder.name
    ids = [c["id"] for c in run["data"]["charts"]]
    assert {"sstable_bytes", "sstable_files", "disk_iops", "block_cache", "ops_per_second"} <= set(ids)
    files = {p.name: p.read_bytes() for p in run["png"].iterdir()}
    drawn = [c["id"] for c in run["data"]["charts"] if c.get("curve", True)]
    assert "disk_iops" in drawn  # 20 s at 5 s scrapes: points inside the run, a curve
    assert sorted(files) == sorted(f"{tid}-{i}.png" for i in drawn)
    inline = sorted(base64.b64decode(s) for s in re.findall(r'src="data:image/png;base64,([^"]*)"',
                                                             run["out"].read_text()))
    assert inline == sorted(files.values())
    assert all(b.startswith(b"\x89PNG\r\n") for b in inline)


def test_every_figure_names_its_source_and_window(run):
    page = run["out"].read_text()
    figures = re.findall(r"<figure>(.*?)</figure>", page, re.S)
    assert len(figures) == len(run["data"]["charts"]) + len(run["data"]["tables"])
    for fig in figures:
        cap = re.search(r"<figcaption>(.*?)</figcaption>", fig, re.S).group(1)
        assert re.search(r"Source: (k6 summary|Prometheus http://)", cap) and "Window: " in cap, cap
    seeds = {"sstable_bytes": "001", "sstable_files": "001", "disk_iops": "004", "block_cache": "004"}
    for c in run["data"]["charts"]:
        if c["id"] in seeds:
            assert f"(seed {seeds[c['id']]})" in c["title"]
    assert "(seed 004)" in run["data"]["tables"][0]["title"]
    assert "Not in this version" not in page


def test_report_links_k6s_own_report(run):
    page = run["out"].read_text()
    hrefs = re.findall(r'href="([^"]*)"', page)
    assert hrefs == [f"{run['done'].folder.name}/k6-report.html"]
    assert (run["out"].parent / hrefs[0]).is_file()
    assert run["data"]["k6_report"] == hrefs[0]


@pytest.fixture(scope="module")
def bare_prometheus(binaries, tmp_path_factory):
    """A Prometheus that scrapes only itself: k6 writes to it, no
    YugabyteDB, no node_exporter (a PostgreSQL run on a bare host)."""
    prom = Prometheus(tmp_path_factory.mktemp("bare-prometheus"), [])
    wait_until(lambda: prom.all_targets_up(1), "the bare Prometheus to scrape itself", timeout=60)
    yield prom
    prom.stop()


def test_missing_series_are_named_with_their_query_and_cause(postgres, bare_prometheus, tmp_path):
    tid = f"bare{uuid.uuid4().hex[:8]}"
    done = ybbench_run("sql-inserts", postgres, tmp_path, testid=tid, prometheus=bare_prometheus.url,
                       knobs={"VUS": 2, "DURATION": "3s", "KEY_PREFIX": tid})
    assert done.code == 0, done.output
    p = ybbench("report", tid, "--results", str(tmp_path), "--prometheus", bare_prometheus.url)
    assert p.returncode == 0, p.stderr
    out = tmp_path / tid / "report.html"
    (data,) = json.loads(out.with_suffix(".json").read_text())["runs"]
    ids = {c["id"] for c in data["charts"]}
    assert {"ops_per_second", "latency_p99_ms"} <= ids  # k6's own series are there
    assert not ids & {"cpu_cores_busy", "sstable_bytes", "sstable_files", "disk_iops", "block_cache"}
    assert data["tables"] == []
    missing = data["missing"]
    for query, cause in (("node_cpu_seconds_total", "node_exporter"),
                         ("node:ybbench_sst_files_size_bytes:sum", "YugabyteDB tablet servers"),
                         ("rocksdb_current_version_num_sst_files", "YugabyteDB tablet servers"),
                         ("rate(node_disk_reads_completed_total", "node_exporter"),
                         ("rate(node_disk_writes_completed_total", "node_exporter"),
                         ("rate(rocksdb_block_cache_hit", "YugabyteDB tablet servers"),
                         ("rate(rocksdb_block_cache_miss", "YugabyteDB tablet servers"),
                         ("node_disk_reads_completed_total|", "node_exporter")):
        hits = [m for m in missing if query in m]
        assert len(hits) == 1 and cause in hits[0] and "no series" in hits[0], (query, missing)
    assert len(missing) == 8, missing
    page = out.read_text()
    for m in missing:
        assert html.escape(m) in page


def test_png_folder_that_is_a_file_exits_2_and_writes_nothing(run, tmp_path):
    blocker = tmp_path / "png"
    blocker.write_text("")
    out = tmp_path / "r.html"
    p = ybbench("report", run["done"].folder.name, "--results", str(run["done"].folder.parent), "--out", str(out),
                "--png", str(blocker))
    assert p.returncode == 2 and "--png" in p.stderr and "Traceback" not in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["png"]
