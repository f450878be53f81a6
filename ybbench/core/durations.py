"""k6 durations (30s, 5m, 1m30s, 500ms) in seconds: read by run (DURATION),
its events, sweep steps and reproduce phases."""

from __future__ import annotations

import re

from ybbench.core.errors import UserError

DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$")
UNIT_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


def seconds(opt: str, text: str) -> float:
    if not DURATION.match(text or ""):
        raise UserError(f"{opt} {text!r}: expected a duration such as 30s, 5m or 1m30s")
    s = sum(float(n) * UNIT_S[u] for n, _, u in re.findall(r"([0-9]+(\.[0-9]+)?)(ms|s|m|h)", text))
    if s <= 0:
        raise UserError(f"{opt} {text!r}: must be longer than 0")
    return s
