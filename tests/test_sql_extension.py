"""The test k6's k6/x/sql stand-in behaves as xk6-sql does, on a real PostgreSQL."""

from __future__ import annotations

import json
import subprocess

from .stack import REPO


def test_xk6_sql_api_against_postgres(binaries, postgres, tmp_path):
    summary = tmp_path / "summary.json"
    env = postgres.env()
    env.update(PGPORT=str(postgres.port), PGUSER=postgres.user, PGDATABASE=postgres.database)
    p = subprocess.run(
        [str(binaries / "k6"), "run", "--no-color", "--summary-export", str(summary),
         str(REPO / "tests" / "k6" / "sql_api.js")],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    checks = json.loads(summary.read_text())["metrics"]["checks"]
    assert checks["fails"] == 0 and checks["passes"] == 14, checks


def test_k6_lists_the_sql_modules(binaries):
    out = subprocess.run([str(binaries / "k6"), "version"], capture_output=True, text=True, check=True).stdout
    assert "k6 v1.8.1" in out
    assert "k6/x/sql [js]" in out and "k6/x/sql/driver/postgres [js]" in out
