"""The seeds' host, storage, disk and cache figures over a run's window,
from Prometheus: CPU busy per node (seed 000), SSTable size and files per
tablet server (seed 001), disk IOPS per host and device and the `iostat -mx`
table (seed 004), block cache hits and misses per tablet server (seed 004).

The queries are the dashboards' (ybbench/dashboards/storage.py,
disk_cache.py) and the recording rule node:ybbench_sst_files_size_bytes:sum,
so the report and Grafana show the same numbers. A query with no series
over the window is reported as missing, with what it needs, never drawn
empty. Every rate measures the run it names (run_rates.py): each point
says whether its window is inside the run or partial, each line carries the
whole-run figure from the scrapes that bracket the run, and a run shorter
than the scrapes can resolve gets that figure instead of a curve.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ybbench.report import run_rates
from ybbench.report.charts import line_chart

TSERVER = 'export_type="tserver_export"'
NEEDS_YB = ("needs YugabyteDB tablet servers scraped by this Prometheus (job yugabytedb, "
            "export_type=tserver_export); a PostgreSQL run has none")
NEEDS_NODE = "needs node_exporter scraped by this Prometheus (job node)"
# A curve needs this many points whose windows lie inside the run.
MIN_INSIDE_POINTS = 2


@dataclass(frozen=True)
class Spec:
    id: str
    title: str
    ylabel: str
    labels: tuple[str, ...]  # the series' name: these labels' values
    queries: dict[str, str]  # legend suffix -> PromQL (levels) or counter selector (rates)
    needs: str
    level: bool = False  # a size, not a rate: its change over the window is the growth

    def missing(self, suffix: str, promql: str) -> str:
        """What the report says of a query with no series, and what it needs."""
        return f"{self.title}{' ' + suffix if suffix else ''}: no series for {promql} over the window; {self.needs}"

    def promql(self, suffix: str, rng: str) -> str:
        if self.level:
            return self.queries[suffix]
        return f"sum by ({', '.join(self.labels)}) (rate({self.queries[suffix]}[{rng}]))"


def specs() -> list[Spec]:
    return [
        Spec("cpu_cores_busy", "CPU busy per node, cores (node_exporter)", "cores", ("instance",),
             {"": 'node_cpu_seconds_total{mode!="idle"}'}, NEEDS_NODE),
        Spec("sstable_bytes", "SSTable size per tablet server, bytes on disk (seed 001)", "bytes",
             ("exported_instance",),
             {"": "sum by (exported_instance) (node:ybbench_sst_files_size_bytes:sum)"}, NEEDS_YB, level=True),
        Spec("sstable_files", "SST files per tablet server (seed 001)", "files", ("exported_instance",),
             {"": f"sum by (exported_instance) (rocksdb_current_version_num_sst_files{{{TSERVER}}})"}, NEEDS_YB,
             level=True),
        Spec("disk_iops", "disk IOPS per host and device, node_exporter (seed 004)", "requests/s",
             ("instance", "device"),
             {"r/s": "node_disk_reads_completed_total", "w/s": "node_disk_writes_completed_total"}, NEEDS_NODE),
        Spec("block_cache", "block cache hits and misses/s per tablet server (seed 004)", "blocks/s",
             ("exported_instance",),
             {"hits/s": f"rocksdb_block_cache_hit{{{TSERVER}}}", "misses/s": f"rocksdb_block_cache_miss{{{TSERVER}}}"},
             NEEDS_YB),
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


def _level_chart(spec: Spec, run: dict, prom, step: float) -> tuple[dict, list[str]]:
    start, end = run["window"]["start"], run["window"]["end"]
    data, missing = {}, []
    for suffix, promql in spec.queries.items():
        got = _series(prom.range(promql, start, end, step), spec.labels, suffix)
        if not got:
            missing.append(spec.missing(suffix, promql))
        data.update(got)
    c = {"queries": spec.queries, "data": data}
    # SSTable growth: first and last value in the window
    c["change"] = {k: {"first": s["v"][0], "last": s["v"][-1], "change": s["v"][-1] - s["v"][0]}
                   for k, s in data.items()}
    return c, missing


def _rate_chart(spec: Spec, run: dict, prom, step: float) -> tuple[dict, list[str]]:
    """Points marked inside or partial, the whole-run and in-run figures of
    every line, and no curve when too few points lie inside the run."""
    start, end = run["window"]["start"], run["window"]["end"]
    per_suffix = {suffix: run_rates.groups(run_rates.edges(prom, selector, start, end),
                                           lambda m, sfx=suffix: _name(m, spec.labels, sfx))
                  for suffix, selector in spec.queries.items()}
    groups = {name: g for gs in per_suffix.values() for name, g in gs.items()}
    interval = max((g.interval for g in groups.values() if g.interval), default=None)
    rng = run_rates.rate_range(interval, step)
    queries = {suffix: spec.promql(suffix, rng) for suffix in spec.queries}
    data, missing = {}, []
    for suffix, promql in queries.items():
        got = _series(prom.range(promql, start, end, step), spec.labels, suffix)
        if not got and not per_suffix[suffix]:
            missing.append(spec.missing(suffix, promql))
        for name, s in got.items():
            g = groups.get(name)
            data[name] = run_rates.mark_partial(s, g.inside_from if g else None, float(rng[:-1]))
    figures = {name: {"whole_run": g.whole_run.as_dict() if g.whole_run else None,
                      "in_run": g.in_run.as_dict() if g.in_run else None,
                      "scrapes_inside": g.scrapes_inside, "scrape_interval_s": g.interval}
               for name, g in sorted(groups.items())}
    inside = max((s["partial"].count(False) for s in data.values()), default=0)
    c = {"queries": queries, "range": rng, "scrape_interval_s": interval, "data": data, "figures": figures,
         "curve": inside >= MIN_INSIDE_POINTS}
    if groups and not c["curve"]:
        c["note"] = (f"The run ({end - start:.1f} s) is shorter than the scrapes can resolve: a point needs a "
                     f"{rng} window of scrapes taken inside the run (one every {interval or 0:g} s), and "
                     f"{inside} point(s) had one, so no curve is drawn; the whole-run figures below come from "
                     f"the scrapes that bracket the run.")
    return c, missing


def rate_chart(chart_id: str, run: dict, prom, step: float) -> tuple[dict, list[str]]:
    """One rate chart's data (its points marked inside or partial), as the
    report computes it: for `ybbench compare`, which overlays runs."""
    (spec,) = [s for s in specs() if s.id == chart_id and not s.level]
    return _rate_chart(spec, run, prom, step)


def line_charts(run: dict, prom, step: float) -> tuple[list[dict], list[str]]:
    start, tid = run["window"]["start"], run["testid"]
    charts, missing = [], []
    for spec in specs():
        c, lost = (_level_chart if spec.level else _rate_chart)(spec, run, prom, step)
        missing += lost
        if not c["data"] and not c.get("figures"):
            continue
        queries = "; ".join(f"{s}: {q}" if s else q for s, q in c["queries"].items())
        c = {"id": spec.id, "title": f"{tid}: {spec.title}", "step": step,
             "source": f"Prometheus {prom.url}, query_range step {step:g}s: {queries}", **c}
        if c.get("curve", True):
            c["png"] = line_chart(c["title"], spec.ylabel, c["data"], start, run["window"]["end"],
                                  {k: f["whole_run"] for k, f in c.get("figures", {}).items()})
        charts.append(c)
    cache = next((c for c in charts if c["id"] == "block_cache"), None)
    if cache:  # the counters themselves
        end = run["window"]["end"]
        cache["totals_at_end"] = {
            kind: {s["metric"].get("exported_instance", ""): float(s["value"][1])
                   for s in prom.instant(f"sum by (exported_instance) ({metric}{{{TSERVER}}})", end)}
            for kind, metric in (("hits", "rocksdb_block_cache_hit"), ("misses", "rocksdb_block_cache_miss"))}
    return charts, missing


# iostat -mx over the whole run, from node_exporter's /proc/diskstats counters.
IOSTAT_COUNTERS = {
    "reads": "node_disk_reads_completed_total", "writes": "node_disk_writes_completed_total",
    "read_bytes": "node_disk_read_bytes_total", "written_bytes": "node_disk_written_bytes_total",
    "read_time": "node_disk_read_time_seconds_total", "write_time": "node_disk_write_time_seconds_total",
    "io_time": "node_disk_io_time_seconds_total", "io_time_weighted": "node_disk_io_time_weighted_seconds_total",
}
# Δ = counter at t1 minus at t0, where t0 is the last scrape at or before
# the run's start and t1 the first after its end (as iostat differences
# /proc/diskstats): the interval brackets the run.
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
    selector = f'{{__name__=~"{names}"}}'
    names_of = {v: k for k, v in IOSTAT_COUNTERS.items()}
    per_device: dict[tuple, dict[str, run_rates.Edges]] = {}
    for metric, e in run_rates.edges(prom, selector, start, end).values():
        key = (metric.get("instance", ""), metric.get("device", ""))
        per_device.setdefault(key, {})[names_of[metric["__name__"]]] = e
    rows, missing = {}, []
    for key in sorted(per_device):
        name, es = " ".join(k for k in key if k), per_device[key]
        if set(es) != set(IOSTAT_COUNTERS) or any(e.before is None for e in es.values()):
            missing.append(f"iostat {name}: no node_exporter scrape at or before the run's start")
            continue
        if any(e.after is None for e in es.values()):
            missing.append(f"iostat {name}: no node_exporter scrape after the run's end")
            continue
        t0, t1 = es["reads"].before[0], es["reads"].after[0]
        delta = {k: e.after[1] - e.before[1] for k, e in es.items()}
        if min(delta.values()) < 0:
            missing.append(f"iostat {name}: a counter went back (node_exporter or host restarted)")
        else:
            rows[name] = {**iostat_row(delta, t1 - t0), "t0": t0, "t1": t1, "interval_s": t1 - t0}
    if not per_device:
        missing.append(f"iostat -mx: no series for {selector} around the run; {NEEDS_NODE}")
    if not rows:
        return [], missing
    return [{"id": "iostat", "title": f"{run['testid']}: iostat -mx per host and device, whole run (seed 004)",
             "source": f"Prometheus {prom.url}, the raw samples of {selector} around the run (t0: the last scrape "
                       "at or before its start; t1: the first after its end)",
             "formulas": IOSTAT_FORMULAS, "rows": rows}], missing
