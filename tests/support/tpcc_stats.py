"""What the tpcc tests check a run's draws with: the deck's mix, binomial
rates within Z standard deviations, NURand's exact distribution and
Pearson's test against it (tests/native/test_tpcc_run.py, the procedures
style; test_tpcc_statements.py, the statements style)."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

DECK = {"new_order": 10, "payment": 10, "order_status": 1, "delivery": 1, "stock_level": 1}  # 23 cards
FALSE_FAILURE = 1e-4  # each statistical check's chance of failing a correct run
Z = stats.norm.isf(FALSE_FAILURE / 2)


def q(pg, sql: str) -> int:
    return int(pg.query(sql) or 0)


def within(count: int, n: int, p: float) -> bool:
    """count of n is p's binomial share, within Z standard deviations."""
    return abs(count - n * p) <= Z * math.sqrt(n * p * (1 - p))


def nurand_probabilities(a: int, x: int, y: int, c: int) -> np.ndarray:
    """P(NURand(A, x, y) = v) for v = x..y, by enumerating clause 2.1.6's (rand(0, A) | rand(x, y)) + C."""
    counts = np.zeros(y - x + 1)
    rand_a = np.arange(a + 1)
    for lo in range(x, y + 1, 2000):
        b = np.arange(lo, min(lo + 2000, y + 1))
        v = ((rand_a[None, :] | b[:, None]) + c) % (y - x + 1)
        counts += np.bincount(v.ravel(), minlength=y - x + 1)
    return counts / counts.sum()


def chi_square_p(observed: np.ndarray, p: np.ndarray) -> float:
    """Pearson's test over bins of consecutive values, each expecting 20 or more."""
    n = observed.sum()
    bins_o, bins_e, o, e = [], [], 0.0, 0.0
    for ob, pr in zip(observed, p):
        o, e = o + ob, e + n * pr
        if e >= 20:
            bins_o.append(o)
            bins_e.append(e)
            o = e = 0.0
    bins_o[-1] += o
    bins_e[-1] += e
    return float(stats.chisquare(bins_o, bins_e).pvalue)
