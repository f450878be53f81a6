"""The real YugabyteDB captures (tests/data) that the stand-in serves, read
here: what a chart or panel of them must add up to."""

from __future__ import annotations

import re

from .stack import CAPTURES


def capture_samples(metric: str) -> list[tuple[str, float]]:
    """(exported_instance, value) of every `metric` sample in the tserver capture."""
    out = []
    for line in (CAPTURES / "tserver.txt").read_text().splitlines():
        m = re.match(rf"^{metric}\{{(.*)\}} (\S+)", line)
        if m:
            out.append((re.search(r'exported_instance="([^"]*)"', m.group(1)).group(1), float(m.group(2))))
    assert out, f"{metric} is not in the capture"
    return out


def capture_per_tserver(metric: str) -> dict[str, float]:
    """`metric` summed per exported_instance, read from the tserver capture."""
    out: dict[str, float] = {}
    for inst, value in capture_samples(metric):
        out[inst] = out.get(inst, 0.0) + value
    return out


def capture_series_per_tserver(metric: str) -> dict[str, int]:
    """How many `metric` series each exported_instance has in the tserver capture."""
    out: dict[str, int] = {}
    for inst, _ in capture_samples(metric):
        out[inst] = out.get(inst, 0) + 1
    return out
