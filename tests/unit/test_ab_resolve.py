"""`ybbench ab`'s default on simulated runs with a known answer: 5 runs a
side, then as many as their spread says a 5% change needs (8 times in
10), at most 20, looking again after each extension: the rule the CLI
runs, experiments/ab_rule.py's resolve, given simulated runs. Each run's
log ops/s is N(effect, sigma): sigma 4.5% is what 30 s sql-selects runs
were apart on the 2-core test VM,
2% a quiet cluster's. Identical sides get a verdict no more often than
alpha; a 5% slowdown is called slower at least 8 times in 10; runs
already close enough stop at 5. The planted fault: a rule that looks at
the verdict after every pair and stops at the first (peeking) calls
identical sides different far more often than alpha."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ybbench.core import run_stats
from ybbench.experiments import ab, ab_rule

from ..support.workloads import BINOMIAL_FALSE_FAILURES

ALPHA, CHANGE, TRIALS = 0.05, 0.05, 1500
START, MOST = ab.REPEAT, ab.MAX_REPEAT


def verdict(base: np.ndarray, other: np.ndarray, n: int) -> str:
    return run_stats.compare(list(np.exp(base[:n])), list(np.exp(other[:n])), ALPHA, detect=False)["verdict"]


def resolved(rng: np.random.Generator, sigma: float, effect: float, peek: bool = False) -> tuple[str, int]:
    """One ab as its default runs it: (the verdict, runs a side)."""
    base, other = rng.normal(0.0, sigma, MOST), rng.normal(math.log1p(effect), sigma, MOST)
    if peek:  # the planted fault: look at the verdict after every pair, stop at the first one
        n = next((n for n in range(START, MOST + 1) if verdict(base, other, n) != "no significant difference"), MOST)
        return verdict(base, other, n), n

    def runs_to(n: int) -> ab_rule.Values:
        return {"select": (list(np.exp(base[:n])), list(np.exp(other[:n])))}
    n = ab_rule.resolve(runs_to, START, MOST, CHANGE, ALPHA)
    return verdict(base, other, n), n


def rate(sigma: float, effect: float, want: tuple[str, ...], seed: int, peek: bool = False) -> tuple[int, float]:
    rng = np.random.default_rng(seed)
    got = [resolved(rng, sigma, effect, peek) for _ in range(TRIALS)]
    return sum(v in want for v, _ in got), float(np.mean([n for _, n in got]))


def above(hits: int, p: float) -> float:
    """How unlikely `hits` of TRIALS or more is if each is a hit with probability p."""
    return float(stats.binomtest(hits, TRIALS, p, alternative="greater").pvalue)


@pytest.mark.parametrize("sigma", [0.045, 0.02])
def test_identical_sides_get_a_verdict_no_more_often_than_alpha(sigma):
    wrong, runs = rate(sigma, 0.0, ("faster", "slower"), seed=int(sigma * 1000))
    assert above(wrong, ALPHA) > 1 / BINOMIAL_FALSE_FAILURES, f"sigma {sigma}: {wrong} of {TRIALS} ({runs:.1f} a side)"


def test_a_five_percent_slowdown_is_found_eight_times_in_ten_on_runs_four_and_a_half_percent_apart():
    found, runs = rate(0.045, -CHANGE, ("slower",), seed=45)
    below = float(stats.binomtest(found, TRIALS, run_stats.POWER, alternative="less").pvalue)
    assert below > 1 / BINOMIAL_FALSE_FAILURES, f"{found} of {TRIALS} ({runs:.1f} a side)"
    assert 10 < runs < MOST  # more than the 5 it starts with, fewer than the most


def test_runs_close_enough_stop_where_they_start():
    _, runs = rate(0.02, 0.0, (), seed=2)
    assert runs < START + 0.5, runs


def test_the_planted_peek_calls_identical_sides_different_far_more_often():
    """Looking at the verdict after every pair and stopping at the first
    one: up to 16 looks at the difference, each at alpha."""
    wrong, _ = rate(0.045, 0.0, ("faster", "slower"), seed=7, peek=True)
    assert above(wrong, ALPHA) < 1 / BINOMIAL_FALSE_FAILURES, f"{wrong} of {TRIALS}"
