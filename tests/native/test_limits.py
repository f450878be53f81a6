"""Why this number: each bottleneck planted for real on the native stack
(PostgreSQL 15, k6, Prometheus, node_exporter), and the run's limits.json
must name it, and no other resource. Marked alone: the plants hold the
machine's CPU, and a neighbour's CPU would be a bottleneck of its own.

- client: k6 (and ybbench) in a cgroup held to 0.3 of a core;
- server CPU: a view that burns CPU on every SELECT;
- concurrency: a view that sleeps 100 ms a row, 4 VUs: Little's law against 4 / 0.1 s;
- contention: 16 VUs updating 3 rows whose trigger holds each row lock 20 ms;
- the open model past capacity: 200 arrivals a second offered to at most 4 VUs of 100 ms.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from ..support.ybbench_cli import ybbench, ybbench_run

pytestmark = pytest.mark.alone

CGROUP_V1 = Path("/sys/fs/cgroup/cpu")
SLEEP_S = 0.100


def limits(folder: Path) -> dict:
    return json.loads((folder / "limits.json").read_text())


def saturated(doc: dict) -> set[str]:
    return {f["resource"] for f in doc["resources"] if f["status"] == "saturated"}


@pytest.fixture(scope="module")
def keys(postgres, tmp_path_factory):
    rid = f"lim{uuid.uuid4().hex[:8]}"
    load = ybbench_run("sql-inserts", postgres, tmp_path_factory.mktemp("limits-load"), testid=f"{rid}-load",
                       knobs={"VUS": 4, "DURATION": "3s", "KEY_PREFIX": rid})
    assert load.code == 0, load.output
    return {"rid": rid, "KEY_PREFIX": rid, "MAX_WRITTEN_KEY": load.digest()["rows_written"]}


def _run(postgres, prometheus, tmp_path, workload, knobs, **kw):
    done = ybbench_run(workload, postgres, tmp_path, testid=f"t{uuid.uuid4().hex[:8]}", prometheus=prometheus.url,
                       knobs=knobs, **kw)
    assert done.code == 0, done.output
    return done


@pytest.fixture
def cpu_cgroup():
    """A cgroup v1 cpu controller group held to 0.3 of a core (CFS quota)."""
    assert (CGROUP_V1 / "cpu.cfs_quota_us").exists(), f"the plant needs cgroup v1's cpu controller at {CGROUP_V1}"
    group = CGROUP_V1 / f"ybbench-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    (group / "cpu.cfs_period_us").write_text("100000")
    (group / "cpu.cfs_quota_us").write_text("30000")
    yield group
    for pid in (group / "cgroup.procs").read_text().split():
        (CGROUP_V1 / "cgroup.procs").write_text(pid)  # back to the root before the group goes
    group.rmdir()


def test_client_held_to_a_fraction_of_a_core_is_named(postgres, prometheus, keys, cpu_cgroup, tmp_path):
    # ybbench, and so the k6 it starts, runs in the group: a shell joins it, then becomes ybbench.
    done = _run(postgres, prometheus, tmp_path, "sql-inserts", {"VUS": 32, "DURATION": "20s",
                                                               "KEY_PREFIX": f"{keys['rid']}c"},
                prefix=["sh", "-c", 'echo $$ > "$0" && exec "$@"', str(cpu_cgroup / "cgroup.procs")])
    doc = limits(done.folder)
    assert doc["verdict"]["limit"] == "client", doc["verdict"]
    client = next(f for f in doc["resources"] if f["resource"] == "client")
    assert client["figures"]["capacity"] == pytest.approx(0.3)  # what the test set: 30000 / 100000
    assert client["figures"]["bound"] == "cgroup CPU quota"
    assert 0.9 * 0.3 <= client["figures"]["cores_used"] <= 0.3 * 1.05
    assert saturated(doc) == {"client"}, doc["resources"]
    assert "limited by the client" in done.output


def test_cpu_heavy_view_is_server_cpu(postgres, prometheus, keys, tmp_path):
    view = f"heavy_{keys['rid']}"
    # Every SELECT counts md5s of 40,000 numbers on the server: CPU there, little in k6.
    postgres.psql(postgres.database, f"CREATE VIEW {view} AS SELECT k, v FROM postgresqlkeyvalue WHERE "
                  "(SELECT count(*) FROM generate_series(1, 40000) g WHERE md5(g::text) <> '') > 0")
    done = _run(postgres, prometheus, tmp_path, "sql-selects", {**_keys(keys), "VUS": 8, "DURATION": "20s",
                                                               "TABLE": view})
    doc = limits(done.folder)
    assert doc["verdict"]["limit"] == "server-cpu", doc["verdict"]
    assert saturated(doc) == {"server-cpu"}, doc["resources"]
    node = next(f for f in doc["resources"] if f["resource"] == "server-cpu" and f["status"] == "saturated")
    # This host runs k6 and PostgreSQL: the split is given, and PostgreSQL's side is the larger.
    assert node["figures"]["shared_with_client"] is True
    assert node["figures"]["rest_cores"] > node["figures"]["client_cores"]


def test_sleeping_view_with_few_vus_is_concurrency_and_littles_law_holds(postgres, prometheus, keys, tmp_path):
    view = f"sleepy_{keys['rid']}"
    postgres.psql(postgres.database, f"CREATE VIEW {view} AS SELECT k, v FROM postgresqlkeyvalue "
                  f"WHERE pg_sleep({SLEEP_S}) IS NOT NULL")
    vus = 4
    done = _run(postgres, prometheus, tmp_path, "sql-selects", {**_keys(keys), "VUS": vus, "DURATION": "20s",
                                                               "TABLE": view})
    doc = limits(done.folder)
    assert doc["verdict"]["limit"] == "concurrency", doc["verdict"]
    assert saturated(doc) == set(), doc["resources"]
    law = doc["little"]
    # The test's own arithmetic: 4 VUs each in a 100 ms sleep can do at most 40 a second; k6's own
    # overhead a statement is well under 15% of that.
    assert vus / SLEEP_S * 0.85 <= law["iterations_per_s"] <= vus / SLEEP_S
    assert law["holds"] and law["busy_vus"] == pytest.approx(vus, rel=0.15)
    assert "more VUs or the open model" in doc["verdict"]["text"]


def test_hot_rows_are_contention(postgres, prometheus, keys, tmp_path):
    table = f"hot_{keys['rid']}"
    # Three rows, each update holding its row lock 20 ms (a trigger's sleep): 16 VUs queue on them.
    postgres.psql(postgres.database, f"""
        CREATE TABLE {table} (LIKE postgresqlkeyvalue INCLUDING ALL);
        INSERT INTO {table} SELECT k, v FROM postgresqlkeyvalue WHERE k IN
          ('{keys['rid']}:0', '{keys['rid']}:1', '{keys['rid']}:2');
        CREATE FUNCTION {table}_slow() RETURNS trigger LANGUAGE plpgsql AS
          $$ BEGIN PERFORM pg_sleep(0.02); RETURN NEW; END $$;
        CREATE TRIGGER {table}_slow BEFORE UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION {table}_slow();""")
    rows = postgres.psql(postgres.database, f"SELECT count(*) FROM {table}").strip()
    assert rows == "3", f"the plant needs 3 hot rows, got {rows}"
    done = _run(postgres, prometheus, tmp_path, "sql-updates", {"KEY_PREFIX": keys["rid"], "MAX_WRITTEN_KEY": 3,
                                                               "WRITE_PERCENT": 100, "VUS": 16, "DURATION": "20s",
                                                               "TABLE": table})
    doc = limits(done.folder)
    assert doc["verdict"]["limit"] == "contention", doc["verdict"]
    assert saturated(doc) == {"contention"}, doc["resources"]
    found = next(f for f in doc["resources"] if f["resource"] == "contention")
    # 3 rows for 16 sessions: at most 3 hold a lock, so about 13 of 16 wait.
    assert found["figures"]["lock_wait_share"] >= 0.5


def test_open_model_past_capacity_is_named_by_its_dropped_iterations(postgres, prometheus, keys, tmp_path):
    view = f"sleepy2_{keys['rid']}"
    postgres.psql(postgres.database, f"CREATE VIEW {view} AS SELECT k, v FROM postgresqlkeyvalue "
                  f"WHERE pg_sleep({SLEEP_S}) IS NOT NULL")
    # 4 VUs of 100 ms serve at most 40 a second; 200 are offered.
    done = _run(postgres, prometheus, tmp_path, "sql-selects", {**_keys(keys), "DURATION": "15s", "TABLE": view,
                                                               "MAX_VUS": 4, "VUS": 4},
                extra_args=["--rate", "200"])
    doc = limits(done.folder)
    assert doc["model"] == "open"
    assert doc["verdict"]["limit"] == "vus", doc["verdict"]
    assert saturated(doc) == {"offered-rate"}, doc["resources"]
    offered = next(f for f in doc["resources"] if f["resource"] == "offered-rate")
    assert offered["figures"]["share"] >= 0.7  # at least 160 of every 200 dropped, by the arithmetic above


def test_without_prometheus_the_server_is_not_visible_and_no_guess_is_made(postgres, keys, tmp_path):
    done = ybbench_run("sql-selects", postgres, tmp_path, testid=f"t{uuid.uuid4().hex[:8]}",
                       knobs={**_keys(keys), "VUS": 2, "DURATION": "3s"})
    assert done.code == 0, done.output
    doc = limits(done.folder)
    assert doc["verdict"]["limit"] == "unknown"
    unseen = {f["resource"] for f in doc["resources"] if f["status"] == "not-visible"}
    assert {"server-cpu", "disk", "yugabytedb"} <= unseen
    assert "not seen: disk, server-cpu, yugabytedb" in doc["verdict"]["text"]


def test_prometheus_down_is_a_clear_error_and_the_run_stays(postgres, keys, tmp_path):
    done = ybbench_run("sql-selects", postgres, tmp_path, testid=f"t{uuid.uuid4().hex[:8]}",
                       knobs={**_keys(keys), "VUS": 2, "DURATION": "2s"})
    before = sorted(p.name for p in done.folder.iterdir())
    p = ybbench("limits", done.folder.name, "--results", str(tmp_path), "--prometheus", "http://127.0.0.1:9",
                env={**os.environ})
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Prometheus at http://127.0.0.1:9 is not reachable" in p.stderr
    assert f"run {done.folder.name} is kept" in p.stderr
    assert sorted(x.name for x in done.folder.iterdir()) == before  # nothing added, nothing lost


def _keys(keys: dict) -> dict:
    return {"KEY_PREFIX": keys["KEY_PREFIX"], "MAX_WRITTEN_KEY": keys["MAX_WRITTEN_KEY"]}
