"""The results format (ybbench/core/formats.py, ybbench/core/schemas/,
docs/results-format.md): the one reader refuses a renamed field, a wrong
type and a missing field, naming the file, the field and the version; reads
an older version through its documented upgrade to the same figures without
rewriting the file; refuses a newer one; `ybbench validate` says the same
with its exit codes; the docs page is the schemas' own.

The run folders here are written by the tests' helpers in the shape
`ybbench run` writes (tests/support/results_files.py); the same checks on
a real run's folder are in tests/native/test_results_format.py, and every
file every command writes in the end-to-end tests is checked as it is
written (YBBENCH_CHECK_WRITES=1, tests/conftest.py)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from ybbench.core import formats, run_folder, schema_docs
from ybbench.core.errors import UserError
from ybbench.core.files import write_json

from ..support import results_files
from ..support.stack import REPO
from ..support.ybbench_cli import ybbench

TESTID = "fmt-1"
LATENCY = {"avg": 1.5, "p50": 1.25, "p90": 2.0, "p95": 2.5, "p99": 3.75, "max": 9.0}


def current_folder(results: Path) -> Path:
    """A run folder of the current format: params, summary (two ops) and events."""
    folder = results / TESTID
    write_json(folder / "params.json", results_files.params(TESTID, knobs={"VUS": "4", "DURATION": "5s"},
                                                            started=1_700_000_000.25, finished=1_700_000_005.5))
    write_json(folder / "summary.json", results_files.summary(TESTID, {
        "insert": results_files.op(500, 100.0, latency_ms=LATENCY),
        "select": results_files.op(250, 50.0, errors=2)}, errors=2, rows_written=500))
    write_json(folder / "events.json", {"format_version": 1, "events": [
        {"at_s": 2, "action": "stop", "service": "yb-tserver-2", "time_unix_s": 1_700_000_002.3, "took_s": 0.4,
         "ok": True, "output": ""},
        {"at_s": 9, "action": "start", "service": "yb-tserver-2", "ok": False, "output": "not run: k6 had ended"}]})
    (folder / "k6-summary.json").write_text('{"metrics": {}}')  # k6's own: no kind, never checked
    return folder


def edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def refused(folder: Path) -> str:
    with pytest.raises(UserError) as e:
        run = run_folder.read(folder)
        run.events()
    return str(e.value)


# --- the schemas ----------------------------------------------------------------

def undescribed(node: object, where: str = "") -> list[str]:
    """Every field (a "properties" entry, at any depth) without a description."""
    out = []
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            if isinstance(sub, dict) and "description" not in sub and "$ref" not in sub:
                out.append(f"{where}.{name}")
        for k, v in node.items():
            if k != "if":  # a condition's properties are not fields
                out += undescribed(v, f"{where}/{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += undescribed(v, f"{where}[{i}]")
    return out


@pytest.mark.parametrize("kind", formats.kinds())
def test_each_schema_is_draft_2020_12_versioned_and_describes_every_field(kind):
    schema = formats.schema(kind)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # compare.json is version 2 since compare counts runs (version 1 compared one run's seconds a side);
    # summary.json since tpcc's NOPM, failed attempts and retry histogram.
    assert formats.version(kind) == (2 if kind in ("compare", "summary") else 1)
    assert undescribed(schema) == []


@pytest.mark.parametrize("kind", formats.kinds())
def test_each_kinds_example_file_matches_its_schema(kind):
    # The examples (docs/examples/<kind>.json) are trimmed real files (run,
    # verify, report, compare, sweep, doe --run, reproduce, doe and scale
    # analyses). events.json's is written by hand: its runs need the compose
    # stack.
    assert formats.problem(kind, schema_docs.example(kind)) is None, schema_docs.example_file(kind)


def test_an_example_that_left_its_format_is_caught():
    # The check above can fail: a field renamed in an example, or a number
    # written as a string, is named.
    params = schema_docs.example("params")
    params["start_unix_s"] = params.pop("started_unix_s")
    assert formats.problem("params", params)[0] == "started_unix_s"
    summary = schema_docs.example("summary")
    summary["duration_s"] = "5s"
    assert formats.problem("summary", summary) == ("duration_s", "'5s' is not of type 'number'")


def test_every_kind_is_documented_with_an_example_file_linked_from_the_page():
    assert sorted(schema_docs.ORDER) == formats.kinds()
    examples = REPO / "docs" / "examples"
    assert sorted(p.name for p in examples.iterdir()) == sorted(f"{k}.json" for k in formats.kinds())
    page = (REPO / "docs" / "results-format.md").read_text()
    for kind in formats.kinds():
        assert f"[`examples/{kind}.json`](examples/{kind}.json)" in page, kind
        assert "examples" not in formats.schema(kind), kind  # one copy: the file
    assert "```json" not in page  # the page holds the fields; the examples are files


def test_the_k6_scripts_write_the_summary_version_of_the_schema():
    js = (REPO / "k6-scripts" / "lib" / "summary.js").read_text()
    assert re.search(r"^export const FORMAT_VERSION = (\d+);$", js, re.M)[1] == str(formats.version("summary"))
    assert "format_version: FORMAT_VERSION," in js


def test_the_docs_page_is_generated_from_the_schemas(tmp_path):
    # Regenerate with `python3 -m ybbench.core.schema_docs`.
    assert (REPO / "docs" / "results-format.md").read_text() == schema_docs.render()
    assert schema_docs.main(["--check"]) == 0


def test_the_versions_table_names_each_file_whole():
    # Each path as its schema's x-ybbench-file gives it, up to its notes:
    # a path cut at its first space read `results/<compare` in the table.
    paths = {k: schema_docs.file_path(k) for k in schema_docs.ORDER}
    assert paths["compare"] == "results/<compare id>/compare.json"
    assert paths["summary"] == "results/<testid>/summary.json"
    assert paths["doctor"] == "results/doctor.json"
    for kind, path in paths.items():
        assert path.count("<") == path.count(">") and path.endswith(".json"), (kind, path)
        assert f"| `{path}` ({kind}) |" in schema_docs.render()


# --- the reader -------------------------------------------------------------------

def test_a_current_folder_reads_as_written(tmp_path):
    run = run_folder.read(current_folder(tmp_path))
    assert run.window == (1_700_000_000.25, 1_700_000_005.5)
    assert run.summary["ops"]["insert"]["latency_ms"]["p99"] == 3.75
    assert [e["action"] for e in run.events()] == ["stop", "start"]


@pytest.mark.parametrize("file, change, said", [
    # A field renamed: the old name is missing (the reader says which).
    ("summary.json", lambda d: d["ops"]["insert"].__setitem__("ops_per_second", d["ops"]["insert"].pop("per_second")),
     "field ops.insert.per_second is missing (required)"),
    ("params.json", lambda d: d.__setitem__("start_unix_s", d.pop("started_unix_s")),
     "field started_unix_s is missing (required)"),
    # A field added that the format does not have (a rename's new name alone).
    ("params.json", lambda d: d.__setitem__("ended_unix_s", 1.0),
     "field ended_unix_s is not a field of this format"),
    # A wrong unit type: a date for unix seconds, a string with its unit for ms.
    ("params.json", lambda d: d.__setitem__("started_unix_s", "2026-01-01T00:00:00Z"),
     "field started_unix_s '2026-01-01T00:00:00Z' is not of type 'number'"),
    ("summary.json", lambda d: d["ops"]["insert"]["latency_ms"].__setitem__("p99", "3.75 ms"),
     "field ops.insert.latency_ms.p99 '3.75 ms' is not of type 'number', 'null'"),
    # A required field missing.
    ("summary.json", lambda d: d.pop("errors"), "field errors is missing (required)"),
    ("events.json", lambda d: d["events"][0].pop("ok"), "field events[0].ok is missing (required)"),
])
def test_the_reader_refuses_a_file_not_in_its_format_naming_file_field_and_version(tmp_path, file, change, said):
    folder = current_folder(tmp_path)
    edit(folder / file, change)
    before = (folder / file).read_bytes()
    message = refused(folder)
    assert message.startswith(f"run {TESTID}: {folder / file}: {said}"), message
    assert f"format version {formats.version(formats.BY_NAME[file])}" in message, message
    assert (folder / file).read_bytes() == before


def test_a_newer_version_is_refused_and_a_version_that_is_not_one(tmp_path):
    folder = current_folder(tmp_path)
    now = formats.version("summary")
    edit(folder / "summary.json", lambda d: d.__setitem__("format_version", now + 1))
    assert refused(folder) == (f"run {TESTID}: {folder / 'summary.json'}: field format_version: version {now + 1} of "
                               f"the summary format is newer than this ybbench reads (version {now} and older): use a "
                               "newer ybbench")
    edit(folder / "summary.json", lambda d: d.__setitem__("format_version", "1"))
    assert refused(folder) == (f"run {TESTID}: {folder / 'summary.json'}: field format_version: '1' is not a version "
                               "(a whole number from 0)")


def lowered(folder: Path) -> None:
    """The folder as version 0 had it, as the documented upgrades say
    (docs/results-format.md): no format_version; params' started_unix_s and
    finished_unix_s named started and finished; events.json a bare list,
    each event's time_unix_s named time."""
    def params(d):
        del d["format_version"]
        d["started"], d["finished"] = d.pop("started_unix_s"), d.pop("finished_unix_s")
    edit(folder / "params.json", params)
    edit(folder / "summary.json", lambda d: d.pop("format_version"))
    events = json.loads((folder / "events.json").read_text())["events"]
    for e in events:
        if "time_unix_s" in e:
            e["time"] = e.pop("time_unix_s")
    (folder / "events.json").write_text(json.dumps(events))


def test_version_0_reads_back_to_the_same_figures_and_is_not_rewritten(tmp_path):
    now = run_folder.read(current_folder(tmp_path / "now"))
    old_folder = tmp_path / "old" / TESTID
    shutil.copytree(now.folder, old_folder)
    lowered(old_folder)
    on_disk = {p.name: p.read_bytes() for p in old_folder.iterdir()}
    old = run_folder.read(old_folder)
    assert old.params == now.params and old.summary == now.summary and old.events() == now.events()
    assert old.window == (1_700_000_000.25, 1_700_000_005.5)
    assert old.params["format_version"] == 1 and "started" not in old.params
    assert {p.name: p.read_bytes() for p in old_folder.iterdir()} == on_disk  # never rewritten


# --- ybbench validate -------------------------------------------------------------

def test_validate_passes_a_valid_folder_and_skips_k6s_own_json(tmp_path):
    current_folder(tmp_path / "results")
    p = ybbench("validate", tmp_path / "results")
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.splitlines()[-1] == ("3 results file(s) checked, 0 invalid; 1 other JSON file(s) skipped "
                                         "(not ybbench's: k6's own)")


def test_validate_names_the_invalid_file_and_field_and_exits_1(tmp_path):
    folder = current_folder(tmp_path / "results")
    lowered(folder)
    edit(folder / "summary.json", lambda d: d.__setitem__("duration_s", "5s"))
    p = ybbench("validate", tmp_path / "results")
    assert p.returncode == 1, p.stdout + p.stderr
    assert f"ok      {folder / 'params.json'} (params version 0, read as version 1)" in p.stdout
    assert (f"INVALID {folder / 'summary.json'}: field duration_s '5s' is not of type 'number': not the summary "
            "format version 0 (read as version 2 after the upgrade from 0)") in p.stdout
    assert p.stdout.splitlines()[-1].startswith("3 results file(s) checked, 1 invalid")


def test_validate_exits_2_for_a_missing_path_or_a_file_that_is_not_a_results_file(tmp_path):
    folder = current_folder(tmp_path / "results")
    p = ybbench("validate", folder / "params.json", tmp_path / "nosuch")
    assert p.returncode == 2 and p.stderr == f"ybbench: error: no such file or folder: {tmp_path / 'nosuch'}\n"
    p = ybbench("validate", folder / "k6-summary.json")
    assert p.returncode == 2 and "k6-summary.json: not a ybbench results file" in p.stderr, p.stderr
