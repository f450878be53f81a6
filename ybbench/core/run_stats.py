"""Did it get faster, counting runs (`ybbench compare`, `ybbench ab`).

The unit is the run: one value per run (its mean ops/s over the measured
window, or its p99), since what changes from one run to the next (where
the scheduler puts client and server, caches, the table's state, the CPU's
clock) is invisible to the seconds inside one run. A bootstrap over seconds
called identical pairs of runs different about half the time on a quiet
2-core machine; see docs/reports.md, "Comparing runs".

Everything is on the log of each run's value, so a ratio's interval is
symmetric in the way slowdowns and speedups are:

- two or more runs a side: Welch's t. d = mean log other - mean log base,
  SE^2 = s_b^2/n_b + s_o^2/n_o, df by Welch-Satterthwaite; the interval
  exp(d +- t(1 - alpha/2, df) SE); the ratio exp(d) (of the runs'
  geometric means);
- one run on a side: a spread from elsewhere, pooled: the deviations of
  the side that has two or more runs, and a history of earlier runs of the
  same series (Spread), each from its own mean; SE = s sqrt(1/n_b + 1/n_o),
  Student's t on the pooled df. Without MIN_POOLED_DF of them: no verdict.

The verdict says "faster"/"slower" (or, for latency, "higher"/"lower")
only when the interval excludes 1; it is wrong on identical runs at rate
alpha when the runs' log values are independent and normal
(tests/unit/test_run_stats.py measures it on simulated runs with a run
effect and autocorrelated seconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

MIN_POOLED_DF = 4  # a spread from 5 earlier runs at least (or 5 of one side's)
WELCH = ("Welch's t on the log of each run's value: ratio exp(d), d = mean log other - mean log base; interval "
         "exp(d ± t(1-alpha/2, df) SE), SE² = s²_base/n_base + s²_other/n_other, df Welch-Satterthwaite")
POOLED = ("Student's t on the log of each run's value with a pooled run-to-run spread s (the deviations of each "
          "side with two or more runs and of the history's earlier runs of the same series, each from its own "
          "mean): interval exp(d ± t(1-alpha/2, df) s sqrt(1/n_base + 1/n_other)), df the pooled one")
ONE_RUN = ("no verdict: one run per side cannot separate a change from run-to-run variation; use `ybbench ab "
           "... --repeat N` (or a history of {need} or more earlier runs of the same series)")


@dataclass(frozen=True)
class Spread:
    """Run-to-run spread from earlier runs: the sum of squared deviations of
    log values from each series' own mean, its df, and which runs."""

    ss: float
    df: int
    runs: list[str] = field(default_factory=list)
    source: str = ""


def spread_of(groups: dict[str, list[tuple[str, float]]], source: str) -> Spread:
    """groups: series name -> [(run id, value)]; values <= 0 left out."""
    ss, df, runs = 0.0, 0, []
    for members in groups.values():
        good = [(t, math.log(v)) for t, v in members if v is not None and v > 0]
        if len(good) < 2:
            continue
        logs = np.array([x for _, x in good])
        ss += float(((logs - logs.mean()) ** 2).sum())
        df += len(good) - 1
        runs += [t for t, _ in good]
    return Spread(ss, df, runs, source)


# Log values this close are one value: runs whose p99 is the same figure
# read back through float arithmetic differ by ~1e-16, and a t-test of
# that noise calls them different.
ROUNDING = 1e-9


def _words(kind: str) -> tuple[str, str]:
    return ("faster", "slower") if kind == "throughput" else ("higher", "lower")


def verdict(low: float, high: float, kind: str = "throughput") -> str:
    up, down = _words(kind)
    if low > 1:
        return up
    if high < 1:
        return down
    return "no significant difference"


def compare(base: list[float], other: list[float], alpha: float = 0.05, history: Spread | None = None,
            kind: str = "throughput", detect: bool = True) -> dict:
    """other's runs against base's: {ratio, low, high, verdict, pvalue,
    method, runs, spread, df, detectable}; kind "throughput" (higher is
    faster) or "latency" (verdict higher/lower); detect False leaves out
    what the runs could see (a simulation's thousands of calls)."""
    from scipy import stats

    if not 0 < alpha < 1:
        raise ValueError(f"alpha {alpha}: between 0 and 1")
    xb = np.log(base) if base and all(v and v > 0 for v in base) else None
    xo = np.log(other) if other and all(v and v > 0 for v in other) else None
    out = {"ratio": None, "low": None, "high": None, "pvalue": None, "df": None, "alpha": alpha,
           "runs": {"base": len(base), "other": len(other)},
           "spread": {"base": _cv(base), "other": _cv(other), "pooled": None, "history_runs": [],
                      "history": None}}
    if xb is None or xo is None:
        out.update(method=WELCH, verdict=f"no verdict: {'base' if xb is None else 'other'} has a run without a "
                                         "positive value")
        return out
    d = float(xo.mean() - xb.mean())
    if abs(d) < ROUNDING:
        d = 0.0
    out["ratio"] = math.exp(d)
    nb, no = len(xb), len(xo)
    if nb >= 2 and no >= 2:
        vb, vo = float(xb.var(ddof=1)), float(xo.var(ddof=1))
        se2 = vb / nb + vo / no
        df = (se2 ** 2 / ((vb / nb) ** 2 / (nb - 1) + (vo / no) ** 2 / (no - 1))) if se2 > 0 else nb + no - 2
        out["method"] = WELCH
    else:
        ss = sum(float(((x - x.mean()) ** 2).sum()) for x in (xb, xo) if len(x) >= 2)
        df = sum(len(x) - 1 for x in (xb, xo) if len(x) >= 2)
        if history is not None and history.df > 0:
            ss, df = ss + history.ss, df + history.df
            out["spread"]["history_runs"] = list(history.runs)
            out["spread"]["history"] = history.source
        out["method"] = POOLED
        if df < MIN_POOLED_DF:
            out["verdict"] = ONE_RUN.format(need=MIN_POOLED_DF + 1)
            if df:
                out["spread"]["pooled"] = math.expm1(math.sqrt(ss / df))
            out["df"] = df or None
            return out
        s2 = ss / df
        out["spread"]["pooled"] = math.expm1(math.sqrt(s2))
        se2 = s2 * (1 / nb + 1 / no)
    out["df"] = float(df)
    if se2 < ROUNDING ** 2:
        out.update(low=out["ratio"], high=out["ratio"], pvalue=0.0 if d else 1.0,
                   verdict=verdict(out["ratio"], out["ratio"], kind) if d else "no significant difference")
        return out
    se = math.sqrt(se2)
    half = float(stats.t.ppf(1 - alpha / 2, df)) * se
    out.update(low=math.exp(d - half), high=math.exp(d + half), pvalue=float(2 * stats.t.sf(abs(d) / se, df)))
    out["verdict"] = verdict(out["low"], out["high"], kind)
    if detect:
        out["detectable"] = detectable(se, df, alpha, nb, no)
    return out


POWER = 0.8
CHANGES = (0.02, 0.05, 0.10)


def power_of(change: float, se: float, df: float, alpha: float) -> float:
    """The chance that a true change of `change` (a fraction: 0.05 is 5%,
    either way) gets a verdict, at this SE of the log ratio and df: the
    noncentral t's mass beyond the critical value."""
    from scipy import stats

    crit = float(stats.t.ppf(1 - alpha / 2, df))
    ncp = abs(math.log1p(change)) / se
    if ncp > crit + 10:  # certain (and past where scipy's noncentral t gives NaN in the far tail)
        return 1.0
    far = float(stats.nct.cdf(-crit, df, ncp))  # a verdict the wrong way: negligible but for tiny changes
    return float(stats.nct.sf(crit, df, ncp)) + (far if math.isfinite(far) else 0.0)


def detectable(se: float, df: float, alpha: float, nb: int, no: int) -> dict:
    """What these runs could see: the smallest change found with POWER
    (80%) at this spread, and the runs a side that would find a change of
    2%, 5% and 10% with POWER, at the same spread per run (equal runs a
    side, Welch's df 2(n - 1))."""
    from scipy.optimize import brentq

    if not se > 0:
        return {"power": POWER, "change": 0.0, "runs_a_side_for": {}}
    # in units of se (bracket and tolerance): power is ~alpha at 1e-6 se and 1 at 40 se, whatever se's size
    change = math.expm1(brentq(lambda x: power_of(math.expm1(x), se, df, alpha) - POWER, 1e-6 * se, 40 * se,
                               xtol=1e-9 * se))
    per_run = se / math.sqrt(1 / nb + 1 / no)  # the sd of one run's log value
    return {"power": POWER, "change": change,
            "runs_a_side_for": {f"{c:g}": runs_a_side(c, per_run, alpha) for c in CHANGES}}


def runs_a_side(change: float, per_run: float, alpha: float, most: int = 1000) -> int | None:
    """The runs a side (equal sides, Welch's df 2(n - 1)) that find `change`
    with POWER when one run's log value has sd `per_run`; None past `most`."""
    return next((n for n in range(2, most + 1)
                 if power_of(change, per_run * math.sqrt(2 / n), 2 * (n - 1), alpha) >= POWER), None)


def _cv(values: list[float]) -> float | None:
    """The run-to-run spread of one side: exp(sd of log values) - 1, a
    fraction (0.03: runs 3% apart, one sd); None with fewer than 2 runs."""
    good = [v for v in values if v and v > 0]
    if len(good) < 2:
        return None
    return math.expm1(float(np.log(good).std(ddof=1)))


def blind_spread(base: list[float], other: list[float]) -> float | None:
    """The sd of every run's log value about the mean of all, blind to the
    sides: what `ybbench ab --resolve` decides its runs a side from, so that
    the decision cannot lean on the difference it will judge (each side
    about its own mean called identical sides different 5.9% of the time
    at alpha 5%; blind, 4.2%: docs/measurements.md). None with
    fewer than two runs a side or a value that is not positive."""
    values = list(base) + list(other)
    if min(len(base), len(other)) < 2 or not all(v and v > 0 for v in values):
        return None
    return float(np.log(values).std(ddof=1))
