"""Monitoring 100 nodes: a real Prometheus with prometheus/prometheus.yml
scrapes a 100-node YugabyteDB cluster replayed from the real 2.23.1
captures (bench/replayed_cluster.py), for a few minutes. A benchmark, not
a test: it prints a table.

    python3 -m bench.monitoring_100_nodes [--nodes 100] [--minutes 3] [--no-drop-reference]

The reference, measured in the same run just before: the same for one node
(one master); with --no-drop-reference also the N nodes once more, scraped
with prometheus.yml less its drop rules (what they save). Per kind of endpoint: series per target, samples scraped and
kept after metric_relabel_configs, scrape duration; in total: head series,
samples appended per second, Prometheus' RSS, Go heap and CPU. The config
is linked in unchanged (tests/support/stack.py Prometheus): only the target files
(written by `ybbench targets`) and the storage folder are the run's own.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from rich import box
from rich.console import Console
from rich.table import Table

from tests.support.stack import BIN, REPO, Prometheus, wait_until

from .replayed_cluster import ReplayedCluster, capture_node_exporter

KINDS = ("master", "tserver", "ysql", "ycql", "node")
_EXPORT_KIND = {"master_export": "master", "tserver_export": "tserver", "ysql_export": "ysql", "cql_export": "ycql"}
SCRAPED = '{job=~"yugabytedb|node"}'
PROMETHEUS = '{job="prometheus"}'
CONFIG = REPO / "prometheus" / "prometheus.yml"
console = Console(width=200)  # the tables unwrapped in logs and pipes


def kind_of(metric: dict) -> str | None:
    """master/tserver/ysql/ycql from export_type, node for node_exporter."""
    return "node" if metric.get("job") == "node" else _EXPORT_KIND.get(metric.get("export_type", ""))


@dataclass
class KindStats:
    targets: int = 0
    up: int = 0
    series: list[float] = field(default_factory=list)  # head series per target
    scraped: list[float] = field(default_factory=list)  # samples per scrape
    kept: list[float] = field(default_factory=list)  # after metric_relabel_configs
    duration_avg: list[float] = field(default_factory=list)  # seconds, per target over the window
    duration_max: list[float] = field(default_factory=list)
    scrapes: list[float] = field(default_factory=list)  # per target over the window
    failed: list[float] = field(default_factory=list)


@dataclass
class Measurement:
    nodes: int
    masters: int
    seconds: float  # the scraping window measured
    kinds: dict[str, KindStats]
    head_series: float
    samples_per_s: float
    rss_bytes: float
    rss_max_bytes: float
    heap_bytes: float
    prometheus_cores: float
    replay_cores: float  # this process, serving the captures

    @property
    def kept_per_scrape(self) -> float:
        return sum(sum(k.kept) for k in self.kinds.values())


def _per_target(prom: Prometheus, promql: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for s in prom.query(promql):
        kind = kind_of(s["metric"])
        if kind:
            out.setdefault(kind, []).append(float(s["value"][1]))
    return out


def _scalar(prom: Prometheus, promql: str) -> float:
    """One value. Prometheus' self-scrape can fail on a busy machine and mark
    its series stale: callers read the last sample of the past minute."""
    result = prom.query(promql)
    if len(result) != 1:
        raise RuntimeError(f"{promql}: {len(result)} series, expected one")
    return float(result[0]["value"][1])


def counters(prom: Prometheus) -> dict[str, tuple[float, float]]:
    """Prometheus' own counters as last scraped, each with its sample's
    time: rates over the measured window from two readings are exact,
    where rate()[1m] extrapolates over a window younger than a minute."""
    out = {}
    for name, metric in (("samples", "prometheus_tsdb_head_samples_appended_total"),
                         ("cpu", "process_cpu_seconds_total")):
        # The raw samples of the past minute; the last of each series (one
        # per sample type, all from the same scrape).
        series = prom.query(f"{metric}{PROMETHEUS}[1m]")
        if not series:
            raise RuntimeError(f"no {metric} scraped in the past minute")
        last = [s["values"][-1] for s in series]
        out[name] = (sum(float(v) for _, v in last), max(float(t) for t, _ in last))
    return out


def _rate(start: tuple[float, float], end: tuple[float, float]) -> float:
    return (end[0] - start[0]) / (end[1] - start[1])


def measure(prom: Prometheus, cluster: ReplayedCluster, seconds: float, replay_cores: float,
            start: dict[str, tuple[float, float]]) -> Measurement:
    window = f"{max(int(seconds), 10)}s"
    queries = {
        "up": f"up{SCRAPED}",
        # Our recording rules' outputs (<level>:ybbench_...) may keep job and
        # instance: not the target's own. (YCQL has names with ':' of its own.)
        # last_over_time: a target whose last scrape failed has stale series.
        "series": 'count by (job, export_type, instance) '
                  '(last_over_time({job=~"yugabytedb|node", __name__!~"[a-z]+:ybbench_.+"}[1m]))',
        # max: a failed scrape reports 0 samples.
        "scraped": f"max_over_time(scrape_samples_scraped{SCRAPED}[{window}])",
        "kept": f"max_over_time(scrape_samples_post_metric_relabeling{SCRAPED}[{window}])",
        "duration_avg": f"avg_over_time(scrape_duration_seconds{SCRAPED}[{window}])",
        "duration_max": f"max_over_time(scrape_duration_seconds{SCRAPED}[{window}])",
        "scrapes": f"count_over_time(up{SCRAPED}[{window}])",
        "failed": f"count_over_time(up{SCRAPED}[{window}]) - sum_over_time(up{SCRAPED}[{window}])",
    }
    values = {name: _per_target(prom, q) for name, q in queries.items()}
    end = counters(prom)
    kinds = {}
    for kind in KINDS:
        up = values["up"].get(kind, [])
        kinds[kind] = KindStats(len(up), int(sum(up)), **{n: values[n].get(kind, []) for n in list(queries)[1:]})
    return Measurement(
        nodes=len(cluster.hosts), masters=len(cluster.masters), seconds=seconds, kinds=kinds,
        head_series=_scalar(prom, f"last_over_time(prometheus_tsdb_head_series{PROMETHEUS}[1m])"),
        samples_per_s=_rate(start["samples"], end["samples"]),
        rss_bytes=_scalar(prom, f"last_over_time(process_resident_memory_bytes{PROMETHEUS}[1m])"),
        rss_max_bytes=_scalar(prom, f"max_over_time(process_resident_memory_bytes{PROMETHEUS}[{window}])"),
        heap_bytes=_scalar(prom, f"last_over_time(go_memstats_heap_inuse_bytes{PROMETHEUS}[1m])"),
        prometheus_cores=_rate(start["cpu"], end["cpu"]),
        replay_cores=replay_cores,
    )


@contextlib.contextmanager
def scraping(nodes: int, masters: int, block: int, root: Path, node_capture: Path, config: Path = CONFIG):
    """The replayed cluster and a Prometheus scraping it, every target up
    and Prometheus' own counters scraped; yields both, then stops them."""
    root.mkdir(parents=True, exist_ok=True)
    cluster = ReplayedCluster(nodes, masters, block, root, node_capture)
    prom = None
    try:
        prom = Prometheus(root / "prometheus", cluster.targets_args(), config)
        # + 1: Prometheus scrapes itself (its memory and ingestion figures).
        wait_until(lambda: prom.all_targets_up(cluster.target_count + 1), "every target to be up", timeout=120)
        wait_until(lambda: prom.query(f"prometheus_tsdb_head_samples_appended_total{PROMETHEUS}"),
                   "Prometheus' first scrape of itself", timeout=30)
        yield cluster, prom
    finally:
        if prom:
            prom.stop()
        cluster.stop()


def run_phase(nodes: int, masters: int, minutes: float, block: int, root: Path, node_capture: Path,
              config: Path = CONFIG) -> Measurement:
    """Let Prometheus scrape the cluster for `minutes` once every target is up; measure."""
    with scraping(nodes, masters, block, root, node_capture, config) as (cluster, prom):
        start, cpu, first = time.monotonic(), os.times(), counters(prom)
        time.sleep(minutes * 60)
        elapsed = time.monotonic() - start
        now = os.times()
        replay = (now.user + now.system - cpu.user - cpu.system) / elapsed
        return measure(prom, cluster, elapsed, replay, first)


def scrape_interval() -> str:
    return yaml.safe_load(CONFIG.read_text())["global"]["scrape_interval"]


def config_without_drop_rules(out: Path) -> Path:
    """prometheus.yml less its `action: drop` metric relabel rules: the
    reference that shows what they save. Everything else as it is."""
    config = yaml.safe_load(CONFIG.read_text())
    for job in config["scrape_configs"]:
        if "metric_relabel_configs" in job:
            job["metric_relabel_configs"] = [r for r in job["metric_relabel_configs"] if r.get("action") != "drop"]
    out.write_text(yaml.safe_dump(config, sort_keys=False))
    return out


def _avg(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def _ms(xs: list[float], f) -> str:
    return f"{f(xs) * 1000:,.1f}" if xs else "-"


def _range(xs: list[float]) -> str:
    """One number when every target has the same, min–max otherwise."""
    if not xs:
        return "-"
    lo, hi = min(xs), max(xs)
    return f"{lo:,.0f}" if lo == hi else f"{lo:,.0f}–{hi:,.0f}"


def kinds_table(ref: Measurement, big: Measurement) -> Table:
    t = Table(box=box.MARKDOWN, title=f"per kind of endpoint, {big.nodes} nodes; ref: the {ref.nodes}-node reference")
    for col in ("kind", "up", "series/target", "ref", "scraped/scrape", "kept", "dropped", "scrape ms avg", "max",
                "ref avg", "scrapes (failed)", "series, all targets"):
        t.add_column(col, justify="left" if col == "kind" else "right", no_wrap=True)
    for kind in KINDS:
        k, r = big.kinds[kind], ref.kinds[kind]
        scraped, kept = _avg(k.scraped), _avg(k.kept)
        t.add_row(kind, f"{k.up}/{k.targets}", _range(k.series), _range(r.series), _range(k.scraped), _range(k.kept),
                  f"{1 - kept / scraped:.0%}" if k.scraped else "-", _ms(k.duration_avg, _avg),
                  _ms(k.duration_max, max), _ms(r.duration_avg, _avg), f"{sum(k.scrapes):,.0f} ({sum(k.failed):,.0f})",
                  f"{sum(k.series):,.0f}")
    return t


def totals_table(ref: Measurement, big: Measurement, interval: str, no_drop: Measurement | None = None) -> Table:
    t = Table(box=box.MARKDOWN, title=f"Prometheus, after {big.seconds / 60:.1f} min of scraping every {interval}")
    cols = ["", f"{ref.nodes} node", f"{big.nodes} nodes", "ratio", f"per added node ({big.nodes - ref.nodes})"]
    if no_drop:
        cols += [f"{no_drop.nodes} nodes, no drop rule", "drop saves"]
    for col in cols:
        t.add_column(col, justify="left" if not col else "right", no_wrap=True)
    mib = 1 / 2**20
    rows = [
        ("head series (prometheus_tsdb_head_series)", "head_series", 1, "{:,.0f}"),
        ("samples kept per scrape round, all targets", "kept_per_scrape", 1, "{:,.0f}"),
        ("samples appended/s (prometheus_tsdb_head_samples_appended_total)", "samples_per_s", 1, "{:,.0f}"),
        ("RSS, MiB (process_resident_memory_bytes)", "rss_bytes", mib, "{:,.0f}"),
        ("RSS max over the window, MiB", "rss_max_bytes", mib, "{:,.0f}"),
        ("Go heap in use, MiB (go_memstats_heap_inuse_bytes)", "heap_bytes", mib, "{:,.0f}"),
        ("Prometheus CPU, cores (process_cpu_seconds_total)", "prometheus_cores", 1, "{:.2f}"),
        ("replay server CPU, cores (this process)", "replay_cores", 1, "{:.2f}"),
    ]
    for label, attr, scale, fmt in rows:
        a, b = getattr(ref, attr) * scale, getattr(big, attr) * scale
        per_node = (b - a) / (big.nodes - ref.nodes) if big.nodes > ref.nodes else float("nan")
        cells = [label, fmt.format(a), fmt.format(b), f"{b / a:.1f}" if a else "-",
                 "{:,.3f}".format(per_node) if "cores" in label else "{:,.1f}".format(per_node)]
        if no_drop:
            c = getattr(no_drop, attr) * scale
            cells += [fmt.format(c), f"{1 - b / c:.0%}" if c else "-"]
        t.add_row(*cells)
    return t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100, help="nodes in the cluster (100)")
    ap.add_argument("--masters", type=int, default=3, help="of them with a yb-master (3)")
    ap.add_argument("--minutes", type=float, default=3, help="scraping time per phase, after every target is up (3)")
    ap.add_argument("--block", type=int, default=100, help="nodes listen on 127.BLOCK.0.1-N (100)")
    ap.add_argument("--no-drop-reference", action="store_true",
                    help="a third phase: the same nodes without prometheus.yml's drop rules (what they save)")
    a = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ybbench-monitoring-"))
    console.print(f"{platform.node()}: {os.cpu_count()} cores; working in {root}")
    try:
        ref, big, no_drop = run_phases(a, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)  # the per-node captures alone are ~1.4 MB a node
    console.print(f"\n{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, Prometheus {_version()}; node_exporter "
                  f"replayed from one capture of this machine; series per target: the head's series of each target, "
                  f"i.e. the samples kept (less duplicates in the capture) plus the 5 Prometheus adds (up, scrape_*)\n")
    console.print(kinds_table(ref, big))
    console.print()
    console.print(totals_table(ref, big, scrape_interval(), no_drop))


def run_phases(a: argparse.Namespace, root: Path) -> tuple[Measurement, Measurement, Measurement | None]:
    node_capture = capture_node_exporter(root)
    console.print(f"reference: 1 node, {a.minutes} min")
    ref = run_phase(1, 1, a.minutes, a.block, root / "reference", node_capture)
    console.print(f"{a.nodes} nodes, {a.masters} masters, {a.minutes} min")
    big = run_phase(a.nodes, a.masters, a.minutes, a.block, root / f"nodes-{a.nodes}", node_capture)
    no_drop = None
    if a.no_drop_reference:
        console.print(f"{a.nodes} nodes without the drop rules, {a.minutes} min")
        config = config_without_drop_rules(root / "prometheus-without-drop-rules.yml")
        no_drop = run_phase(a.nodes, a.masters, a.minutes, a.block, root / "no-drop", node_capture, config)
    return ref, big, no_drop


def _version() -> str:
    out = subprocess.run([str(BIN / "prometheus"), "--version"], capture_output=True, text=True).stdout
    return out.split()[2] if out else "?"


if __name__ == "__main__":
    main()
