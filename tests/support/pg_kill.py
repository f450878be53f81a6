"""A PostgreSQL of a test's own that the test kills mid-run and restarts:
`ybbench verify` then shows that no acknowledged write was lost."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from ybbench.local.pglocal import Postgres

from .kernel import stat_fields
from .stack import wait_until


@pytest.fixture
def killable(tmp_path):
    """A PostgreSQL of this test's own, durable (synchronous_commit on), so
    that killing it loses no acknowledged commit."""
    pg = Postgres.start(durable=True)
    yield pg
    pg.stop()


def kill(pg: Postgres) -> None:
    """SIGKILL the postmaster and every backend, and wait until all are gone
    (the next server refuses to start while one still holds the old shared
    memory)."""
    pid = int((pg.datadir / "postmaster.pid").read_text().split()[0])
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    pids = [pid, *map(int, children)]
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass  # a backend that ended between pgrep and here: already gone

    def gone(p: int) -> bool:
        try:
            return stat_fields(p)[0] == "Z"  # a zombie holds nothing
        except FileNotFoundError:
            return True

    wait_until(lambda: all(gone(p) for p in pids), "the killed server's processes to go")


def restart(pg: Postgres) -> None:
    for attempt in range(5):
        try:
            return pg.serve()
        except RuntimeError:
            if attempt == 4:
                raise
            time.sleep(1)
