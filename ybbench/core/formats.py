"""The results format: one JSON Schema (draft 2020-12) per kind of file
ybbench writes into results/ (core/schemas/<kind>.schema.json), the version
each file carries in "format_version", and the upgrades that read older
versions. docs/results-format.md is generated from these
(core/schema_docs.py).

Reading (core/run_folder.py, the one reader): a file's version is its
"format_version" (absent: 0, a file from before ybbench versioned them).
An older one goes through UPGRADES, one version at a time, in memory (the
file is never rewritten); a newer one is refused. Then it must match its
schema, or a UserError names the file, the field and the version.

Writing: write() stamps nothing (each writer puts format_version in its
document); with YBBENCH_CHECK_WRITES=1 (the tests set it) it checks the
document against its schema first, so every file every command writes in
the tests is checked.
"""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path
from typing import Callable

from ybbench.core.errors import UserError
from ybbench.core.files import write_json

SCHEMAS = Path(__file__).parent / "schemas"
CHECK_WRITES = "YBBENCH_CHECK_WRITES"

# The file names that say their kind; results.json and a report's JSON
# (its name follows --out) are told by their content (kind_of).
BY_NAME = {
    "params.json": "params", "summary.json": "summary", "events.json": "events", "verify.json": "verify",
    "compare.json": "compare", "sweep.json": "sweep", "doe.json": "doe", "reproduce.json": "reproduce",
    "report.json": "report", "doctor.json": "doctor", "history.json": "history", "per-second.json": "per-second",
    "ab.json": "ab", "usage.json": "usage", "limits.json": "limits",
}
# JSON in results/ that is not ybbench's: k6's own --summary-export.
NOT_OURS = {"k6-summary.json"}


@cache
def schema(kind: str) -> dict:
    return json.loads((SCHEMAS / f"{kind}.schema.json").read_text())


def kinds() -> list[str]:
    return sorted(p.name.removesuffix(".schema.json") for p in SCHEMAS.glob("*.schema.json"))


def version(kind: str) -> int:
    """The version this ybbench writes and reads: its schema's format_version."""
    return schema(kind)["properties"]["format_version"]["const"]


def kind_of(path: Path, doc: object) -> str | None:
    """The kind of a results file, from its name or, for results.json and a
    report's JSON, its content; None when it is not one of ours."""
    if path.name in NOT_OURS:
        return None
    if path.name in BY_NAME:
        return BY_NAME[path.name]
    if not isinstance(doc, dict):
        return None
    if path.name == "results.json":
        return "doe-results" if "design" in doc else "scale-results" if "fit" in doc else None
    if isinstance(doc.get("runs"), list) and "not_in_this_version" in doc:
        return "report"
    return None


# --- upgrades ----------------------------------------------------------------
# UPGRADES[kind][n] turns a document of version n into one of version n + 1,
# as a new object (the one read is left as it was). Their docstrings are the
# documented upgrade (docs/results-format.md, "Versions and upgrades").

def _stamped(doc: dict, n: int) -> dict:
    return {**doc, "format_version": n}


def _renamed(doc: dict, names: dict[str, str]) -> dict:
    return {names.get(k, k): v for k, v in doc.items()}


def params_0_to_1(doc: dict) -> dict:
    """params.json 0 -> 1: "started" and "finished" are renamed "started_unix_s"
    and "finished_unix_s" (unix seconds, as before); "format_version": 1 added."""
    return _stamped(_renamed(doc, {"started": "started_unix_s", "finished": "finished_unix_s"}), 1)


def events_0_to_1(doc: list) -> dict:
    """events.json 0 -> 1: the list of events becomes the "events" field of an
    object that holds "format_version": 1, and each event's "time" is renamed
    "time_unix_s" (unix seconds, as before)."""
    if not isinstance(doc, list):
        return doc  # not a version 0 events.json: the schema says what is wrong
    return {"format_version": 1, "events": [_renamed(e, {"time": "time_unix_s"}) if isinstance(e, dict) else e
                                            for e in doc]}


def stamped_0_to_1(doc: dict) -> dict:
    """0 -> 1 (every other kind): the same fields, with "format_version": 1 added."""
    return _stamped(doc, 1) if isinstance(doc, dict) else doc


def _runs_1_to_2(doc: dict) -> dict:
    if not (isinstance(doc, dict) and isinstance(doc.get("comparisons"), list)):
        return doc
    others = doc.get("others") if isinstance(doc.get("others"), list) else []
    groups = {g: [g] for g in [doc.get("base"), *others] if isinstance(g, str)}
    comparisons = [{**c, "base_runs": [c.get("base")], "other_runs": [c.get("other")]} if isinstance(c, dict) else c
                   for c in doc["comparisons"]]
    return {**doc, "groups": groups, "comparisons": comparisons}


def compare_1_to_2(doc: dict) -> dict:
    """compare.json 1 -> 2: runs compared (and each phase of a reproduce's)
    get "groups" (each side's runs: the one run it named) and each
    comparison "base_runs" and "other_runs" (that run). Its figures are
    left as they were: version 1's verdicts came from a bootstrap over one
    run's seconds a side (core/bootstrap.py, its method field says so)."""
    if not isinstance(doc, dict):
        return doc
    if doc.get("kind") == "reproduce" and isinstance(doc.get("phases"), dict):
        return _stamped({**doc, "phases": {k: _runs_1_to_2(v) for k, v in doc["phases"].items()}}, 2)
    return _stamped(_runs_1_to_2(doc) if "kind" not in doc else doc, 2)


def summary_1_to_2(doc: dict) -> dict:
    """summary.json 1 -> 2: the same fields, with "format_version": 2 added
    (version 2 added tpcc.nopm and, per transaction in tpcc.attempts,
    failed_attempts and retry_histogram, which version 1 files lack)."""
    return _stamped(doc, 2) if isinstance(doc, dict) else doc


def upgrades(kind: str) -> dict[int, Callable]:
    out = {0: {"params": params_0_to_1, "events": events_0_to_1}.get(kind, stamped_0_to_1)}
    if kind == "compare":
        out[1] = compare_1_to_2
    if kind == "summary":
        out[1] = summary_1_to_2
    return out


# --- checking ------------------------------------------------------------------

def _where(path: list) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def problem(kind: str, doc: object) -> tuple[str, str] | None:
    """(field, what is wrong) of the document's most relevant schema error,
    or None when it matches its schema."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    err = best_match(Draft202012Validator(schema(kind)).iter_errors(doc))
    if err is None:
        return None
    path = list(err.absolute_path)
    if err.validator == "required" and isinstance(err.instance, dict):
        missing = next(p for p in err.validator_value if p not in err.instance)
        return _where(path + [missing]), "is missing (required)"
    if err.validator in ("additionalProperties", "unevaluatedProperties"):
        extra = re.findall(r"'([^']+)'", err.message.split("(", 1)[-1])
        return _where(path + extra[:1]), "is not a field of this format (renamed or unknown)"
    message = err.message if len(err.message) <= 300 else err.message[:150] + " ... " + err.message[-120:]
    return _where(path) or "(the file)", message


def upgraded(path: Path, kind: str, doc: object) -> object:
    """The document of `kind` read from `path`, as this version holds it:
    older versions upgraded in memory, then checked; a UserError naming the
    file, the field and the version otherwise."""
    v = doc.get("format_version", 0) if isinstance(doc, dict) else 0
    current = version(kind)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise UserError(f"{path}: field format_version: {v!r} is not a version (a whole number from 0)")
    if v > current:
        raise UserError(f"{path}: field format_version: version {v} of the {kind} format is newer than this ybbench "
                        f"reads (version {current} and older): use a newer ybbench")
    for n in range(v, current):
        doc = upgrades(kind)[n](doc)
    found = problem(kind, doc)
    if found:
        field, what = found
        upgrade = f" (read as version {current} after the upgrade from {v})" if v < current else ""
        raise UserError(f"{path}: field {field} {what}: not the {kind} format version {v}{upgrade} "
                        "(docs/results-format.md)")
    return doc


def write(path: Path, kind: str | None, doc: dict) -> None:
    """Write a results file (atomically); with YBBENCH_CHECK_WRITES=1, only
    one that matches its schema (kind None: a file of no kind, unchecked)."""
    if kind is not None and os.environ.get(CHECK_WRITES) == "1":
        check_written(path, kind, json.loads(json.dumps(doc)))
    write_json(path, doc)


def check_file(path: Path, kind: str) -> None:
    """check_written of a file as it is on disk (one k6's script wrote)."""
    if os.environ.get(CHECK_WRITES) == "1" and path.is_file():
        check_written(path, kind, json.loads(path.read_text()))


def check_written(path: Path, kind: str, doc: object) -> None:
    """With YBBENCH_CHECK_WRITES=1: a file ybbench (or its k6 script) wrote
    must be of the current version and match its schema."""
    if os.environ.get(CHECK_WRITES) != "1":
        return
    v = doc.get("format_version") if isinstance(doc, dict) else None
    if v != version(kind):
        raise UserError(f"{path}: written with format_version {v!r}, not {version(kind)} ({CHECK_WRITES}=1)")
    found = problem(kind, doc)
    if found:
        raise UserError(f"{path}: written not matching the {kind} format version {v}: field {found[0]} {found[1]} "
                        f"({CHECK_WRITES}=1)")
