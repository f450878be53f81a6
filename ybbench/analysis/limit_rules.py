"""Every threshold of the limits analysis, in one place (docs/why-this-number.md
says each). A resource is saturated when its use is at least SATURATED_USE
of its capacity for at least SATURATED_SHARE of the measured window's
points; the rest of the rules are below, each with its reason."""

from __future__ import annotations

SATURATED_USE = 0.90  # of capacity: CPU cores, a disk's busy time, a disk's IOPS knob
SATURATED_SHARE = 0.5  # of the window's points (1 s for k6's CPU, STEP_S for Prometheus' series)
STEP_S = 5  # Prometheus' series are read every 5 s (the stack's scrape interval) ...
RATE_RANGE_S = 10  # ... each a rate over the 10 s before it (two scrapes)
IMBALANCE_RATIO = 1.5  # the busiest node's CPU against the median of the others' ...
IMBALANCE_MIN_NODES = 3  # ... among 3 nodes or more (with 2, neither is "the others")
CONTENTION_LOCK_SHARE = 0.25  # mean share of the run's active sessions waiting on a lock
CONTENTION_RETRY_SHARE = 0.01  # retries, 40xxx errors or YugabyteDB's transaction conflicts per op
WRITE_STALL_SHARE = 0.01  # RocksDB write stall time per node, of the window
DROPPED_SHARE = 0.01  # the open model's dropped iterations, of those it was offered
LITTLE_TOLERANCE = 0.15  # |VUs x mean iteration time / VUs - 1| for Little's law to hold
SAME_HOST_BOOT_S = 2  # node_boot_time_seconds within this of the client's btime: one kernel
DISK_IOPS_KNOB = "YBBENCH_DISK_IOPS"  # a disk's IOPS capacity, where the host cannot tell it


def as_dict() -> dict:
    """The thresholds as limits.json keeps them beside the verdict."""
    return {"saturated_use": SATURATED_USE, "saturated_share": SATURATED_SHARE, "step_s": STEP_S,
            "rate_range_s": RATE_RANGE_S, "imbalance_ratio": IMBALANCE_RATIO,
            "contention_lock_share": CONTENTION_LOCK_SHARE, "contention_retry_share": CONTENTION_RETRY_SHARE,
            "write_stall_share": WRITE_STALL_SHARE, "dropped_share": DROPPED_SHARE,
            "little_tolerance": LITTLE_TOLERANCE}


def saturated(points: list[float], capacity: float) -> bool:
    """At least SATURATED_USE of capacity for at least SATURATED_SHARE of the points."""
    if not points or capacity <= 0:
        return False
    high = sum(1 for p in points if p >= SATURATED_USE * capacity)
    return high >= SATURATED_SHARE * len(points)
