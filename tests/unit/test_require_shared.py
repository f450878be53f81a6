"""YBBENCH_REQUIRE_SHARED=1 turns the skips of tests that need ../shared
into failures, and .ci/run sets it exactly where ../shared exists;
YBBENCH_REQUIRE_TOOLS=1 does the same for the tools a few tests need
(sysbench here), and .ci/run always sets it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from ..support.stack import REPO

QUOTES = "tests/native/test_reproduce.py::test_every_quote_is_the_seeds_text_verbatim"


def pytest_run(tmp_path, **env) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("YBBENCH_SHARED", "YBBENCH_REQUIRE_SHARED")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", QUOTES],
                          cwd=REPO, env={**clean, **env}, capture_output=True, text=True, timeout=300)


def test_a_missing_shared_folder_skips_unless_required(tmp_path):
    empty = tmp_path / "no-shared"
    empty.mkdir()
    skipped = pytest_run(tmp_path, YBBENCH_SHARED=str(empty))
    assert skipped.returncode == 0 and " skipped" in skipped.stdout and "passed" not in skipped.stdout, skipped.stdout
    assert f"{empty}/seeds/" in skipped.stdout  # the skip names the path it looked for
    required = pytest_run(tmp_path, YBBENCH_SHARED=str(empty), YBBENCH_REQUIRE_SHARED="1")
    assert required.returncode == 1 and " failed" in required.stdout and "skipped" not in required.stdout
    assert "YBBENCH_REQUIRE_SHARED=1 requires it" in required.stdout, required.stdout


def test_ci_requires_shared_where_it_exists(tmp_path):
    """.ci/run copied into a bare clone, with `make` a stub that records its
    arguments and the switch."""
    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    shutil.copy2(REPO / ".ci" / "run", repo / ".ci" / "run")
    stub = tmp_path / "bin" / "make"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\necho "$* ${{YBBENCH_REQUIRE_SHARED:-unset}} ${{YBBENCH_REQUIRE_TOOLS:-unset}}" '
                    f'> {tmp_path}/made\n')
    stub.chmod(0o755)
    env = {"PATH": f"{stub.parent}:/usr/bin:/bin"}

    def ci() -> str:
        subprocess.run([str(repo / ".ci" / "run")], env=env, check=True, timeout=60)
        return (tmp_path / "made").read_text().strip()

    # Without ../shared its skips stay skips; CI's tools are required either way.
    assert ci() == "test unset 1"
    (tmp_path / "shared").mkdir()
    assert ci() == "test 1 1"


SYSBENCH = "tests/native/test_bench_sysbench.py::test_recorded_point_select_output_is_read_into_its_numbers"


def test_a_missing_tool_skips_unless_required(tmp_path):
    """sysbench out of PATH: the test that needs it skips, saying so, and
    under YBBENCH_REQUIRE_TOOLS=1 fails."""
    clean = {k: v for k, v in os.environ.items() if k != "YBBENCH_REQUIRE_TOOLS"}
    clean["PATH"] = str(tmp_path)  # no sysbench (the tests run python as sys.executable)

    def run(**env) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", SYSBENCH],
                              cwd=REPO, env={**clean, **env}, capture_output=True, text=True, timeout=300)

    skipped = run()
    assert skipped.returncode == 0 and " skipped" in skipped.stdout and "passed" not in skipped.stdout, skipped.stdout
    assert "sysbench not installed" in skipped.stdout
    required = run(YBBENCH_REQUIRE_TOOLS="1")
    # It fails in the test's fixture: pytest says "error".
    assert required.returncode == 1 and " error" in required.stdout and "skipped" not in required.stdout
    assert "YBBENCH_REQUIRE_TOOLS=1 requires it" in required.stdout, required.stdout
