"""deploy/ci/: the GitHub Actions workflow's steps, run as the script they
are (deploy/ci/steps.sh), with ybbench run natively against the test
PostgreSQL in place of the compose stack's service (YBBENCH): three CI runs
at an offered 100 ops/s pass the gate (the first two with nothing to judge
yet), and three more at 50 ops/s, a planted slowdown, fail it naming
select's ops/s. The rate is planted rather than VUs: on this shared
two-core machine 8 VUs were seen slower than 1 (1,800-3,900 ops/s against
2,950-5,000), while an open model's ops/s is its offered rate. The
workflow itself: its steps are the script's, in order, the history store
restored before the benchmark and saved after the gate under one key."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ..support import shared
from ..support.stack import BIN, REPO, free_port

# Quiet (tests/lanes.sh): the gate's steady runs stay steady only with no neighbour but idle-priority builds.
pytestmark = pytest.mark.quiet

WORKFLOW = REPO / "deploy" / "ci" / "ybbench-history.yml"
STEPS = REPO / "deploy" / "ci" / "steps.sh"


def test_the_workflow_runs_the_scripts_steps_and_carries_the_store():
    wf = yaml.safe_load(WORKFLOW.read_text())
    steps = wf["jobs"]["bench"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert runs == [f"deploy/ci/steps.sh {s}" for s in ("up", "bench", "gate", "down")]
    uses = [s.get("uses", s.get("run")) for s in steps]
    restore = uses.index("actions/cache/restore@v4")
    save = uses.index("actions/cache/save@v4")
    assert restore < uses.index("deploy/ci/steps.sh bench") < uses.index("deploy/ci/steps.sh gate") < save
    # The store ybbench keeps by default (docs/reports.md), under one key: what is saved is restored next time.
    assert steps[restore]["with"]["path"] == steps[save]["with"]["path"] == "results/history.sqlite"
    assert steps[save]["with"]["key"].startswith(steps[restore]["with"]["restore-keys"])
    assert steps[save]["if"] == "always()" and steps[-1]["if"] == "always()"


@pytest.fixture(scope="session")
def otava_installed():
    shared.need_otava()


# otava_installed first: it is set up before PostgreSQL, so a missing Otava skips (or fails) before anything starts.
def test_the_gate_passes_steady_runs_and_fails_a_planted_slowdown_naming_the_op(otava_installed, postgres, tmp_path):
    results = tmp_path / "results"
    base = {**postgres.env(), "YBBENCH": f"{sys.executable} -m ybbench", "RESULTS": str(results), "K6": str(BIN / "k6"),
            "BENCH_DURATION": "5s",
            # As the compose service has it (its history-db): the steps keep to the cached SQLite file all the same.
            "YBBENCH_HISTORY": f"postgresql://nobody@127.0.0.1:{free_port()}/not_the_ci_store",
            "BENCH_SET": f"--set YSQL_NODES=127.0.0.1:{postgres.port} --set DB_USER={postgres.user} "
                         f"--set DB_NAME={postgres.database}"}

    def ci_run(n: int, rate: int) -> subprocess.CompletedProcess:
        # 32 VUs for 100 or 50 iterations a second: each VU may take 320 ms an iteration before k6 drops one.
        # With 8 for 400 (20 ms), the compose tests starting their stack beside this one made a steady run
        # drop half its iterations, a change point the gate rightly failed on.
        env = {**base, "COMMIT": f"c{n}", "BENCH_VUS": "32",
               "BENCH_SET": base["BENCH_SET"] + f" --set LOAD_MODEL=constant-arrival-rate --set RATE={rate}"}
        return subprocess.run([str(STEPS), "bench", "gate"], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=600)

    for n in (1, 2, 3):
        p = ci_run(n, 100)
        assert p.returncode == 0, p.stdout + p.stderr
        if n < 3:
            assert "no series of 3 runs or more yet" in p.stdout
    for n in (4, 5, 6):
        p = ci_run(n, 50)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "regression: sql-selects select ops/s -" in p.stderr
    doc = json.loads((results / "history" / "history.json").read_text())
    assert doc["otava"]["min_change"] == 0.10  # the steps' floor for noisy runners, which a halving clears
    (s,) = doc["series"]
    assert [r["labels"]["commit"] for r in s["runs"]] == [f"c{n}" for n in range(1, 7)]
    c = next(c for c in s["change_points"] if c["metric"] == "select_ops_per_s")
    assert c["first_after"].endswith("-sel") and s["runs"][c["index"]]["labels"]["commit"] == "c4"
    assert c["differs"]["knobs"]["RATE"] == {"before": "100", "after": "50"}
    # Half the offered rate: about half the ops/s. Loosely: each run's ops/s is its count over k6's whole
    # test time, a few tenths of a second longer than the 5 s scenario.
    assert 0.3 < c["mean_after"] / c["mean_before"] < 0.6
    assert os.path.exists(results / "history.sqlite")
