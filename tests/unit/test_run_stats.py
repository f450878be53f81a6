"""The run-level statistic of `ybbench compare` (ybbench/core/run_stats.py)
on simulated runs with a known answer: each run's seconds are
exp(mu + b_run + AR(1)), b_run ~ N(0, sigma_b) a run effect the seconds of
one run cannot see. Over many simulated A/A comparisons the false-verdict
rate is alpha's (within an exact binomial bound) for 2, 3 and 5 runs a side
and for sigma_b = 0; the old statistic (a bootstrap over the seconds of one
run a side, core/bootstrap.py) on the same draws is far above it (the fault
this replaces); a planted effect of 3 sigma_b is found as often as the
noncentral t says. The formulas are checked against arithmetic written out
here."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ybbench.core import bootstrap, run_stats

from ..support.workloads import BINOMIAL_FALSE_FAILURES, binomial

ALPHA = 0.05
SECONDS = 30
PHI = 0.3
SD_SECOND = 0.05  # a second's ops/s varies ~5% around its run's level


def runs(rng: np.random.Generator, n: int, sigma_b: float, effect: float = 0.0) -> list[np.ndarray]:
    """n runs of SECONDS per-second ops/s around 1000 * exp(effect)."""
    out = []
    for _ in range(n):
        e = rng.normal(0.0, SD_SECOND * math.sqrt(1 - PHI ** 2), SECONDS + 50)
        x = np.empty_like(e)
        x[0] = rng.normal(0.0, SD_SECOND)
        for i in range(1, len(e)):
            x[i] = PHI * x[i - 1] + e[i]
        out.append(1000.0 * np.exp(effect + rng.normal(0.0, sigma_b) + x[50:]))
    return out


def means(rs: list[np.ndarray]) -> list[float]:
    return [float(r.mean()) for r in rs]


@pytest.mark.parametrize("n, sigma_b", [(2, 0.03), (3, 0.03), (5, 0.03), (3, 0.0)])
def test_identical_runs_get_a_verdict_at_rate_alpha(n, sigma_b):
    rng = np.random.default_rng(1000 + 10 * n + int(sigma_b * 100))
    trials = 1500
    wrong = 0
    for _ in range(trials):
        got = run_stats.compare(means(runs(rng, n, sigma_b)), means(runs(rng, n, sigma_b)), ALPHA, detect=False)
        assert got["runs"] == {"base": n, "other": n}
        wrong += got["verdict"] in ("faster", "slower")
    # Never more often than alpha; at 2 runs a side Welch's df makes it conservative (33 of 1500 seen),
    # from 3 it is alpha itself (two-sided).
    above = stats.binomtest(wrong, trials, ALPHA, alternative="greater").pvalue
    assert above > 1 / BINOMIAL_FALSE_FAILURES, f"{n} runs a side, sigma_b {sigma_b}: {wrong} of {trials} (p {above:.2g})"
    if n >= 3:
        ok, why = binomial(wrong, trials, ALPHA)
        assert ok, f"{n} runs a side, sigma_b {sigma_b}: false verdicts {why}"


def test_the_old_seconds_statistic_on_the_same_kind_of_draws_is_wrong_far_more_often():
    """One run a side, the seconds bootstrapped (what compare did): with a
    run effect of 3% it calls identical runs different most of the time."""
    rng = np.random.default_rng(7)
    trials = 200
    wrong = 0
    for _ in range(trials):
        (a,), (b,) = runs(rng, 1, 0.03), runs(rng, 1, 0.03)
        wrong += bootstrap.compare(a, b, ALPHA, reps=400).verdict in ("faster", "slower")
    ok, why = binomial(wrong, trials, ALPHA)
    assert not ok and wrong > 2 * ALPHA * trials, f"the seconds bootstrap: {why}"
    # The run-level statistic on one run a side, with no spread from elsewhere, says nothing.
    (a,), (b,) = runs(rng, 1, 0.03), runs(rng, 1, 0.03)
    got = run_stats.compare([a.mean()], [b.mean()], ALPHA)
    assert got["verdict"].startswith("no verdict: one run per side") and got["low"] is None


def test_a_planted_effect_of_three_sigma_b_is_found_as_often_as_the_noncentral_t_says():
    n, sigma_b, trials = 5, 0.03, 600
    rng = np.random.default_rng(99)
    found = sum(run_stats.compare(means(runs(rng, n, sigma_b)), means(runs(rng, n, sigma_b, -3 * sigma_b)),
                                  ALPHA, detect=False)["verdict"] == "slower" for _ in range(trials))
    # The power by arithmetic: a run's log mean has sd sqrt(sigma_b^2 + var of a mean of SECONDS AR(1) seconds);
    # equal n and sd make Welch's df 2(n - 1).
    var_mean = SD_SECOND ** 2 / SECONDS * (1 + 2 * sum((1 - k / SECONDS) * PHI ** k for k in range(1, SECONDS)))
    sd_run = math.sqrt(sigma_b ** 2 + var_mean)
    df = 2 * (n - 1)
    ncp = 3 * sigma_b / (sd_run * math.sqrt(2 / n))
    crit = stats.t.ppf(1 - ALPHA / 2, df)
    power = stats.nct.sf(crit, df, ncp)
    assert power > 0.8
    ok, why = binomial(found, trials, power)
    assert ok, f"found {why}"


def test_welch_is_the_formula_written_out():
    b, o = [1000.0, 1040.0, 980.0], [900.0, 950.0, 920.0, 910.0]
    got = run_stats.compare(b, o, 0.1)
    lb, lo = np.log(b), np.log(o)
    d = lo.mean() - lb.mean()
    vb, vo = lb.var(ddof=1) / 3, lo.var(ddof=1) / 4
    df = (vb + vo) ** 2 / (vb ** 2 / 2 + vo ** 2 / 3)
    half = stats.t.ppf(0.95, df) * math.sqrt(vb + vo)
    assert got["ratio"] == pytest.approx(math.exp(d))
    assert (got["low"], got["high"]) == (pytest.approx(math.exp(d - half)), pytest.approx(math.exp(d + half)))
    assert got["df"] == pytest.approx(df)
    assert got["pvalue"] == pytest.approx(2 * stats.t.sf(abs(d) / math.sqrt(vb + vo), df))
    assert got["verdict"] == "slower" and got["method"] == run_stats.WELCH
    assert got["spread"]["base"] == pytest.approx(math.expm1(lb.std(ddof=1)))


def test_one_run_a_side_takes_the_historys_spread_pooled_and_names_its_runs():
    hist = run_stats.spread_of({"s1": [("h1", 1000.0), ("h2", 1020.0), ("h3", 990.0)],
                                "s2": [("g1", 500.0), ("g2", 505.0), ("g3", 497.0)],
                                "s3": [("lone", 10.0)]}, "test")
    logs1, logs2 = np.log([1000, 1020, 990]), np.log([500, 505, 497])
    ss = ((logs1 - logs1.mean()) ** 2).sum() + ((logs2 - logs2.mean()) ** 2).sum()
    assert hist.df == 4 and hist.ss == pytest.approx(ss) and hist.runs == ["h1", "h2", "h3", "g1", "g2", "g3"]
    got = run_stats.compare([1000.0], [900.0], ALPHA, hist)
    half = stats.t.ppf(1 - ALPHA / 2, 4) * math.sqrt(ss / 4 * 2)
    assert (got["low"], got["high"]) == (pytest.approx(0.9 * math.exp(-half)), pytest.approx(0.9 * math.exp(half)))
    assert got["method"] == run_stats.POOLED and got["spread"]["history_runs"] == hist.runs
    assert got["verdict"] == "slower"
    # Three earlier runs (df 2) are too few: no verdict, whatever the ratio.
    few = run_stats.spread_of({"s1": [("h1", 1000.0), ("h2", 1020.0), ("h3", 990.0)]}, "test")
    assert run_stats.compare([1000.0], [500.0], ALPHA, few)["verdict"].startswith("no verdict")


def test_latency_says_higher_and_lower():
    assert run_stats.compare([5.0, 5.1, 4.9], [6.0, 6.1, 5.9], ALPHA, kind="latency")["verdict"] == "higher"
    assert run_stats.compare([5.0, 5.1, 4.9], [4.0, 4.1, 3.9], ALPHA, kind="latency")["verdict"] == "lower"


def test_a_run_without_ops_gets_no_verdict():
    assert run_stats.compare([1000.0, 0.0], [900.0, 910.0])["verdict"].startswith("no verdict: base has a run")


def test_what_the_runs_could_see_is_the_noncentral_t_written_out():
    """detectable: the change found 4 times in 5 at this spread, and the runs a side a 5% change needs."""
    b, o = [1000.0, 1040.0, 980.0, 1010.0, 995.0], [990.0, 1030.0, 1000.0, 1020.0, 985.0]
    got = run_stats.compare(b, o, ALPHA)
    det = got["detectable"]
    lb, lo = np.log(b), np.log(o)
    se = math.sqrt(lb.var(ddof=1) / 5 + lo.var(ddof=1) / 5)
    df = got["df"]
    crit = stats.t.ppf(1 - ALPHA / 2, df)
    ncp = math.log1p(det["change"]) / se
    assert stats.nct.sf(crit, df, ncp) + stats.nct.cdf(-crit, df, ncp) == pytest.approx(0.8, abs=1e-6)
    # Far from few runs the noncentral t is the normal: (z(0.975) + z(0.8)) standard errors.
    big = run_stats.detectable(0.01, 10_000, ALPHA, 5, 5)
    assert math.log1p(big["change"]) == pytest.approx((stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * 0.01, rel=1e-3)
    # Runs a side for 5%: the smallest n whose power (same sd per run, df 2(n - 1)) reaches 0.8, by hand.
    sd_run = se / math.sqrt(2 / 5)

    def power(n):
        c, nc = stats.t.ppf(1 - ALPHA / 2, 2 * (n - 1)), math.log(1.05) / (sd_run * math.sqrt(2 / n))
        return stats.nct.sf(c, 2 * (n - 1), nc)

    n = det["runs_a_side_for"]["0.05"]
    assert power(n) >= 0.8 > power(n - 1)
    assert det["runs_a_side_for"]["0.1"] <= n <= det["runs_a_side_for"]["0.02"]


def test_runs_equal_but_for_float_rounding_are_equal_and_need_no_root_search():
    """p99s that are one figure read back through float arithmetic (1e-16 apart) are no difference, and
    what such runs could see is found (the root search once started above 40 se and raised)."""
    b, o = [0.1, 0.1, 0.1], [0.1 * (1 + 1e-15), 0.1, 0.1 * (1 - 2e-16)]
    got = run_stats.compare(b, o, ALPHA, kind="latency")
    assert got["verdict"] == "no significant difference" and got["ratio"] == 1.0
    tiny = run_stats.detectable(1e-14, 4.0, ALPHA, 3, 3)
    crit = stats.t.ppf(1 - ALPHA / 2, 4.0)
    ncp = math.log1p(tiny["change"]) / 1e-14
    assert stats.nct.sf(crit, 4.0, ncp) == pytest.approx(0.8, abs=1e-6)
