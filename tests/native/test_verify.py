"""`ybbench verify`: no acknowledged write lost. PostgreSQL is killed
(SIGKILL) in the middle of an insert run and restarted: the run goes on,
counts its errors, and verify finds every acknowledged write. Rows deleted
or changed behind a run's back are reported exactly; bad input is refused."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

from ..support.pg_kill import kill as _kill, killable, restart as _restart  # noqa: F401 (killable: a fixture)
from ..support.stack import BIN, REPO, wait_until
from ..support.workloads import run_ok
from ..support.ybbench_cli import verify, ybbench


def test_no_acknowledged_write_is_lost_when_postgres_is_killed_mid_run(killable, tmp_path):
    pg, results, tid = killable, tmp_path / "results", f"kill{uuid.uuid4().hex[:8]}"
    cmd = [sys.executable, "-m", "ybbench", "run", "sql-inserts", "--testid", tid, "--results", str(results), "--quiet"]
    for k, v in {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database, "VUS": 4,
                 "DURATION": "20s", "DB_CONNECT_TIMEOUT": 2}.items():
        cmd += ["--set", f"{k}={v}"]
    run = subprocess.Popen(cmd, cwd=REPO, env=dict(pg.env(), K6=str(BIN / "k6")), stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
    wait_until(lambda: pg.query("SELECT to_regclass('postgresqlkeyvalue') IS NOT NULL") == "t"
               and int(pg.query("SELECT count(*) FROM postgresqlkeyvalue")) > 1000, "the run to write", timeout=60)
    _kill(pg)
    time.sleep(1.5)  # the load keeps going: statements fail, connections are refused
    _restart(pg)
    before = int(pg.query("SELECT count(*) FROM postgresqlkeyvalue"))
    # 20 s leaves room for the wait, the kill and the restart on a busy
    # machine, and for the run to write again after them.
    assert run.poll() is None, "the run ended before the server was back: nothing can be written after"
    out, _ = run.communicate(timeout=120)
    # Errors cross the run's threshold (exit 99); the run itself went on.
    assert run.returncode == 99, out
    summary = json.loads((results / tid / "summary.json").read_text())
    assert summary["errors"] > 0 and summary["errors"] == summary["ops"]["insert"]["errors"]
    assert int(pg.query("SELECT count(*) FROM postgresqlkeyvalue")) > before  # it wrote after the restart
    log = (results / tid / "k6.log").read_text()
    assert log.count("ybbench-unacked") == summary["errors"]  # every failed insert names its key

    p, r = verify(results, tid, pg)
    assert p.returncode == 0, p.stdout + p.stderr
    assert r["lost"]["count"] == 0 and r["wrong_value"]["count"] == 0 and r["unexpected"]["count"] == 0
    assert r["unacknowledged_keys"] == summary["errors"]
    rows = int(pg.query("SELECT count(*) FROM postgresqlkeyvalue"))
    assert r["present"]["count"] == rows == summary["rows_written"] + r["unknown_present"]["count"]
    print(p.stdout)  # the numbers, with -s
    assert "OK: every acknowledged write is there" in p.stdout


def _clean_run(postgres, tmp_path, workload: str, **knobs):
    digest, r = run_ok(workload, postgres, tmp_path, VUS=2, DURATION="30s", **knobs)
    assert digest["errors"] == 0
    return digest, r


def test_rows_deleted_or_changed_behind_the_runs_back_are_reported_exactly(postgres, tmp_path):
    table, prefix = f"v_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    d, r = _clean_run(postgres, tmp_path, "sql-inserts", TABLE=table, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=500)
    results, tid = r.folder.parent, r.folder.name
    p, clean = verify(results, tid, postgres, "--chunk", "64")
    assert p.returncode == 0 and clean["present"]["count"] == 500 == d["rows_written"], p.stdout + p.stderr

    postgres.query(f"DELETE FROM {table} WHERE k IN ('{prefix}:3', '{prefix}:17', '{prefix}:499')")
    postgres.query(f"UPDATE {table} SET v = 'tampered' WHERE k = '{prefix}:42'")
    postgres.query(f"INSERT INTO {table} VALUES ('{prefix}:500', 'x'), ('{prefix}:007', 'x'), ('other:1', 'x')")
    p, r = verify(results, tid, postgres, "--chunk", "64")
    assert p.returncode == 1, p.stdout + p.stderr
    assert r["lost"] == {"count": 3, "examples": [f"{prefix}:3", f"{prefix}:17", f"{prefix}:499"]}
    assert r["wrong_value"] == {"count": 1, "examples": [f"{prefix}:42"]}
    assert r["unexpected"]["count"] == 2 and set(r["unexpected"]["examples"]) == {f"{prefix}:500", f"{prefix}:007"}
    assert "FAILED" in p.stdout and f"{prefix}:17" in p.stdout


def test_kv_load_values_and_duplicates(postgres, tmp_path):
    # No primary key: a table a user made, where a key can be written twice.
    table, prefix = f"kvv_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    postgres.query(f"CREATE TABLE {table} (k text, v bytea)")
    d, r = _clean_run(postgres, tmp_path, "kv-load", TABLE=table, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=300, OP_SIZE=10,
                      VALUE_BYTES=64)
    results, tid = r.folder.parent, r.folder.name
    p, clean = verify(results, tid, postgres)
    assert p.returncode == 0 and clean["present"]["count"] == 300, p.stdout + p.stderr
    def key(n: int) -> str:  # 50-byte keys, the index zero-padded
        return f"{prefix}:{str(n).zfill(50 - len(prefix) - 1)}"

    postgres.query(f"INSERT INTO {table} SELECT k, v FROM {table} WHERE k = '{key(5)}'")
    # Same length, but the first bytes no longer carry the key's index.
    postgres.query(f"UPDATE {table} SET v = overlay(v placing '\\xffffff'::bytea from 1) WHERE k = '{key(299)}'")
    p, r = verify(results, tid, postgres)
    assert p.returncode == 1
    assert r["duplicates"] == {"count": 1, "examples": [key(5)]}
    assert r["wrong_value"] == {"count": 1, "examples": [key(299)]}
    assert r["lost"]["count"] == 0


def test_bad_input(postgres, tmp_path):
    results = tmp_path / "results"
    p = ybbench("verify", "nope", "--results", str(results))
    assert p.returncode == 2 and "no run 'nope'" in p.stderr
    table, prefix = f"b_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    _, ins = _clean_run(postgres, tmp_path, "sql-inserts", TABLE=table, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=10)
    _, sel = run_ok("sql-selects", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, MAX_WRITTEN_KEY=10, VUS=1,
                    DURATION="1s")
    p = ybbench("verify", sel.folder.name, "--results", str(sel.folder.parent))
    assert p.returncode == 2 and "not a load verify knows" in p.stderr
    assert not (sel.folder / "verify.json").exists()
    for args, says in ((["--node", "127.0.0.1:1"], "cannot read the table back"), (["--chunk", "0"], "--chunk 0"),
                       (["--node", "nohost"], "expected host:port")):
        p = ybbench("verify", ins.folder.name, "--results", str(ins.folder.parent), *args, env=postgres.env())
        assert p.returncode == 2 and says in p.stderr, (args, p.stderr)
        assert not (ins.folder / "verify.json").exists()
