"""Every workload runs on the official extensions only (xk6-sql and its
lib/pq driver), which is all Grafana Cloud k6 offers: the bundle a cloud run
sends asks for nothing else, by k6's own dependency analysis, and every
workload runs on a k6 built without our pgx module (native/k6/k6-official).
`ybbench run` picks pgx only where its k6 has it."""

from __future__ import annotations

import json
import subprocess
import tarfile
import time
import uuid

import pytest

from ybbench.core import catalog
from ybbench.run import k6_process

from ..support.stack import BIN, REPO
from ..support.workloads import count, run_ok

OFFICIAL = {"k6", "k6/x/sql", "k6/x/sql/driver/postgres"}
K6_OFFICIAL = BIN / "k6-official"


def k6(*args: str, cwd=REPO) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "k6"), *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={"K6_NO_USAGE_REPORT": "true", "K6_AUTO_EXTENSION_RESOLUTION": "false",
                               "PATH": "/usr/bin:/bin"})


def bundle(script, tmp_path) -> tuple[dict, dict]:
    """What `k6 cloud run` uploads is `k6 archive`'s tar: its metadata's
    dependencies, and `k6 deps` on that tar."""
    tar = tmp_path / f"{uuid.uuid4().hex[:8]}.tar"
    # As the README's cloud command runs it: the knobs with -e (the read
    # workloads need to know what a load wrote), no password.
    knobs = ["YSQL_NODES=db.example.com:5433", "KEY_PREFIX=load1", "MAX_WRITTEN_KEY=1000", "WAREHOUSES=10", "C_LOAD=100"]
    made = k6("archive", "-O", str(tar), *[a for k in knobs for a in ("-e", k)], str(script))
    assert made.returncode == 0, made.stderr
    with tarfile.open(tar) as t:
        meta = json.load(t.extractfile("metadata.json"))
    deps = k6("deps", "--json", str(tar))
    assert deps.returncode == 0, deps.stderr
    return meta, json.loads(deps.stdout)


@pytest.mark.parametrize("workload", catalog.workloads())
def test_the_cloud_bundle_of_every_workload_asks_only_for_official_extensions(binaries, workload, tmp_path):
    meta, deps = bundle(REPO / "k6-scripts" / f"{workload}.js", tmp_path)
    assert set(meta["dependencies"]) <= OFFICIAL and "k6/x/sql/driver/postgres" in meta["dependencies"]
    assert set(deps["buildDependencies"]) <= OFFICIAL
    assert not [i for i in deps["imports"] if i.startswith("k6/x/") and i not in OFFICIAL]
    assert "PGPASSWORD" not in meta["env"]


def test_the_analysis_does_see_a_static_pgx_import(binaries, tmp_path):
    # What the check above would catch: importing pgx the plain way.
    script = tmp_path / "static-pgx.js"
    script.write_text('import sql from "k6/x/sql";\nimport pgx from "k6/x/sql/driver/pgx";\n'
                      "export default function () { sql.open(pgx, ''); }\n")
    meta, deps = bundle(script, tmp_path)
    assert "k6/x/sql/driver/pgx" in meta["dependencies"]
    assert "k6/x/sql/driver/pgx" in deps["buildDependencies"]


def test_the_official_k6_has_no_pgx_and_no_go_helpers(binaries):
    assert k6_process.k6_modules(str(K6_OFFICIAL)) == {"k6/x/sql", "k6/x/sql/driver/postgres"}
    assert {k6_process.PGX_MODULE, k6_process.GO_HELPERS_MODULE} <= k6_process.k6_modules(str(BIN / "k6"))


def _official(pg, tmp_path, workload, **knobs):
    digest, r = run_ok(workload, pg, tmp_path, **knobs, _env={"K6": str(K6_OFFICIAL)})
    params = json.loads((r.folder / "params.json").read_text())
    assert params["knobs"].get("DB_DRIVER", "postgres") == "postgres"  # ybbench run did not ask for pgx
    assert params["knobs"].get("YBBENCH_GO_HELPERS", "0") == "0"  # ... nor for our Go helpers
    assert digest["errors"] == 0, digest
    assert digest["latency_source"].startswith("k6: every sample")
    return digest


def test_every_workload_runs_on_a_k6_without_pgx(binaries, postgres, tmp_path):
    t = uuid.uuid4().hex[:8]
    ran = set()

    def go(workload, **knobs):
        ran.add(workload)
        return _official(postgres, tmp_path, workload, **{"VUS": 2, "DURATION": "2s", **knobs})

    ins = go("sql-inserts", TABLE=f"kv_{t}", KEY_PREFIX=t, NUM_UNIQUE_KEYS=300, DURATION="20s")
    assert ins["rows_written"] == 300 == int(postgres.query(f"SELECT count(*) FROM kv_{t}"))
    sel = go("sql-selects", TABLE=f"kv_{t}", KEY_PREFIX=t, MAX_WRITTEN_KEY=300)
    assert count(sel, "select") > 0 and sel["keys_missing"] == 0
    assert count(go("sql-updates", TABLE=f"kv_{t}", KEY_PREFIX=t, MAX_WRITTEN_KEY=300), "update") > 0
    assert count(go("sql-secondary-index", TABLE=f"si_{t}"), "insert") > 0

    load = go("kv-load", TABLE=f"big_{t}", KEY_PREFIX=t, NUM_UNIQUE_KEYS=300, DURATION="20s")
    assert load["rows_written"] == 300
    # Values went as bytea's binary format (binary_parameters): 256 bytes,
    # the first 6 the row's index, as lib/keys.js writes them.
    assert postgres.query(f"SELECT count(*) FROM big_{t} WHERE length(v) = 256 AND "
                          "('x' || encode(substring(v FROM 1 FOR 6), 'hex'))::bit(48)::bigint "
                          "= split_part(k, ':', 2)::bigint") == "300"
    reads = {"TABLE": f"big_{t}", "KEY_PREFIX": t, "MAX_WRITTEN_KEY": 300}
    for w in ("kv-random-read", "kv-read-heavy", "kv-recent-read-heavy"):
        d = go(w, **reads)
        assert count(d, "select") > 0 and d.get("keys_missing", 0) == 0, (w, d)

    assert go("ycsb-load", TABLE=f"usertable_{t}", RECORD_COUNT=200, DURATION="20s")["rows_written"] == 200
    assert count(go("ycsb", TABLE=f"usertable_{t}", RECORD_COUNT=200), "select") > 0
    assert count(go("ycsb-analytic", TABLE=f"usertable_{t}", RUNS=1, VUS=1), "scan") == 1
    assert ran == set(catalog.workloads()) - {"tpcc-load", "tpcc"}  # test_tpcc(_run) load and run them on this k6


def test_lib_pq_sends_each_statement_with_its_parameters_in_one_round_trip(binaries, postgres, tmp_path):
    """Each Sync ends a transaction on the server, counted in its
    xact_commit: lib/pq's default, Parse/Describe/Sync then Bind/Execute/Sync,
    commits two per statement (two round trips); with binary_parameters,
    which lib/db.js sets for lib/pq, one."""
    t = uuid.uuid4().hex[:8]
    postgres.query(f"CREATE TABLE rt_{t} (k text PRIMARY KEY, v text); "
                   f"INSERT INTO rt_{t} SELECT 'p{t}:' || n, 'val:' || n FROM generate_series(0, 99) n")
    commits = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
    before = int(postgres.query(commits))
    d = _official(postgres, tmp_path, "sql-selects", TABLE=f"rt_{t}", KEY_PREFIX=f"p{t}", MAX_WRITTEN_KEY=100,
                  VUS=1, DURATION="2s")
    selects = count(d, "select")
    assert selects > 1000 and d["keys_missing"] == 0
    # k6's sessions report their counts as they end: wait for them.
    deadline, after = time.monotonic() + 10, before
    while time.monotonic() < deadline and (after := int(postgres.query(commits))) - before < selects:
        time.sleep(0.2)
    # One per statement, plus setup's few and this test's psql sessions.
    assert selects <= after - before < 1.2 * selects + 100, (selects, after - before)


def test_ybbench_run_picks_the_go_helpers_module_where_k6_has_it(binaries, postgres, tmp_path):
    t = uuid.uuid4().hex[:8]
    d, r = run_ok("sql-inserts", postgres, tmp_path, TABLE=f"kv_{t}", VUS=1, DURATION="1s")
    knobs = json.loads((r.folder / "params.json").read_text())["knobs"]
    assert knobs["DB_DRIVER"] == "pgconn" and knobs["YBBENCH_GO_HELPERS"] == "1"
    assert postgres.query(f"SELECT count(*) FROM kv_{t}") == str(count(d, "insert")) != "0"
    assert d["latency_source"].startswith("k6/x/ybbench: per-op histograms")
    assert d["ops"]["insert"]["latency_ms"]["p99"] >= d["ops"]["insert"]["latency_ms"]["p50"] > 0
    bad = run_ok("sql-inserts", postgres, tmp_path, TABLE=f"kv_{t}", VUS=1, DURATION="1s", YBBENCH_GO_HELPERS="1",
                 _env={"K6": str(K6_OFFICIAL)}, _ok=False)
    assert bad.code == 107 and "k6/x/ybbench" in bad.output, bad.output  # the script refused: k6 exit 107
    bad = run_ok("sql-inserts", postgres, tmp_path, TABLE=f"kv_{t}", VUS=1, DURATION="1s", DB_DRIVER="pgconn",
                 _env={"K6": str(K6_OFFICIAL)}, _ok=False)
    assert bad.code == 107 and "DB_DRIVER=pgconn" in bad.output and "k6/x/ybbench" in bad.output, bad.output
    # Asked for on a k6 without it: k6 says which module is missing.
    bad = run_ok("sql-inserts", postgres, tmp_path, TABLE=f"kv_{t}", VUS=1, DURATION="1s", DB_DRIVER="pgx",
                 _env={"K6": str(K6_OFFICIAL)}, _ok=False)
    assert bad.code == 107 and "k6/x/sql/driver/pgx" in bad.output, bad.output
