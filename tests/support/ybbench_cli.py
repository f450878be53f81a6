"""Running the `ybbench` CLI as a user would, against the native stack."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .stack import BIN, REPO, Postgres

# The k6 the compose stack's users run: v2 (compose/.env), native histograms
# asked for as v2 takes them, every series with its feature tag. Tests of
# what reads k6's series (dashboards, report, doctor) push with it.
USERS_K6 = {"K6": str(BIN / "k6-v2")}


@dataclass
class Completed:
    code: int
    output: str
    folder: Path

    def summary(self) -> dict:
        return json.loads((self.folder / "k6-summary.json").read_text())

    def digest(self) -> dict:
        """The workload's own summary (k6-scripts/lib/summary.js)."""
        return json.loads((self.folder / "summary.json").read_text())

    def metric(self, name: str) -> dict:
        return self.summary()["metrics"].get(name, {})


def ybbench_run(workload: str, pg: Postgres, results: Path, *, testid: str, prometheus: str | None = None,
                knobs: dict | None = None, password: str | None = None, extra_env: dict | None = None,
                extra_args: list[str] = (), prefix: list[str] = ()) -> Completed:
    """`ybbench run` against the test PostgreSQL; the password goes in PGPASSWORD.
    prefix: a command that ends by exec-ing the rest (e.g. one that joins a cgroup first)."""
    settings = {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database, **(knobs or {})}
    cmd = [sys.executable, "-m", "ybbench", "run", workload, "--testid", testid, "--results", str(results), "--quiet"]
    for k, v in settings.items():
        cmd += ["--set", f"{k}={v}"]
    if prometheus:
        cmd += ["--prometheus", prometheus]
    cmd += list(extra_args)
    env = pg.env(password)
    env.update({"K6": str(BIN / "k6"), "K6_PROMETHEUS_RW_PUSH_INTERVAL": "1s", **(extra_env or {})})
    p = subprocess.run([*prefix, *cmd], cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    return Completed(p.returncode, p.stdout + p.stderr, results / testid)


def ybbench(*args, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Any `ybbench` command, its output captured."""
    return subprocess.run([sys.executable, "-m", "ybbench", *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=timeout)


def verify(results, testid: str, pg, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    """`ybbench verify` of a run, and its verify.json when it wrote one."""
    p = ybbench("verify", testid, "--results", str(results), *args, env=pg.env())
    out = results / testid / "verify.json"
    return p, json.loads(out.read_text()) if p.returncode in (0, 1) else None


def table_exists(pg, table: str) -> bool:
    return pg.query(f"SELECT to_regclass('public.{table}') IS NOT NULL") == "t"


def assert_nothing_written(pg, results, table):
    """A refused run left no results folder and no table."""
    assert not results.exists() or not any(results.iterdir()), list(results.iterdir())
    assert not table_exists(pg, table)
