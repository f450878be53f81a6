"""The seeds' storage, disk and cache figures over a run's window, from
Prometheus: SSTable size and files per tablet server (seed 001), disk IOPS
per host and device and the `iostat -mx` table (seed 004), block cache hits
and misses per tablet server (seed 004).

The queries are the dashboards' (ybbench/dashboards/storage.py,
disk_cache.py) and the recording rule node:ybbench_sst_files_size_bytes:sum,
so the report and Grafana show the same numbers. A query with no series
over the window is reported as missing, with what it needs, never drawn
empty.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .report_charts import line_chart

TSERVER = 'export_type="tserver_export"'
NEEDS_YB = ("needs YugabyteDB tablet servers scraped by this Prometheus (job yugabytedb, "
            "export_type=tserver_export); a PostgreSQL run has none")
NEEDS_NODE = "needs node_exporter scraped by this Prometheus (job node)"


@dataclass(frozen=True)
class Spec:
    id: str
    title: str
    ylabel: str
    labels: tuple[str, ...]  # the series' name: these labels' values
    queries: dict[str, str]  # legend suffix -> PromQL
    needs: str
    level: bool = False  # a size, not a rate: its change over the window is the growth


def specs(rng: str) -> list[Spec]:
    def disk(metric: str) -> str:
        return f"sum by (instance, device) (rate({metric}[{rng}]))"

    def cache(metric: str) -> str:
        return f"sum by (exported_instance) (rate({metric}{{{TSERVER}}}[{rng}]))"

    return [
        Spec("sstable_bytes", "SSTable size per tablet server, bytes on disk (seed 001)", "bytes",
             ("exported_instance",),
             {"": "sum by (exported_instance) (node:ybbench_sst_files_size_bytes:sum)"}, NEEDS_YB, level=True),
        Spec("sstable_files", "SST files per tablet server (seed 001)", "files", ("exported_instance",),
             {"": f"sum by (exported_instance) (rocksdb_current_version_num_sst_files{{{TSERVER}}})"}, NEEDS_YB,
             level=True),
        Spec("disk_iops", "disk IOPS per host and device, node_exporter (seed 004)", "requests/s",
             ("instance", "device"),
             {"r/s": disk("node_disk_reads_completed_total"), "w/s": disk("node_disk_writes_completed_total")},
             NEEDS_NODE),
        Spec("block_cache", "block cache hits and misses/s per tablet server (seed 004)", "blocks/s",
             ("exported_instance",),
             {"hits/s": cache("rocksdb_block_cache_hit"), "misses/s": cache("rocksdb_block_cache_miss")}, NEEDS_YB),
    ]


def _name(metric: dict, labels: tuple[str, ...], suffix: str) -> str:
    return " ".join(v for v in [*(metric.get(lb, "") for lb in labels), suffix] if v)


def _series(result: list[dict], labels: tuple[str, ...], suffix: str) -> dict[str, dict]:
    out = {}
    for s in result:
        pts = [(float(t), float(v)) for t, v in s["values"] if not math.isnan(float(v))]
        if pts:
            out[_name(s["metric"], labels, suffix)] = {"t": [p[0] for p in pts], "v": [p[1] for p in pts]}
    return out


def line_charts(run: dict, prom, step: float, rng: str) -> tuple[list[dict], list[str]]:
    start, end, tid = run["window"]["start"], run["window"]["end"], run["testid"]
    charts, missing = [], []
    for spec in specs(rng):
        data = {}
        for suffix, promql in spec.queries.items():
            got = _series(prom.range(promql, start, end, step), spec.labels, suffix)
            if not got:
                missing.append(f"{spec.title}{' ' + suffix if suffix else ''}: no series for {promql} "
                               f"over the window; {spec.needs}")
            data.update(got)
        if not data:
            continue
        queries = "; ".join(f"{s}: {q}" if s else q for s, q in spec.queries.items())
        c = {"id": spec.id, "title": f"{tid}: {spec.title}", "queries": spec.queries, "step": step,
             "source": f"Prometheus {prom.url}, query_range step {step:g}s: {queries}", "data": data}
        if spec.level:  # SSTable growth: first and last value in the window
            c["change"] = {k: {"first": s["v"][0], "last": s["v"][-1], "change": s["v"][-1] - s["v"][0]}
                           for k, s in data.items()}
        c["png"] = line_chart(c["title"], spec.ylabel, data, start)
        charts.append(c)
    cache = next((c for c in charts if c["id"] == "block_cache"), None)
    if cache:  # the counters themselves: rates of an idle cache are all 0
        cache["totals_at_end"] = {
            kind: {s["metric"].get("exported_instance", ""): float(s["value"][1])
                   for s in prom.instant(f"sum by (exported_instance) ({metric}{{{TSERVER}}})", end)}
            for kind, metric in (("hits", "rocksdb_block_cache_hit"), ("misses", "rocksdb_block_cache_miss"))}
    return charts, missing


# iostat -mx over the whole window, from node_exporter's /proc/diskstats counters.
IOSTAT_COUNTERS = {
    "reads": "node_disk_reads_completed_total", "writes": "node_disk_writes_completed_total",
    "read_bytes": "node_disk_read_bytes_total", "written_bytes": "node_disk_written_bytes_total",
    "read_time": "node_disk_read_time_seconds_total", "write_time": "node_disk_write_time_seconds_total",
    "io_time": "node_disk_io_time_seconds_total", "io_time_weighted": "node_disk_io_time_weighted_seconds_total",
}
# Δ = counter at t1 minus at t0, where t0 and t1 are the last scrapes at or
# before the window's start and end (as iostat differences /proc/diskstats).
IOSTAT_FORMULAS = {
    "r/s": "Δreads / Δt", "w/s": "Δwrites / Δt",
    "rMB/s": "Δread_bytes / Δt / 2^20", "wMB/s": "Δwritten_bytes / Δt / 2^20",
    "areq-sz kB": "(Δread_bytes + Δwritten_bytes) / (Δreads + Δwrites) / 1024",
    "r_await ms": "Δread_time / Δreads × 1000", "w_await ms": "Δwrite_time / Δwrites × 1000",
    "aqu-sz": "Δio_time_weighted / Δt", "%util": "Δio_time / Δt × 100",
}


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None  # no requests: no average (iostat prints 0.00)


def iostat_row(d: dict[str, float], dt: float) -> dict[str, float | None]:
    def scaled(v, k):
        return None if v is None else v * k

    return {
        "r/s": d["reads"] / dt, "w/s": d["writes"] / dt,
        "rMB/s": d["read_bytes"] / dt / 2**20, "wMB/s": d["written_bytes"] / dt / 2**20,
        "areq-sz kB": scaled(_ratio(d["read_bytes"] + d["written_bytes"], d["reads"] + d["writes"]), 1 / 1024),
        "r_await ms": scaled(_ratio(d["read_time"], d["reads"]), 1000),
        "w_await ms": scaled(_ratio(d["write_time"], d["writes"]), 1000),
        "aqu-sz": d["io_time_weighted"] / dt, "%util": d["io_time"] / dt * 100,
    }


def iostat_table(run: dict, prom) -> tuple[list[dict], list[str]]:
    start, end = run["window"]["start"], run["window"]["end"]
    names = "|".join(IOSTAT_COUNTERS.values())
    values_q = f'{{__name__=~"{names}"}}'
    time_q = "timestamp(node_disk_reads_completed_total)"
    names_of = {v: k for k, v in IOSTAT_COUNTERS.items()}

    def at(t: float) -> tuple[dict, dict]:
        vals: dict[tuple, dict] = {}
        for s in prom.instant(values_q, t):
            m = s["metric"]
            key = (m.get("instance", ""), m.get("device", ""))
            vals.setdefault(key, {})[names_of[m["__name__"]]] = float(s["value"][1])
        times = {(s["metric"].get("instance", ""), s["metric"].get("device", "")): float(s["value"][1])
                 for s in prom.instant(time_q, t)}
        return vals, times

    (v0, t0), (v1, t1) = at(start), at(end)
    rows, missing = {}, []
    for key in sorted(v1):
        name = " ".join(k for k in key if k)
        if key not in v0 or key not in t0 or key not in t1 or set(v0[key]) != set(IOSTAT_COUNTERS):
            missing.append(f"iostat {name}: no node_exporter scrape at or before the window's start")
            continue
        dt = t1[key] - t0[key]
        delta = {k: v1[key][k] - v0[key][k] for k in IOSTAT_COUNTERS}
        if dt <= 0:
            missing.append(f"iostat {name}: no node_exporter scrape inside the window")
        elif min(delta.values()) < 0:
            missing.append(f"iostat {name}: a counter went back (node_exporter or host restarted)")
        else:
            rows[name] = {**iostat_row(delta, dt), "t0": t0[key], "t1": t1[key], "interval_s": dt}
    if not v1:
        missing.append(f"iostat -mx: no series for {values_q} at the window's end; {NEEDS_NODE}")
    if not rows:
        return [], missing
    return [{"id": "iostat", "title": f"{run['testid']}: iostat -mx per host and device, whole window (seed 004)",
             "source": f"Prometheus {prom.url}, instant queries at the window's start and end: {values_q} "
                       f"and {time_q} (t0, t1: the last scrapes at or before them)",
             "formulas": IOSTAT_FORMULAS, "rows": rows}], missing
