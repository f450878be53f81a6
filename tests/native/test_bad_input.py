"""Bad input stops a run before any load, with a message that names what is
wrong, a non-zero exit, and nothing written: no results folder, no table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ..support.stack import REPO, free_port
from ..support.ybbench_cli import assert_nothing_written, table_exists, ybbench_run


@pytest.mark.parametrize("knob,value,message", [
    ("VUS", "abc", 'invalid VUS="abc": not a whole number'),
    ("VUS", "0", 'invalid VUS="0": must be between 1'),
    ("DURATION", "forever", 'invalid DURATION="forever"'),
    ("YSQL_NODES", "db.example:5433,nocolon", '"nocolon" is not host:port'),
    ("NUM_UNIQUE_KEYS", "-5", 'invalid NUM_UNIQUE_KEYS="-5"'),
    ("ROW_BYTES", "4", 'invalid ROW_BYTES="4"'),
    ("KEY_PREFIX", "a b", 'invalid KEY_PREFIX="a b"'),
    ("DB_SSLMODE", "maybe", 'invalid DB_SSLMODE="maybe": must be one of disable'),
])
def test_a_bad_knob_is_named(binaries, postgres, tmp_path, testid, knob, value, message):
    table = f"bad_{testid}"
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid,
                    knobs={"TABLE": table, knob: value})
    assert r.code != 0
    assert message in r.output
    assert_nothing_written(postgres, tmp_path / "results", table)


def test_a_bad_table_name_is_refused(binaries, postgres, tmp_path, testid):
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid,
                    knobs={"TABLE": "t; DROP TABLE x"})
    assert r.code != 0 and 'invalid TABLE="t; DROP TABLE x"' in r.output


def test_an_unreachable_database(binaries, postgres, tmp_path, testid):
    port = free_port()
    table = f"unreach_{testid}"
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid,
                    knobs={"TABLE": table, "YSQL_NODES": f"127.0.0.1:{port}"})
    assert r.code != 0
    assert f'cannot use database "ybbench" at 127.0.0.1:{port} as "ybbench"' in r.output
    assert "connection refused" in r.output
    assert_nothing_written(postgres, tmp_path / "results", table)


def test_one_unreachable_node_of_several(binaries, postgres, tmp_path, testid):
    port = free_port()
    table = f"unreach_{testid}"
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid,
                    knobs={"TABLE": table, "YSQL_NODES": f"127.0.0.1:{postgres.port},127.0.0.1:{port}"})
    assert r.code != 0 and f"127.0.0.1:{port}" in r.output
    assert_nothing_written(postgres, tmp_path / "results", table)


def test_wrong_credentials(binaries, postgres, tmp_path, testid):
    table = f"creds_{testid}"
    wrong = "not-the-password-" + testid
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid, knobs={"TABLE": table},
                    password=wrong)
    assert r.code != 0
    assert "password authentication failed" in r.output
    assert wrong not in r.output and postgres.password not in r.output
    assert_nothing_written(postgres, tmp_path / "results", table)


def test_a_database_that_does_not_exist(binaries, postgres, tmp_path, testid):
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid,
                    knobs={"TABLE": f"nodb_{testid}", "DB_NAME": "nosuchdb"})
    assert r.code != 0 and 'database "nosuchdb" does not exist' in r.output


def test_selects_need_the_insert_runs_prefix_and_bound(binaries, postgres, tmp_path, testid):
    r = ybbench_run("sql-selects", postgres, tmp_path / "results", testid=testid, knobs={"MAX_WRITTEN_KEY": "10"})
    assert r.code != 0 and "KEY_PREFIX is required" in r.output
    r = ybbench_run("sql-selects", postgres, tmp_path / "results", testid=testid + "b",
                    knobs={"KEY_PREFIX": "neverwritten", "MAX_WRITTEN_KEY": "10", "TABLE": f"sel_{testid}"})
    assert r.code != 0 and f"cannot read sel_{testid}" in r.output
    assert_nothing_written(postgres, tmp_path / "results", f"sel_{testid}")


def test_prometheus_down(binaries, postgres, tmp_path, testid):
    port = free_port()
    table = f"promdown_{testid}"
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid, knobs={"TABLE": table},
                    prometheus=f"http://127.0.0.1:{port}")
    assert r.code != 0
    assert f"Prometheus at http://127.0.0.1:{port} is not reachable" in r.output
    assert_nothing_written(postgres, tmp_path / "results", table)


@pytest.mark.parametrize("args,message", [
    (["run", "no-such-workload"], "unknown workload 'no-such-workload'; known: kv-load, kv-random-read,"),
    (["run", "sql-inserts", "--set", "VUSS=3"], "--set VUSS: unknown knob"),
    (["run", "sql-inserts", "--set", "VUS"], "--set 'VUS': expected NAME=VALUE"),
    (["run", "sql-inserts", "--testid", "has space"], "--testid 'has space'"),
    (["targets", "--cluster", "c", "--tservers", "h:99999", "--out", "x"], "port 99999 of 'h:99999' is out of range"),
])
def test_cli_refuses_bad_arguments(tmp_path, args, message):
    p = subprocess.run([sys.executable, "-m", "ybbench", *args, *([] if args[0] == "targets" else
                        ["--results", str(tmp_path / "results")])],
                       cwd=REPO, capture_output=True, text=True)
    assert p.returncode == 2
    assert message in p.stderr
    assert not (tmp_path / "results").exists() and not (REPO / "x").exists()


@pytest.mark.parametrize("event,message", [
    ("20s-stop-yb-tserver-2", "expected AT:ACTION:SERVICE"),
    ("20s:freeze:yb-tserver-2",
     "unknown action 'freeze'; known: stop, start, kill, restart, add, remove, pause, resume, partition, heal"),
    ("soon:stop:yb-tserver-2", "expected a duration"),
    ("5s:stop:Yb Tserver", "is not a compose service name"),
    ("5s:add:grafana", "add takes a tserver of the expand profile"),
    ("50s:stop:yb-tserver-2", "at 50 s, not within the run's 10 s"),
])
def test_a_bad_event_is_named(binaries, postgres, tmp_path, testid, event, message):
    table = f"bad_{testid}"
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid,
                    knobs={"TABLE": table, "DURATION": "10s"}, extra_args=["--event", event])
    assert r.code == 2 and message in r.output, r.output
    assert_nothing_written(postgres, tmp_path / "results", table)
