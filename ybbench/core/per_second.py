"""A run's per-second series, per-second.json (k6-scripts/lib/series.js,
schema core/schemas/per-second.schema.json): each op's count and latency
histogram in every second, written by the run itself.

- throughput(): the op's ops/s in each whole second of the run, the
  seconds without a row counted 0 and the first and last second with a row
  left out (k6 starts and ends inside them: they hold part of a second);
- merge(): several load generators' files into the run's, counts and
  histograms summed per second (the generators share one clock);
- quantile(): a latency percentile from summed buckets, within the
  histogram's relative accuracy (1%) of the exact one.
"""

from __future__ import annotations

import math
from pathlib import Path

from ybbench.core import formats, run_folder

FILE = "per-second.json"
RESOLUTION = "1 s (per-second.json, written by the run)"


def load(folder: Path) -> dict | None:
    """The run's per-second.json, checked, or None when it has none."""
    return run_folder.optional(folder, FILE)


def throughput(doc: dict, op: str) -> dict | None:
    """{t, v, step_s, t0, t1, ops}: the op's count in each whole second
    strictly between its first and last rows (t is each second's end, as
    compare.py's Prometheus series has it); None when the op has no row."""
    rows = doc["ops"].get(op)
    if not rows:
        return None
    counts = {r[0]: r[1] for r in rows}
    first, last = rows[0][0], rows[-1][0]
    seconds = list(range(first + 1, last))
    v = [float(counts.get(t, 0)) for t in seconds]
    return {"step_s": 1, "t": [t + 1 for t in seconds], "v": v, "t0": first + 1, "t1": last, "ops": sum(v),
            "edges_left_out": {"first": counts[first], "last": counts[last]} if last > first else {"first": counts[first]}}


def merge(parts: list[dict], names: list[str]) -> dict:
    """The run's series from each generator's: per op and second, counts,
    latency sums and bucket counts added."""
    first = parts[0]
    for p in parts[1:]:
        if p["histogram"] != first["histogram"]:
            raise ValueError(f"per-second histograms differ: {p['histogram']} against {first['histogram']}")
    ops: dict[str, dict[int, list]] = {}
    for p in parts:
        for op, rows in p["ops"].items():
            at = ops.setdefault(op, {})
            for t, n, total, buckets in rows:
                row = at.setdefault(t, [t, 0, 0.0, {}])
                row[1] += n
                row[2] += total
                for i, c in buckets:
                    row[3][i] = row[3].get(i, 0) + c
    out_ops = {op: [[t, r[1], r[2], [[i, r[3][i]] for i in sorted(r[3])]] for t, r in sorted(at.items())]
               for op, at in ops.items()}
    return {"format_version": formats.version("per-second"), "workload": first["workload"], "testid": first["testid"],
            "resolution_s": 1, "source": first["source"], "histogram": first["histogram"],
            "generators": [f"generators/{n}/{FILE}" for n in names], "ops": out_ops}


def buckets_of(doc: dict, op: str, start: float = -math.inf, end: float = math.inf) -> dict[int, int]:
    """The op's bucket counts summed over the seconds t with start <= t < end."""
    out: dict[int, int] = {}
    for t, _, _, buckets in doc["ops"].get(op, []):
        if start <= t < end:
            for i, c in buckets:
                out[i] = out.get(i, 0) + c
    return out


def value_ms(doc: dict, bucket: int) -> float:
    """What a bucket reads back as, ms: 2 gamma^i / (gamma + 1) µs."""
    g = doc["histogram"]["gamma"]
    return 2 * g ** bucket / (g + 1) / 1000


def quantile(doc: dict, buckets: dict[int, int], q: float) -> float | None:
    """The q-quantile (0..1) of the latencies in `buckets`, ms: the bucket
    holding the round(q n)-th smallest value (at least the 1st), the rank
    HdrHistogram's ValueAtQuantile takes, so that both read the same value."""
    n = sum(buckets.values())
    if not n:
        return None
    rank = max(1, int(q * n + 0.5))
    seen = 0
    for i in sorted(buckets):
        seen += buckets[i]
        if seen >= rank:
            return value_ms(doc, i)
    raise AssertionError("unreachable")
