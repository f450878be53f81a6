"""The Universal Scalability Law fit (ybbench/core/usl.py): it recovers known
λ, σ and κ from noisy synthetic data, within its intervals; the peak and
the efficiencies are checked against plain arithmetic written here."""

from __future__ import annotations

import math
import random

import pytest

from ybbench.core.errors import UserError
from ybbench.core import usl

LAM, SIGMA, KAPPA = 1000.0, 0.05, 0.002
NODES = list(range(1, 33))


def usl_by_hand(n, lam, sigma, kappa):
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def noisy(seed: int = 7, noise: float = 0.05):
    """X(N) with 5% multiplicative Gaussian noise; a fixed seed, so the
    check below is the same on every run."""
    rng = random.Random(seed)
    return [usl_by_hand(n, LAM, SIGMA, KAPPA) * (1 + noise * rng.gauss(0, 1)) for n in NODES]


def test_fit_recovers_known_parameters_within_its_intervals():
    xs = noisy()
    f = usl.fit(NODES, xs)
    assert f.points == 32 and f.dof == 29 and f.alpha == 0.05
    for p, true in ((f.lam, LAM), (f.sigma, SIGMA), (f.kappa, KAPPA)):
        assert p.se is not None and p.se > 0
        assert p.ci[0] < true < p.ci[1], (p, true)
        assert p.ci == pytest.approx((p.value - f.t * p.se, p.value + f.t * p.se))
    # and close: 5% noise over 32 points
    assert f.lam.value == pytest.approx(LAM, rel=0.1)
    assert f.sigma.value == pytest.approx(SIGMA, abs=0.03)
    assert f.kappa.value == pytest.approx(KAPPA, rel=0.25)
    assert f.t == pytest.approx(2.045229642, rel=1e-6)  # t[0.975; 29] from a table
    # the least-squares sums, by hand from the fitted curve
    fitted = [usl_by_hand(n, f.lam.value, f.sigma.value, f.kappa.value) for n in NODES]
    sse = sum((x - y) ** 2 for x, y in zip(xs, fitted))
    mean = sum(xs) / len(xs)
    assert f.sse == pytest.approx(sse, rel=1e-6)
    assert f.r2 == pytest.approx(1 - sse / sum((x - mean) ** 2 for x in xs), rel=1e-6)
    assert f.residual_se == pytest.approx(math.sqrt(sse / 29), rel=1e-6)


def test_the_fit_holds_over_other_noise_draws():
    """Not one lucky seed: for ten seeds the true σ and κ lie within the
    95% intervals in most of them and the estimates stay close."""
    inside = 0
    for seed in range(10):
        f = usl.fit(NODES, noisy(seed))
        inside += int(f.sigma.ci[0] < SIGMA < f.sigma.ci[1]) + int(f.kappa.ci[0] < KAPPA < f.kappa.ci[1])
        assert f.kappa.value == pytest.approx(KAPPA, rel=0.4)
    assert inside >= 16


def test_peak_and_efficiency_by_hand():
    f = usl.fit(NODES, noisy())
    n_star, x_star, how = f.peak()
    s, k, lam = f.sigma.value, f.kappa.value, f.lam.value
    assert n_star == pytest.approx(math.sqrt((1 - s) / k))
    assert x_star == pytest.approx(lam * n_star / (1 + s * (n_star - 1) + k * n_star * (n_star - 1)))
    # the true peak: sqrt(0.95 / 0.002) = 21.79 nodes
    assert n_star == pytest.approx(math.sqrt(0.95 / 0.002), rel=0.15)
    # X(1) is the N = 1 measurement; efficiency X(N) / (N X(1))
    xs = noisy()
    x1, where = usl.x1(NODES, xs, f)
    assert x1 == xs[0] and where == "measured at N = 1"
    assert usl.efficiency(16, xs[15], x1) == pytest.approx(xs[15] / (16 * xs[0]))


def test_exact_data_give_the_parameters_back():
    xs = [usl_by_hand(n, 250.0, 0.1, 0.01) for n in (1, 2, 4, 8, 16)]
    f = usl.fit([1, 2, 4, 8, 16], xs)
    assert (f.lam.value, f.sigma.value, f.kappa.value) == pytest.approx((250.0, 0.1, 0.01), rel=1e-5)
    assert f.peak()[0] == pytest.approx(math.sqrt(0.9 / 0.01), rel=1e-5)


def test_without_n_1_x1_is_lambda():
    ns = [2, 4, 8, 16]
    f = usl.fit(ns, [usl_by_hand(n, 100.0, 0.02, 0.001) for n in ns])
    x1, where = usl.x1(ns, [1.0] * 4, f)
    assert x1 == f.lam.value and "λ from the fit (N = 1 was not measured)" == where


def test_linear_data_have_no_peak():
    ns = [1, 2, 4, 8]
    f = usl.fit(ns, [50.0 * n for n in ns])
    assert f.sigma.value == 0 and f.kappa.value == 0
    assert f.peak() == (None, None, "σ = κ = 0: linear scaling, no peak")


def test_three_points_fit_without_intervals():
    ns = [1, 2, 3]
    f = usl.fit(ns, [usl_by_hand(n, 10.0, 0.1, 0.05) for n in ns])
    assert f.dof == 0 and f.t is None and f.lam.se is None and f.lam.ci is None


@pytest.mark.parametrize("ns, xs, message", [
    ([1, 2], [1.0, 2.0], "needs at least 3 distinct node counts; got 2: 1, 2"),
    ([1, 1, 2, 2, 2], [1.0, 1.1, 2.0, 2.1, 1.9], "got 2: 1, 2"),
    ([1, 2, 0], [1.0, 2.0, 3.0], "must be positive"),
    ([1, 2, 3], [1.0, -2.0, 3.0], "must be positive"),
    ([1, 2, 3], [1.0, float("nan"), 3.0], "finite"),
])
def test_refused(ns, xs, message):
    with pytest.raises(UserError, match=message):
        usl.fit(ns, xs)
