"""What the tests read from ../shared (the project's seeds and YugabyteDB's
Grafana dashboard 12620), which a user's clone may lack: a test that needs
it skips, naming the path, unless YBBENCH_REQUIRE_SHARED=1 (set by .ci/run
wherever ../shared exists), which makes that skip a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .stack import SHARED

REQUIRE = "YBBENCH_REQUIRE_SHARED"


def need(path: Path, what: str) -> Path:
    """`path`, inside SHARED; a skip (or, required, a failure) if it is absent."""
    if path.exists():
        return path
    message = f"{what}: {path} not here (a clone without {SHARED})"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(f"{message}, and {REQUIRE}=1 requires it", pytrace=False)
    pytest.skip(message)


def mark(path: Path, what: str) -> pytest.MarkDecorator:
    """need() at collection, for a test whose fixtures are costly to start
    only to skip: a skip mark when `path` is absent and not required (when
    required, the test runs and its need() fails)."""
    absent = not path.exists() and os.environ.get(REQUIRE) != "1"
    return pytest.mark.skipif(absent, reason=f"{what}: {path} not here (a clone without {SHARED})")
