"""The Universal Scalability Law (Gunther, "Guerrilla Capacity Planning",
ch. 4): X(N) = λN / (1 + σ(N−1) + κN(N−1)).

λ is the throughput of one node, σ the contention (the serial share: the
part of the work that does not spread over nodes), κ the coherency delay
(the cost of nodes keeping each other up to date, growing with N²).
Fitted by non-linear least squares (scipy's curve_fit, trust-region with
σ, κ ≥ 0 and λ > 0), unweighted: every measured point counts the same.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats
from scipy.optimize import OptimizeWarning, curve_fit

from ybbench.core.errors import UserError

PARAMS = ("lambda", "sigma", "kappa")


def model(n, lam, sigma, kappa):
    n = np.asarray(n, dtype=float)
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


@dataclass
class Param:
    value: float
    se: float | None  # standard error from the covariance; None when it has no degrees of freedom
    ci: tuple[float, float] | None  # value ± t[1-α/2; m-3]·se


@dataclass
class Fit:
    lam: Param
    sigma: Param
    kappa: Param
    alpha: float
    points: int  # measurements fitted (replications count one each)
    dof: int  # points - 3
    t: float | None
    sse: float
    residual_se: float | None  # sqrt(SSE / dof)
    r2: float
    cov: np.ndarray | None = None  # covariance of (λ, σ, κ) from the fit; None with no degrees of freedom

    def params(self) -> dict[str, Param]:
        return {"lambda": self.lam, "sigma": self.sigma, "kappa": self.kappa}

    def predict(self, n):
        return model(n, self.lam.value, self.sigma.value, self.kappa.value)

    def peak(self) -> tuple[float | None, float | None, str]:
        """N* = sqrt((1−σ)/κ), X(N*), and why there is none when there is not."""
        s, k = self.sigma.value, self.kappa.value
        if k <= 0 and s <= 0:
            return None, None, "σ = κ = 0: linear scaling, no peak"
        if k <= 0:
            return None, None, f"κ = 0: no peak; throughput rises towards λ/σ = {self.lam.value / s:.5g}"
        if s >= 1:
            return None, None, "σ ≥ 1: adding nodes never raises throughput"
        n = math.sqrt((1 - s) / k)
        return n, float(self.predict(n)), "N* = sqrt((1 − σ)/κ)"


def _starts(lam0: float):
    # A few starting points: the least-squares surface has flat valleys
    # (σ and κ trade off), and trf stops in the first one it finds.
    for s0 in (0.0, 0.05, 0.3):
        for k0 in (0.0, 1e-4, 1e-2):
            yield [lam0, s0, k0]


def fit(ns, xs, alpha: float = 0.05) -> Fit:
    ns = np.asarray(ns, dtype=float)
    xs = np.asarray(xs, dtype=float)
    if ns.shape != xs.shape or ns.ndim != 1:
        raise UserError("nodes and throughput: expected one throughput per node count")
    if not (np.all(np.isfinite(ns)) and np.all(np.isfinite(xs))):
        raise UserError("nodes and throughput must be finite numbers")
    if np.any(ns <= 0) or np.any(xs <= 0):
        raise UserError("nodes and throughput must be positive")
    distinct = sorted(set(ns.tolist()))
    if len(distinct) < 3:
        raise UserError(f"the fit has three parameters (λ, σ, κ) and needs at least 3 distinct node counts; "
                        f"got {len(distinct)}: {', '.join(f'{n:g}' for n in distinct) or 'none'}")
    # Fit in units of the largest throughput so λ, σ and κ are of similar size.
    scale = float(xs.max())
    y = xs / scale
    lam0 = float((y / ns).max())
    best = None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OptimizeWarning)  # no covariance with 0 dof: reported as None below
        for p0 in _starts(lam0):
            try:
                popt, pcov = curve_fit(model, ns, y, p0=p0, bounds=([1e-12, 0, 0], [np.inf, np.inf, np.inf]),
                                       x_scale="jac", max_nfev=20000, ftol=1e-14, xtol=1e-14, gtol=1e-14)
            except RuntimeError:
                continue
            sse = float(np.sum((y - model(ns, *popt)) ** 2))
            if best is None or sse < best[0] - 1e-15:
                best = (sse, popt, pcov)
    if best is None:
        raise UserError("the USL fit did not converge on these numbers")
    sse, popt, pcov = best
    m = len(xs)
    dof = m - 3
    units = np.array([scale, 1.0, 1.0])
    # A parameter at its bound comes back as 1e-11 or so: call it 0 when
    # that leaves the fit as good, or a linear fit's peak would be reported
    # at N = 10^5.
    sst_y = float(np.sum((y - y.mean()) ** 2))
    for i in (1, 2):
        at_zero = popt.copy()
        at_zero[i] = 0.0
        sse0 = float(np.sum((y - model(ns, *at_zero)) ** 2))
        if sse0 <= sse * (1 + 1e-6) + 1e-12 * sst_y:
            popt, sse = at_zero, sse0
    popt = popt * units
    pcov = pcov * np.outer(units, units)
    t = float(stats.t.ppf(1 - alpha / 2, dof)) if dof > 0 else None
    params = []
    for i in range(3):
        var = pcov[i, i]
        se = math.sqrt(var) if dof > 0 and np.isfinite(var) and var >= 0 else None
        ci = (popt[i] - t * se, popt[i] + t * se) if se is not None else None
        params.append(Param(float(popt[i]), se, ci))
    sse *= scale ** 2
    sst = float(np.sum((xs - xs.mean()) ** 2))
    return Fit(*params, alpha=alpha, points=m, dof=dof, t=t, sse=sse,
               residual_se=math.sqrt(sse / dof) if dof > 0 else None, r2=1 - sse / sst if sst > 0 else 1.0,
               cov=pcov if dof > 0 else None)


def x1(ns, xs, f: Fit) -> tuple[float, str]:
    """X(1) for efficiency: the mean measured at N = 1, or λ (the fit's X(1))
    when N = 1 was not measured."""
    ns, xs = np.asarray(ns, dtype=float), np.asarray(xs, dtype=float)
    at1 = xs[ns == 1]
    if at1.size:
        return float(at1.mean()), "measured at N = 1" + (f", mean of {at1.size}" if at1.size > 1 else "")
    return f.lam.value, "λ from the fit (N = 1 was not measured)"


def efficiency(n: float, x: float, x_one: float) -> float:
    """X(N) / (N·X(1)): 1 is linear scaling."""
    return x / (n * x_one)
