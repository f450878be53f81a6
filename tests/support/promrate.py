"""Prometheus's rate() written out, for expected values made from raw
samples (or from the kernel at the samples' times) rather than by asking
Prometheus the same query again.

As promql/functions.go's extrapolatedRate (Prometheus 3.16, the version
native/build.sh builds; its start-timestamp branch is left out, as it needs
created timestamps, which the stack does not ingest): the samples in
(t - range, t] (left-open, in ms),
the increase from the first to the last (counter resets added back),
extrapolated to each edge of the range when the first or last sample lies
within 1.1 average sample spacings of it and by half a spacing otherwise,
never to before the counter's zero, divided by the range.
"""

from __future__ import annotations

from dataclasses import dataclass


def _ms(x: float) -> int:
    return round(x * 1000)


@dataclass(frozen=True)
class Window:
    """The samples one rate() at t reads, and how it scales their increase."""
    samples: list[tuple[float, float]]
    range_s: float
    scale: float  # rate = increase * scale

    @property
    def first(self) -> float:
        return self.samples[0][0]

    @property
    def last(self) -> float:
        return self.samples[-1][0]

    @property
    def increase(self) -> float:
        pts = self.samples
        resets = sum(a for (_, a), (_, b) in zip(pts, pts[1:]) if b < a)
        return pts[-1][1] - pts[0][1] + resets

    @property
    def rate(self) -> float:
        return self.increase * self.scale


def window(samples: list[tuple[float, float]], t: float, range_s: float) -> Window | None:
    """rate(counter[range_s]) at t from the counter's raw (time, value)
    samples; None where Prometheus returns no value (fewer than 2 samples)."""
    end, start = _ms(t), _ms(t) - _ms(range_s)
    pts = sorted((ts, v) for ts, v in samples if start < _ms(ts) <= end)
    if len(pts) < 2:
        return None
    w = Window(pts, range_s, 0.0)
    first, last = _ms(pts[0][0]), _ms(pts[-1][0])
    sampled = (last - first) / 1000
    spacing = sampled / (len(pts) - 1)
    to_start, to_end = (first - start) / 1000, (end - last) / 1000
    if to_start >= 1.1 * spacing:
        to_start = spacing / 2
    if w.increase > 0 and pts[0][1] >= 0:
        to_start = min(to_start, sampled * pts[0][1] / w.increase)
    if to_end >= 1.1 * spacing:
        to_end = spacing / 2
    return Window(pts, range_s, (sampled + to_start + to_end) / sampled / range_s)
