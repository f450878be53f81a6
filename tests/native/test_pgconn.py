"""Our Go helpers module's statement path (DB_DRIVER=pgconn,
compose/k6/xk6-ybbench/pgconn.go), which `ybbench run` and the compose k6
take where their k6 has the module: the results the workloads read from
xk6-sql, on a real PostgreSQL (tests/k6/pgconn_api.js). Cancellation at the
end of a run: test_sql_extension.py; partial results: test_partial_results.py;
the workloads on it, and on pgx and lib/pq: test_end_to_end.py."""

from __future__ import annotations

import json
import subprocess

import pytest

from ..support.stack import REPO


# The tests' k6 v1.8.1 and the k6 v2.2.0 build (the compose image's k6):
# the same Go code under each k6's JavaScript runtime.
@pytest.mark.parametrize("k6", ["k6", "k6-v2"])
def test_pgconn_api_against_postgres(binaries, postgres, tmp_path, k6):
    summary = tmp_path / "summary.json"
    env = postgres.env()
    env.update(PGPORT=str(postgres.port), PGUSER=postgres.user, PGDATABASE=postgres.database, K6_NO_USAGE_REPORT="true")
    p = subprocess.run([str(binaries / k6), "run", "--no-color", "--summary-export", str(summary),
                        str(REPO / "tests" / "k6" / "pgconn_api.js")], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    checks = json.loads(summary.read_text())["metrics"]["checks"]
    assert checks["fails"] == 0 and checks["passes"] == 30, checks

