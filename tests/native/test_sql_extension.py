"""xk6-sql's API as the scripts use it, on a real PostgreSQL, on every k6
build here: the real xk6-sql v1.0.5 (the tests' k6 v1.8.1, and k6 v1.1.0),
and the k6 v2 build's stand-in for v1.2.0 (native/k6-v2/xk6-sql-standin),
held to the same checks.

Which version each check covers, and why that is enough: the compose
image runs xk6-sql v1.2.0 on k6 v2, which the Go module proxy here refuses.
v1.2.0's Go source (register.go, sql/*.go) differs from v1.0.5's only in
the k6 import path (go.k6.io/k6 -> go.k6.io/k6/v2; `git diff v1.0.5
v1.2.0` of github.com/grafana/xk6-sql), so each behaviour the scripts rely
on, checked here on the real v1.0.5, is v1.2.0's too:
  - partial results: query() does not check rows.Err() after its row loop
    (an error after the first rows returns those rows, no exception);
  - statement context: every statement runs under the VU's context
    (cancelled when k6 stops the VU: the second test);
  - open() options: each option given is applied, whatever its value;
  - bytea as bytes, SQLSTATE in the message and as e.value.code (k6 wraps
    the driver's Go error; lib/pq and pgx both have .Code).
What k6 v2 itself changes (its JS runtime, how Go values and errors reach
the script) is covered by the same checks on the k6 v2 build."""

from __future__ import annotations

import json
import subprocess

import pytest

from ..support.stack import REPO, wait_until

pytestmark = pytest.mark.late  # k6 v1.1.0 (native/build.sh late)

# The k6 build, and the drivers it has: k6 v1.1.0 has lib/pq only.
BUILDS = [("k6", "pgx"), ("k6", "postgres"), ("k6-v1.1", "postgres"), ("k6-v2", "pgx"), ("k6-v2", "postgres")]


@pytest.mark.parametrize("k6,driver", BUILDS, ids=[f"{k}-{d}" for k, d in BUILDS])
def test_xk6_sql_api_against_postgres(binaries, postgres, tmp_path, k6, driver):
    summary = tmp_path / "summary.json"
    env = postgres.env()
    env.update(DRIVER=driver, PGPORT=str(postgres.port), PGUSER=postgres.user, PGDATABASE=postgres.database)
    p = subprocess.run(
        [str(binaries / k6), "run", "--no-color", "--summary-export", str(summary),
         str(REPO / "tests" / "k6" / "sql_api.js")],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    checks = json.loads(summary.read_text())["metrics"]["checks"]
    assert checks["fails"] == 0 and checks["passes"] == 20, checks


SESSIONS = [("k6", "xk6-sql"), ("k6-v1.1", "xk6-sql"), ("k6-v2", "xk6-sql"), ("k6", "pgconn"), ("k6-v2", "pgconn")]


@pytest.mark.parametrize("k6,session", SESSIONS, ids=[f"{k}-{s}" for k, s in SESSIONS])
def test_a_statement_running_at_the_end_of_the_run_is_cancelled(binaries, postgres, testid, k6, session):
    """Under the VU's context: k6 stops at duration + gracefulStop (2 s)
    and the 120 s pg_sleep is cancelled on the server too; under a
    background context k6 would wait for it past this test's timeout. On
    xk6-sql (the real v1.0.5 on k6 v1.8.1 and v1.1.0, the v1.2 stand-in on
    k6 v2) and on our Go helpers module's statement path (DB_DRIVER=pgconn)."""
    env = postgres.env()
    env.update(PGPORT=str(postgres.port), PGUSER=postgres.user, PGDATABASE=postgres.database, MARK=testid,
               K6_NO_USAGE_REPORT="true", SESSION=session)
    p = subprocess.run([str(binaries / k6), "run", "--no-color", "--quiet", str(REPO / "tests" / "k6" / "sql_context.js")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    running = f"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%{testid}%' AND pid <> pg_backend_pid()"
    wait_until(lambda: postgres.query(running) == "0", "the cancelled pg_sleep to end on the server", timeout=10)


def test_k6_lists_the_sql_modules(binaries):
    out = subprocess.run([str(binaries / "k6"), "version"], capture_output=True, text=True, check=True).stdout
    assert "k6 v1.8.1" in out
    for module in ("k6/x/sql", "k6/x/sql/driver/postgres", "k6/x/sql/driver/pgx"):
        assert f"{module} [js]" in out
