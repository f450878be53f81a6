"""The one campaign loop (ybbench/experiments/campaign.py) that sweep, doe
--run, reproduce and scale share, tested on its own: a small campaign
defined here (three steps of 1, 2 and 3 VUs) and a fake `ybbench run` that
writes a real run folder the way run.run does (staged, so it appears whole),
without k6, PostgreSQL or Prometheus.

Every expected value is written out here, never recomputed by the code
under test."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from ybbench.core import run_folder
from ybbench.core.errors import UserError
from ybbench.core.files import staged_dir, write_json
from ybbench.experiments import campaign
from ybbench.run import k6_process, k6run

from ..support import results_files

SID = "s1"
K6_LINE = "running (00m01.0s), 1/1 VUs, 10 complete and 0 interrupted iterations\n"


@dataclass(kw_only=True)
class Mini(campaign.Campaign):
    """A sweep in miniature: one sql-inserts run per VU count."""

    KIND, RECORD, WHAT, CHILD = "mini", "mini.json", "steps", "step"
    ID_FROM = "--id + the step"
    NAMES = {"duration": "--duration", "settings": "--set"}

    vus: list[int]
    duration: str = "5s"
    settings: dict[str, str]
    stop_at: int | None = None  # add() stops the campaign after this step

    def children(self) -> list[campaign.Child]:
        return [campaign.Child(f"{self.id}-v{n}", "sql-inserts", f"step {i}/{len(self.vus)} v{n}", f"live v{n}", n)
                for i, n in enumerate(self.vus, start=1)]

    def params(self) -> dict:
        return {"duration": self.duration, "settings": self.settings}

    def knobs(self, child: campaign.Child) -> dict[str, str]:
        return {**self.settings, "VUS": str(child.item), "DURATION": self.duration}

    def ran_with(self, child: campaign.Child) -> dict[str, str]:
        return self.knobs(child)

    def record(self, child: campaign.Child, run: run_folder.Run) -> dict:
        ins = run.summary["ops"]["insert"]
        return {"vus": child.item, "testid": run.testid, "count": ins["count"], "ops_per_s": ins["per_second"],
                "errors": run.summary["errors"], "k6_exit_code": run.params.get("k6_exit_code")}

    def add(self, doc: dict, child: campaign.Child, rec: dict) -> bool:
        doc["steps"].append(rec)
        return child.item == self.stop_at


@dataclass(kw_only=True)
class Loose(Mini):
    """The same runs as scale makes them: no record file, no series folder."""

    RECORD = None


class FakeRun:
    """k6run.run as the campaign calls it: writes results/<testid>/ with
    params.json and summary.json (the shape run.run and the workloads'
    handleSummary write) through staged_dir, so it appears whole or not at
    all; `fail` maps a testid to what its run raises, from inside the stage."""

    def __init__(self):
        self.calls: list[str] = []
        self.fail: dict[str, BaseException] = {}
        self.exit_codes: dict[str, int] = {}
        self.status_seen: dict[str, str | None] = {}  # testid -> the record file's status as its run starts

    def __call__(self, workload, *, testid, results, prometheus=None, loki=None, settings=(), quiet=False,
                 on_line=None, **_):
        self.calls.append(testid)
        assert prometheus is None and loki is None
        record = Path(results) / "mini.json"  # Mini's record file, beside the run folders
        self.status_seen[testid] = json.loads(record.read_text())["status"] if record.exists() else None
        knobs = dict(s.split("=", 1) for s in settings)
        final = Path(results) / testid
        if final.exists():
            raise UserError(f"{final} exists: a run id is used once")
        with staged_dir(final) as stage:
            (stage / "k6.log").write_text(K6_LINE)
            if on_line:
                on_line(K6_LINE)
            if testid in self.fail:
                raise self.fail[testid]
            vus = int(knobs["VUS"])
            code = self.exit_codes.get(testid, 0)
            write_json(stage / "summary.json", results_files.summary(testid, {
                "insert": results_files.op(100 * vus, 10.0 * vus,
                                           latency_ms={"p50": 1.0, "p95": 2.0, "p99": 3.0, "avg": 1.5})},
                workload=workload, duration_s=5))
            write_json(stage / "params.json", results_files.params(testid, workload=workload, knobs=knobs,
                                                                   k6_exit_code=code))
        return k6_process.RunResult(testid, final, code)


@pytest.fixture
def fake(monkeypatch) -> FakeRun:
    f = FakeRun()
    monkeypatch.setattr(k6run, "run", f)
    # prepare() checks k6 and the services through k6_process.check_services
    # (k6_binary: k6 on PATH or $K6); this machine's unit tests have no k6.
    monkeypatch.setattr(k6_process, "check_services", lambda prometheus, loki=None: "k6")
    return f


def mini(results: Path, cls=Mini, **kw) -> Mini:
    args = {"id": SID, "results": results, "vus": [1, 2, 3], "settings": {"A": "1"}, **kw}
    return cls(**args)


def go(c: Mini, said: list[str] | None = None) -> tuple[dict, int]:
    """plan + loop, as sweep's plan() and execute() do."""
    c.prepare()
    doc = {"id": c.id, "params": c.params(), "steps": [], "status": "running"}
    code = c.run_all(doc, (said if said is not None else []).append)
    return doc, code


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under root (hidden ones too) and its content, but the
    history store every finished run is recorded in (tests/native/test_history.py)."""
    if not root.exists():
        return {}
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))
            if not p.name.startswith("history.sqlite")}


STEP1 = {"vus": 1, "testid": "s1-v1", "count": 100, "ops_per_s": 10.0, "errors": 0, "k6_exit_code": 0}
COMPLETE = {
    "id": "s1", "params": {"duration": "5s", "settings": {"A": "1"}}, "status": "complete",
    "steps": [
        STEP1,
        {"vus": 2, "testid": "s1-v2", "count": 200, "ops_per_s": 20.0, "errors": 0, "k6_exit_code": 0},
        {"vus": 3, "testid": "s1-v3", "count": 300, "ops_per_s": 30.0, "errors": 0, "k6_exit_code": 0},
    ],
}
BOOM = "sql-inserts failed (k6 exit 107): boom"


def record_file(results: Path) -> dict:
    return json.loads((results / SID / "mini.json").read_text())


def failed_at_v2(results: Path, fake: FakeRun) -> Path:
    """A series whose step 1 finished and step 2 failed; the fake reset."""
    fake.fail["s1-v2"] = UserError(BOOM)
    with pytest.raises(UserError):
        go(mini(results))
    fake.fail.clear()
    fake.calls.clear()
    return results / SID


# --- a fresh campaign --------------------------------------------------------

def test_a_complete_campaign_writes_every_run_and_its_record(tmp_path, fake):
    results = tmp_path / "results"
    c = mini(results)
    doc, code = go(c)
    assert code == 0
    assert fake.calls == ["s1-v1", "s1-v2", "s1-v3"]
    # The record file is there from the first run on, "running" until the
    # last. (Planted bug caught: _added's status "complete" whatever `last`.)
    assert fake.status_seen == {"s1-v1": None, "s1-v2": "running", "s1-v3": "running"}
    assert doc == COMPLETE
    assert record_file(results) == COMPLETE
    assert sorted(snapshot(results)) == [
        "s1", "s1/mini.json",
        # Each run's limits.json: what limited it, kept after the run (analysis/limits.py).
        "s1/s1-v1", "s1/s1-v1/k6.log", "s1/s1-v1/limits.json", "s1/s1-v1/params.json", "s1/s1-v1/summary.json",
        "s1/s1-v2", "s1/s1-v2/k6.log", "s1/s1-v2/limits.json", "s1/s1-v2/params.json", "s1/s1-v2/summary.json",
        "s1/s1-v3", "s1/s1-v3/k6.log", "s1/s1-v3/limits.json", "s1/s1-v3/params.json", "s1/s1-v3/summary.json"]
    # The first run was read from the stage; what is kept names its final
    # folder. (Planted bug caught: campaign.py's `if staged: ... replace(...)`
    # removed: runs["s1-v1"].folder is the removed stage, .s1.xxxx/s1-v1.)
    assert c.runs["s1-v1"].folder == results / "s1" / "s1-v1"
    assert c.runs["s1-v3"].folder == results / "s1" / "s1-v3"


def test_a_first_run_that_fails_leaves_no_series_folder(tmp_path, fake):
    # Planted bug caught: `staged = False` in run_all (the series folder made
    # up front): results/s1/ stays, holding a mini.json "failed: ...".
    results = tmp_path / "results"
    fake.fail["s1-v1"] = UserError(BOOM)
    with pytest.raises(UserError) as e:
        go(mini(results))
    assert str(e.value) == BOOM  # nothing kept, so no --resume to offer
    assert fake.calls == ["s1-v1"]
    assert snapshot(results) == {}  # not even a hidden stage


def test_a_later_failure_keeps_the_finished_runs_and_says_how_to_go_on(tmp_path, fake):
    results = tmp_path / "results"
    fake.fail["s1-v2"] = UserError(BOOM)
    with pytest.raises(UserError) as e:
        go(mini(results))
    folder = results / "s1"
    assert str(e.value) == f"{BOOM} (the finished steps are kept in {folder}: --resume s1 to go on)"
    assert fake.calls == ["s1-v1", "s1-v2"]  # step 3 not tried
    assert record_file(results) == {"id": "s1", "params": {"duration": "5s", "settings": {"A": "1"}},
                                    "status": f"failed: {BOOM}", "steps": [STEP1]}
    assert sorted(p.name for p in folder.iterdir()) == ["mini.json", "s1-v1"]


def test_a_campaign_stopped_by_its_own_rule_says_so(tmp_path, fake):
    results = tmp_path / "results"
    doc, code = go(mini(results, stop_at=2))
    assert fake.calls == ["s1-v1", "s1-v2"]
    expected = {"id": "s1", "params": {"duration": "5s", "settings": {"A": "1"}}, "status": "stopped early",
                "steps": [STEP1, {"vus": 2, "testid": "s1-v2", "count": 200, "ops_per_s": 20.0, "errors": 0,
                                  "k6_exit_code": 0}]}
    assert doc == expected and record_file(results) == expected
    assert code == 0


# --- resume ------------------------------------------------------------------

def test_resume_skips_finished_runs_and_ends_as_a_fresh_run_does(tmp_path, fake):
    # Planted bug caught: run_all's `if child.testid in self.found` made
    # `if False`: the fake is called for s1-v1 again (and finds its folder).
    results = tmp_path / "results"
    failed_at_v2(results, fake)
    said: list[str] = []
    doc, code = go(mini(results, resume=True), said)
    assert fake.calls == ["s1-v2", "s1-v3"]
    assert "step 1/3 v1: already finished, not re-run" in said
    assert code == 0
    assert doc == COMPLETE
    assert record_file(results) == COMPLETE

    fresh = tmp_path / "fresh"
    go(mini(fresh))
    assert record_file(fresh) == record_file(results)


def test_resume_reads_the_finished_runs_numbers_from_their_folders(tmp_path, fake):
    results = tmp_path / "results"
    folder = failed_at_v2(results, fake)
    # The run's own summary.json says other numbers than the old record
    # file (count 100): the folder's are the ones taken.
    summary = folder / "s1-v1" / "summary.json"
    s = json.loads(summary.read_text())
    s["ops"]["insert"].update(count=777, per_second=77.5)
    summary.write_text(json.dumps(s))
    doc, _ = go(mini(results, resume=True))
    assert fake.calls == ["s1-v2", "s1-v3"]
    assert doc["steps"][0] == {"vus": 1, "testid": "s1-v1", "count": 777, "ops_per_s": 77.5, "errors": 0,
                               "k6_exit_code": 0}


def test_an_interrupted_run_keeps_the_finished_ones_and_marks_the_record(tmp_path, fake):
    results = tmp_path / "results"
    fake.fail["s1-v2"] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        go(mini(results))
    folder = results / "s1"
    assert fake.calls == ["s1-v1", "s1-v2"]
    assert record_file(results) == {"id": "s1", "params": {"duration": "5s", "settings": {"A": "1"}},
                                    "status": "interrupted", "steps": [STEP1]}
    assert sorted(p.name for p in folder.iterdir()) == ["mini.json", "s1-v1"]  # no half run 2, no stage
    assert sorted(p.name for p in results.iterdir()) == ["history.sqlite", "s1"]  # run 1 recorded in the history

    fake.fail.clear()
    fake.calls.clear()
    doc, _ = go(mini(results, resume=True))
    assert fake.calls == ["s1-v2", "s1-v3"]
    assert doc == COMPLETE


def test_exit_code_99_of_a_run_is_the_campaigns_also_when_resumed(tmp_path, fake):
    results = tmp_path / "results"
    fake.exit_codes["s1-v1"] = 99
    fake.fail["s1-v2"] = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        go(mini(results))
    fake.fail.clear()
    doc, code = go(mini(results, resume=True))
    # Planted bug caught: run_all's `return 99 if any(...)` made `return 0 if ...`.
    assert code == 99  # s1-v1 said 99 and was not re-run
    assert doc["steps"][0]["k6_exit_code"] == 99


def resume_refused(results: Path, fake: FakeRun, **kw) -> str:
    """The error of a refused resume, having checked that nothing ran and
    nothing was written."""
    before = snapshot(results)
    with pytest.raises(UserError) as e:
        go(mini(results, resume=True, **kw))
    assert fake.calls == []
    assert snapshot(results) == before
    return str(e.value)


@pytest.mark.parametrize("change, said", [
    ({"duration": "10s"}, "--duration differs: 10s here, 5s"),
    ({"settings": {"A": "2"}}, "--set differs: A=2 here, A=1"),
    ({"settings": {}}, "--set differs: (none) here, A=1"),
])
def test_resume_with_changed_parameters_is_refused_naming_the_key(tmp_path, fake, change, said):
    # Planted bug caught: _check_resume's `if before.get(k) != v` made `if False`.
    results = tmp_path / "results"
    folder = failed_at_v2(results, fake)
    assert resume_refused(results, fake, **change) == f"--resume s1: {said} in {folder / 'mini.json'}"


def test_resume_of_no_campaign_is_refused(tmp_path, fake):
    results = tmp_path / "results"
    results.mkdir()
    assert resume_refused(results, fake) == f"--resume s1: no mini at {results / 's1'} (no mini.json)"


def test_resume_with_a_finished_run_outside_the_plan_is_refused(tmp_path, fake):
    # Planted bug caught: _check_resume's `if testid not in planned` made `if False`.
    results = tmp_path / "results"
    failed_at_v2(results, fake)
    assert resume_refused(results, fake, vus=[2, 3]) == (
        "--resume s1: step s1-v1 is finished but not in this mini's plan")


@pytest.mark.parametrize("key, value, said", [
    ("knobs", {"A": "1", "VUS": "9", "DURATION": "5s"}, "sql-inserts VUS=9"),
    ("knobs", {"VUS": "1", "DURATION": "5s"}, "sql-inserts A=(none)"),
    ("workload", "sql-reads", "sql-reads (none)"),
])
def test_resume_over_a_run_that_ran_otherwise_is_refused(tmp_path, fake, key, value, said):
    # Planted bug caught: `_read`'s `or wrong` dropped (knobs not compared):
    # the two knobs cases resume over s1-v1 and run s1-v2, s1-v3.
    results = tmp_path / "results"
    folder = failed_at_v2(results, fake)
    params = folder / "s1-v1" / "params.json"
    p = json.loads(params.read_text())
    p[key] = value
    params.write_text(json.dumps(p))
    assert resume_refused(results, fake) == f"step s1-v1 ran other parameters than this mini's: {said}"


def test_resume_over_an_empty_run_folder_is_refused_as_run_folder_says(tmp_path, fake):
    results = tmp_path / "results"
    folder = failed_at_v2(results, fake)
    (folder / "s1-v2").mkdir()
    assert resume_refused(results, fake) == f"run s1-v2: params.json is missing in {folder / 's1-v2'}"


def test_resume_over_a_broken_run_folder_is_refused_as_run_folder_says(tmp_path, fake):
    results = tmp_path / "results"
    folder = failed_at_v2(results, fake)
    (folder / "s1-v1" / "summary.json").write_text('{"ops": ')
    said = resume_refused(results, fake)
    assert said.startswith(f"run s1-v1: {folder / 's1-v1' / 'summary.json'} is not readable JSON: "), said


# --- before anything runs ------------------------------------------------------

@pytest.mark.parametrize("cls", [Mini, Loose])
def test_a_bad_run_id_is_refused_before_anything_runs(tmp_path, fake, cls):
    # The id is good for step 1 (61 + "-v1": 64 characters), too long for
    # step 2 ("-v10": 65): every run's id is checked before the first runs.
    # Planted bug caught: prepare()'s id check moved into the loop over the
    # runs as they go (or checking children()[0] only): s1's run happens.
    results = tmp_path / "results"
    long_id = "x" * 61
    with pytest.raises(UserError) as e:
        go(mini(results, cls, id=long_id, vus=[1, 10]))
    assert str(e.value) == f"step id '{long_id}-v10' (--id + the step): use 1-64 letters, digits, . _ -"
    assert fake.calls == []
    assert not results.exists()


def test_a_used_series_id_is_refused_without_resume(tmp_path, fake):
    results = tmp_path / "results"
    folder = failed_at_v2(results, fake)
    before = snapshot(results)
    with pytest.raises(UserError) as e:
        go(mini(results))
    assert str(e.value) == f"{folder} exists: a mini id is used once (or --resume s1)"
    assert fake.calls == [] and snapshot(results) == before


# --- without a record file (scale) -------------------------------------------

def test_without_a_record_file_the_runs_go_straight_into_results(tmp_path, fake):
    results = tmp_path / "results"
    doc, code = go(mini(results, Loose))
    assert code == 0
    assert fake.calls == ["s1-v1", "s1-v2", "s1-v3"]
    assert doc["steps"] == COMPLETE["steps"]
    assert sorted(p.name for p in results.iterdir() if not p.name.startswith("history.sqlite")) == [
        "s1-v1", "s1-v2", "s1-v3"]  # no s1/, no record


def test_without_a_record_file_a_failure_names_the_run_and_keeps_the_ones_before(tmp_path, fake):
    # Planted bug caught: `if self.RECORD: raise` made `if True: raise` (no
    # prefix): the error is the bare "sql-inserts failed ...".
    results = tmp_path / "results"
    fake.fail["s1-v2"] = UserError(BOOM)
    with pytest.raises(UserError) as e:
        go(mini(results, Loose))
    assert str(e.value) == f"step 2/3 v2: {BOOM}; the steps before it are kept in {results}"
    assert sorted(snapshot(results)) == ["s1-v1", "s1-v1/k6.log", "s1-v1/limits.json", "s1-v1/params.json",
                                         "s1-v1/summary.json"]


def test_without_a_record_file_a_first_failure_says_nothing_is_kept(tmp_path, fake):
    results = tmp_path / "results"
    fake.fail["s1-v1"] = UserError(BOOM)
    with pytest.raises(UserError) as e:
        go(mini(results, Loose))
    assert str(e.value) == f"step 1/3 v1: {BOOM}"
    assert snapshot(results) == {}


def test_without_a_record_file_a_used_run_id_is_refused_before_anything_runs(tmp_path, fake):
    results = tmp_path / "results"
    (results / "s1-v3").mkdir(parents=True)
    with pytest.raises(UserError) as e:
        go(mini(results, Loose))
    assert str(e.value) == f"{results / 's1-v3'} exists: a run id is used once"
    assert fake.calls == []
    assert snapshot(results) == {"s1-v3": None}
