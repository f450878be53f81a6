"""The ratio of two runs' latency percentile (p99 by default), with an
interval from the same moving-block bootstrap as their throughput
(core/bootstrap.py), over the runs' per-second histograms (per-second.json).

Each run is a matrix of n seconds by K buckets (counts). A resample is
ceil(n / b) blocks of b consecutive seconds (b = bootstrap.block_length(n)),
their starts drawn uniformly, cut back to n seconds as bootstrap.py does;
its histogram is the sum of its seconds' rows and its percentile is read
from that histogram (core/per_second.quantile's rank). Whole seconds are
resampled, not single latencies: the latencies of one second are not
independent (a slow second slows all of them). The interval is on the log
of the ratio, L = log(q(other) / q(base)):

    L ± t(1 - alpha/2, df) * sqrt(var* log q(base*) + var* log q(other*))

df by Welch-Satterthwaite with each run's floor(n / b) - 1, exp() back to a
ratio, as for throughput. A percentile is read from buckets 1% wide
(relative_accuracy): the ratio itself is good to about 2%.
"""

from __future__ import annotations

import math

import numpy as np

from ybbench.core import bootstrap

B = 2_000
METHOD = ("moving-block bootstrap of each run's per-second latency histograms (per-second.json), whole seconds "
          "resampled, block length as for throughput; interval exp(L ± t(1-alpha/2, df) * SE*), L = "
          "log(q(other)/q(base)), SE* from the resampled log percentiles, df Welch-Satterthwaite from each run's "
          "floor(n/b) - 1")


def matrix(doc: dict, op: str, seconds: list[int], index: dict[int, int]) -> np.ndarray:
    """The op's counts, one row per second of `seconds`, one column per bucket of `index`."""
    rows = {r[0]: r[3] for r in doc["ops"].get(op, [])}
    m = np.zeros((len(seconds), len(index)))
    for i, t in enumerate(seconds):
        for b, c in rows.get(t, []):
            m[i, index[b]] = c
    return m


def quantiles(counts: np.ndarray, values: np.ndarray, q: float) -> np.ndarray:
    """The q-quantile of each row's histogram (rank round(q n), at least 1)."""
    n = counts.sum(axis=1)
    rank = np.maximum(1, np.floor(q * n + 0.5))
    cum = np.cumsum(counts, axis=1)
    at = (cum < rank[:, None]).sum(axis=1)
    return values[np.minimum(at, len(values) - 1)]


def resampled(m: np.ndarray, b: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """The summed histograms of `reps` moving-block resamples of m's rows."""
    n = len(m)
    k = math.ceil(n / b)
    cum = np.vstack([np.zeros((1, m.shape[1])), np.cumsum(m, axis=0)])
    blocks = cum[b:] - cum[:-b]  # the sum of rows s .. s + b - 1, for each start s
    starts = rng.integers(0, n - b + 1, size=(reps, k))
    out = blocks[starts[:, :-1]].sum(axis=1) if k > 1 else np.zeros((reps, m.shape[1]))
    tail = n - (k - 1) * b  # the last block cut back to n seconds
    last = cum[starts[:, -1] + tail] - cum[starts[:, -1]]
    return out + last


def compare(base: dict, other: dict, op: str, windows: tuple[list[int], list[int]], q: float, alpha: float,
            value_ms, reps: int = B, stream: int = bootstrap.STREAM) -> dict:
    """other's q-quantile over base's, with its interval; windows: each run's
    seconds (as throughput's series has them); value_ms(bucket): a bucket's value."""
    sb, so = windows
    buckets = sorted({b for doc, secs in ((base, sb), (other, so)) for r in doc["ops"].get(op, []) if r[0] in set(secs)
                      for b, _ in r[3]})
    index = {b: i for i, b in enumerate(buckets)}
    values = np.array([value_ms(b) for b in buckets])
    mb, mo = matrix(base, op, sb, index), matrix(other, op, so, index)
    out = {"q": q, "seconds": {"base": len(sb), "other": len(so)}, "resamples": reps, "alpha": alpha,
           "random_stream": stream, "method": METHOD}
    if not buckets or not mb.sum() or not mo.sum():
        return out | {"base_ms": None, "other_ms": None, "ratio": None, "low": None, "high": None,
                      "verdict": "no verdict: a run has no latencies in its window"}
    qb, qo = (float(quantiles(m.sum(axis=0)[None, :], values, q)[0]) for m in (mb, mo))
    out |= {"base_ms": qb, "other_ms": qo, "ratio": qo / qb}
    bb, bo = bootstrap.block_length(len(sb)), bootstrap.block_length(len(so))
    out["block_length"] = {"base": bb, "other": bo}
    if len(sb) < bootstrap.MIN_BLOCKS * bb or len(so) < bootstrap.MIN_BLOCKS * bo:
        return out | {"low": None, "high": None, "verdict": f"no verdict: fewer than {bootstrap.MIN_BLOCKS} blocks"}
    from scipy import stats

    rng = np.random.default_rng(stream)
    with np.errstate(divide="ignore"):
        lb = np.log(quantiles(resampled(mb, bb, reps, rng), values, q))
        lo = np.log(quantiles(resampled(mo, bo, reps, rng), values, q))
    vb, vo = float(np.var(lb, ddof=1)), float(np.var(lo, ddof=1))
    centre = math.log(qo / qb)
    if vb + vo == 0:
        low = high = math.exp(centre)
    else:
        kb, ko = len(sb) // bb - 1, len(so) // bo - 1
        df = (vb + vo) ** 2 / (vb ** 2 / kb + vo ** 2 / ko)
        half = float(stats.t.ppf(1 - alpha / 2, df)) * math.sqrt(vb + vo)
        low, high = math.exp(centre - half), math.exp(centre + half)
    verdict = "higher" if low > 1 else "lower" if high < 1 else "no significant difference"
    return out | {"low": low, "high": high, "verdict": verdict}
