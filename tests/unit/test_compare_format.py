"""A compare.json of format 1 (tests/data/compare-v1: written by compare
before it counted runs) still reads: the one reader upgrades it to format
2 (each side the one run it named), `ybbench validate` passes it, the
page's table and the gate's words say what its interval rests on."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from ybbench.analysis import compare_gate
from ybbench.core import formats, run_folder
from ybbench.report import compare_html

from ..support.stack import REPO

OLD = REPO / "tests" / "data" / "compare-v1" / "compare.json"


def test_a_format_1_file_reads_as_format_2_each_side_its_one_run():
    raw = json.loads(OLD.read_text())
    assert raw["format_version"] == 1 and "groups" not in raw
    doc = run_folder.read_json(OLD, "compare v1")
    assert doc["format_version"] == formats.version("compare") == 2
    (c,) = doc["comparisons"]
    assert doc["groups"] == {raw["base"]: [raw["base"]], raw["others"][0]: [raw["others"][0]]}
    assert (c["base_runs"], c["other_runs"]) == ([raw["base"]], [raw["others"][0]])
    # Its figures are what format 1 said: the seconds' bootstrap, its verdict.
    s = c["ops"]["select"]
    assert s == raw["comparisons"][0]["ops"]["select"] and s["verdict"] == "slower"
    assert "moving-block bootstrap" in doc["method"]
    assert "the seconds of one run a side (format 1)" in compare_html.table(doc)
    gate = compare_gate.evaluate(doc, compare_gate.parse(["slower:5%"]))
    assert "(seconds of one run a side)" in gate["failed"][0]


def test_validate_passes_it(tmp_path):
    shutil.copytree(OLD.parent, tmp_path / "cmp")
    p = subprocess.run([sys.executable, "-m", "ybbench", "validate", str(tmp_path / "cmp")], cwd=REPO,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "compare.json (compare version 1, read as version 2)" in p.stdout, p.stdout
