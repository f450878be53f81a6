"""The History dashboard's queries on the history store. That dashboard
reads the store (Grafana's PostgreSQL datasource), not Prometheus: when the
store runs are recorded in is PostgreSQL (--history, else YBBENCH_HISTORY),
every raw SQL query of grafana/dashboards/history.json (panels, annotations,
variables) runs on it as Grafana sends it (grafana_sql.py), over every run
up to now, each in a read-only transaction: ok with its row count, warn
when the store holds no run yet, fail with PostgreSQL's error naming the
panel. An SQLite store is skipped: Grafana's History reads PostgreSQL only."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from ybbench.core.catalog import REPO
from ybbench.core.history_store import CHANGES, FORMAT_VERSION, META, RUNS, is_postgres, shown
from ybbench.doctor import grafana_sql
from ybbench.doctor.check import WARN, Check, fail, ok, skipped

BOARD = REPO / "grafana" / "dashboards" / "history.json"
SQL = "grafana-postgresql-datasource"  # the datasource type of its queries
STORE = "history store"
RECORD = ("record runs there: ybbench run WORKLOAD --history URL (or the YBBENCH_HISTORY variable, which the "
          "compose ybbench service sets), or ybbench history --history URL import for runs already in results/")
CREDENTIALS = "check the store's URL (--history or YBBENCH_HISTORY) and its password (PGPASSFILE, as for psql)"
DISAGREE = ("the dashboard's SQL and the store's tables disagree: regenerate the dashboards with this ybbench "
            "(python3 -m ybbench.dashboards) and reload them in Grafana; a store written by another ybbench: "
            "open it once with this one (ybbench history --history URL)")
# Doctor's sessions change nothing, and a query that hangs cannot hold it up.
SESSION = "-c default_transaction_read_only=on -c statement_timeout=60000"
ANSWERS = "its SQL as Grafana sends it (the workload variable at All, every run up to now) answers"


@dataclass(frozen=True)
class Query:
    where: str  # the panel's title, "annotation NAME" or "variable NAME"
    sql: str
    variable: str | None = None  # a variable's name: its answer gives the others its values


def _panels(panels: list[dict]):
    for p in panels:
        yield p
        yield from _panels(p.get("panels", []))


def _sql(ref: dict | None) -> bool:
    return (ref or {}).get("type") == SQL


def board_queries(board: dict) -> list[Query]:
    """Every raw SQL query of the board, its variables first (their answers fill the others)."""
    out = [Query(f"variable {v['name']}", v["query"], v["name"]) for v in board.get("templating", {}).get("list", [])
           if v.get("type") == "query" and _sql(v.get("datasource")) and isinstance(v.get("query"), str)]
    for p in _panels(board.get("panels", [])):
        out += [Query(p.get("title", "?"), t["rawSql"]) for t in p.get("targets", [])
                if _sql(t.get("datasource") or p.get("datasource")) and t.get("rawSql")]
    annotations = board.get("annotations", {}).get("list", [])
    out += [Query(f"annotation {a['name']}", a["target"]["rawSql"]) for a in annotations
            if _sql(a.get("datasource")) and (a.get("target") or {}).get("rawSql")]
    return out


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _store(conn, where: str) -> tuple[Check, dict | None]:
    """The store's own check, and its counts (None: nothing to query)."""
    expected = "a ybbench history store in PostgreSQL (the History dashboard's datasource reads it)"
    cur = conn.cursor()
    cur.execute("SELECT to_regclass(%s), to_regclass(%s), to_regclass(%s)", (META, RUNS, CHANGES))
    meta, runs, changes = cur.fetchone()
    if meta is None and runs is None:
        return Check(STORE, WARN, expected, f"no history store in {shown(where)} yet (its first run creates it)",
                     RECORD), None
    if meta is None:
        return fail(STORE, expected, f"{shown(where)} has a {RUNS} table but no {META}: not ybbench's",
                    "give the store ybbench records runs in (--history or YBBENCH_HISTORY)"), None
    cur.execute(f"SELECT value FROM {META} WHERE key = 'format_version'")
    version = (cur.fetchone() or [None])[0]
    if version != str(FORMAT_VERSION):
        return fail(STORE, expected, f"format_version {version}, this ybbench's dashboard reads {FORMAT_VERSION}",
                    "use the ybbench (and its dashboards) that wrote the store"), None
    cur.execute(f"SELECT count(*) FROM {RUNS}")
    counts = {"runs": cur.fetchone()[0], "changes": 0}
    if changes is not None:  # a format-1 store from before the table: the change point queries say so
        cur.execute(f"SELECT count(*) FROM {CHANGES}")
        counts["changes"] = cur.fetchone()[0]
    return ok(STORE, expected, f"{counts['runs']} runs, {counts['changes']} change points in {shown(where)} "
              f"(format {version}; read only)"), counts


def _answer(q: Query, rows: int, counts: dict) -> Check:
    name, expected = f"history query {q.where}", ANSWERS
    if rows:
        return ok(name, expected, f"{rows} rows")
    if not counts["runs"]:
        return Check(name, WARN, expected, "0 rows: no run recorded in the store yet", RECORD)
    if CHANGES in q.sql and not counts["changes"]:
        return ok(name, expected, "0 rows: no change point in the store (ybbench history --history URL finds "
                  "them and writes them)")
    return Check(name, WARN, expected, f"0 rows, though the store holds {counts['runs']} runs",
                 "compare the query's conditions with the store's rows (psql on the store)")


def _queries(conn, counts: dict, queries: list[Query], now: float) -> list[Check]:
    import psycopg

    out, values = [], {}
    for q in queries:
        name, expected = f"history query {q.where}", ANSWERS
        try:
            sql = grafana_sql.expand(q.sql, values, 0, now)
        except grafana_sql.Unexpanded as e:
            out.append(fail(name, expected, f"not run: {e}", "doctor expands what the dashboard uses: add it to "
                            "ybbench/doctor/grafana_sql.py"))
            continue
        try:
            rows = conn.execute(sql).fetchall()
        except psycopg.Error as e:
            out.append(fail(name, expected, f"PostgreSQL: {_first_line(e)}", DISAGREE))
            if q.variable:
                values[q.variable] = [""]  # Grafana's "None": an empty value
            continue
        if q.variable:
            # "All" selected: every value the variable's query gave; none is Grafana's "None", an empty value.
            values[q.variable] = [str(r[0]) for r in rows] or [""]
        out.append(_answer(q, len(rows), counts))
    return out


def checks(where: str) -> list[Check]:
    if not is_postgres(where):
        return [skipped(STORE, f"the store is SQLite ({where}): Grafana's History dashboard reads a PostgreSQL "
                        "store only (compose's history-db; --history postgresql://... or YBBENCH_HISTORY)")]
    import psycopg  # loads libpq: only when a check runs

    try:
        conn = psycopg.connect(where, connect_timeout=10, client_encoding="utf8", autocommit=True,
                               application_name="ybbench doctor", options=SESSION)
    except psycopg.Error as e:
        return [fail(STORE, f"a session on {shown(where)}", _first_line(e), CREDENTIALS)]
    with conn:
        try:
            store, counts = _store(conn, where)
        except psycopg.Error as e:
            return [fail(STORE, f"the store's tables read on {shown(where)}", _first_line(e), CREDENTIALS)]
        if counts is None:
            return [store]
        return [store] + _queries(conn, counts, board_queries(json.loads(BOARD.read_text())), time.time())
