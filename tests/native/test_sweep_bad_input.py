"""Bad arguments stop `ybbench sweep` before any load: a message naming the
problem, exit code 2, and no results folder (not even a hidden one)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from ybbench.core.files import write_json

from ..support import results_files
from ..support.stack import BIN, REPO, free_port


def sweep_cli(results, *args, env=None):
    env = dict(env or {}, K6=str(BIN / "k6"))
    return subprocess.run([sys.executable, "-m", "ybbench", "sweep", *args, "--results", str(results)],
                          cwd=REPO, capture_output=True, text=True, env={**os.environ, **env}, timeout=300)


@pytest.mark.parametrize("args,message", [
    (["no-such-workload"], "unknown workload 'no-such-workload'; known: kv-load,"),
    (["sql-inserts", "--vus", "1,0"], "--vus '1,0': 0 is not positive"),
    (["sql-inserts", "--vus", "1,-2"], "--vus '1,-2': '-2' is not a whole number"),
    (["sql-inserts", "--vus", "1,2.5"], "--vus '1,2.5': '2.5' is not a whole number"),
    (["sql-inserts", "--vus", "1,x"], "--vus '1,x': 'x' is not a whole number"),
    (["sql-inserts", "--vus", "4,2"], "--vus '4,2': 2 after 4: the list must increase"),
    (["sql-inserts", "--vus", "2,2"], "--vus '2,2': 2 after 2: the list must increase"),
    (["sql-inserts", "--vus", ""], "--vus '': '' is not a whole number"),
    (["sql-inserts", "--rate", "100,50"], "--rate '100,50': 50 after 100"),
    (["sql-inserts", "--max-vus", "0"], "--max-vus 0: must be at least 1"),
    (["sql-inserts", "--vus", "1,2", "--max-vus", "8"], "--max-vus sets the doubling list"),
    (["sql-inserts", "--vus", "1,2", "--rate", "10,20"], "--vus and --rate: give one"),
    (["sql-inserts", "--step-duration", "forever"], "--step-duration 'forever': expected a duration"),
    (["sql-inserts", "--step-duration", "0s"], "--step-duration '0s': must be longer than 0"),
    (["sql-inserts", "--step-duration", "30"], "--step-duration '30': expected a duration"),
    (["sql-inserts", "--set", "VUS=8"], "--set VUS: the sweep sets VUS for each step; use --vus"),
    (["sql-inserts", "--set", "DURATION=5s"], "--set DURATION: the sweep sets DURATION for each step; "
                                              "use --step-duration"),
    (["sql-inserts", "--rate", "10", "--set", "RATE=5"], "--set RATE: the sweep sets RATE for each step; use --rate"),
    (["sql-inserts", "--set", "LOAD_MODEL=constant-arrival-rate"], "a VU sweep runs the closed model"),
    (["sql-inserts", "--set", "VUSS=1"], "--set VUSS: unknown knob"),
    (["sql-inserts", "--id", "has space"], "--id 'has space': use 1-48 letters"),
    (["sql-inserts", "--id", "x" * 49], "use 1-48 letters"),
    (["sql-inserts", "--resume", "no-such-sweep"], "--resume no-such-sweep: no sweep at"),
    (["sql-inserts", "--resume", "../up"], "--resume '../up': use 1-48 letters"),
    (["sql-inserts", "--id", "a", "--resume", "b"], "--id and --resume: give one"),
])
def test_refused_before_anything_runs(tmp_path, args, message):
    p = sweep_cli(tmp_path / "results", *args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr
    assert not (tmp_path / "results").exists()


def test_prometheus_down_is_refused_first(tmp_path):
    port = free_port()
    p = sweep_cli(tmp_path / "results", "sql-inserts", "--prometheus", f"http://127.0.0.1:{port}")
    assert p.returncode == 2 and f"Prometheus at http://127.0.0.1:{port} is not reachable" in p.stderr
    assert not (tmp_path / "results").exists()


def test_k6_missing_is_refused(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ybbench", "sweep", "sql-inserts", "--results", str(tmp_path / "r")],
                       cwd=REPO, capture_output=True, text=True,
                       env={"PATH": "/nonexistent", "HOME": str(tmp_path)})
    assert p.returncode == 2 and "k6 not found" in p.stderr
    assert not (tmp_path / "r").exists()


def make_sweep(results, sid, **params):
    """A sweep folder as `ybbench sweep` leaves it after vus 1 and 2."""
    p = {"workload": "sql-inserts", "mode": "closed", "step_duration": "3s", "settings": {"TABLE": "t"}, **params}
    write_json(results / sid / "sweep.json", {
        "format_version": 1, "sweep_id": sid, "params": p, "steps_planned": [1, 2, 4], "prometheus": None,
        "loki": None, "steps": [], "status": "interrupted", "stopped_early": False, "ceiling": None, "knee": None,
        "rules": []})
    for n in (1, 2):
        (results / sid / f"{sid}-vus{n}").mkdir()
    return sorted(str(f) for f in results.rglob("*"))


SAME = ["--step-duration", "3s", "--set", "TABLE=t"]


@pytest.mark.parametrize("args,message", [
    (["sql-selects", "--vus", "1,2,4", *SAME], "the workload differs from the sweep's: sql-selects here, sql-inserts in"),
    (["sql-inserts", "--vus", "1,2,4", "--step-duration", "5s", "--set", "TABLE=t"],
     "--step-duration differs from the sweep's: 5s here, 3s in"),
    (["sql-inserts", "--rate", "1,2,4", *SAME], "the load model (--vus or --rate) differs from the sweep's: open here, "
                                                "closed in"),
    (["sql-inserts", "--vus", "1,2,4", "--step-duration", "3s", "--set", "TABLE=u"],
     "--set differs from the sweep's: TABLE=u here, TABLE=t in"),
    (["sql-inserts", "--vus", "1,2,4", "--step-duration", "3s"], "--set differs from the sweep's: (none) here, TABLE=t"),
    (["sql-inserts", "--vus", "1,4", *SAME], "step vus=2 is finished but not in the new list 1,4"),
])
def test_resume_with_other_parameters_is_refused(tmp_path, args, message):
    sid = f"sw{uuid.uuid4().hex[:6]}"
    results = tmp_path / "results"
    before = make_sweep(results, sid)
    p = sweep_cli(results, *args, "--resume", sid)
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"--resume {sid}: {message}" in p.stderr
    assert sorted(str(f) for f in results.rglob("*")) == before


def test_resume_of_a_folder_that_is_not_a_sweep(tmp_path):
    (tmp_path / "results" / "x").mkdir(parents=True)
    (tmp_path / "results" / "x" / "sweep.json").write_text("{not json")
    p = sweep_cli(tmp_path / "results", "sql-inserts", "--resume", "x")
    assert p.returncode == 2 and "--resume x: " in p.stderr and "sweep.json is not readable JSON" in p.stderr


def test_an_existing_id_is_refused(tmp_path):
    make_sweep(tmp_path / "results", "old")
    p = sweep_cli(tmp_path / "results", "sql-inserts", "--id", "old")
    assert p.returncode == 2 and "exists: a sweep id is used once (or --resume old)" in p.stderr


def test_a_bad_knob_value_fails_the_first_step_and_leaves_nothing(binaries, postgres, tmp_path):
    p = sweep_cli(tmp_path / "results", "sql-inserts", "--vus", "1,2", "--step-duration", "2s",
                  "--set", f"YSQL_NODES=127.0.0.1:{postgres.port}", "--set", "ROW_BYTES=4",
                  env={"PGPASSWORD": postgres.password})
    # The script refuses the knob at start-up: k6's exit 107 (a script exception), passed through.
    assert p.returncode == 107 and 'invalid ROW_BYTES="4"' in p.stderr
    results = tmp_path / "results"
    assert not results.exists() or list(results.iterdir()) == []  # not even the staging folder


def test_resume_of_a_step_that_ran_other_knobs_is_refused(tmp_path):
    results = tmp_path / "results"
    make_sweep(results, "s")
    for n in (1, 2):
        step = results / "s" / f"s-vus{n}"
        write_json(step / "summary.json", results_files.summary(step.name, {}, duration_s=3))
        write_json(step / "params.json", results_files.params(step.name, knobs={
            "TABLE": "t", "DURATION": "3s", "VUS": "7" if n == 2 else "1"}))
    p = sweep_cli(results, "sql-inserts", "--vus", "1,2", *SAME, "--resume", "s")
    assert p.returncode == 2 and "step s-vus2 ran other parameters than this sweep's: sql-inserts VUS=7" in p.stderr
