"""OPS_PER_ITERATION=N: each k6 iteration runs N operations in our Go
module's inner loop (compose/k6/xk6-ybbench/innerloop.go), counted as the
JavaScript path counts them. Expected values come from the database (rows
in the table, pg_stat_user_tables' tuple and scan counters, the server's
log of cancelled statements), from k6's own count of its iterations, and
from the schedule written out again here; never from the loop's code."""

from __future__ import annotations

import json
import subprocess
import time
import uuid

import pytest

from ..support.stack import BIN, REPO, wait_until
from ..support.workloads import count, run_ok, sql_updates_schedule as schedule
from ..support.ybbench_cli import table_exists, verify, ybbench_run
from ..support.inner_loop import LOOP, N, UNACKED, calls, loops, settled, stat, unacked
from ..support.server_log import cancelled_by_server, inserts_under_lock, log_size

# Quiet (tests/lanes.sh): its bounds on how long a run takes hold only with no neighbour but idle-priority builds.
pytestmark = pytest.mark.quiet


def indexes(pg, table: str, prefix: str) -> list[int]:
    return sorted(int(k[len(prefix) + 1:]) for k in pg.query(f"SELECT k FROM {table}").splitlines())


def test_inserts_count_as_the_table_and_pass_verify(postgres, tmp_path):
    table, prefix = f"il_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    d, run = run_ok("sql-inserts", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, VUS=2, DURATION="3s", **LOOP)
    inserts = count(d, "insert")
    assert d["errors"] == 0 and inserts > 10 * N
    # The database's counts: rows in the table, tuples inserted.
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == inserts == d["rows_written"]
    assert settled(postgres, table, "n_tup_ins", inserts) == inserts
    assert calls(postgres, f"INSERT INTO {table} (k, v) VALUES ($1, $2)") == inserts
    # k6 ran the loop (its own iterations, N operations each): every
    # operation of its complete iterations ran, except those the run's end
    # cut off, each in the log as unknown.
    cut = unacked(run)
    assert loops(run) * N == inserts + sum(rows for _, rows in cut), (loops(run), inserts, cut)
    assert len(cut) <= 2  # at most one cut-off iteration per VU
    # Iteration n wrote keys n x N .. n x N + N - 1 (k6 numbers its
    # iterations from 0): whole blocks, but for the cut-off tails.
    cut_off = {first + j for first, rows in cut for j in range(rows)}
    assert set(indexes(postgres, table, prefix)) == {n for n in range(loops(run) * N)} - cut_off
    p, r = verify(tmp_path / "results", run.folder.name, postgres)
    assert p.returncode == 0, p.stdout + p.stderr
    assert r["present"]["count"] == inserts and r["lost"]["count"] == 0 and r["unexpected"]["count"] == 0


def test_selects_count_as_the_servers_scans(postgres, tmp_path):
    table, prefix = f"il_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    d, _ = run_ok("sql-inserts", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=200, VUS=2, **LOOP)
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == 200 == d["rows_written"]
    before = stat(postgres, table, "idx_scan") + stat(postgres, table, "seq_scan")
    d, run = run_ok("sql-selects", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, MAX_WRITTEN_KEY=200, VUS=2,
                    DURATION="2s", **LOOP)
    selects = count(d, "select")
    assert d["errors"] == 0 and d["keys_missing"] == 0 and selects > 10 * N
    # One scan of the table per select, and one for setup()'s check of
    # the last key (lib/db.js requireKey).
    want = before + selects + 1
    scans = lambda: stat(postgres, table, "idx_scan") + stat(postgres, table, "seq_scan")  # noqa: E731
    try:
        wait_until(lambda: scans() == want, f"{want} scans", 10)
    except TimeoutError:
        pass
    assert scans() == want, (scans(), before, selects)
    assert calls(postgres, f"SELECT k, v FROM {table} WHERE k = $1") == selects + 1
    assert loops(run) * N >= selects > (loops(run) - 2) * N


def test_updates_follow_the_schedule_and_pass_verify(postgres, tmp_path):
    keys = 150
    table, prefix = f"il_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    run_ok("sql-inserts", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=keys, VUS=2, **LOOP)
    before = stat(postgres, table, "n_tup_upd")
    d, run = run_ok("sql-updates", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, MAX_WRITTEN_KEY=keys, VUS=1,
                    DURATION="3s", **LOOP)
    assert d["errors"] == 0 and d["keys_missing"] == 0
    its = count(d, "select") + count(d, "update")
    assert its > 3 * keys
    assert settled(postgres, table, "n_tup_upd", before + count(d, "update")) == before + count(d, "update")
    assert calls(postgres, f"UPDATE {table} SET v = $1 WHERE k = $2") == count(d, "update")
    # The selects, and setup()'s check of the last key.
    assert calls(postgres, f"SELECT k, v FROM {table} WHERE k = $1") == count(d, "select") + 1
    # One VU: steps 0 .. its - 1 ran in order; the schedule says which.
    key, update = schedule(keys, 50)
    assert sum(update(i) for i in range(its)) == count(d, "update")
    last = {key(i): i for i in range(its) if update(i)}
    rows = dict(r.split("|", 1) for r in postgres.query(f"SELECT k, v FROM {table}").splitlines())
    tag = next(v for v in rows.values() if v.count(":") == 2).split(":")[2].split(".")[0]
    for n, i in last.items():
        assert rows[f"{prefix}:{n}"] == f"val:{n}:{tag}.{i}", n
    p, r = verify(tmp_path / "results", run.folder.name, postgres)
    assert p.returncode == 0, p.stdout + p.stderr
    assert r["acknowledged_updated"]["count"] == len(last)
    assert all(r[k]["count"] == 0 for k in ("missing", "lost_update", "stale", "never_written"))


def test_a_run_ends_at_its_duration_though_an_iteration_would_last_longer(postgres, tmp_path):
    # A million inserts per iteration take minutes; the loop starts none
    # after DURATION (2 s). Without that check k6 would let the iteration
    # run on for its gracefulStop (10 s, lib/run.js) and then cancel it:
    # the run would last 12 s (DURATION + gracefulStop, to k6's clock). 11 s
    # leaves 9 s for one statement on a busy machine.
    table = f"il_{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    d, run = run_ok("sql-inserts", postgres, tmp_path, TABLE=table, VUS=2, DURATION="2s",
                    **{**LOOP, "OPS_PER_ITERATION": 1_000_000})
    wall = time.monotonic() - started
    assert 2 <= d["duration_s"] < 11, d["duration_s"]
    assert d["duration_s"] < wall  # k6's own clock, inside the wall clock around it
    # Each VU's one iteration: its inserts counted, the rest cut off.
    cut = unacked(run)
    assert len(cut) == 2 and loops(run) == 2
    assert sum(rows for _, rows in cut) + count(d, "insert") == 2 * 1_000_000
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == count(d, "insert")


def test_an_iteration_numbered_first_but_late_to_the_cut_runs_nothing_after_duration(postgres, tmp_path):
    # tests/k6/inner_loop_late_number.js holds VU 1's iteration n and VU 2's
    # n+1 across the end of DURATION, n+1 reaching the loop first: what a busy
    # machine does by chance (k6 numbers an iteration before the script calls
    # the loop). Neither may run as a loop: n would be an empty loop whose
    # every key is logged as unknown, though nothing was tried.
    table, prefix = f"il_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    summary, export = tmp_path / "summary.json", tmp_path / "k6-summary.json"
    env = {**postgres.env(), "YSQL_NODES": f"127.0.0.1:{postgres.port}", "DB_USER": postgres.user,
           "DB_NAME": postgres.database, "TABLE": table, "KEY_PREFIX": prefix, "VUS": "2", "DURATION": "3s",
           "YBBENCH_GO_HELPERS": "1", "SUMMARY_JSON": str(summary), **{k: str(v) for k, v in LOOP.items()}}
    p = subprocess.run([str(BIN / "k6"), "run", "--no-color", "--address", "127.0.0.1:0", "--summary-export",
                        str(export), str(REPO / "tests" / "k6" / "inner_loop_late_number.js")],
                       env=env, capture_output=True, text=True, timeout=120)
    log = p.stdout + p.stderr
    assert p.returncode == 0, log
    inserts = count(json.loads(summary.read_text()), "insert")
    loops_ = int(json.loads(export.read_text())["metrics"]["iterations{op:loop}"]["count"])
    # No iteration was cut: each one before the end ran its N inserts, and
    # the two held ones ran as idle, logging nothing.
    assert UNACKED.findall(log) == [], log
    assert inserts > 10 * N and loops_ * N == inserts
    # The database: keys 0 .. loops x N - 1, none missing.
    assert indexes(postgres, table, prefix) == list(range(loops_ * N))


def test_statement_timeouts_count_as_class_57(postgres, tmp_path):
    table = f"il_{uuid.uuid4().hex[:8]}"
    run_ok("sql-inserts", postgres, tmp_path, TABLE=table, VUS=1, DURATION="1s", **LOOP)  # the table
    before, since = int(postgres.query(f"SELECT count(*) FROM {table}")), log_size(postgres)
    run = inserts_under_lock(postgres, tmp_path, table, DURATION="5s", DB_STATEMENT_TIMEOUT_MS=300, **LOOP)
    assert run.code == 99, run.output  # the error threshold
    d = run.digest()
    server = cancelled_by_server(postgres, table, since)
    assert server >= 2 * 4, server  # two VUs, at least 4 timeouts each in 2 s
    assert d["errors_by_class"] == {"57": server} and d["errors"] == server
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == before + d["rows_written"]
    assert count(d, "insert") == d["rows_written"] + server
    # Each failed insert's key is in the log as unknown, with the cut-off tails.
    assert sum(1 for _, rows in unacked(run) if rows == 1) >= server


@pytest.mark.parametrize("workload,knobs,says", [
    ("ycsb-load", {}, "ycsb-load has no inner loop in Go"),
    ("kv-load", {}, "kv-load has no inner loop in Go"),
    ("sql-inserts", {"LOAD_MODEL": "constant-arrival-rate", "RATE": "10"},
     "needs the closed model (constant VUs): with LOAD_MODEL=constant-arrival-rate one iteration is one arrival"),
    ("sql-inserts", {"DB_DRIVER": "pgx"}, "set DB_DRIVER=pgconn (not pgx)"),
    ("sql-inserts", {"NUM_UNIQUE_KEYS": "15"}, "NUM_UNIQUE_KEYS=15 is not a multiple of OPS_PER_ITERATION=10"),
], ids=["ycsb-load", "kv-load", "open-model", "pgx", "bound"])
def test_what_the_loop_cannot_run_is_refused_before_any_load(postgres, tmp_path, workload, knobs, says):
    table = f"il_{uuid.uuid4().hex[:8]}"
    run = run_ok(workload, postgres, tmp_path, _ok=False, TABLE=table, DURATION="2s",
                 **{**LOOP, "KEY_PREFIX": "x", "MAX_WRITTEN_KEY": "1", **knobs})
    log = (run.folder / "k6.log").read_text() if (run.folder / "k6.log").exists() else ""
    assert run.code != 0, run.output
    assert says in run.output + log, run.output + log
    assert not table_exists(postgres, table)


def test_the_bench_counts_the_loops_statements_not_its_iterations(postgres):
    # make bench's loop rows (bench/client_efficiency.py loop10): its count
    # of statements is the rows the run wrote, not those plus k6's loops.
    from bench import client_efficiency as ce

    prefix = ce.fresh_name("loop10", 0)
    postgres.query("CREATE TABLE IF NOT EXISTS postgresqlkeyvalue (k text PRIMARY KEY, v text)")
    m = ce.k6(postgres, "sql-inserts", "loop10", 2, 2, KEY_PREFIX=prefix)
    assert m.ops == int(postgres.query(f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{prefix}:%'")) > 0


def test_prometheus_holds_each_statement_of_the_loop(postgres, prometheus, tmp_path):
    # The same series as the JavaScript path: k6_iterations_total{op} and
    # the native histogram k6_iteration_duration_seconds{op}, one count per
    # statement, as many as the rows the table holds; k6's own loops apart.
    table = f"il_{uuid.uuid4().hex[:8]}"
    testid = f"il{uuid.uuid4().hex[:8]}"
    run = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid, prometheus=prometheus.url,
                      knobs={"TABLE": table, "VUS": "2", "DURATION": "4s", **{k: str(v) for k, v in LOOP.items()}})
    assert run.code == 0, run.output
    rows = int(postgres.query(f"SELECT count(*) FROM {table}"))

    def last(promql: str) -> float:
        result = prometheus.api("query", query=f"{promql}[10m]")["result"]
        assert len(result) == 1, (promql, result)
        return float(result[0]["values"][-1][1])

    assert last(f'k6_iterations_total{{testid="{testid}", op="insert"}}') == rows > 0
    count = prometheus.query(f'histogram_count(k6_iteration_duration_seconds{{testid="{testid}", op="insert"}})')
    assert len(count) == 1 and float(count[0]["value"][1]) == rows
    assert last(f'k6_iterations_total{{testid="{testid}", op="loop"}}') == loops(run)


def test_a_statement_running_when_the_grace_ends_is_cancelled(postgres, tmp_path):
    # The loop's insert waits on a lock this test holds past DURATION (6 s:
    # time for this test to see the first rows and take the lock on a busy
    # machine; at 2 s a slow poll could take it after the run's end)
    # and k6's gracefulStop (10 s): k6 ends the iteration's context, and the
    # statement is cancelled at the server (its log says so), not counted,
    # its key logged as unknown, and the run ends. Without the cancel, the
    # run would wait for the lock, which is released only 60 s on.
    import psycopg
    import threading

    table = f"il_{uuid.uuid4().hex[:8]}"
    run_ok("sql-inserts", postgres, tmp_path, TABLE=table, VUS=1, DURATION="1s", **LOOP)  # the table
    before, since = int(postgres.query(f"SELECT count(*) FROM {table}")), log_size(postgres)
    done = {}
    k6 = threading.Thread(target=lambda: done.update(run=run_ok(
        "sql-inserts", postgres, tmp_path, _ok=False, TABLE=table, VUS=1, DURATION="6s", **LOOP)))
    k6.start()
    wait_until(lambda: int(postgres.query(f"SELECT count(*) FROM {table}")) > before, "the load's first rows", 30)
    with psycopg.connect(host="127.0.0.1", port=postgres.port, user=postgres.user, password=postgres.password,
                         dbname=postgres.database) as holder:
        holder.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        k6.join(60)
        holder.rollback()
    k6.join()
    run = done["run"]
    d = run.digest()
    # DURATION + gracefulStop (16 s), not the lock's 60 s (under 16 s: the lock came too late to hold
    # anything); 50 s leaves a busy host 34 s to cancel the statement and end.
    assert 16 <= d["duration_s"] < 50, d["duration_s"]
    log = (postgres.log_dir / "postgres.log").read_bytes()[since:].decode(errors="replace").splitlines()
    assert any(line.endswith("ERROR:  canceling statement due to user request") and table in after
               for line, after in zip(log, log[1:])), log[-20:]
    # The cancelled insert is not counted, nor in the table: the rows are the counted ones.
    assert d["errors"] == 0 and int(postgres.query(f"SELECT count(*) FROM {table}")) == before + count(d, "insert")
    assert unacked(run)  # the cancelled insert and the iteration's rest


def test_a_table_dropped_mid_run_counts_as_class_42(postgres, tmp_path):
    # Every insert after the DROP fails (42P01), each one an ERROR line in
    # the server's log naming the table: the loop's count of class 42.
    import threading

    table = f"il_{uuid.uuid4().hex[:8]}"
    run_ok("sql-inserts", postgres, tmp_path, TABLE=table, VUS=1, DURATION="1s", **LOOP)  # the table
    before, since = int(postgres.query(f"SELECT count(*) FROM {table}")), log_size(postgres)
    done = {}
    k6 = threading.Thread(target=lambda: done.update(run=run_ok(
        "sql-inserts", postgres, tmp_path, _ok=False, TABLE=table, VUS=2, DURATION="3s", **LOOP)))
    k6.start()
    wait_until(lambda: int(postgres.query(f"SELECT count(*) FROM {table}")) > before, "the load's first rows", 30)
    postgres.query(f"DROP TABLE {table}")
    k6.join()
    run = done["run"]
    assert run.code == 99, run.output  # the error threshold
    d = run.digest()
    log = (postgres.log_dir / "postgres.log").read_bytes()[since:].decode(errors="replace").splitlines()
    server = sum(1 for line in log if line.endswith(f'ERROR:  relation "{table}" does not exist at character 13'))
    assert server > 10, log[-10:]
    assert d["errors_by_class"] == {"42": server} and d["errors"] == server
    # Each failed insert's key logged as unknown (and any cut-off tail).
    assert sum(rows for _, rows in unacked(run) if rows == 1) >= server
