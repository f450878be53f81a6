"""`make bench`'s sysbench cases (bench/client_efficiency.py), against
ground truth: recorded sysbench outputs read by eye, and what the database
counted in short real runs (rows it holds, rows it updated). Needs
sysbench (native/install-deps.sh installs Debian's)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from bench import client_efficiency as ce

from ..support import shared

DATA = Path(__file__).parents[1] / "data" / "sysbench"


@pytest.fixture(autouse=True)
def sysbench_installed():
    shared.need_tool(shutil.which("sysbench") is not None, "sysbench not installed (native/install-deps.sh installs it)")


def test_recorded_point_select_output_is_read_into_its_numbers():
    text = (DATA / "oltp_point_select-16-clients.txt").read_text()
    ops, seconds = ce.sysbench_operations(text)
    # Read off the file: queries 59023 at 19332.22 per sec., one per event.
    assert ops == 59023
    assert seconds == pytest.approx(59023 / 19332.22, rel=1e-12)
    assert 3.0 < seconds < 3.1  # a -time=3 run; its "total time" says 3.0531 s


def test_a_multi_statement_event_counts_its_statements_not_its_transactions():
    text = (DATA / "oltp_update_non_index-2-per-event-16-clients.txt").read_text()
    ops, seconds = ce.sysbench_operations(text)
    # Read off the file: transactions 17794 (5830.45 per sec.), queries
    # 35588 (11660.90 per sec.): two UPDATEs per event, none of them BEGIN
    # or COMMIT ("other: 0").
    assert ops == 35588 == 2 * 17794
    assert seconds == pytest.approx(35588 / 11660.90, rel=1e-12)
    assert seconds == pytest.approx(17794 / 5830.45, rel=1e-3)  # the same length either way


def test_skipped_errors_or_no_queries_line_stop_the_bench():
    text = (DATA / "oltp_point_select-16-clients.txt").read_text()
    failed = text.replace("ignored errors:                      0", "ignored errors:                      3")
    assert failed != text
    with pytest.raises(RuntimeError, match="ignored errors: 3"):
        ce.sysbench_operations(failed)
    with pytest.raises(RuntimeError, match="no queries line"):
        ce.sysbench_operations(text.replace("    queries:", "    querys:"))


def rows_updated(postgres) -> int:
    return int(postgres.query(f"SELECT n_tup_upd FROM pg_stat_user_tables WHERE relname = '{ce.SYSBENCH_TABLE}'"))


def test_sysbench_statements_are_what_the_database_counted(postgres):
    # Inserts (one unprepared INSERT an event): the rows the table gained.
    ce.sysbench_prepare(postgres, "oltp_insert", table_size=1000)
    try:
        rows = int(postgres.query(f"SELECT count(*) FROM {ce.SYSBENCH_TABLE}"))
        m = ce.sysbench(postgres, "oltp_insert", 2, 1, table_size=1000)
        assert m.ops == int(postgres.query(f"SELECT count(*) FROM {ce.SYSBENCH_TABLE}")) - rows > 0
        # sysbench's own total time: its 1 s and the last events finishing, which a busy machine can hold
        # well past the second (under 10: seconds, not ms, read from its "total time:" line).
        assert m.cpu > 0 and 0.9 < m.seconds < 10

        # Two prepared UPDATEs an event, each of one existing row: rows
        # updated, from the server's table statistics (flushed by each
        # backend at its exit, after sysbench has printed: waited for).
        before = rows_updated(postgres)
        m = ce.sysbench(postgres, "oltp_update_non_index", 2, 1, table_size=1000, non_index_updates=2)
        deadline = time.monotonic() + 15
        while rows_updated(postgres) - before != m.ops and time.monotonic() < deadline:
            time.sleep(0.2)
        assert m.ops == rows_updated(postgres) - before > 0
        assert m.ops % 2 == 0
    finally:
        ce.sysbench_cleanup(postgres, "oltp_insert")


def test_a_count_the_server_does_not_match_stops_the_bench(postgres, monkeypatch):
    ce.sysbench_prepare(postgres, "oltp_point_select", table_size=1000)
    try:
        # A parser that counted events where an event is two statements.
        real = ce.sysbench_operations
        monkeypatch.setattr(ce, "sysbench_operations", lambda text: (real(text)[0] // 2, real(text)[1]))
        with pytest.raises(RuntimeError, match=r"sysbench oltp_update_non_index: \d+ queries in its output, "
                                               r"\d+ statements on sbtest1 at the server"):
            ce.sysbench(postgres, "oltp_update_non_index", 2, 1, table_size=1000, non_index_updates=2)
    finally:
        ce.sysbench_cleanup(postgres, "oltp_point_select")
