"""`ybbench ab`'s default rule (experiments/ab_rule.py, the function the
CLI runs) on simulated runs with a known answer: how often it is wrong,
how often it finds a 5% change, how many runs a side it takes and how long
that is with the defaults. A measurement, not a test: it prints the table
docs/compare-settings.md and docs/reports.md quote.

    python3 -m bench.ab_rule_simulation [--trials 1500] [--run-seconds 30] [--spread 0.03 --change -0.045]

Each run's log ops/s is N(effect, sigma) plus, with a drift, drift x its
place in time; the runs come in ab's order (A B B A ..., after one
warm-up run) and the verdict is compare's (core/run_stats.py) on the runs
the rule stopped at. Beside it, "with place": the same runs judged by an
analysis that accounts for each run's place in the order (a least-squares
term), the alternative a drifting machine suggests; the columns say
whether it holds the false-verdict rate under drift, AR(1) and bimodal
noise, and whether it finds more. --spread and --change put a measured
host's two lines (its runs' spread, its planted change) in place of the
list, so a real-run calibration is read against what the rule would do on
runs that are only that noise.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy import stats

from ybbench.core import run_stats
from ybbench.experiments import ab, ab_rule

ALPHA, CHANGE = 0.05, 0.05
# (name, sigma, effect, drift a run, noise, the verdicts that count, what they count)
SCENARIOS = [
    ("identical sides, runs 4.5% apart", 0.045, 0.0, 0.0, "normal", ("faster", "slower"), "false verdicts"),
    ("5% slower, runs 4.5% apart", 0.045, -0.05, 0.0, "normal", ("slower",), "found"),
    ("identical sides, runs 2% apart", 0.02, 0.0, 0.0, "normal", ("faster", "slower"), "false verdicts"),
    ("5% slower, runs 2% apart", 0.02, -0.05, 0.0, "normal", ("slower",), "found"),
    ("identical sides, 4.5% apart, -0.3% drift a run", 0.045, 0.0, -0.003, "normal", ("faster", "slower"),
     "false verdicts"),
    ("5% slower, 4.5% apart, -0.3% drift a run", 0.045, -0.05, -0.003, "normal", ("slower",), "found"),
    ("identical sides, 4.5% apart, AR(1) 0.5", 0.045, 0.0, 0.0, "ar1", ("faster", "slower"), "false verdicts"),
    ("5% slower, 4.5% apart, AR(1) 0.5", 0.045, -0.05, 0.0, "ar1", ("slower",), "found"),
    ("identical sides, 4.5% apart, bimodal", 0.045, 0.0, 0.0, "bimodal", ("faster", "slower"), "false verdicts"),
    ("5% slower, 4.5% apart, bimodal", 0.045, -0.05, 0.0, "bimodal", ("slower",), "found"),
]


def noise(rng: np.random.Generator, kind: str, sigma: float, count: int) -> np.ndarray:
    """count runs' noise in time order, sd sigma: independent normal; AR(1) with phi 0.5 (a run like the one
    before it); bimodal (one run in five 2.5 sd low: a neighbour's burst)."""
    if kind == "normal":
        return rng.normal(0.0, sigma, count)
    if kind == "ar1":
        phi, e = 0.5, rng.normal(0.0, sigma * math.sqrt(1 - 0.25), count)
        out = np.empty(count)
        out[0] = rng.normal(0.0, sigma)
        for i in range(1, count):
            out[i] = phi * out[i - 1] + e[i]
        return out
    low = rng.random(count) < 0.2  # mean 0 and sd sigma overall: N(m, s) with a share p shifted by -2.5 s'
    s = sigma / math.sqrt(1 + 0.2 * 0.8 * 2.5 ** 2)
    return rng.normal(0.0, s, count) + np.where(low, -2.5 * s, 0.0) + 0.2 * 2.5 * s


def with_place(base: list[float], other: list[float], places: tuple[list[int], list[int]]) -> str:
    """The position-aware alternative: least squares of each run's log value on its side and its place in
    the order, a t test of the side's coefficient (df 2n - 3)."""
    y = np.log(np.array(base + other))
    side = np.array([0.0] * len(base) + [1.0] * len(other))
    x = np.column_stack([np.ones_like(y), side, np.array(places[0] + places[1], float)])
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    resid = y - x @ beta
    df = len(y) - 3
    cov = (resid @ resid / df) * np.linalg.inv(x.T @ x)
    p = 2 * stats.t.sf(abs(beta[1]) / math.sqrt(cov[1, 1]), df)
    return "no significant difference" if p >= ALPHA else ("faster" if beta[1] > 0 else "slower")


def one(rng: np.random.Generator, sigma: float, effect: float, drift: float, kind: str) -> tuple[str, str, int]:
    most = ab.MAX_REPEAT
    place = {key: i + 1 for i, key in enumerate(ab.order(most))}  # 0: the warm-up run
    noise_in_time = noise(rng, kind, sigma, 2 * most)
    logs = {side: np.array([noise_in_time[place[(side, i)] - 1] + drift * place[(side, i)]
                            + (math.log1p(effect) if side == "other" else 0.0) for i in range(1, most + 1)])
            for side in ab.SIDES}

    def runs_to(n: int) -> ab_rule.Values:
        return {"select": (list(np.exp(logs["base"][:n])), list(np.exp(logs["other"][:n])))}
    n = ab_rule.resolve(runs_to, ab.REPEAT, most, CHANGE, ALPHA)
    base, other = runs_to(n)["select"]
    shipped = run_stats.compare(base, other, ALPHA, detect=False)["verdict"]
    places = ([place[("base", i)] for i in range(1, n + 1)], [place[("other", i)] for i in range(1, n + 1)])
    return shipped, with_place(base, other, places), n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=1500)
    ap.add_argument("--run-seconds", type=float, default=30.0, help="each run's DURATION (the workloads' 30 s)")
    ap.add_argument("--overhead", type=float, default=0.5, help="seconds a run adds of its own start and end")
    ap.add_argument("--seed", type=int, default=45)
    ap.add_argument("--spread", type=float, help="a host's runs' sd of log ops/s (with --change: its two lines)")
    ap.add_argument("--change", type=float, help="the host's planted change, e.g. -0.045 for 4.5%% slower")
    a = ap.parse_args()
    scenarios = SCENARIOS
    if (a.spread is None) != (a.change is None):
        ap.error("--spread and --change go together")
    if a.spread is not None:
        if not (0 < a.spread < 1 and -1 < a.change < 1 and a.change != 0):
            ap.error(f"--spread {a.spread} or --change {a.change}: not a fraction (0.012 for 1.2%), or no change")
        apart = f"runs {100 * a.spread:.1f}% apart"
        way = "slower" if a.change < 0 else "faster"
        scenarios = [(f"identical sides, {apart}", a.spread, 0.0, 0.0, "normal", ("faster", "slower"),
                      "false verdicts"),
                     (f"{abs(100 * a.change):.1f}% {way}, {apart}", a.spread, a.change, 0.0, "normal", (way,),
                      "found")]
    each = a.run_seconds + a.overhead
    print(f"ybbench ab's default rule: start {ab.REPEAT} a side, --resolve {ab.RESOLVE}, at most {ab.MAX_REPEAT}; "
          f"{a.trials} simulated abs each; alpha {ALPHA}; {a.run_seconds:g} s runs (+{a.overhead:g} s), one warm-up run")
    print(f"{'scenario':50} {'what':15} {'share':>7} {'with place':>11} {'runs a side':>12} {'p90':>4} "
          f"{'wall min':>9}")
    for name, sigma, effect, drift, kind, counts, what in scenarios:
        rng = np.random.default_rng(a.seed)
        got = [one(rng, sigma, effect, drift, kind) for _ in range(a.trials)]
        hits = sum(v in counts for v, _, _ in got)
        placed = sum(v in counts for _, v, _ in got)
        runs = np.array([n for _, _, n in got])
        wall = (2 * runs.mean() + ab.WARMUP_RUNS) * each / 60
        print(f"{name:50} {what:15} {100 * hits / a.trials:6.1f}% {100 * placed / a.trials:10.1f}% "
              f"{runs.mean():12.1f} {int(np.percentile(runs, 90)):4d} {wall:9.1f}")


if __name__ == "__main__":
    main()
