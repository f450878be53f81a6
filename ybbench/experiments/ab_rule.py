"""`ybbench ab`'s stopping rule, in one function that the CLI runs on real
runs and the tests and bench/ab_rule_simulation.py run on simulated ones:
start with `start` runs a side; then, as long as fewer than `most`, measure
every op's spread blind to the sides (run_stats.blind_spread), work out the
runs a side that find `change` 8 times in 10 at the largest of them
(run_stats.runs_a_side), and stop if the runs made are enough, else go on
to that many (at most `most`) and look again. The verdict is then taken
once, on all the runs (compare)."""

from __future__ import annotations

import math
from collections.abc import Callable

from ybbench.core import run_stats

# op -> (the base's values, the other's), e.g. ops/s of each run
Values = dict[str, tuple[list[float], list[float]]]


class NoSpread(ValueError):
    """No op has two runs a side: nothing to measure the spread on."""


def needed(values: Values, change: float, alpha: float) -> tuple[int | None, str]:
    """The runs a side that find `change` with run_stats.POWER at the ops'
    largest blind spread (None: more than 1000), and a line that says why;
    NoSpread when no op has two runs a side to measure."""
    worst: tuple[float, str] = (-1.0, "")
    for op, (base, other) in values.items():
        sd = run_stats.blind_spread(base, other)
        if sd is not None:
            worst = max(worst, (sd, op))
    sd, op = worst
    if sd < 0:
        raise NoSpread("no op with values in two runs a side to measure their spread")
    n = run_stats.runs_a_side(change, sd, alpha)
    return n, (f"{op}'s runs are {100 * math.expm1(sd):.1f}% apart (one sd, both sides): a change of "
               f"{100 * change:g}% is found {round(10 * run_stats.POWER)} times in 10 with {n or 'over 1000'} runs "
               "a side")


def resolve(runs_to: Callable[[int], Values | None], start: int, most: int, change: float, alpha: float,
            say: Callable[[str], None] = lambda _: None) -> int:
    """The rule: runs_to(n) makes the runs up to n a side (the first call
    `start`) and gives their values, or None to stop (a run failed). Returns
    the runs a side it stopped at."""
    n = start
    values = runs_to(n)
    while values is not None and n < most:
        need, why = needed(values, change, alpha)
        if need is not None and need <= n:
            say(f"{why}: enough")
            break
        n = min(need or most, most)
        say(f"{why}: going on to {n} a side (--resolve, at most --max-repeat {most})")
        values = runs_to(n)
    return n
