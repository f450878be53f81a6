"""k6 durations (30s, 5m, 1m30s, 500ms) in seconds: read by run (DURATION),
its events, sweep steps and reproduce phases."""

from __future__ import annotations

import re

from ybbench.core.errors import UserError

DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")
UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def seconds(opt: str, text: str, zero: bool = False) -> float:
    """zero: 0 (or "0") is a duration too (a warm-up of none)."""
    if zero and text == "0":
        return 0.0
    if not DURATION.match(text or ""):
        raise UserError(f"{opt} {text!r}: expected a duration such as 30s, 5m or 1m30s")
    s = sum(float(n) * UNIT_S[u] for n, _, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ms|s|m|h)", text))
    if s <= 0 and not zero:
        raise UserError(f"{opt} {text!r}: must be longer than 0")
    return s
