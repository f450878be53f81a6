"""The History dashboard's queries on a real history store in PostgreSQL.

Runs are written as `ybbench run` writes them (figures chosen here), then
`ybbench history import` records them into a fresh database of the test
PostgreSQL and `ybbench history` analyses them with Apache Otava, which
writes its change points into the store. The database gets Grafana's
read-only user from compose's own script (compose/history-db/
grafana-reader.sql), and every SQL query of the History dashboard (panels,
the change point annotation, the workload variable) runs as that user with
Grafana's macros and variables expanded as Grafana does
(ybbench/doctor/grafana_sql.py, which `ybbench doctor` runs them with;
tests/unit/test_grafana_sql.py holds it to Grafana's own text). Each
answer is checked against the figures written here and the change points
in history.json; a query the test does not know fails it."""

from __future__ import annotations

import json
import os
import uuid
from datetime import datetime

import numpy as np
import psycopg
import pytest

from ybbench.core.files import write_json
from ybbench.doctor.grafana_sql import expand

from ..support import results_files, shared
from ..support.stack import pgpass
from ..support.dashboards import sql_queries
from ..support.history_db import new_store_database, run_reader_sql
from ..support.ybbench_cli import ybbench


@pytest.fixture(scope="session", autouse=True)
def otava_installed():
    # Every test here runs Otava: missing, they skip (fail under YBBENCH_REQUIRE_TOOLS=1) before any fixture starts.
    shared.need_otava()


T0 = 1_800_000_000.0  # the first selects run; one run a minute
# sql-selects: ops/s steps down 40% at the fifth run (Otava's change point); p99 flat.
SELECT_OPS = [1003.7, 1010.2, 991.4, 1005.9, 601.3, 609.8, 595.2, 604.6]
SELECT_P99 = [4.01, 4.1, 3.93, 4.02, 4.05, 3.95, 4.03, 4.08]
# sql-inserts: flat; its first run a day before the dashboard's range.
INSERT_OPS = [502.5, 498.1, 505.3, 500.9]
INSERT_P99 = [7.25, 7.31, 7.18, 7.22]
RANGE = (T0 - 60, T0 + 60 * len(SELECT_OPS) + 60)


def write_runs(results, name: str, workload: str, op: str, ops, p99s, started) -> list[dict]:
    runs = []
    for i, (ops_s, p99, t) in enumerate(zip(ops, p99s, started)):
        tid = f"{name}{i:02d}"
        knobs = {"VUS": "4" if workload == "sql-selects" else "2"}
        p = results_files.params(tid, workload=workload, knobs=knobs, started=t, finished=t + 10)
        p["labels"] = {"commit": f"{name}c{i}"}
        write_json(results / tid / "params.json", p)
        lat = {"avg": p99 / 3, "p50": p99 / 4, "p90": p99 / 2, "p95": p99 / 1.5, "p99": p99, "max": p99 * 2}
        write_json(results / tid / "summary.json", results_files.summary(
            tid, {op: results_files.op(int(ops_s * 10), ops_s, latency_ms=lat)}, workload=workload, duration_s=10.0))
        runs.append({"testid": tid, "workload": workload, "op": op, "ops": ops_s, "p99": p99, "started": t,
                     "knobs": knobs, "labels": p["labels"]})
    return runs


@pytest.fixture(scope="module")
def store(postgres, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("history-dashboard")
    rid = f"hd{uuid.uuid4().hex[:8]}"
    # Grafana's user, by compose's script, before the store's tables exist (as at the stack's first start).
    made = new_store_database(postgres, tmp)
    db = made["db"]
    results = tmp / "results"
    runs = write_runs(results, f"{rid}-s", "sql-selects", "select", SELECT_OPS, SELECT_P99,
                      [T0 + 60 * i for i in range(len(SELECT_OPS))])
    runs += write_runs(results, f"{rid}-i", "sql-inserts", "insert", INSERT_OPS, INSERT_P99,
                       [T0 - 86400] + [T0 + 30 + 60 * i for i in range(1, len(INSERT_OPS))])
    pgpass_file = pgpass(tmp / "pgpass", postgres.port, db, postgres.user, postgres.password)
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"} | {"PGPASSFILE": str(pgpass_file)}
    url = f"postgresql://{postgres.user}@127.0.0.1:{postgres.port}/{db}"
    p = ybbench("history", "--results", str(results), "--history", url, "import", env=env)
    assert p.returncode == 0 and f"{len(runs)} runs added" in p.stdout, p.stdout + p.stderr
    p = ybbench("history", "--results", str(results), "--history", url, "--out", str(tmp / "out"), env=env)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((tmp / "out" / "history.json").read_text())
    conn = psycopg.connect(host="127.0.0.1", port=postgres.port, user=made["reader"], password=made["password"],
                           dbname=db, autocommit=True)
    yield {"rid": rid, "runs": runs, "doc": doc, "conn": conn, "made": made, "results": results, "tmp": tmp,
           "port": postgres.port}
    conn.close()


def answer(store, query, workloads=("sql-inserts", "sql-selects")) -> list[dict]:
    sql = expand(query.expr, {"workload": list(workloads)}, *RANGE)
    with store["conn"].cursor() as cur:
        cur.execute(sql)
        names = [d.name for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]


def in_range(runs) -> list[dict]:
    return [r for r in runs if RANGE[0] <= r["started"] <= RANGE[1]]


def epoch(t: datetime) -> float:
    return t.timestamp()


def series_points(rows) -> set[tuple]:
    """(time, workload, op, knobs, value) of a time-series answer whose
    metric is 'workload op {knobs json}'."""
    out = set()
    for r in rows:
        workload, op, knobs = r["metric"].split(" ", 2)
        out.add((epoch(r["time"]), workload, op, json.dumps(json.loads(knobs), sort_keys=True), r["value"]))
    return out


def expected_points(runs, field: str) -> set[tuple]:
    return {(r["started"], r["workload"], r["op"], json.dumps(r["knobs"], sort_keys=True), r[field])
            for r in in_range(runs)}


def change_points(store) -> list[dict]:
    """history.json's change points (Otava's), each with its series' workload and its run's start."""
    started = {r["testid"]: r["started"] for r in store["runs"]}
    return [{**c, "workload": s["workload"], "time": started[c["first_after"]]}
            for s in store["doc"]["series"] for c in s["change_points"]]


def check_ops(store, query, rows):
    assert series_points(rows) == expected_points(store["runs"], "ops"), query


def check_p99(store, query, rows):
    assert series_points(rows) == expected_points(store["runs"], "p99"), query


def check_runs(store, query, rows):
    want = sorted(in_range(store["runs"]), key=lambda r: -r["started"])
    assert [r["testid"] for r in rows] == [r["testid"] for r in want], query
    for got, run in zip(rows, want):
        assert epoch(got["started"]) == run["started"] and got["workload"] == run["workload"]
        assert json.loads(got["labels"]) == run["labels"] and json.loads(got["knobs"]) == run["knobs"]
        assert got["ops"] == f"{run['op']} {run['ops']:.1f} ops/s, p99 {run['p99']:.2f} ms", got


def check_change_table(store, query, rows):
    want = sorted(change_points(store), key=lambda c: (-c["time"], c["metric"]))
    assert want, "Otava found no change point: nothing for this query to show"
    got = [(epoch(r["time"]), r["workload"], r["op"], r["field"], r["first_run_after"], float(r["change_percent"]),
            r["pvalue"], r["regression"]) for r in rows]
    assert got == [(c["time"], c["workload"], c["op"], c["field"], c["first_after"], round(c["change_percent"], 2),
                    c["pvalue"], c["regression"]) for c in want], query


def check_annotation(store, query, rows):
    want = sorted(change_points(store), key=lambda c: c["time"])
    assert [epoch(r["time"]) for r in rows] == [c["time"] for c in want], query
    for r, c in zip(rows, want):
        unit = "ops/s" if c["field"] == "ops_per_s" else "p99 ms"
        assert r["text"].startswith(f"{c['workload']} {c['op']} {unit} {c['change_percent']:+.1f}% from run "
                                    f"{c['first_after']} (p "), r["text"]
        assert r["text"].endswith(", worse)" if c["regression"] else ")") and r["tags"] == f"{c['workload']},{c['metric']}"


def check_workloads(store, query, rows):
    # Every workload in the store, the one whose only run in range is a day old too: no time filter.
    assert [r["workload"] for r in rows] == ["sql-inserts", "sql-selects"], query


CHECKS = {
    "ops/s per run, by series and operation": check_ops,
    "p99 per run, by series and operation": check_p99,
    "Runs": check_runs,
    "Change points": check_change_table,
    "annotation change points": check_annotation,
    "variable workload": check_workloads,
}


@pytest.mark.parametrize("query", sql_queries(), ids=str)
def test_every_history_query_answers_what_the_store_holds(store, query):
    assert query.panel in CHECKS, f"{query}: a History query this test does not check"
    CHECKS[query.panel](store, query, answer(store, query))


def test_every_history_query_is_checked():
    assert {q.panel for q in sql_queries()} == set(CHECKS)


def test_otava_found_the_planted_step_and_the_dashboard_draws_it_where_it_was_planted(store):
    """The 40% step in the selects' ops/s, at the fifth run: Otava's change
    point, annotated at that run's start with the change the runs' own
    figures give, and the workload variable limits the annotations."""
    rid = store["rid"]
    (c,) = [c for c in change_points(store) if c["metric"] == "select_ops_per_s"]
    assert c["first_after"] == f"{rid}-s04" and c["regression"]
    pct = (np.mean(SELECT_OPS[4:]) / np.mean(SELECT_OPS[:4]) - 1) * 100
    assert c["change_percent"] == pytest.approx(pct, rel=1e-6)
    (query,) = [q for q in sql_queries() if q.panel == "annotation change points"]
    rows = answer(store, query, workloads=["sql-selects"])
    assert any(epoch(r["time"]) == T0 + 240 and f"ops/s {pct:+.1f}% from run {rid}-s04" in r["text"] for r in rows)
    assert not answer(store, query, workloads=["sql-inserts"]) or not any(
        "select" in r["text"] for r in answer(store, query, workloads=["sql-inserts"]))


def test_grafanas_user_reads_and_cannot_write(store):
    with store["conn"].cursor() as cur, pytest.raises(psycopg.errors.InsufficientPrivilege):
        cur.execute("DELETE FROM ybbench_history_change_points")


def test_the_reader_script_stops_without_a_password(postgres, tmp_path):
    """compose's script on a password file that is missing or empty: it
    stops with an error, and no user is made (PostgreSQL would make one
    without a password)."""
    reader = f"nopw_{uuid.uuid4().hex[:8]}"
    empty = tmp_path / "empty"
    empty.write_text("")
    for where in (tmp_path / "missing", empty):
        p = run_reader_sql(postgres, postgres.database, reader, where)
        assert p.returncode != 0 and "no password in the reader's password file" in p.stderr, p.stderr
        assert postgres.psql(postgres.database, f"SELECT count(*) FROM pg_roles WHERE rolname = '{reader}'") == "0"


def test_a_format_1_store_from_before_the_change_points_table_gets_it(tmp_path):
    """A store made before the change points table (format 1 all the same)
    is not refused: `ybbench history` creates the table and fills it."""
    import sqlite3

    results = tmp_path / "results"
    write_runs(results, "old", "sql-selects", "select", SELECT_OPS, SELECT_P99,
               [T0 + 60 * i for i in range(len(SELECT_OPS))])
    assert ybbench("history", "--results", str(results), "import").returncode == 0
    conn = sqlite3.connect(results / "history.sqlite")
    conn.execute("DROP TABLE ybbench_history_change_points")  # the store as the first format-1 ybbench left it
    conn.commit()
    conn.close()
    p = ybbench("history", "--results", str(results))
    assert p.returncode == 0, p.stdout + p.stderr
    conn = sqlite3.connect(results / "history.sqlite")
    got = conn.execute("SELECT testid, metric FROM ybbench_history_change_points").fetchall()
    conn.close()
    assert ("old04", "select_ops_per_s") in got, got


def test_history_as_grafanas_read_only_user_says_it_cannot_write(store):
    """`ybbench history` pointed at the store as Grafana's user: it reads
    the runs, then says it cannot write the change points (exit 2, no
    traceback), and the store's change points are as they were."""
    made, tmp = store["made"], store["tmp"]
    pgpass_file = pgpass(tmp / "reader_pgpass", store["port"], made["db"], made["reader"], made["password"])
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"} | {"PGPASSFILE": str(pgpass_file)}
    with store["conn"].cursor() as cur:
        cur.execute("SELECT * FROM ybbench_history_change_points ORDER BY series, metric, testid")
        before = cur.fetchall()
    p = ybbench("history", "--results", str(store["results"]), "--history",
                f"postgresql://{made['reader']}@127.0.0.1:{store['port']}/{made['db']}", "--out", str(tmp / "ro"),
                env=env)
    assert p.returncode == 2 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert "cannot write the change points" in p.stderr and "permission denied" in p.stderr, p.stderr
    with store["conn"].cursor() as cur:
        cur.execute("SELECT * FROM ybbench_history_change_points ORDER BY series, metric, testid")
        assert cur.fetchall() == before


def test_a_store_in_an_sql_ascii_database_reads_as_text(postgres, tmp_path):
    """A database made without a UTF-8 encoding (SQL_ASCII, as initdb makes
    it where no locale is set): the store's text reads back as text, so the
    second opening does not refuse its own format_version."""
    db = f"ascii_{uuid.uuid4().hex[:8]}"
    postgres.psql("postgres", f"CREATE DATABASE {db} ENCODING 'SQL_ASCII' TEMPLATE template0")
    results = tmp_path / "results"
    write_runs(results, "asc", "sql-selects", "select", SELECT_OPS, SELECT_P99,
               [T0 + 60 * i for i in range(len(SELECT_OPS))])
    pgpass_file = pgpass(tmp_path / "pgpass", postgres.port, db, postgres.user, postgres.password)
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"} | {"PGPASSFILE": str(pgpass_file)}
    url = f"postgresql://{postgres.user}@127.0.0.1:{postgres.port}/{db}"
    assert ybbench("history", "--results", str(results), "--history", url, "import", env=env).returncode == 0
    p = ybbench("history", "--results", str(results), "--history", url, env=env)
    assert p.returncode == 0, p.stdout + p.stderr
