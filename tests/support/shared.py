"""What the tests read from ../shared (the project's seeds and YugabyteDB's
Grafana dashboard 12620), which a user's clone may lack: a test that needs
it skips, naming the path, unless YBBENCH_REQUIRE_SHARED=1 (set by .ci/run
wherever ../shared exists), which makes that skip a failure.

Likewise the tools a few tests need beyond the stack (sysbench, root and
unshare(1), k6-operator's module in the Go module cache, Apache Otava's
venv): a machine without them skips those tests, saying what is missing,
unless YBBENCH_REQUIRE_TOOLS=1 (set by .ci/run, where native/install-deps.sh
and native/build.sh put them), which makes the skip a failure."""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

from ybbench.analysis import otava

from .stack import SHARED

REQUIRE = "YBBENCH_REQUIRE_SHARED"
REQUIRE_TOOLS = "YBBENCH_REQUIRE_TOOLS"


def _skip_or_fail(message: str, switch: str) -> NoReturn:
    if os.environ.get(switch) == "1":
        pytest.fail(f"{message}, and {switch}=1 requires it", pytrace=False)
    pytest.skip(message)


def need(path: Path, what: str) -> Path:
    """`path`, inside SHARED; a skip (or, required, a failure) if it is absent."""
    if path.exists():
        return path
    _skip_or_fail(f"{what}: {path} not here (a clone without {SHARED})", REQUIRE)


def mark(path: Path, what: str) -> pytest.MarkDecorator:
    """need() at collection, for a test whose fixtures are costly to start
    only to skip: a skip mark when `path` is absent and not required (when
    required, the test runs and its need() fails)."""
    absent = not path.exists() and os.environ.get(REQUIRE) != "1"
    return pytest.mark.skipif(absent, reason=f"{what}: {path} not here (a clone without {SHARED})")


def need_tool(present: bool, missing: str) -> None:
    """Nothing if the tool is here; else a skip saying what is `missing`
    (or, under YBBENCH_REQUIRE_TOOLS=1, a failure)."""
    if not present:
        _skip_or_fail(missing, REQUIRE_TOOLS)


def need_otava() -> None:
    """need_tool() for Apache Otava's program, which `ybbench history` runs.
    Call it from a fixture, not at import: pytest refuses a module-level
    skip or failure as a collection error that stops the whole run. A test
    module whose tests all need it holds an autouse fixture of session
    scope, set up before the session's other fixtures (PostgreSQL), so a
    skip starts nothing."""
    need_tool(otava.program().exists(),
              f"Apache Otava is not installed at {otava.program()} (native/install-deps.sh installs it)")
