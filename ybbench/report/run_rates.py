"""Rates that measure the run they name.

A rate chart's point at t is `rate(counter[range])`: the samples in
(t - range, t]. Near a run's start that window holds scrapes from before the
run, so an idle machine's time is mixed into the first points, and a run
shorter than the window is mostly idle time (issue 26: a 5 s demo on a
saturated 2-core host read 0.18 cores). So, from the raw samples at the
run's edges, for every series:

- t0, the last scrape at or before the start, and t1, the first after the
  end: the whole-run figure is (v(t1) - v(t0)) / (t1 - t0), labelled with
  that interval, which brackets the run;
- t0_in and t1_in, the first scrape after the start and the last at or
  before the end: with two or more scrapes inside, the in-run figure
  covers only the run's own time;
- a chart point at t is inside the run when t - range >= t0 (its window
  holds no scrape from before the run); the others are partial.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

# How far before the start and after the end to look for the bracketing
# scrapes: a few scrape intervals of any sane configuration.
LOOKBACK_S = 60.0


@dataclass(frozen=True)
class Edges:
    """One raw series' samples around the run: (time, value) or None."""
    before: tuple[float, float] | None  # last at or before the start
    first_in: tuple[float, float] | None  # first after the start, at or before the end
    last_in: tuple[float, float] | None  # last at or before the end, after the start
    after: tuple[float, float] | None  # first after the end
    interval: float | None  # median spacing of the samples seen


def _samples(prom, selector: str, at: float, span: float) -> list[tuple[dict, list[tuple[float, float]]]]:
    """Raw samples of selector in (at - span, at]."""
    out = []
    for s in prom.instant(f"{selector}[{int(span * 1000)}ms]", at):
        pts = [(float(t), float(v)) for t, v in s["values"]]
        out.append((s["metric"], pts))
    return out


def _key(metric: dict) -> tuple:
    return tuple(sorted(metric.items()))


def edges(prom, selector: str, start: float, end: float, wait: bool = True) -> dict[tuple, tuple[dict, Edges]]:
    """Edges of every series the selector matches, keyed by its labels.
    When the run has just ended and a series has no scrape after the end
    yet, waits (up to two of its intervals) for it, unless wait is False."""
    head = _samples(prom, selector, start + LOOKBACK_S, 2 * LOOKBACK_S)
    tail = _samples(prom, selector, end + LOOKBACK_S, 2 * LOOKBACK_S)
    if wait and tail:
        spacing = [b[0] - a[0] for _, pts in tail for a, b in zip(pts, pts[1:])]
        interval = statistics.median(spacing) if spacing else 15.0
        deadline = end + 2 * interval + 1
        while any(not any(t > end for t, _ in pts) for _, pts in tail) and time.time() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.time())))
            tail = _samples(prom, selector, end + LOOKBACK_S, 2 * LOOKBACK_S)
    merged: dict[tuple, tuple[dict, dict[float, float]]] = {}
    for metric, pts in head + tail:
        merged.setdefault(_key(metric), (metric, {}))[1].update(pts)
    out = {}
    for key, (metric, by_time) in merged.items():
        pts = sorted(by_time.items())
        before = [p for p in pts if p[0] <= start]
        inside = [p for p in pts if start < p[0] <= end]
        after = [p for p in pts if p[0] > end]
        spacing = [b[0] - a[0] for a, b in zip(pts, pts[1:])]
        out[key] = (metric, Edges(before[-1] if before else None, inside[0] if inside else None,
                                  inside[-1] if inside else None, after[0] if after else None,
                                  statistics.median(spacing) if spacing else None))
    return out


@dataclass(frozen=True)
class Figure:
    """A rate over an interval, the sum over a group of series."""
    value: float
    t0: float
    t1: float

    def as_dict(self) -> dict:
        return {"value": self.value, "t0": self.t0, "t1": self.t1, "interval_s": self.t1 - self.t0}


def _rate(a: tuple[float, float] | None, b: tuple[float, float] | None) -> float | None:
    if a is None or b is None or b[0] <= a[0] or b[1] < a[1]:
        return None  # missing, one scrape, or a counter reset in between
    return (b[1] - a[1]) / (b[0] - a[0])


def _sum(pairs: list[tuple[tuple | None, tuple | None]]) -> Figure | None:
    rates = [_rate(a, b) for a, b in pairs]
    if not rates or any(r is None for r in rates):
        return None
    return Figure(math.fsum(rates), min(a[0] for a, _ in pairs), max(b[0] for _, b in pairs))


@dataclass
class Group:
    """The series summed into one chart line, and what they say about the run."""
    members: list[Edges]

    @property
    def whole_run(self) -> Figure | None:
        return _sum([(e.before, e.after) for e in self.members])

    @property
    def in_run(self) -> Figure | None:
        return _sum([(e.first_in, e.last_in) for e in self.members])

    @property
    def inside_from(self) -> float | None:
        """A point at t is inside the run when t - range >= this (the last
        scrape before the start); None when a member has no such scrape."""
        starts = [e.before[0] for e in self.members if e.before]
        return max(starts) if len(starts) == len(self.members) else None

    @property
    def scrapes_inside(self) -> int:
        """Scrapes inside the run, the fewest of any member."""
        counts = []
        for e in self.members:
            if e.first_in is None:
                counts.append(0)
            elif e.interval:
                counts.append(1 + round((e.last_in[0] - e.first_in[0]) / e.interval))
            else:
                counts.append(1)
        return min(counts, default=0)

    @property
    def interval(self) -> float | None:
        got = [e.interval for e in self.members if e.interval]
        return max(got) if got else None


def groups(found: dict[tuple, tuple[dict, Edges]], name) -> dict[str, Group]:
    """Series grouped by name(metric), as `sum by (...)` groups them."""
    out: dict[str, Group] = {}
    for metric, e in found.values():
        out.setdefault(name(metric), Group([])).members.append(e)
    return out


def rate_range(interval: float | None, step: float) -> str:
    """The range of a rate chart's windows: two scrape intervals and a half
    (so that every window holds two scrapes) and two steps (so that no
    scrape falls between two points' windows)."""
    return f"{math.ceil(max(2.5 * (interval or 5.0), 2 * step))}s"


def mark_partial(series: dict, inside_from: float | None, range_s: float) -> dict:
    """Adds "partial": for each point, whether its window reaches back to a
    scrape from before the run."""
    series["partial"] = [inside_from is None or t - range_s < inside_from for t in series["t"]]
    return series
