"""The server's findings of a run's limits, from Prometheus over the
measured window: CPU per node (node_exporter) and per YugabyteDB server
(cpu_utime, cpu_stime), disks per node (busy time, IOPS, throughput), and
YugabyteDB's saturation counters by their names in its /prometheus-metrics."""

from __future__ import annotations

import os
import statistics

from ybbench.core import visibility
from ybbench.analysis import limit_rules as rules
from ybbench.analysis.limits_client import finding
from ybbench.core.prom import Prom

# YugabyteDB's counters that a healthy server does not move: any growth in
# the window is a saturation sign (limit id, counters, what it means).
YB_SIGNALS = (
    ("yb-rpc-queue", ("rpcs_queue_overflow", "rpcs_timed_out_in_queue"),
     "RPCs dropped from a full service queue or timed out in it"),
    ("yb-memory-pressure", ("leader_memory_pressure_rejections", "follower_memory_pressure_rejections",
                            "operation_memory_pressure_rejections"), "writes rejected under memory pressure"),
    ("yb-write-stall", ("majority_sst_files_rejections",), "writes rejected for too many SST files"),
)
# Per node, over the range $R: the cores busy (every mode but idle), and the disks' reads and writes a second.
BUSY_CORES = 'sum by (instance) (rate(node_cpu_seconds_total{mode!="idle"}[$R]))'
IOPS = "sum by (instance) (rate(node_disk_reads_completed_total[$R]) + rate(node_disk_writes_completed_total[$R]))"

STALLS, CONFLICTS = "rocksdb_stall_micros", "transaction_conflicts"


class Window:
    """The measured window's queries: a rate per STEP_S over RATE_RANGE_S, and an increase over the whole."""

    def __init__(self, prom: Prom, t0: float, t1: float):
        self.prom, self.t0, self.t1 = prom, t0, t1
        self.seconds = max(1.0, t1 - t0)
        # Points whose range lies inside the window; a window shorter than that has its end only.
        self.first = min(t0 + rules.RATE_RANGE_S, t1)

    def series(self, promql: str, by: str) -> dict[str, list[float]]:
        rng = f"{rules.RATE_RANGE_S}s"
        got = self.prom.range(promql.replace("$R", rng), self.first, self.t1, rules.STEP_S)
        return {s["metric"].get(by, ""): [float(v) for _, v in s["values"]] for s in got}

    def whole(self, promql: str, by: str) -> dict[str, float]:
        got = self.prom.instant(promql.replace("$R", f"{int(self.seconds * 1000)}ms"), self.t1)
        return {s["metric"].get(by, ""): float(s["value"][1]) for s in got}


def _unseen(kind: str, said: str) -> str:
    """What was not seen, and why when the user's settings say it cannot be (core/visibility.py)."""
    why = visibility.hidden().get(kind)
    return f"{said}: {why}" if why else said


def node_cpu(w: Window, client_boot: int | None, client_cores: float | None) -> tuple[list[dict], dict]:
    """One finding per node (node_exporter), and the host facts: which node
    is the client's own host (same kernel boot time)."""
    cpus = w.whole('count by (instance) (node_cpu_seconds_total{mode="idle"})', "instance")
    if not cpus:
        return [finding("server-cpu", "not-visible", _unseen("node", "no node_exporter series (job node): "
                                                             "CPU per node not seen"))], {}
    busy, mean = w.series(BUSY_CORES, "instance"), w.whole(BUSY_CORES, "instance")
    boots = w.whole("max by (instance) (node_boot_time_seconds)", "instance")
    shared = {n for n, b in boots.items() if client_boot and abs(b - client_boot) <= rules.SAME_HOST_BOOT_S}
    out = []
    for node, n in sorted(cpus.items()):
        used = mean.get(node, 0.0)
        full = rules.saturated(busy.get(node) or [used], n)
        text = f"{node} used {used:.2f} of {n:g} cores ({used / n:.0%})"
        figures = {"node": node, "cores_used": round(used, 3), "capacity": n, "share": round(used / n, 3)}
        if node in shared and client_cores is not None:
            rest = max(0.0, used - client_cores)
            text += f", shared with the client: k6 {client_cores:.2f}, the rest {rest:.2f}"
            figures.update(shared_with_client=True, client_cores=round(client_cores, 3), rest_cores=round(rest, 3))
        elif node in shared:
            text += ", shared with the client"
            figures.update(shared_with_client=True)
        out.append(finding("server-cpu", "saturated" if full else "ok", text, **figures))
    return out, {"shared": sorted(shared)}


def imbalance(cpu: list[dict]) -> dict | None:
    """The busiest node against the median of the others, with 3 nodes or more."""
    seen = [f for f in cpu if f["status"] != "not-visible"]
    if len(seen) < rules.IMBALANCE_MIN_NODES:
        return None
    top = max(seen, key=lambda f: f["figures"]["share"])
    rest = statistics.median(f["figures"]["share"] for f in seen if f is not top)
    ratio = top["figures"]["share"] / rest if rest > 0 else float("inf")
    skewed = ratio >= rules.IMBALANCE_RATIO
    status = "saturated" if skewed and top["status"] == "saturated" else "ok"
    return finding("imbalance", status, f"the busiest node, {top['figures']['node']}, ran at {top['figures']['share']:.0%}"
                   f" against the others' median {rest:.0%} (x{ratio:.1f})", node=top["figures"]["node"],
                   ratio=round(ratio, 2) if ratio != float("inf") else None)


def disks(w: Window, knobs: dict) -> list[dict]:
    io = w.series("max by (instance, device) (rate(node_disk_io_time_seconds_total[$R]))", "instance")
    if not io:
        return [finding("disk", "not-visible", _unseen("node", "no node_disk_io_time_seconds_total series (job node): "
                                                       "disks not seen"))]
    busy = w.whole("max by (instance) (rate(node_disk_io_time_seconds_total[$R]))", "instance")
    iops = w.whole(IOPS, "instance")
    mbps = w.whole("sum by (instance) (rate(node_disk_read_bytes_total[$R]) + rate(node_disk_written_bytes_total[$R]))"
                   " / 1e6", "instance")
    cap = _iops_knob(knobs)
    # Each node's IOPS over the window's points, read only to hold them against a capacity knob.
    iops_series = w.series(IOPS, "instance") if cap else {}
    out = []
    for node in sorted(busy):
        full = rules.saturated(io.get(node) or [busy[node]], 1.0)
        text = f"{node}: busiest disk {busy[node]:.0%} busy, {iops.get(node, 0):.0f} IOPS, {mbps.get(node, 0):.1f} MB/s"
        if cap:
            full = full or rules.saturated(iops_series.get(node) or [iops.get(node, 0)], cap)
            text += f" (of {cap:g} IOPS, {rules.DISK_IOPS_KNOB})"
        out.append(finding("disk", "saturated" if full else "ok", text, node=node, busy=round(busy[node], 3),
                           iops=round(iops.get(node, 0), 1), mb_per_s=round(mbps.get(node, 0), 3)))
    return out


def _iops_knob(knobs: dict) -> float | None:
    value = knobs.get(rules.DISK_IOPS_KNOB) or os.environ.get(rules.DISK_IOPS_KNOB)
    try:
        return float(value) if value else None
    except ValueError:
        return None


def yugabytedb(w: Window) -> tuple[list[dict], float | None]:
    """One finding per saturation signal (the nodes whose counters grew),
    write stalls, CPU per server; and the transaction conflicts in the
    window (None when YugabyteDB is not scraped)."""
    if not w.whole('count(up{job="yugabytedb"})', ""):
        return [finding("yugabytedb", "not-visible", _unseen("yugabytedb", "no YugabyteDB targets (job yugabytedb): "
                        "its queues, memory-pressure rejections and write stalls not seen"))], None
    # A counter this YugabyteDB does not export (renamed, or left out by the scrape) is not seen, not zero.
    wanted = [*(n for _, names, _ in YB_SIGNALS for n in names), STALLS, CONFLICTS]
    present = set(w.whole(f'count by (__name__) ({{job="yugabytedb", __name__=~"{"|".join(wanted)}"}})', "__name__"))
    out = []
    for limit, names, meaning in YB_SIGNALS:
        if not present & set(names):
            out.append(finding(limit, "not-visible", f"{' / '.join(names)} not exported by the YugabyteDB scraped"))
            continue
        grown: dict[str, float] = {}
        for name in sorted(present & set(names), key=names.index):
            for node, v in w.whole(f"sum by (instance) (increase({name}[$R]))", "instance").items():
                if v > 0:
                    grown[node] = grown.get(node, 0.0) + v
        text = (f"{meaning}: " + ", ".join(f"{n} {v:.0f}" for n, v in sorted(grown.items())) if grown
                else f"no {' / '.join(names)}")
        out.append(finding(limit, "saturated" if grown else "ok", text, nodes=sorted(grown),
                           counts={n: round(v, 1) for n, v in grown.items()}))
    if STALLS in present:
        stalls = w.whole(f"sum by (instance) (increase({STALLS}[$R])) / 1e6", "instance")
        stalled = {n: s for n, s in stalls.items() if s >= rules.WRITE_STALL_SHARE * w.seconds}
        out.append(finding("yb-write-stall", "saturated" if stalled else "ok",
                           ("RocksDB write stalls: " + ", ".join(f"{n} {s:.1f} s" for n, s in sorted(stalled.items())))
                           if stalled else "no RocksDB write stall over 1% of the window", nodes=sorted(stalled)))
    else:
        out.append(finding("yb-write-stall", "not-visible", f"{STALLS} not exported by the YugabyteDB scraped"))
    servers = w.whole("sum by (exported_instance) (rate(cpu_utime[$R]) + rate(cpu_stime[$R])) / 1000",
                      "exported_instance")
    if servers:
        out.append(finding("yb-server-cpu", "ok", "CPU per YugabyteDB server: " + ", ".join(
            f"{n} {c:.2f} cores" for n, c in sorted(servers.items())), cores={n: round(c, 3) for n, c in servers.items()}))
    conflicts = sum(w.whole(f"sum(increase({CONFLICTS}[$R]))", "").values()) if CONFLICTS in present else None
    return out, conflicts
