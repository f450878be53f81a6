"""`ybbench demo` end to end: its own PostgreSQL 15, two short runs, one report."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from ..support.stack import BIN, REPO


def test_demo_writes_a_report_of_both_runs(binaries, tmp_path):
    # The demo's PostgreSQL and Prometheus folders go to a TMPDIR of its own (other tests on the
    # machine start theirs in /tmp meanwhile); `postgres` must be able to enter it.
    tmp = Path(tempfile.mkdtemp(prefix="ybbench-demo-test-"))
    tmp.chmod(0o755)
    env = dict(os.environ, K6=str(BIN / "k6"), TMPDIR=str(tmp))
    env.pop("PGPASSWORD", None)
    # The default duration (10 s each, the demo's Prometheus scraping every 1 s), as a new user runs it.
    p = subprocess.run([sys.executable, "-m", "ybbench", "demo", "--results", str(tmp_path), "--vus", "4"],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    out = Path(p.stdout.strip().splitlines()[-1])
    assert out.exists() and out.suffix == ".html"
    data = json.loads(out.with_suffix(".json").read_text())
    runs = {r["params"]["workload"]: r for r in data["runs"]}
    assert set(runs) == {"sql-inserts", "sql-selects"}
    # Issue 26: well under a minute in all (33 s on a 2-vCPU VM): two runs of 10 s and the set-up.
    # What makes it short is checked, not the clock (a busy machine's set-up is slower).
    assert all(r["params"]["knobs"]["DURATION"] == "10s" for r in runs.values()), [r["params"]["knobs"] for r in runs.values()]
    page = out.read_text()
    for workload, op in (("sql-inserts", "insert"), ("sql-selects", "select")):
        run = runs[workload]
        digest = json.loads((tmp_path / run["testid"] / "summary.json").read_text())
        assert digest["ops"][op]["count"] > 0 and digest["errors"] == 0
        chart = [c for c in run["charts"] if c["id"] == "summary_ops_per_second"][0]
        assert chart["data"][op] == digest["ops"][op]["per_second"]
        # The demo's own Prometheus and node_exporter: charts over time, the iostat table.
        charts = {c["id"]: c for c in run["charts"]}
        assert {"ops_per_second", "latency_p99_ms", "cpu_cores_busy", "disk_iops"} <= set(charts)
        rates = sorted(charts["ops_per_second"]["data"][op]["v"])
        assert 0.5 < rates[len(rates) // 2] / digest["ops"][op]["per_second"] < 2
        # Issue 26: every host rate chart has a shape, three or more scrapes inside each run, so a curve.
        for cid in ("cpu_cores_busy", "disk_iops"):
            assert charts[cid]["curve"], (cid, charts[cid].get("note"))
            inside = [f["scrapes_inside"] for f in charts[cid]["figures"].values()]
            assert inside and min(inside) >= 3, (cid, charts[cid]["figures"])
        # iostat over the scrapes bracketing the run.
        assert [t["id"] for t in run["tables"]] == ["iostat"], run["missing"]
        assert any("YugabyteDB tablet servers" in m for m in run["missing"])  # PostgreSQL: none
        assert run["testid"] in page and str(digest["ops"][op]["count"]) in page
    assert runs["sql-inserts"]["summary"]["rows_written"] > 0
    # The demo's PostgreSQL and Prometheus are stopped and their folders gone.
    assert not list(tmp.iterdir())
    tmp.rmdir()


def test_demo_without_k6_names_what_to_build(tmp_path):
    env = dict(os.environ, K6="", PATH="/usr/bin:/bin", YBBENCH_CACHE=str(tmp_path / "nocache"))
    p = subprocess.run([sys.executable, "-m", "ybbench", "demo", "--results", str(tmp_path / "r")], cwd=REPO,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "k6 not found" in p.stderr and "make build" in p.stderr
    assert not (tmp_path / "r").exists()


def test_demo_without_postgresql_names_what_to_install(tmp_path):
    env = dict(os.environ, K6=str(BIN / "k6"), PG_BIN=str(tmp_path / "nopg"))
    p = subprocess.run([sys.executable, "-m", "ybbench", "demo", "--results", str(tmp_path / "r")], cwd=REPO,
                       env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "PostgreSQL 15 not found" in p.stderr and "postgresql-15" in p.stderr
    assert not (tmp_path / "r").exists()
