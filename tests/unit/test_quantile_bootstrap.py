"""core/quantile_bootstrap.py on per-second histograms drawn here from a
known distribution: a planted 20% rise of every latency is called "higher"
with the true ratio (1.2) inside the interval; two runs of one distribution
are not told apart. Fixed seeds: the outcome is the same on every run."""

from __future__ import annotations

import numpy as np
import pytest

from ybbench.core import per_second, quantile_bootstrap

GAMMA = (1 + 0.01) / (1 - 0.01)


def run(seed: int, scale: float = 1.0, seconds: int = 30, per_s: int = 2000) -> dict:
    """A per-second.json of lognormal latencies (median 1 ms), each second's
    mean wandering (an AR(1) of log latency, phi 0.5), times `scale`."""
    rng = np.random.default_rng(seed)
    rows, level = [], 0.0
    for t in range(seconds):
        level = 0.5 * level + rng.normal(0, 0.05)
        ms = scale * np.exp(rng.normal(level, 0.5, per_s))
        idx = np.ceil(np.log(ms * 1000) / np.log(GAMMA)).astype(int)
        b, c = np.unique(idx, return_counts=True)
        rows.append([1_000_000 + t, per_s, float(ms.sum()), [[int(i), int(n)] for i, n in zip(b, c)]])
    return {"histogram": {"kind": "log", "unit": "us", "gamma": GAMMA, "relative_accuracy": 0.01}, "ops": {"x": rows}}


def _compare(base, other):
    secs = [r[0] for r in base["ops"]["x"]], [r[0] for r in other["ops"]["x"]]
    return quantile_bootstrap.compare(base, other, "x", secs, 0.99, 0.05, lambda i: per_second.value_ms(base, i))


def test_a_planted_rise_is_higher_with_its_ratio_inside():
    got = _compare(run(1), run(2, scale=1.2))
    assert got["verdict"] == "higher" and got["low"] < 1.2 < got["high"], got
    # The p99 of lognormal(0, 0.5) is exp(0.5 * 2.326) = 3.20 ms, less what the wandering mean moves it.
    assert got["base_ms"] == pytest.approx(np.exp(0.5 * 2.3263), rel=0.1)


def test_one_distribution_twice_is_no_difference():
    got = _compare(run(3), run(4))
    assert got["verdict"] == "no significant difference" and got["low"] < 1 < got["high"], got
    # The width from the wandering alone (arithmetic): each run's mean log level over n = 30 s of an
    # AR(1) with sd 0.05 / sqrt(1 - 0.25) has variance ~ sd^2 / n * (1 + phi) / (1 - phi) = 0.00033,
    # so the log ratio's sd is ~0.026 and a 95% half width ~0.05 (t, few blocks: more). Within 2x of it.
    half = (np.log(got["high"]) - np.log(got["low"])) / 2
    assert 0.025 < half < 0.12, (half, got)


def test_resampled_histograms_keep_their_totals():
    m = np.arange(24.0).reshape(8, 3)
    rng = np.random.default_rng(0)
    r = quantile_bootstrap.resampled(m, 4, 50, rng)
    assert r.shape == (50, 3)
    # Two blocks of 4 rows each: every resample's total is two of the five block sums (arithmetic here).
    blocks = {float(m[s:s + 4].sum()) for s in range(5)}
    sums = {a + b for a in blocks for b in blocks}
    assert all(float(x) in sums for x in r.sum(axis=1))
