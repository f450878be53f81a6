"""Per-op latency from Prometheus for a summary that lacks it.

A workload that mixes ops has no per-op latency in its k6 summary unless
OP_LATENCY_SUMMARY=on (k6-scripts/lib/run.js says why). When the run wrote
to Prometheus, k6 sent `k6_iteration_duration_seconds{op}` as a native
histogram: its quantiles over the whole run fill the gap, marked with their
source. They carry the histogram's bucket error (a few %), and no max.
"""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from ybbench.core import run_folder

QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}


def _scalar(prometheus: str, promql: str, at: float) -> float | None:
    query = urllib.parse.urlencode({"query": promql, "time": f"{at:.3f}"})
    with urllib.request.urlopen(f"{prometheus.rstrip('/')}/api/v1/query?{query}", timeout=10) as r:
        result = json.load(r)["data"]["result"]
    if not result:
        return None
    value = float(result[0]["value"][1])
    return None if math.isnan(value) else value


def from_prometheus(prometheus: str, testid: str, op: str, started: float, finished: float) -> dict | None:
    """Latency in ms of one op over the run, or None if Prometheus has none."""
    window = f"{math.ceil(finished - started) + 15}s"
    series = f'k6_iteration_duration_seconds{{testid="{testid}", op="{op}"}}'
    # k6's histograms are cumulative from the start of the run: the last one
    # pushed is the whole run (increase() would drop the first push).
    hist = f"sum(last_over_time({series}[{window}]))"
    at = finished + 1
    out: dict = {}
    for name, q in QUANTILES.items():
        v = _scalar(prometheus, f"histogram_quantile({q}, {hist})", at)
        if v is None:
            return None
        out[name] = v * 1000
    count = _scalar(prometheus, f"histogram_count({hist})", at)
    total = _scalar(prometheus, f"histogram_sum({hist})", at)
    out["avg"] = total / count * 1000 if count and total is not None else None
    out["max"] = None  # a histogram knows only its bucket bounds
    out["source"] = "prometheus"
    return out


def fill(summary_json: Path, prometheus: str, testid: str, started: float, finished: float) -> dict[str, dict]:
    """Fill the ops of summary.json that have no latency; op -> latency filled."""
    digest = run_folder.read_json(summary_json, f"run {summary_json.parent.name}")
    filled = {}
    for op, o in digest.get("ops", {}).items():
        if o.get("latency_ms") is None:
            try:
                lat = from_prometheus(prometheus, testid, op, started, finished)
            except (urllib.error.URLError, OSError, KeyError, ValueError):
                lat = None  # the run stands without it; the dashboard has it
            if lat is not None:
                o["latency_ms"] = filled[op] = lat
    if filled:
        summary_json.write_text(json.dumps(digest, indent=1))
    return filled
