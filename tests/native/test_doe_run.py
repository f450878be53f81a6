"""`ybbench doe DESIGN.yaml --run`: seed 002's local 2^(3-1) example run for
real (k6 against the test PostgreSQL, 2 s per run), interrupted and resumed;
every number the analysis reports is checked against the runs' own
summary.json by plain arithmetic here. Bad `run:` sections and arguments
stop the command before anything runs, with exit 2 and nothing written."""

from __future__ import annotations

import copy
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml
from scipy import stats

from ybbench.cli import main

from ..support.doe_cases import drop
from ..support.stack import BIN, REPO, wait_until

EXAMPLE = REPO / "experiments" / "seed-002-esle-local.yaml"
RUN_FILES = {"params.json", "summary.json", "k6-summary.json", "k6.log"}


def example(path: Path, edit=None, **run) -> Path:
    """The example with short runs, a table of its own and `run` overrides."""
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["run"].update(duration="2s", knobs={"VUS": 2, "TABLE": f"doe_{uuid.uuid4().hex[:8]}"})
    doc["run"]["load"]["keys"] = 2000
    doc["run"].update(run)
    if edit:
        edit(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def command(pg, design: Path, results: Path, *args: str) -> list[str]:
    cmd = [sys.executable, "-m", "ybbench", "doe", str(design), "--results", str(results), *args]
    for k, v in {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database}.items():
        cmd += ["--set", f"{k}={v}"]
    return cmd


def env(pg) -> dict:
    return {**pg.env(), "K6": str(BIN / "k6")}


def doe(pg, design: Path, results: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(command(pg, design, results, *args), cwd=REPO, env=env(pg), capture_output=True,
                          text=True, timeout=300)


def finished(folder: Path, did: str) -> list[Path]:
    return sorted(p for p in folder.iterdir() if re.fullmatch(rf"{did}-r\d+-\d+", p.name)) if folder.exists() else []


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def snapshot(folders: list[Path]) -> dict:
    return {f: (f.stat().st_mtime_ns, f.read_bytes()) for d in folders for f in d.iterdir()}


def assert_whole(folder: Path) -> None:
    """No staging folder left anywhere, every run folder complete."""
    assert not [p for p in folder.iterdir() if p.name.startswith(".")], list(folder.iterdir())
    for d in folder.iterdir():
        if d.is_dir() and d.name != "analysis":
            assert RUN_FILES <= {p.name for p in d.iterdir()}, d


def signs(params: dict) -> tuple[int, int, int]:
    """A, B, D of one run, from what k6 ran (the example's mapping)."""
    knobs = params["knobs"]
    a = {"1": -1, "100": 1}[knobs["OP_SIZE"]]
    b = {"kv-random-read": -1, "kv-load": 1}[params["workload"]]
    d = {"read_committed": -1, "repeatable_read": 1}[knobs["ISOLATION"]]
    return a, b, d


def test_a_design_runs_every_row_is_resumed_after_an_interrupt_and_analysed(binaries, postgres, tmp_path):
    design, results, did = example(tmp_path / "design.yaml"), tmp_path / "results", f"d{uuid.uuid4().hex[:8]}"
    folder = results / did
    # Interrupted as Ctrl-C does it: SIGINT to the command and its k6.
    proc = subprocess.Popen(command(postgres, design, results, "--run", "--id", did), cwd=REPO, env=env(postgres),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_until(lambda: len(finished(folder, did)) >= 3 or proc.poll() is not None, "3 finished runs", timeout=120)
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, out + err
    kept = finished(folder, did)
    assert 3 <= len(kept) < 8, out + err
    assert_whole(folder)
    doc = read(folder / "doe.json")
    assert doc["status"] == "interrupted" and set(doc["runs"]) <= {p.name for p in kept}
    assert not (folder / "analysis").exists()
    before = snapshot(kept + [folder / f"{did}-load"])

    r = doe(postgres, design, results, "--resume", did)
    assert r.returncode == 0, r.stdout + r.stderr
    # The load and the finished runs are not run again, nor touched.
    assert f"load {did}-load: already finished, not re-run" in r.stdout
    assert r.stdout.count("already finished, not re-run") == len(kept) + 1
    assert snapshot(kept + [folder / f"{did}-load"]) == before
    runs = finished(folder, did)
    assert len(runs) == 8
    assert_whole(folder)
    doc = read(folder / "doe.json")
    assert doc["status"] == "complete" and sorted(doc["order"]) == [p.name for p in runs]
    assert doc["analysis"] == str(folder / "analysis")
    assert "  A (Operation size): OP_SIZE 1/100" in r.stdout and "  load, once before the rows: kv-load, 2000 keys" \
        in r.stdout

    # Every run, read back on its own: what ran, when, and its ops/s.
    params = {p.name: read(p / "params.json") for p in runs}
    summary = {p.name: read(p / "summary.json") for p in runs}
    y = {t: sum(o["per_second"] for o in s["ops"].values()) for t, s in summary.items()}
    # The runs went in the recorded (random, by its shuffle number) order.
    assert sorted(params, key=lambda t: params[t]["started_unix_s"]) == doc["order"]
    points: dict[tuple, list[str]] = {}
    for t, p in params.items():
        a, b, d = signs(p)
        assert d == a * b, t  # the generator D = AB, as run
        assert p["knobs"]["DURATION"] == "2s" and p["k6_exit_code"] == 0 and summary[t]["errors"] == 0
        points.setdefault((a, b, d), []).append(t)
    assert sorted(map(len, points.values())) == [2, 2, 2, 2]  # 4 runs x 2 replications

    # Read runs read the load's keys, all of them found; write runs wrote
    # under prefixes of their own.
    load = read(folder / f"{did}-load" / "params.json")["knobs"]
    assert read(folder / f"{did}-load" / "summary.json")["rows_written"] == 2000
    table = load["TABLE"]
    assert postgres.query(f"SELECT count(*) FROM {table} WHERE k LIKE '{load['KEY_PREFIX']}:%'") == "2000"
    writers = [p["knobs"]["KEY_PREFIX"] for p in params.values() if p["workload"] == "kv-load"]
    assert len(set(writers)) == 4 and load["KEY_PREFIX"] not in writers
    for t, p in params.items():
        if p["workload"] == "kv-random-read":
            assert p["knobs"]["KEY_PREFIX"] == load["KEY_PREFIX"] and p["knobs"]["MAX_WRITTEN_KEY"] == "2000"
            assert summary[t]["keys_missing"] == 0 and summary[t]["ops"]["select"]["count"] > 0

    # The analysis: each run's y is its summary's, matched by levels.
    res = read(folder / "analysis" / "results.json")
    levels = {f["letter"]: f["levels"] for f in res["design"]["factors"]}
    for row in res["runs"]:
        key = tuple(-1 if row["levels"][x] == levels[x][0] else 1 for x in "ABD")
        assert sorted(row["y"]) == sorted(y[t] for t in points[key])
        assert all(t in row["source"] for t in points[key])
    # Effects, shares and the interval by hand from the sign table (Jain ch. 18, 20).
    mean = {k: sum(y[t] for t in ts) / 2 for k, ts in points.items()}
    q = {x: sum(k[i] * m for k, m in mean.items()) / 4 for i, x in enumerate("ABD")}
    grand = sum(y.values()) / 8
    sst = sum((v - grand) ** 2 for v in y.values())
    sse = sum((y[t] - mean[k]) ** 2 for k, ts in points.items() for t in ts)
    margin = stats.t.ppf(0.975, 4) * (sse / 4) ** 0.5 / 8 ** 0.5
    effects = {e["name"]: e for e in res["analysis"]["effects"]}
    assert set(effects) == {"A", "B", "D"}
    assert res["analysis"]["mean"] == pytest.approx(grand, rel=1e-12)
    for x in "ABD":
        assert effects[x]["q"] == pytest.approx(q[x], rel=1e-9, abs=1e-9)
        assert effects[x]["share"] == pytest.approx(8 * q[x] ** 2 / sst, rel=1e-9)
        assert effects[x]["ci"] == pytest.approx([q[x] - margin, q[x] + margin], rel=1e-9)
    assert res["analysis"]["error_share"] == pytest.approx(sse / sst, rel=1e-9)
    assert res["analysis"]["method"] == "replications" and res["analysis"]["response"] == "ops_per_s"
    for png in ("pareto.png", "interaction-A-B.png"):
        assert (folder / "analysis" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert all(f"{q[x]:.2f}" in r.stdout for x in "ABD")

    # A finished design is not run again; a changed plan is not resumed.
    listing = sorted(p.name for p in folder.iterdir())
    again = doe(postgres, design, results, "--resume", did)
    assert again.returncode == 2 and "exists: this design is finished and analysed" in again.stderr
    other = example(tmp_path / "other.yaml", duration="3s")
    changed = doe(postgres, other, results, "--resume", did)
    assert changed.returncode == 2 and "duration differs from the design's" in changed.stderr, changed.stderr
    assert sorted(p.name for p in folder.iterdir()) == listing


def test_a_failing_run_keeps_the_finished_ones(binaries, postgres, tmp_path):
    """A level k6 refuses (checked by the workload, not here) fails its
    runs: the runs before it in the order are kept, whole, and the error
    says how to go on."""
    design = example(tmp_path / "design.yaml", shuffle=2,
                     factors={"A": {"knob": "OP_SIZE", "values": [1, 100]},
                              "B": {"workload": ["kv-random-read", "kv-load"]},
                              "D": {"knob": "ISOLATION", "values": ["read_committed", "bogus"]}})
    doc = yaml.safe_load(design.read_text())
    doc["replications"] = 1
    design.write_text(yaml.safe_dump(doc))
    results, did = tmp_path / "results", f"d{uuid.uuid4().hex[:8]}"
    r = doe(postgres, design, results, "--run", "--id", did)
    assert r.returncode == 107, r.stdout + r.stderr  # the script refused the knob: k6's own exit, passed through
    assert 'invalid ISOLATION=\\"bogus\\"' in r.stderr or 'invalid ISOLATION="bogus"' in r.stderr, r.stderr
    assert f"--resume {did} to go on" in r.stderr
    folder = results / did
    state = read(folder / "doe.json")
    assert state["status"].startswith("failed: ") and state["shuffle"] == 2
    # Finished: the runs before the first with ISOLATION=bogus (D = +1: runs 1 and 4 of the sign table).
    order = state["order"]
    first_bad = next(i for i, t in enumerate(order) if t.endswith(("-r1-1", "-r4-1")))
    assert first_bad >= 1 and sorted(state["runs"]) == sorted(order[:first_bad])
    assert sorted(p.name for p in folder.iterdir()) == sorted(["doe.json", f"{did}-load", *order[:first_bad]])
    assert_whole(folder)


def test_a_design_whose_first_run_fails_leaves_nothing(binaries, postgres, tmp_path):
    design = example(tmp_path / "design.yaml")
    doc = yaml.safe_load(design.read_text())
    doc["run"]["knobs"]["TABLE"] = "Not-A-Table"  # k6 refuses it before the load
    design.write_text(yaml.safe_dump(doc))
    r = doe(postgres, design, tmp_path / "results", "--run", "--id", "gone")
    # k6 refused it: its own exit 107 (a script exception), passed through.
    assert r.returncode == 107 and "TABLE" in r.stderr and "--resume" not in r.stderr, r.stderr
    assert list((tmp_path / "results").iterdir()) == []


# --- bad input: nothing runs, nothing is written ------------------------

def run_section(**kw):
    return lambda d: d["run"].update(kw)


def factor(letter, mapping):
    return lambda d: d["run"]["factors"].__setitem__(letter, mapping)


# (edit of the example, the message the error must contain)
RUN_CASES = {
    "unknown run key": (run_section(workloads=["kv-load"]), "run: unknown key 'workloads'"),
    "unknown knob": (run_section(knobs={"VUSS": 2}), "run.knobs: unknown knob 'VUSS'"),
    "a knob that is a list": (run_section(knobs={"VUS": [2]}), "run.knobs.VUS: expected a number or text"),
    "DURATION as a knob": (run_section(knobs={"DURATION": "5s"}), "run.knobs: DURATION is set by run.duration"),
    "KEY_PREFIX as a knob": (run_section(knobs={"KEY_PREFIX": "x"}), "run.knobs: KEY_PREFIX is set by the design"),
    "no duration": (drop("run", "duration"), "run: missing duration"),
    "bad duration": (run_section(duration="10 seconds"), "run.duration: '10 seconds' is not a duration"),
    "zero duration": (run_section(duration="0s"), "run.duration: '0s' is not a duration"),
    "unknown response": (run_section(response="throughput"), "run.response: 'throughput' is not one of: ops_per_s"),
    "unknown workload": (factor("B", {"workload": ["kv-random-reads", "kv-load"]}),
                         "run.factors.B.workload: unknown workload 'kv-random-reads'"),
    "a factor without mapping": (drop("run", "factors", "D"),
                                 "run.factors: no mapping for D (Consistency level)"),
    "a mapping for an unknown factor": (factor("C", {"knob": "VUS", "values": [1, 2]}),
                                        "run.factors.C: 'C' is not a factor of the design (A, B, D)"),
    "three values": (factor("A", {"knob": "OP_SIZE", "values": [1, 10, 100]}),
                     "run.factors.A.values: expected two values (level 1, level 2), got [1, 10, 100]"),
    "knob without values": (factor("A", {"knob": "OP_SIZE"}), "run.factors.A: knob and values go together"),
    "an empty mapping": (factor("A", {}), "run.factors.A: say what the levels change"),
    "unknown mapping key": (factor("A", {"knob": "OP_SIZE", "levels": [1, 100]}),
                            "run.factors.A: unknown key 'levels'"),
    "an unknown knob of a factor": (factor("A", {"knob": "OPSIZE", "values": [1, 100]}),
                                    "run.factors.A.knob: unknown knob 'OPSIZE'"),
    "levels that change nothing": (factor("A", {"knob": "OP_SIZE", "values": [1, 1]}),
                                   "run.factors.A: both levels run the same workload and knobs"),
    "knobs per level that differ": (factor("D", {"knobs": [{"ISOLATION": "read_committed"}, {"VUS": 3}]}),
                                    "run.factors.D.knobs: both levels must set the same knobs"),
    "a knob set twice": (run_section(knobs={"OP_SIZE": 1}),
                         "run.factors.A: OP_SIZE is also set by run.knobs; a knob has one source"),
    "two factors set the workload": (factor("D", {"workload": ["kv-load", "kv-random-read"]}),
                                     "run.factors.D.workload: factor B sets the workload too"),
    "no workload": (factor("B", {"knob": "ROW_BYTES", "values": [64, 128]}), "run: missing workload"),
    "read rows without a load": (drop("run", "load"),
                                 "rows run kv-random-read, which read the keys a load wrote: add run.load"),
    "a load of other keys": (lambda d: d["run"]["load"].update(workload="sql-inserts", knobs={}),
                             "run.load.workload: sql-inserts does not write the keys kv-random-read reads"),
    "a load that is no load": (lambda d: d["run"]["load"].update(workload="kv-random-read"),
                               "run.load.workload: kv-random-read is not a load"),
    "load keys not a count": (lambda d: d["run"]["load"].update(keys=0), "run.load.keys: expected a whole number"),
    "load keys not a multiple of OP_SIZE": (lambda d: d["run"]["load"].update(keys=2050),
                                            "run.load.keys: 2050 is not a multiple of the load's OP_SIZE 100"),
    "reads wider than the load": (lambda d: d["run"]["load"].update(keys=50, knobs={"OP_SIZE": 50}),
                                  "reads OP_SIZE=100 keys a statement, more than the 50 of run.load.keys"),
    "a bad shuffle": (run_section(shuffle=-1), "run.shuffle: expected a whole number >= 0"),
    "a bad seed (shuffle's old name)": (run_section(seed=-1), "run.seed: expected a whole number >= 0"),
    "shuffle and its old name": (run_section(shuffle=1, seed=1), "run: shuffle and seed: give one"),
}


def assert_nothing_written(tmp_path: Path) -> None:
    assert sorted(p.name for p in tmp_path.iterdir()) == ["design.yaml"]


@pytest.mark.parametrize("case", RUN_CASES)
def test_a_bad_run_section_is_named(tmp_path, capsys, case):
    edit, message = RUN_CASES[case]
    path = example(tmp_path / "design.yaml", edit)
    code = main(["doe", str(path), "--run", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith(f"ybbench: error: {path}: ") and message in err, err
    assert_nothing_written(tmp_path)
    # The file is checked whole without --run too.
    assert main(["doe", str(path)]) == 2 and message in capsys.readouterr().err


def mixed_latency(d):
    d["run"]["response"] = "p99_ms"
    d["run"]["factors"]["B"] = {"workload": ["kv-read-heavy", "kv-load"]}


# (arguments, the message the error must contain[, edit of the example])
ARG_CASES = {
    "--set of a factor's knob": (["--run", "--set", "OP_SIZE=5"], "--set OP_SIZE: set by the design file "
                                                                 "(run.factors.A)"),
    "--set of a run knob": (["--run", "--set", "VUS=5"], "--set VUS: set by the design file (run.knobs)"),
    "--set DURATION": (["--run", "--set", "DURATION=1s"], "--set DURATION: set by run.duration"),
    "--set of an unknown knob": (["--run", "--set", "BOGUS=1"], "--set BOGUS: unknown knob"),
    "--set without --run": (["--set", "YSQL_NODES=h:1"], "--set: only with --run"),
    "--id without --run": (["--id", "x"], "--id: only with --run"),
    "a bad id": (["--run", "--id", "a/b"], "--id 'a/b': use 1-40 letters, digits, . _ -"),
    "--id and --resume": (["--run", "--id", "a", "--resume", "b"], "--id and --resume: give one"),
    "resume of nothing": (["--resume", "nothere"], "--resume nothere: no design at"),
    "a latency of a mixed workload": (["--run"], "run.response p99_ms: run 1 (kv-read-heavy) may mix ops",
                                      mixed_latency),
}


@pytest.mark.parametrize("case", ARG_CASES)
def test_bad_arguments_are_named(tmp_path, capsys, case):
    args, message, *edit = ARG_CASES[case]
    path = example(tmp_path / "design.yaml", *edit)
    running = "--run" in args or "--resume" in args
    code = main(["doe", str(path), *(["--results", str(tmp_path / "results")] if running else []), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert_nothing_written(tmp_path)


def test_run_needs_a_run_section_and_a_new_id(tmp_path, capsys):
    doc = copy.deepcopy(yaml.safe_load(EXAMPLE.read_text()))
    del doc["run"]
    path = tmp_path / "design.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["doe", str(path), "--run", "--results", str(tmp_path / "results")]) == 2
    assert "--run: the file has no run: section" in capsys.readouterr().err
    (tmp_path / "results" / "used").mkdir(parents=True)
    path = example(path)
    assert main(["doe", str(path), "--run", "--id", "used", "--results", str(tmp_path / "results")]) == 2
    assert "used exists: a design id is used once (or --resume used)" in capsys.readouterr().err
    assert list((tmp_path / "results" / "used").iterdir()) == []
