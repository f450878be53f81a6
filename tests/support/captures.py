"""The real YugabyteDB captures (tests/data) that the stand-in serves, read
here: what a chart or panel of them must add up to."""

from __future__ import annotations

import re

from .stack import CAPTURES


def capture_samples(metric: str, capture: str = "tserver.txt") -> list[tuple[str, float]]:
    """(exported_instance, value) of every `metric` sample in a capture (the tserver's by default)."""
    out = []
    for line in (CAPTURES / capture).read_text().splitlines():
        m = re.match(rf"^{metric}\{{(.*)\}} (\S+)", line)
        if m:
            out.append((re.search(r'exported_instance="([^"]*)"', m.group(1)).group(1), float(m.group(2))))
    assert out, f"{metric} is not in {capture}"
    return out


def capture_per_tserver(metric: str) -> dict[str, float]:
    """`metric` summed per exported_instance, read from the tserver capture."""
    out: dict[str, float] = {}
    for inst, value in capture_samples(metric):
        out[inst] = out.get(inst, 0.0) + value
    return out


def capture_series_per_tserver(metric: str, capture: str = "tserver.txt") -> dict[str, int]:
    """How many `metric` series each exported_instance has in a capture (the tserver's by default)."""
    out: dict[str, int] = {}
    for inst, _ in capture_samples(metric, capture):
        out[inst] = out.get(inst, 0) + 1
    return out


def capture_names() -> dict[str, tuple[str, ...]]:
    """Every metric name the four captures serve, with the captures it is in."""
    out: dict[str, tuple[str, ...]] = {}
    for path in sorted(CAPTURES.glob("*.txt")):
        for name in set(re.findall(r"^([A-Za-z_:][A-Za-z0-9_:]*)[{ ]", path.read_text(), re.M)):
            out[name] = (*out.get(name, ()), path.name)
    return out
