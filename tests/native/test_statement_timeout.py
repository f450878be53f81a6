"""DB_STATEMENT_TIMEOUT_MS: the load's sessions start with the server's
statement_timeout, so a statement stuck behind a fault (here a table lock
another session holds) fails as 57014 and is counted under SQLSTATE class
57, instead of waiting the fault out; setup keeps the server's (none).

The expected counts come from the server: each statement it cancelled is an
"ERROR:  canceling statement due to statement timeout" line in its log,
followed by the statement, which names the test's table."""

from __future__ import annotations

import re
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest

from ..support.stack import wait_until
from ..support.server_log import cancelled_by_server, inserts_under_lock, log_size
from ..support.workloads import count, run_ok

# Quiet (tests/lanes.sh): a 2 s lock gives the cancellations counted only with no neighbour but idle-priority builds.
pytestmark = pytest.mark.quiet


@pytest.mark.parametrize("driver", ["postgres", "pgx", "pgconn"])
def test_a_statement_stuck_past_the_timeout_fails_as_class_57(postgres, tmp_path, driver):
    table = f"stmt_{uuid.uuid4().hex[:8]}"
    run_ok("sql-inserts", postgres, tmp_path, TABLE=table, VUS=1, DURATION="1s", DB_DRIVER=driver)  # the table
    before, since = int(postgres.query(f"SELECT count(*) FROM {table}")), log_size(postgres)
    # While the table is locked, each VU's insert waits 300 ms, is
    # cancelled, and the next one waits again.
    run = inserts_under_lock(postgres, tmp_path, table, DURATION="5s", DB_DRIVER=driver, DB_STATEMENT_TIMEOUT_MS=300)
    assert run.code == 99, run.output  # the error threshold marks the run, as any failed statement does
    digest = run.digest()
    server = cancelled_by_server(postgres, table, since)
    # Two VUs, each timed out again and again in the 2 s lock: 6 each at 300 ms, at least 2 each
    # on a host that delays every next statement by up to 0.7 s (without the timeout: none).
    assert server >= 2 * 2, server
    assert digest["errors_by_class"] == {"57": server}, (digest["errors_by_class"], server)
    assert digest["errors"] == server
    # A cancelled insert wrote nothing: the rows are the acknowledged ones.
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == before + digest["rows_written"]
    assert count(digest, "insert") == digest["rows_written"] + server


def seconds(text: str) -> float:
    """A k6 duration as its progress lines print it: 2s, 0.5s, 01m03.5s, 1h02m00s."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:([\d.]+)s)?", text)
    assert m and text, text
    h, mi, sec = (float(x) if x else 0.0 for x in m.groups())
    return 3600 * h + 60 * mi + sec


def setup_seconds(k6_log: Path) -> float:
    """setup()'s duration by k6's own clocks: its first progress report once
    the scenario runs gives the test's time (started just before setup) and
    the scenario's (started just after); the difference is setup's, to the
    0.1 s they print."""
    lines = k6_log.read_text().splitlines()
    for line, nxt in zip(lines, lines[1:]):
        test = re.match(r"running \(([\dhms.]+)\)", line)
        scenario = re.search(r"\bVUs\s+([\dhms.]+)/[\dhms.]+$", nxt)
        if test and scenario:
            return seconds(test[1]) - seconds(scenario[1])
    raise AssertionError(f"no progress line with the scenario's time in {k6_log}")


def test_without_the_knob_a_stuck_statement_waits_and_setup_never_times_out(postgres, tmp_path):
    """The control: the same lock, no DB_STATEMENT_TIMEOUT_MS, and every
    insert waits it out. And a setup that reads the locked table (sql-selects
    checks its last key) waits too, with the knob set: only VUs 1, 2, ...
    carry the timeout. That setup met the lock is shown twice: the server
    lists its wait, and k6's log says setup lasted past the lock's
    remaining time (more than 3 timeouts)."""
    table = f"stmt_{uuid.uuid4().hex[:8]}"
    wrote, _ = run_ok("sql-inserts", postgres, tmp_path, TABLE=table, VUS=1, DURATION="1s", KEY_PREFIX=table)
    since = log_size(postgres)
    done = {}
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user=postgres.user, password=postgres.password,
                         dbname=postgres.database) as lock:
        lock.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")  # held until commit
        k6 = threading.Thread(target=lambda: done.update(run=run_ok(
            "sql-selects", postgres, tmp_path, TABLE=table, VUS=2, DURATION="2s", KEY_PREFIX=table,
            MAX_WRITTEN_KEY=wrote["rows_written"], DB_STATEMENT_TIMEOUT_MS=300, _ok=False)))
        k6.start()
        # The server shows a session waiting for the lock: setup's read (no VU runs before setup ends).
        wait_until(lambda: postgres.query(f"SELECT count(*) FROM pg_locks WHERE relation = '{table}'::regclass "
                                          "AND NOT granted") != "0", "a session waiting for the lock", 60)
        seen = time.monotonic()
        time.sleep(1)  # the lock stays 1 s more: over three times the load's 300 ms timeout
        remaining = time.monotonic() - seen
        lock.commit()
    k6.join()
    run = done["run"]
    # k6's own clock: setup lasted at least from that wait until the lock went (to the log's 0.1 s).
    took = setup_seconds(run.folder / "k6.log")
    assert took > remaining - 0.1, (took, remaining)
    assert run.code == 0, run.output
    reads = run.digest()
    assert reads["errors"] == 0 and count(reads, "select") > 0, reads

    run = inserts_under_lock(postgres, tmp_path, table, DURATION="4s")
    assert run.code == 0, run.output
    inserts = run.digest()
    assert inserts["errors"] == 0, inserts
    assert inserts["ops"]["insert"]["latency_ms"]["max"] > 1500, inserts["ops"]["insert"]
    assert cancelled_by_server(postgres, table, since) == 0
