"""Every workload loads and runs on every k6 the scripts claim, and writes
the rows its summary says (counted in the database):

- k6-v1.1: k6 v1.1.0, the oldest the cloud path resolves to (the real
  xk6-sql v1.0.5 and its postgres driver v0.1.x), with the real xk6-sql
  v1.0.5 and our lib/pq registration only: lib/pq, k6's own summary;
- k6: the tests' k6 v1.8.1 with the real xk6-sql v1.0.5, here with our pgx
  driver module (lib/pq on this k6 is test_official_extensions.py, our
  pgconn path and helpers the rest of the suite);
- k6-v2: k6 v2.2.0 (the compose image's k6) with our two modules linked:
  what `ybbench run` picks there, our Go helpers module's statement path
  (pgconn) and helpers (setup and teardown through xk6-sql and lib/pq);
  our pgx module; and lib/pq, all under the xk6-sql v1.2 stand-in
  (native/k6-v2/xk6-sql-standin: no real xk6-sql for k6 v2 here).

A module a setting asks for and the k6 lacks stops the run with the
scripts' own message on every k6, whether k6 throws at require() (v1.1.0:
"unknown module") or hands over a placeholder (later k6s). And the k6 v2
build has no k6 v1 in its module graph, as xk6 resolves it (xk6 warns
"conflicting k6 versions detected" otherwise)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import uuid

import pytest

from ybbench.core import catalog
from ybbench.run import k6_process

from ..support.stack import BIN, REPO, wait_until
from ..support.workloads import count, n_tup_upd, run_ok

pytestmark = pytest.mark.late  # k6 v1.1.0 (native/build.sh late)

BUILDS = {"k6-v1.1": "v1.1.0", "k6": "v1.8.1", "k6-official": "v1.8.1", "k6-v2": "v2.2.0"}
K6_V1_NODE = re.compile(r"(^|\s)go\.k6\.io/k6@")  # a go.k6.io/k6 (v1) node; /v2 is go.k6.io/k6/v2@


@pytest.fixture(scope="module")
def builds(binaries):
    missing = [b for b in BUILDS if not (binaries / b).exists()]
    assert not missing, f"native/build.sh did not build {missing} into {binaries}"
    return binaries


def k6_version(k6: str) -> str:
    return subprocess.run([str(BIN / k6), "version"], capture_output=True, text=True, timeout=60, check=True).stdout


@pytest.mark.parametrize("k6,modules", [
    ("k6-v1.1", {"k6/x/sql", "k6/x/sql/driver/postgres"}),
    ("k6", {"k6/x/sql", "k6/x/sql/driver/postgres", "k6/x/sql/driver/pgx", "k6/x/ybbench"}),
    ("k6-v2", {"k6/x/sql", "k6/x/sql/driver/postgres", "k6/x/sql/driver/pgx", "k6/x/ybbench"}),
])
def test_each_build_is_the_k6_it_claims(builds, k6, modules):
    out = k6_version(k6)
    assert out.startswith(f"{k6} {BUILDS[k6]} "), out
    assert k6_process.k6_modules(str(BIN / k6)) == modules
    if k6 != "k6-v2":  # the real extension, from the Go module proxy
        assert "github.com/grafana/xk6-sql v1.0.5, k6/x/sql [js]" in out, out


# The build, and the statement path its workloads take here.
MATRIX = [("k6-v1.1", "postgres"), ("k6", "pgx"), ("k6-v2", "pgconn"), ("k6-v2", "pgx"), ("k6-v2", "postgres")]


def rows(pg, table: str) -> int:
    return int(pg.query(f"SELECT count(*) FROM {table}") or 0)


@pytest.mark.parametrize("k6,driver", MATRIX, ids=[f"{k}-{d}" for k, d in MATRIX])
def test_every_workload_writes_what_it_says_on_every_k6(builds, postgres, tmp_path, k6, driver):
    t = uuid.uuid4().hex[:8]
    helpers = "1" if driver == "pgconn" else "0"
    ran = set()

    def go(workload: str, table: str, **knobs) -> dict:
        """One short run; the rows it inserted (count(*)) and updated
        (pg_stat's n_tup_upd) add up to its summary's rows_written."""
        ran.add(workload)
        exists = postgres.query(f"SELECT to_regclass('{table}') IS NOT NULL") == "t"
        before, updated = (rows(postgres, table), n_tup_upd(postgres, table)) if exists else (0, 0)
        d, r = run_ok(workload, postgres, tmp_path, TABLE=table, DB_DRIVER=driver, YBBENCH_GO_HELPERS=helpers,
                      _env={"K6": str(BIN / k6)}, **{"VUS": 2, "DURATION": "2s", **knobs})
        assert d["errors"] == 0 and d.get("keys_missing", 0) == 0, (workload, d)
        assert d["latency_source"].startswith("k6/x/ybbench" if helpers == "1" else "k6: every sample"), d
        inserted = rows(postgres, table) - before
        wait_until(lambda: inserted + n_tup_upd(postgres, table) - updated == d["rows_written"],
                   f"{workload} on {k6}: {d['rows_written']} rows written, {inserted} inserted + updates", timeout=15)
        return d

    ins = go("sql-inserts", f"kv_{t}", KEY_PREFIX=t, NUM_UNIQUE_KEYS=300, DURATION="20s")
    assert ins["rows_written"] == 300 == rows(postgres, f"kv_{t}")
    assert count(go("sql-selects", f"kv_{t}", KEY_PREFIX=t, MAX_WRITTEN_KEY=300), "select") > 0
    upd = go("sql-updates", f"kv_{t}", KEY_PREFIX=t, MAX_WRITTEN_KEY=300)
    assert count(upd, "update") == upd["rows_written"] > 0
    si = go("sql-secondary-index", f"si_{t}")
    assert count(si, "insert") == si["rows_written"] == rows(postgres, f"si_{t}") > 0

    assert go("kv-load", f"big_{t}", KEY_PREFIX=t, NUM_UNIQUE_KEYS=300, DURATION="20s")["rows_written"] == 300
    for w in ("kv-random-read", "kv-read-heavy", "kv-recent-read-heavy"):
        assert count(go(w, f"big_{t}", KEY_PREFIX=t, MAX_WRITTEN_KEY=300), "select") > 0, w
    assert rows(postgres, f"big_{t}") == 300

    assert go("ycsb-load", f"usertable_{t}", RECORD_COUNT=200, DURATION="20s")["rows_written"] == 200
    assert count(go("ycsb", f"usertable_{t}", RECORD_COUNT=200), "select") > 0
    assert count(go("ycsb-analytic", f"usertable_{t}", RUNS=1, VUS=1), "scan") == 1
    assert rows(postgres, f"usertable_{t}") == 200
    # tpcc-load writes through lib/pq whatever the driver (each statement's text differs): test_tpcc
    # loads it on k6 v2, v1.1 and the official build; test_tpcc_run runs tpcc on each build and driver.
    assert ran == set(catalog.workloads()) - {"tpcc-load", "tpcc"}


def k6_run(k6: str, script, **env) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / k6), "run", "--quiet", "--no-color", str(script)], cwd=REPO,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "YSQL_NODES": "127.0.0.1:1", **env})


@pytest.mark.parametrize("k6", ["k6-v1.1", "k6-v2"])
def test_summary_json_takes_a_path_of_up_to_4096_characters_on_every_k6(builds, k6):
    # Its check, without a regex repeat count over 1000 (k6 before v1.4.2
    # refuses one at load): the same paths pass and fail as before.
    script = REPO / "k6-scripts" / "sql-inserts.js"
    for path, ok in [("/tmp/" + "a" * 4091, True), ("/tmp/" + "a" * 4092, False), ("/tmp/a\nb", False)]:
        p = k6_run(k6, script, SUMMARY_JSON=path)
        assert p.returncode == 107, p.stderr  # refused, or stopped at setup: no database at port 1
        assert ("invalid SUMMARY_JSON=" not in p.stderr) == ok, (len(path), p.stderr)
        assert ok == ("cannot use database" in p.stderr), p.stderr


# Each setting, the module it needs, and the k6s without it.
MISSING = [(setting, module, k6) for setting, module in [
    ({"DB_DRIVER": "pgx"}, "k6/x/sql/driver/pgx"),
    ({"DB_DRIVER": "pgconn"}, "k6/x/ybbench"),
    ({"YBBENCH_GO_HELPERS": "1"}, "k6/x/ybbench"),
] for k6 in ("k6-v1.1", "k6-official")]


@pytest.mark.parametrize("setting,module,k6", MISSING, ids=[f"{k}-{'-'.join(f'{n}={v}' for n, v in s.items())}" for s, _, k in MISSING])
def test_a_setting_whose_module_this_k6_lacks_stops_with_the_scripts_message(builds, setting, module, k6):
    (name, value), = setting.items()
    p = k6_run(k6, REPO / "k6-scripts" / "sql-inserts.js", **setting)
    assert p.returncode == 107, p.stderr  # a script exception at init: no load ran
    assert f"{name}={value}: this k6 has no {module} module" in p.stderr, p.stderr


@pytest.mark.parametrize("k6", ["k6-v1.1", "k6", "k6-v2"])
def test_a_missing_module_gets_the_scripts_message_on_every_k6(builds, k6):
    # No build has k6/x/nonexistent: k6 v1.1.0 throws at require(), the
    # others hand over a placeholder; lib/go_helpers.js's requireModule says
    # which setting wanted which module either way.
    p = k6_run(k6, REPO / "tests" / "k6" / "missing_module.js")
    assert p.returncode == 107, p.stderr
    assert "WANTS_IT=1: this k6 has no k6/x/nonexistent module" in p.stderr, p.stderr


def go_offline(*args: str, cwd) -> subprocess.CompletedProcess:
    # native/build.sh downloaded every module these read.
    return subprocess.run(["go", *args], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GOPROXY": "off", "GOFLAGS": "-mod=mod"})


def test_the_k6_v2_build_has_no_k6_v1_in_its_module_graph(builds):
    v2 = REPO / "native" / "k6-v2"
    # What xk6 runs after adding each extension: tidy reads the files of
    # every build tag, so an import of go.k6.io/k6 in any file of our
    # modules would need k6 v1 (offline: a failed lookup) or change go.mod.
    tidy = go_offline("mod", "tidy", "-diff", "-compat=1.17", cwd=v2)
    assert tidy.returncode == 0 and tidy.stdout == "", tidy.stdout + tidy.stderr
    graph = go_offline("mod", "graph", cwd=v2)
    assert graph.returncode == 0, graph.stderr
    assert "ybbench/native/k6-v2 go.k6.io/k6/v2@v2.2.0" in graph.stdout.splitlines()
    assert not [line for line in graph.stdout.splitlines() if K6_V1_NODE.search(line)]
    # The check sees k6 v1 where it is: the tests' k6 v1.8.1 build.
    v1 = go_offline("mod", "graph", cwd=REPO / "native" / "k6")
    assert [line for line in v1.stdout.splitlines() if K6_V1_NODE.search(line)], v1.stderr


def test_the_tidy_check_sees_a_k6_v1_import_in_our_module(builds, tmp_path):
    # The control: the k6 v2 build with our Go helpers module's k6 v1 shim put
    # back in its folder, as it was before (k6v1.go, build tag ybbench_k6v1).
    mod = tmp_path / "k6-v2"
    shutil.copytree(REPO / "native" / "k6-v2", mod, ignore=shutil.ignore_patterns("xk6-sql-standin"))
    ybbench = tmp_path / "xk6-ybbench"
    shutil.copytree(REPO / "compose" / "k6" / "xk6-ybbench", ybbench)
    shutil.copy(REPO / "native" / "k6" / "_k6v1" / "k6v1.go", ybbench / "k6v1.go")
    for path, folder in [("github.com/grafana/xk6-sql", REPO / "native" / "k6-v2" / "xk6-sql-standin"),
                         ("github.com/ybbench/xk6-sql-driver-pgx", REPO / "compose" / "k6" / "xk6-sql-driver-pgx"),
                         ("github.com/ybbench/xk6-sql-driver-postgres-libpq",
                          REPO / "native" / "k6" / "xk6-sql-driver-postgres-libpq"),
                         ("github.com/ybbench/xk6-ybbench", ybbench)]:
        assert go_offline("mod", "edit", f"-replace={path}={folder}", cwd=mod).returncode == 0
    tidy = go_offline("mod", "tidy", "-diff", "-compat=1.17", cwd=mod)
    assert tidy.returncode != 0 and "go.k6.io/k6/" in tidy.stdout + tidy.stderr, tidy.stdout + tidy.stderr
