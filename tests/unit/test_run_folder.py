"""One reader of a run's folder (ybbench/core/run_folder.py): every command
that reads a run gives the same error for the same missing or broken file,
and writes nothing."""

from __future__ import annotations

import json

import pytest

from ..support import results_files
from ..support.ybbench_cli import ybbench

TESTID = "r1"
PARAMS = results_files.params(TESTID, started=1.0, finished=2.0)


def broken_run(tmp_path, fault: str):
    """A results folder whose run `r1` has one planted fault."""
    folder = tmp_path / "results" / TESTID
    folder.mkdir(parents=True)
    (folder / "params.json").write_text(json.dumps(PARAMS))
    if fault == "no summary":
        return folder, f"ybbench: error: run {TESTID}: summary.json is missing in {folder}"
    if fault == "broken summary":
        (folder / "summary.json").write_text('{"ops": ')
        return folder, f"ybbench: error: run {TESTID}: {folder / 'summary.json'} is not readable JSON: "
    if fault == "summary not an object":
        (folder / "summary.json").write_text("[1, 2]")
        return folder, (f"ybbench: error: run {TESTID}: {folder / 'summary.json'}: field (the file) [1, 2] is not of "
                        "type 'object'")
    raise AssertionError(fault)


@pytest.mark.parametrize("fault", ["no summary", "broken summary", "summary not an object"])
def test_report_and_verify_say_the_same_about_a_broken_run(tmp_path, fault):
    folder, message = broken_run(tmp_path, fault)
    before = sorted(p.name for p in folder.iterdir())
    said = []
    for cmd in (["report", TESTID], ["verify", TESTID]):
        r = ybbench(*cmd, "--results", str(tmp_path / "results"))
        assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
        said.append(r.stderr.strip().splitlines()[-1])
        assert sorted(p.name for p in folder.iterdir()) == before, cmd  # nothing written beside it
    assert said[0] == said[1], said
    assert said[0].startswith(message), said[0]


def test_a_missing_run_is_named(tmp_path):
    (tmp_path / "results").mkdir()
    for cmd in (["report", "nosuch"], ["verify", "nosuch"]):
        r = ybbench(*cmd, "--results", str(tmp_path / "results"))
        assert r.returncode != 0, r.stderr
        assert f"no run 'nosuch': {tmp_path / 'results' / 'nosuch'} does not exist" in r.stderr, r.stderr

