"""`ybbench compare`'s statistics (ybbench/core/bootstrap.py) against
arithmetic written out here: the block resampling, the interval's formula,
a constant series, a known shift both ways, too few seconds, and the
false-positive rate over repeated draws of two series from one AR(1)
process."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ybbench.core import bootstrap


def ar1(rng: np.random.Generator, n: int, phi: float, mean: float = 1000.0, sd: float = 50.0) -> np.ndarray:
    """n seconds of mean + an AR(1) process, x_t = phi x_(t-1) + e_t, after a burn-in."""
    burn = 50
    e = rng.normal(0.0, sd, n + burn)
    x = np.empty(n + burn)
    x[0] = e[0]
    for i in range(1, n + burn):
        x[i] = phi * x[i - 1] + e[i]
    return mean + x[burn:]


def test_block_length_and_minimum():
    assert [bootstrap.block_length(n) for n in (5, 9, 11, 12, 16, 17, 30, 60)] == [3, 3, 3, 4, 4, 5, 6, 8]
    assert bootstrap.MIN_BLOCKS == 3


def test_moving_blocks_are_consecutive_seconds_cut_to_n():
    x = np.arange(10, dtype=float) ** 2
    b, reps = 3, 7
    got = bootstrap.resampled_means(x, b, reps, np.random.default_rng(5))
    # The same draws, by hand: ceil(10/3) = 4 block starts in 0..7 per resample.
    starts = np.random.default_rng(5).integers(0, 10 - 3 + 1, size=(reps, 4))
    for row, mean in zip(starts, got):
        seconds = [x[s + j] for s in row for j in range(b)][:10]
        assert mean == pytest.approx(sum(seconds) / 10)


def test_interval_is_the_stated_formula():
    rng = np.random.default_rng(11)
    x, y = ar1(rng, 30, 0.3), ar1(rng, 25, 0.3, mean=1100)
    r = bootstrap.compare(x, y, alpha=0.1)
    assert (r.b_base, r.b_other, r.resamples) == (6, 5, bootstrap.B)
    draws = np.random.default_rng(bootstrap.STREAM)
    lx = np.log(bootstrap.resampled_means(x, 6, bootstrap.B, draws))
    ly = np.log(bootstrap.resampled_means(y, 5, bootstrap.B, draws))
    vx, vy = lx.var(ddof=1), ly.var(ddof=1)
    df = (vx + vy) ** 2 / (vx ** 2 / (30 // 6 - 1) + vy ** 2 / (25 // 5 - 1))
    half = stats.t.ppf(0.95, df) * math.sqrt(vx + vy)
    centre = math.log(y.mean() / x.mean())
    assert r.ratio == pytest.approx(y.mean() / x.mean())
    assert r.low == pytest.approx(math.exp(centre - half)) and r.high == pytest.approx(math.exp(centre + half))
    assert bootstrap.compare(x, y, alpha=0.1) == r  # the fixed stream: the same interval every time


def test_constant_series_collapse_to_the_exact_ratio():
    r = bootstrap.compare([400.0] * 20, [600.0] * 15)
    assert r.ratio == 1.5
    assert r.low == pytest.approx(1.5, rel=1e-12) and r.high == pytest.approx(1.5, rel=1e-12)
    assert r.verdict == "faster"
    back = bootstrap.compare([600.0] * 15, [400.0] * 20)
    assert back.low == pytest.approx(2 / 3, rel=1e-12) and back.verdict == "slower"
    assert bootstrap.compare([500.0] * 12, [500.0] * 12).verdict == "no significant difference"


def test_known_shift_is_found_in_both_directions():
    rng = np.random.default_rng(3)
    base, other = ar1(rng, 60, 0.5, mean=1000), ar1(rng, 60, 0.5, mean=1100)  # true ratio 1.1
    up = bootstrap.compare(base, other)
    assert up.low < 1.1 < up.high and up.low > 1 and up.verdict == "faster"
    down = bootstrap.compare(other, base)  # true ratio 1/1.1
    assert down.low < 1 / 1.1 < down.high and down.high < 1 and down.verdict == "slower"
    # Mean ops/s is what the ratio is of: 60 s against 30 s of the same level.
    assert bootstrap.compare(base, base[:30]).ratio == pytest.approx(base[:30].mean() / base.mean())


def test_too_few_seconds_give_no_verdict():
    rng = np.random.default_rng(4)
    r = bootstrap.compare(ar1(rng, 8, 0.3), ar1(rng, 30, 0.3, mean=2000))
    assert r.low is None and r.high is None
    assert r.verdict == "no verdict: base has 8 s, fewer than 3 blocks of 3 s"
    assert bootstrap.compare(ar1(rng, 9, 0.3), ar1(rng, 9, 0.3, mean=2000)).verdict == "faster"
    assert bootstrap.compare([0.0] * 12, [5.0] * 12).verdict == "no verdict: base has no ops"
    assert bootstrap.compare([5.0] * 12, [0.0] * 12).verdict == "no verdict: other has no ops"


def test_false_positive_rate_of_two_draws_of_one_ar1_process():
    """Two 30 s series from one AR(1) process (phi 0.3, a plausible lag-1
    correlation of per-second ops/s), 200 times, alpha 0.05: the verdict
    should be "faster" or "slower" in about 5% of draws. Over 200 draws
    a true rate of 0.05 gives a binomial count with sd
    sqrt(0.05 * 0.95 / 200) = 0.0154; the test accepts 0.05 ± 3 sd,
    [0.004, 0.096] (a fair method fails it with probability 0.3%; one
    whose rate were 0.10 or more would pass it less than half the time,
    and one that never says anything fails it). Measured with these
    draws: 15 of 200, 0.075 (over 1000 draws, bootstrap.py's docstring:
    6% to 8% at phi 0.3, 4% to 6.5% for independent seconds)."""
    rng = np.random.default_rng(2026)
    draws, alpha = 200, 0.05
    hits = sum(bootstrap.compare(ar1(rng, 30, 0.3), ar1(rng, 30, 0.3), alpha).verdict in ("faster", "slower")
               for _ in range(draws))
    sd = math.sqrt(alpha * (1 - alpha) / draws)
    rate = hits / draws
    assert alpha - 3 * sd <= rate <= alpha + 3 * sd, f"false-positive rate {rate} over {draws} draws"


def test_bad_alpha():
    with pytest.raises(ValueError):
        bootstrap.compare([1.0] * 9, [1.0] * 9, alpha=1.5)
