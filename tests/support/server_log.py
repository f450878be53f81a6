"""Statements stuck behind a table lock, and the server's own count of the
ones it cancelled (its log): shared by the statement-timeout and inner-loop
tests."""

from __future__ import annotations

import re
import threading

from .stack import wait_until
from .workloads import run_ok

CANCELLED = "ERROR:  canceling statement due to statement timeout"


def cancelled_by_server(pg, table: str, since: int) -> int:
    """Statements on `table` the server cancelled for statement_timeout,
    from its log past byte `since`."""
    lines = (pg.log_dir / "postgres.log").read_bytes()[since:].decode(errors="replace").splitlines()
    return sum(1 for line, after in zip(lines, lines[1:])
               if line.endswith(CANCELLED) and "STATEMENT:" in after and re.search(rf"\b{table}\b", after))


def log_size(pg) -> int:
    return (pg.log_dir / "postgres.log").stat().st_size


def hold_lock(pg, table: str, seconds: float) -> threading.Thread:
    """Another session holds ACCESS EXCLUSIVE on `table` for `seconds`;
    returns once the lock is granted."""
    t = threading.Thread(target=pg.query, args=(
        f"BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep({seconds}); COMMIT;",))
    t.start()
    wait_until(lambda: pg.query(f"SELECT count(*) FROM pg_locks WHERE relation = '{table}'::regclass "
                                "AND mode = 'AccessExclusiveLock' AND granted") == "1", f"the lock on {table}", 10)
    return t


def inserts_under_lock(pg, tmp_path, table: str, **knobs):
    """sql-inserts into `table` (2 VUs); once it writes, the table is locked
    for 2 s. Returns the run, whatever its exit code."""
    done = {}
    k6 = threading.Thread(target=lambda: done.update(run=run_ok(
        "sql-inserts", pg, tmp_path, TABLE=table, VUS=2, _ok=False, **knobs)))
    before = int(pg.query(f"SELECT count(*) FROM {table}"))
    k6.start()
    wait_until(lambda: int(pg.query(f"SELECT count(*) FROM {table}")) > before, "the load's first rows", 30)
    hold_lock(pg, table, 2).join()
    k6.join()
    return done["run"]
