"""The test k6's k6/x/sql stand-in behaves as xk6-sql does, on a real PostgreSQL."""

from __future__ import annotations

import json
import subprocess

import pytest

from .stack import REPO, wait_until


@pytest.mark.parametrize("driver", ["pgx", "postgres"])
def test_xk6_sql_api_against_postgres(binaries, postgres, tmp_path, driver):
    summary = tmp_path / "summary.json"
    env = postgres.env()
    env.update(DRIVER=driver, PGPORT=str(postgres.port), PGUSER=postgres.user, PGDATABASE=postgres.database)
    p = subprocess.run(
        [str(binaries / "k6"), "run", "--no-color", "--summary-export", str(summary),
         str(REPO / "tests" / "k6" / "sql_api.js")],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    checks = json.loads(summary.read_text())["metrics"]["checks"]
    assert checks["fails"] == 0 and checks["passes"] == 19, checks


@pytest.mark.parametrize("session", ["xk6-sql", "pgconn"])
def test_a_statement_running_at_the_end_of_the_run_is_cancelled(binaries, postgres, testid, session):
    """Under the VU's context: k6 stops at duration + gracefulStop (2 s)
    and the 120 s pg_sleep is cancelled on the server too; under a
    background context k6 would wait for it past this test's timeout. On
    xk6-sql and on our native module's statement path (DB_DRIVER=pgconn)."""
    env = postgres.env()
    env.update(PGPORT=str(postgres.port), PGUSER=postgres.user, PGDATABASE=postgres.database, MARK=testid,
               K6_NO_USAGE_REPORT="true", SESSION=session)
    p = subprocess.run([str(binaries / "k6"), "run", "--no-color", "--quiet", str(REPO / "tests" / "k6" / "sql_context.js")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stdout + p.stderr
    running = f"SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%{testid}%' AND pid <> pg_backend_pid()"
    wait_until(lambda: postgres.query(running) == "0", "the cancelled pg_sleep to end on the server", timeout=10)


def test_k6_lists_the_sql_modules(binaries):
    out = subprocess.run([str(binaries / "k6"), "version"], capture_output=True, text=True, check=True).stdout
    assert "k6 v1.8.1" in out
    for module in ("k6/x/sql", "k6/x/sql/driver/postgres", "k6/x/sql/driver/pgx"):
        assert f"{module} [js]" in out
