"""The one reader of a run's folder, results/<testid>/: every command that
reads a run (report, verify, demo, and the campaigns: sweep, doe --run,
scale, reproduce, through experiments/campaign.py) comes here, so a missing
or broken run gets the same error everywhere.

A run's folder holds, from `ybbench run` (run/k6run.py):
  params.json   what ran, with which knobs, when (started_unix_s/finished_unix_s)
  summary.json  the workload's own summary (k6-scripts/lib/summary.js)
  per-second.json  each op's count and latency per second, with our Go
                module (k6-scripts/lib/series.js; read by core/per_second.py)
  events.json   the faults it applied, when it had any (run/faults.py)
  doctor.json   doctor's verdict on the stack, with run --doctor (doctor/runner.py)

Every results file read here (these, and the campaigns', compares' and
analyses' files read through read_json) is checked against its schema and
read in the current version (core/formats.py: older versions upgraded in
memory, newer or broken ones refused naming the file, field and version).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ybbench.core import formats
from ybbench.core.catalog import SECRET_NAMES, TESTID
from ybbench.core.errors import UserError

PARAMS = "params.json"
SUMMARY = "summary.json"
EVENTS = "events.json"
DOCTOR = "doctor.json"
LIMITS = "limits.json"  # what limited the run (analysis/limits.py)


def read_json(path: Path, what: str) -> object:
    """A JSON file ours or k6 wrote; `what` names it in the error
    ("run sql-inserts-1", "sweep s1"). One of ours (formats.kind_of) comes
    back checked, in the current version."""
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"{what}: {path.name} is missing in {path.parent}") from None
    except OSError as e:
        raise UserError(f"{what}: cannot read {path}: {e.strerror}") from None
    except ValueError as e:
        raise UserError(f"{what}: {path} is not readable JSON: {e}") from None
    kind = formats.kind_of(path, doc)
    if kind is None:
        return doc
    try:
        return formats.upgraded(path, kind, doc)
    except UserError as e:
        raise UserError(f"{what}: {e}") from None


def optional(folder: Path, name: str) -> object | None:
    """A run's results file that not every run has (per-second.json,
    usage.json, limits.json), read as read_json does; None when absent."""
    path = folder / name
    return read_json(path, f"run {folder.name}") if path.is_file() else None


def summary(folder: Path) -> dict:
    """A run's (or one load generator's) summary.json."""
    return read_json(folder / SUMMARY, f"run {folder.name}")


def finished(folder: Path) -> bool:
    """A run's folder is whole or absent (run.run stages it: core/files.py),
    so one that exists has finished; read() names what a broken one lacks."""
    return folder.is_dir()


def finished_runs(folder: Path, prefix: str) -> list[str]:
    """The ids of the finished runs in a series' folder (sweep, doe --run,
    reproduce) whose ids start with `prefix`."""
    if not folder.is_dir():
        return []
    return sorted(d.name for d in folder.iterdir() if d.name.startswith(prefix) and finished(d))


@dataclass(frozen=True)
class Run:
    testid: str
    folder: Path
    params: dict
    summary: dict

    @property
    def window(self) -> tuple[float, float]:
        """When k6 started and ended (unix seconds), as params.json says."""
        return self.params["started_unix_s"], self.params["finished_unix_s"]

    @property
    def knobs(self) -> dict[str, str]:
        return self.params.get("knobs", {})

    @property
    def shown_knobs(self) -> dict[str, str]:
        """The knobs a page or file may show: never one that names a secret
        (ybbench run records none; a params.json from elsewhere might)."""
        return {k: v for k, v in self.knobs.items() if not SECRET_NAMES.search(k)}

    def events(self) -> list[dict]:
        """The faults the run applied; none when it had none."""
        path = self.folder / EVENTS
        return read_json(path, f"run {self.testid}")["events"] if path.exists() else []

    def doctor(self) -> dict | None:
        """Doctor's verdict on the stack before the run (run --doctor); None without one."""
        path = self.folder / DOCTOR
        return read_json(path, f"run {self.testid}") if path.exists() else None


def read(folder: Path) -> Run:
    """The run in `folder`; a UserError naming what is missing or broken."""
    if not folder.is_dir():
        raise UserError(f"no run {folder.name!r}: {folder} does not exist")
    what = f"run {folder.name}"
    return Run(folder.name, folder, read_json(folder / PARAMS, what), read_json(folder / SUMMARY, what))


def load(results: Path, testid: str) -> Run:
    """The run `testid` under a results folder, the id checked first."""
    if not TESTID.match(testid):
        raise UserError(f"testid {testid!r}: use 1-64 letters, digits, . _ -")
    return read(results / testid)
