"""The history store: every finished run's headline figures, kept across runs
for `ybbench history` (analysis/history.py).

Where: an SQLite file, <results>/history.sqlite by default, or a PostgreSQL
database given by URL (--history postgresql://user@host/db, or the
YBBENCH_HISTORY variable); libpq finds its password in PGPASSFILE or
~/.pgpass, never on a command line.

Four tables: ybbench_history_meta (format_version), ybbench_history_runs
(one row per run, its testid the key), ybbench_history_ops (one row per
run and operation) and ybbench_history_change_points (what the last
`ybbench history` found in each series, for Grafana's History dashboard).
A run is recorded once: recording it again (an import over runs already
there) changes nothing. A series' change points are replaced whole each
time it is analysed. The change points table came after format 1's first
stores: opening a format-1 store without it creates it (nothing else in
the format changed, so the version stays 1).

Two processes recording at once both land: SQLite in WAL mode with a busy
timeout, each record one transaction; PostgreSQL's own transactions, and an
advisory lock around the schema's creation. A store that is not ours (a
file that is not SQLite, a database whose history tables lack our meta
row, a newer format) is refused naming it, and nothing is written to it.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import time
from pathlib import Path

from ybbench.core.errors import UserError

FORMAT_VERSION = 1
ENV = "YBBENCH_HISTORY"
FILE_NAME = "history.sqlite"
SQLITE_HEADER = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 60
ADVISORY_LOCK = 0x7962_6869  # "ybhi": one creator of the PostgreSQL schema at a time

META, RUNS, OPS = "ybbench_history_meta", "ybbench_history_runs", "ybbench_history_ops"
CHANGES = "ybbench_history_change_points"
# JSON columns hold objects as text in both stores (Grafana casts them with ::jsonb).
RUN_COLUMNS = ("testid", "workload", "started_unix_s", "finished_unix_s", "duration_s", "k6_exit_code", "errors",
               "errors_by_class", "knobs", "labels", "versions", "hosts", "cpu", "series_key")
OP_COLUMNS = ("testid", "op", "ops_per_s", "count", "p50_ms", "p95_ms", "p99_ms", "errors")
JSON_COLUMNS = {"errors_by_class", "knobs", "labels", "versions", "hosts", "cpu"}
# One row per change point: `series` names what was analysed (a series_key,
# or "select:" and the --select given); time_unix_s is the start of the
# first run after the change (testid); regression is 1 or 0.
CHANGE_COLUMNS = ("series", "workload", "metric", "op", "field", "testid", "time_unix_s", "change_percent",
                  "pvalue", "mean_before", "mean_after", "regression", "order_by", "analysed_unix_s")
CHANGES_TABLE = f"""CREATE TABLE IF NOT EXISTS {CHANGES} (
        series TEXT NOT NULL, workload TEXT NOT NULL, metric TEXT NOT NULL, op TEXT NOT NULL, field TEXT NOT NULL,
        testid TEXT NOT NULL REFERENCES {RUNS}(testid), time_unix_s DOUBLE PRECISION NOT NULL,
        change_percent DOUBLE PRECISION, pvalue DOUBLE PRECISION NOT NULL, mean_before DOUBLE PRECISION NOT NULL,
        mean_after DOUBLE PRECISION NOT NULL, regression INTEGER NOT NULL, order_by TEXT NOT NULL,
        analysed_unix_s DOUBLE PRECISION NOT NULL, PRIMARY KEY (series, metric, testid))"""
SCHEMA = (
    f"CREATE TABLE {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    f"""CREATE TABLE {RUNS} (
        testid TEXT PRIMARY KEY, workload TEXT NOT NULL, started_unix_s DOUBLE PRECISION NOT NULL,
        finished_unix_s DOUBLE PRECISION NOT NULL, duration_s DOUBLE PRECISION, k6_exit_code INTEGER,
        errors BIGINT, errors_by_class TEXT NOT NULL, knobs TEXT NOT NULL, labels TEXT NOT NULL,
        versions TEXT NOT NULL, hosts TEXT NOT NULL, cpu TEXT, series_key TEXT NOT NULL)""",
    f"""CREATE TABLE {OPS} (
        testid TEXT NOT NULL REFERENCES {RUNS}(testid), op TEXT NOT NULL, ops_per_s DOUBLE PRECISION,
        count BIGINT, p50_ms DOUBLE PRECISION, p95_ms DOUBLE PRECISION, p99_ms DOUBLE PRECISION, errors BIGINT,
        PRIMARY KEY (testid, op))""",
    f"CREATE INDEX {RUNS}_started ON {RUNS} (started_unix_s)",
    CHANGES_TABLE,
)


def location(results: Path, given: str | None = None) -> str:
    """The store to use: --history, else $YBBENCH_HISTORY, else <results>/history.sqlite."""
    return given or os.environ.get(ENV) or str(Path(results) / FILE_NAME)


def is_postgres(where: str) -> bool:
    return where.startswith(("postgresql://", "postgres://"))


def shown(where: str) -> str:
    """The store's name for messages: a URL without any password in it."""
    if not is_postgres(where):
        return where
    scheme, rest = where.split("://", 1)
    if "@" in rest:
        auth, host = rest.rsplit("@", 1)
        return f"{scheme}://{auth.split(':', 1)[0]}@{host}"
    return where


class Store:
    """An open store: record() runs, runs() reads them back."""

    def __init__(self, where: str):
        self.where = where
        self.pg = is_postgres(where)
        self.conn = _open_postgres(where) if self.pg else _open_sqlite(Path(where))

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _sql(self, sql: str) -> str:
        return sql.replace("?", "%s") if self.pg else sql

    def record(self, run: dict) -> bool:
        """One run (history_record.figures()) and its ops, in one
        transaction; False when its testid was there already (unchanged)."""
        row = [json.dumps(run[c], sort_keys=True) if c in JSON_COLUMNS and run[c] is not None else run[c]
               for c in RUN_COLUMNS]
        marks = ", ".join("?" * len(RUN_COLUMNS))
        with _transaction(self):
            cur = self.conn.cursor()
            cur.execute(self._sql(f"INSERT INTO {RUNS} ({', '.join(RUN_COLUMNS)}) VALUES ({marks}) "
                                  "ON CONFLICT (testid) DO NOTHING"), row)
            if cur.rowcount == 0:
                return False
            for op, f in sorted(run["ops"].items()):
                cur.execute(self._sql(f"INSERT INTO {OPS} ({', '.join(OP_COLUMNS)}) VALUES "
                                      f"({', '.join('?' * len(OP_COLUMNS))})"),
                            [run["testid"], op, *(f[c] for c in OP_COLUMNS[2:])])
        return True

    def replace_change_points(self, series: str, rows: list[dict]) -> None:
        """The series' change points (CHANGE_COLUMNS but series), in place
        of those it had, in one transaction."""
        marks = ", ".join("?" * len(CHANGE_COLUMNS))
        if self.pg:
            import psycopg

            errors = psycopg.Error
        else:
            errors = sqlite3.Error
        try:
            with _transaction(self):
                cur = self.conn.cursor()
                cur.execute(self._sql(f"DELETE FROM {CHANGES} WHERE series = ?"), [series])
                for row in rows:
                    cur.execute(self._sql(f"INSERT INTO {CHANGES} ({', '.join(CHANGE_COLUMNS)}) VALUES ({marks})"),
                                [series, *(row[c] for c in CHANGE_COLUMNS[1:])])
        except errors as e:  # a read-only user, a full disk: said, not a traceback
            raise UserError(f"history store {shown(self.where)}: cannot write the change points: "
                            f"{str(e).strip()}") from None

    def change_points(self) -> list[dict]:
        cur = self.conn.cursor()
        cur.execute(f"SELECT {', '.join(CHANGE_COLUMNS)} FROM {CHANGES} ORDER BY series, time_unix_s, metric")
        rows = [dict(zip(CHANGE_COLUMNS, values)) for values in cur.fetchall()]
        if self.pg:
            self.conn.rollback()
        return rows

    def runs(self) -> list[dict]:
        """Every run, oldest first, each with its ops."""
        cur = self.conn.cursor()
        cur.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM {RUNS} ORDER BY started_unix_s, testid")
        runs = {}
        for values in cur.fetchall():
            run = {c: json.loads(v) if c in JSON_COLUMNS and v is not None else v for c, v in zip(RUN_COLUMNS, values)}
            run["ops"] = {}
            runs[run["testid"]] = run
        cur.execute(f"SELECT {', '.join(OP_COLUMNS)} FROM {OPS} ORDER BY testid, op")
        for values in cur.fetchall():
            op = dict(zip(OP_COLUMNS, values))
            runs[op.pop("testid")]["ops"][op.pop("op")] = op
        if self.pg:
            self.conn.rollback()  # end the read's transaction
        return list(runs.values())


class _transaction:
    """BEGIN IMMEDIATE in SQLite (the write lock up front, waited for up to
    the busy timeout), psycopg's own transaction in PostgreSQL."""

    def __init__(self, store: Store):
        self.store = store

    def __enter__(self):
        if not self.store.pg:
            self.store.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *rest):
        if exc_type is None:
            self.store.conn.commit()
        else:
            self.store.conn.rollback()


def _refuse(where: str, why: str) -> UserError:
    return UserError(f"history store {shown(where)}: {why}; it is left as it is (give another with --history "
                     f"or {ENV})")


def _check_meta(where: str, version: str | None) -> None:
    if version is None:
        raise _refuse(where, f"not a ybbench history store (its {META} table has no format_version)")
    if version != str(FORMAT_VERSION):
        raise _refuse(where, f"format_version {version}, this ybbench reads {FORMAT_VERSION}")


def _sqlite_tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _sqlite_ours(where: str, conn: sqlite3.Connection) -> bool:
    """True when the file holds our schema, False when it holds no table at
    all (new); refused otherwise."""
    tables = _sqlite_tables(conn)
    if not tables:
        return False
    if META not in tables:
        raise _refuse(where, f"not a ybbench history store (tables {', '.join(sorted(tables))}, no {META})")
    got = conn.execute(f"SELECT value FROM {META} WHERE key = 'format_version'").fetchone()
    _check_meta(where, got[0] if got else None)
    return True


class _Busy(Exception):
    """SQLite said "locked" where its busy handler does not wait: two
    connections opening a new file at once, one reading its header while
    the other switches it to WAL (SQLite returns SQLITE_BUSY at once rather
    than risk a deadlock). Opening again after a moment succeeds."""


def _transient(e: sqlite3.DatabaseError) -> bool:
    return isinstance(e, sqlite3.OperationalError) and ("locked" in str(e) or "busy" in str(e))


def _open_sqlite(path: Path) -> sqlite3.Connection:
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        try:
            return _open_sqlite_once(path)
        except _Busy as e:
            if time.monotonic() > deadline:
                raise _refuse(str(path), f"unusable as SQLite ({e})") from None
            time.sleep(random.uniform(0.02, 0.2))


def _open_sqlite_once(path: Path) -> sqlite3.Connection:
    where = str(path)
    if path.exists() and path.stat().st_size > 0:
        # Checked read-only first: nothing (not even WAL mode) is written to a file that is not ours.
        with open(path, "rb") as f:
            if f.read(len(SQLITE_HEADER)) != SQLITE_HEADER:
                raise _refuse(where, "not an SQLite database")
        try:
            ro = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
            try:
                _sqlite_ours(where, ro)
            finally:
                ro.close()
        except sqlite3.DatabaseError as e:
            if _transient(e):
                raise _Busy(str(e)) from None
            raise _refuse(where, f"unreadable as SQLite ({e})") from None
    elif not path.parent.is_dir():
        raise UserError(f"history store {where}: its folder {path.parent} does not exist")
    conn = None
    try:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("BEGIN IMMEDIATE")  # two creators at once: the second sees the first's tables
        try:
            if not _sqlite_ours(where, conn):
                for statement in SCHEMA:
                    conn.execute(statement)
                conn.execute(f"INSERT INTO {META} VALUES ('format_version', ?)", (str(FORMAT_VERSION),))
            else:
                conn.execute(CHANGES_TABLE)  # a format-1 store from before the table
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            conn.close()
            raise
    except sqlite3.DatabaseError as e:
        if conn is not None:
            conn.close()
        if _transient(e):
            raise _Busy(str(e)) from None
        raise _refuse(where, f"unusable as SQLite ({e})") from None
    conn.isolation_level = "DEFERRED"  # from here, sqlite3's own transactions (commit() in _transaction)
    return conn


def _open_postgres(url: str):
    import psycopg

    try:
        # UTF-8 whatever the database's encoding: in an SQL_ASCII database psycopg would read text as bytes.
        conn = psycopg.connect(url, connect_timeout=10, client_encoding="utf8")
    except psycopg.Error as e:
        raise UserError(f"history store {shown(url)}: cannot connect: {str(e).strip()}") from None
    try:
        with conn.transaction():
            cur = conn.cursor()
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_LOCK,))
            cur.execute("SELECT to_regclass(%s), to_regclass(%s)", (META, RUNS))
            meta, runs = cur.fetchone()
            if meta is None and runs is None:
                for statement in SCHEMA:
                    cur.execute(statement)
                cur.execute(f"INSERT INTO {META} VALUES ('format_version', %s)", (str(FORMAT_VERSION),))
            elif meta is None:
                raise _refuse(url, f"not a ybbench history store (a {RUNS} table but no {META})")
            else:
                cur.execute(f"SELECT value FROM {META} WHERE key = 'format_version'")
                got = cur.fetchone()
                _check_meta(url, got[0] if got else None)
                cur.execute("SELECT to_regclass(%s)", (CHANGES,))
                if cur.fetchone()[0] is None:  # a format-1 store from before the table
                    cur.execute(CHANGES_TABLE)
    except BaseException:
        conn.close()
        raise
    return conn
