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
    vx, vy = lx.var(ddof=1) * 5 / 4, ly.var(ddof=1) * 5 / 4  # k / (k - 1): 30 // 6 = 5 and 25 // 5 = 5 blocks
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


# The A/A band's size: DRAWS comparisons, and the binomial interval around alpha that holds a correct method's
# count of false verdicts with probability 1 - 2 * TAIL (arithmetic in the test below).
DRAWS, TAIL = 3000, 0.0005


def test_false_positive_rate_of_two_draws_of_one_ar1_process():
    """Two 30 s series from one AR(1) process (phi 0.3, a plausible lag-1
    correlation of per-second ops/s), DRAWS = 3000 times, alpha 0.05: the
    verdict should be "faster" or "slower" in about 5% of draws. The count
    of false verdicts is binomial(3000, p), p the method's false-positive
    rate; the band is binomial's central 99.9% at p = alpha, [112, 191]
    (3.7% to 6.4%), from scipy here:
    - a correct method (p = 0.05) passes it with probability 0.9992;
    - a method at 1.5 x alpha (p = 0.075) passes it with probability
      0.0089 (fails 99.1%); at 0.5 x alpha with probability 0.00003, and
      one that never says anything fails it.
    The draws are seeded: the same count every run (no flakiness); the
    probabilities say what the band can tell apart. The method without
    its k / (k - 1) (the planted fault: what bootstrap.py was) gives 209,
    7.0%; with it, 137. 3000 compares took
    18 s on this 2-core host at load 1.5, 32 s at load 9."""
    rng = np.random.default_rng(2026)
    alpha = 0.05
    lo, hi = int(stats.binom.ppf(TAIL, DRAWS, alpha)), int(stats.binom.isf(TAIL, DRAWS, alpha))
    inside = lambda p: stats.binom.cdf(hi, DRAWS, p) - stats.binom.cdf(lo - 1, DRAWS, p)  # noqa: E731
    assert (lo, hi) == (112, 191)
    assert inside(alpha) >= 0.999 and inside(1.5 * alpha) <= 0.01  # the docstring's two probabilities
    hits = sum(bootstrap.compare(ar1(rng, 30, 0.3), ar1(rng, 30, 0.3), alpha).verdict in ("faster", "slower")
               for _ in range(DRAWS))
    assert lo <= hits <= hi, f"{hits} false verdicts in {DRAWS} draws ({hits / DRAWS:.3%}), band [{lo}, {hi}]"


def test_bad_alpha():
    with pytest.raises(ValueError):
        bootstrap.compare([1.0] * 9, [1.0] * 9, alpha=1.5)
