"""The results format on a real run's folder (`ybbench run` against the
test PostgreSQL): `ybbench validate` passes it; lowered to version 0 as the
documented upgrade says (docs/results-format.md), it reads back to the same
figures, and the same `ybbench report` numbers, without being rewritten."""

from __future__ import annotations

import json
import shutil
import uuid

from ybbench.core import run_folder

from ..support.ybbench_cli import ybbench, ybbench_run


def lowered(folder):
    """Version 0, as the upgrades in ybbench/core/formats.py document it."""
    params = json.loads((folder / "params.json").read_text())
    del params["format_version"]
    params["started"], params["finished"] = params.pop("started_unix_s"), params.pop("finished_unix_s")
    (folder / "params.json").write_text(json.dumps(params))
    summary = json.loads((folder / "summary.json").read_text())
    del summary["format_version"]
    (folder / "summary.json").write_text(json.dumps(summary))


def test_a_real_run_validates_and_reads_back_from_version_0(postgres, tmp_path):
    results = tmp_path / "results"
    tid = f"fmt{uuid.uuid4().hex[:8]}"
    done = ybbench_run("sql-inserts", postgres, results, testid=tid, knobs={"VUS": 2, "DURATION": "2s",
                                                                          "KEY_PREFIX": tid})
    assert done.code == 0, done.output
    p = ybbench("validate", results)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines() == [f"ok      {done.folder / 'limits.json'} (limits version 1)",
                                     f"ok      {done.folder / 'params.json'} (params version 1)",
                                     f"ok      {done.folder / 'per-second.json'} (per-second version 1)",
                                     f"ok      {done.folder / 'summary.json'} (summary version 2)",
                                     f"ok      {done.folder / 'usage.json'} (usage version 1)",
                                     "5 results file(s) checked, 0 invalid; 1 other JSON file(s) skipped "
                                     "(not ybbench's: k6's own)"]
    now = run_folder.read(done.folder)
    assert now.summary["ops"]["insert"]["count"] > 0

    old_results = tmp_path / "old"
    shutil.copytree(results, old_results)
    lowered(old_results / tid)
    on_disk = {p.name: p.read_bytes() for p in (old_results / tid).iterdir()}
    old = run_folder.read(old_results / tid)
    assert (old.params, old.summary, old.window) == (now.params, now.summary, now.window)
    p = ybbench("validate", old_results)
    assert p.returncode == 0 and f"(params version 0, read as version 1)" in p.stdout, p.stdout + p.stderr

    reports = []
    for where in (results, old_results):
        r = ybbench("report", tid, "--results", where)
        assert r.returncode == 0, r.stderr
        data = json.loads((where / tid / "report.json").read_text())
        reports.append((data["runs"][0]["summary"], data["runs"][0]["window"], data["runs"][0]["charts"]))
    assert reports[0] == reports[1]
    assert {p.name: p.read_bytes() for p in (old_results / tid).iterdir() if p.name in on_disk} == on_disk
