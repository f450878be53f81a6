"""Where a sweep saturates: the ceiling, the knee and when to stop early.

Pure functions over a sweep's steps, so the rules can be checked on
synthetic series by hand. A step is a dict with `vus` (closed model) or
`rate` (open model), `ops_per_s`, `p99_ms` (None when the summary has no
latency) and, in the open model, `count`, `dropped_iterations` and
`achieved_per_s` (count over the scheduled duration: the summary's ops/s
also counts setup and teardown time, a few percent of a short step).
"""

from __future__ import annotations

import math

KNEE_GAIN = 0.10  # less than 10% more throughput per doubling of VUs
DROPPED_MAX = 0.01  # open model: dropped iterations under 1% of those due
ACHIEVED_MIN = 0.95  # open model: achieved ops/s within 5% of the offered rate

KNEE_RULE = (
    f"knee: the first step after which the next raises ops/s by less than {KNEE_GAIN:.0%} per doubling "
    "of VUs while its p99 rises"
)
STOP_RULE = "stop early: ops/s fell at two consecutive steps"
OPEN_RULE = (
    f"open-model ceiling: the highest rate whose dropped iterations stay under {DROPPED_MAX:.0%} of those due "
    f"and whose achieved ops/s is at least {ACHIEVED_MIN:.0%} of the offered rate"
)


def ceiling(steps: list[dict]) -> dict | None:
    """The step with the highest throughput (the first of equals)."""
    return max(steps, key=lambda s: s["ops_per_s"], default=None)


def gain_per_doubling(a: dict, b: dict) -> float:
    """Throughput gain from step a to b, scaled to one doubling of VUs, so
    that uneven VU lists (1,4,16) are judged alike: (X_b/X_a)^(1/log2(N_b/N_a)) - 1."""
    if a["ops_per_s"] <= 0:
        return math.inf if b["ops_per_s"] > 0 else 0.0
    doublings = math.log2(b["vus"] / a["vus"])
    return (b["ops_per_s"] / a["ops_per_s"]) ** (1 / doublings) - 1


def knee(steps: list[dict]) -> dict | None:
    """The first step i such that step i+1 adds less than KNEE_GAIN per
    doubling while p99 rises. Without latencies (a mixed workload whose
    summary has none) the throughput condition decides alone."""
    for a, b in zip(steps, steps[1:]):
        p99_rises = a["p99_ms"] is None or b["p99_ms"] is None or b["p99_ms"] > a["p99_ms"]
        if gain_per_doubling(a, b) < KNEE_GAIN and p99_rises:
            return a
    return None


def should_stop(steps: list[dict]) -> bool:
    """Throughput fell at each of the last two steps: more load only hurts."""
    x = [s["ops_per_s"] for s in steps]
    return len(x) >= 3 and x[-1] < x[-2] < x[-3]


def keeps_up(step: dict) -> bool:
    """Open model: the step served its offered rate."""
    due = step["count"] + step["dropped_iterations"]
    dropped = step["dropped_iterations"] / due if due else 1.0
    return dropped < DROPPED_MAX and step["achieved_per_s"] >= ACHIEVED_MIN * step["rate"]


def open_ceiling(steps: list[dict]) -> dict | None:
    """The highest offered rate that was kept up with."""
    ok = [s for s in steps if keeps_up(s)]
    return max(ok, key=lambda s: s["rate"], default=None)
