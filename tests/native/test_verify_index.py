"""`ybbench verify` after sql-secondary-index: the index agrees with the
table. Faults are planted in PostgreSQL's own index, with the catalog's
flags for an index being dropped (indislive) or built (indisready), which
the planner and the write path obey."""

from __future__ import annotations

import uuid

from ..support.stack import wait_until
from ..support.workloads import run_ok
from ..support.ybbench_cli import verify


def _hidden(postgres, table: str, flag: str, sql: str) -> None:
    """Runs `sql` (a new connection: a fresh relation cache) while the index
    has `flag` false, then sets it back."""
    postgres.query(f"UPDATE pg_index SET {flag} = false WHERE indexrelid = '{table}_index'::regclass")
    try:
        postgres.query(sql)
    finally:
        postgres.query(f"UPDATE pg_index SET {flag} = true WHERE indexrelid = '{table}_index'::regclass")


def test_the_index_agrees_with_the_table_and_planted_faults_are_caught(postgres, tmp_path):
    table, prefix = f"si_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    # Half-empty pages, so that an update can stay on its page (HOT).
    postgres.query(f"CREATE TABLE {table} (k text PRIMARY KEY, v text) WITH (fillfactor = 50)")
    d, run = run_ok("sql-secondary-index", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, VUS=2, DURATION="3s")
    assert d["errors"] == 0
    results, tid = run.folder.parent, run.folder.name
    rows = int(postgres.query(f"SELECT count(*) FROM {table}"))
    assert rows == d["rows_written"] > 100
    p, clean = verify(results, tid, postgres, "--chunk", "50")
    assert p.returncode == 0, p.stdout + p.stderr
    assert clean["rows"]["count"] == clean["entries"]["count"] == rows

    a, b = postgres.query(f"SELECT k FROM {table} ORDER BY k LIMIT 2").splitlines()
    na = a.split(":")[1]
    # An orphan entry: with the index hidden, a new value for a is a HOT
    # update (nothing indexed changed, as far as PostgreSQL knows), so the
    # index keeps val:<na>, leading to the row that now holds 'val:moved'.
    hot = int(postgres.query(f"SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = '{table}'"))
    _hidden(postgres, table, "indislive", f"UPDATE {table} SET v = 'val:moved' WHERE k = '{a}'")
    # A row missing from the index: b deleted and inserted again, same
    # values, while the index takes no new entries.
    _hidden(postgres, table, "indisready", f"DELETE FROM {table} WHERE k = '{b}'; "
                                           f"INSERT INTO {table} VALUES ('{b}', 'val:{b.split(':')[1]}')")
    wait_until(lambda: int(postgres.query(f"SELECT n_tup_hot_upd FROM pg_stat_user_tables WHERE relname = '{table}'"))
               == hot + 1, "the update to be counted as HOT", timeout=15)
    # What the planted index does, seen through it:
    found = "SET enable_seqscan = off; SET enable_bitmapscan = off; SELECT k, v FROM {} WHERE v = '{}'"
    assert postgres.query(found.format(table, f"val:{na}")) == f"{a}|val:moved"
    assert postgres.query(found.format(table, "val:moved")) == ""
    assert postgres.query(found.format(table, f"val:{b.split(':')[1]}")) == ""

    p, r = verify(results, tid, postgres, "--chunk", "50")
    assert p.returncode == 1, p.stdout + p.stderr
    assert r["orphan_entries"] == {"count": 1, "examples": [f"{a} (entry 'val:{na}')"]}
    assert r["missing_from_index"]["count"] == 2 and set(r["missing_from_index"]["examples"]) == {a, b}
    assert r["not_found_by_value"]["count"] == 2 and set(r["not_found_by_value"]["examples"]) == {a, b}
    assert r["wrong_value"] == {"count": 1, "examples": [a]}
    assert r["other_row_by_value"]["count"] == 0
    assert r["rows"]["count"] == rows and r["entries"]["count"] == rows - 1
    assert "FAILED" in p.stdout and b in p.stdout


def test_a_table_without_its_index_is_refused(postgres, tmp_path):
    table = f"si_{uuid.uuid4().hex[:8]}"
    d, run = run_ok("sql-secondary-index", postgres, tmp_path, TABLE=table, VUS=1, DURATION="1s")
    postgres.query(f"DROP INDEX {table}_index")
    p, r = verify(run.folder.parent, run.folder.name, postgres)
    assert p.returncode == 2 and f"no index '{table}_index'" in p.stderr and r is None
