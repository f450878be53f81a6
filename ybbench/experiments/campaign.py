"""One campaign of `ybbench run`s: the loop that sweep, doe --run, reproduce
and scale share. Each campaign says only what is its own: which runs it
makes (their testids, workloads, knobs and order: children(), knobs()) and
what it does with their numbers (record(), add(), and its analysis after).

Here, once for all of them:
  - the plan's checks before any load: every run id valid; a new series'
    folder not there yet (or, without one, no run's folder); a resumed one's
    record file there, from the same parameters (params()), and no finished
    run outside the plan; k6 and the services reachable; the finished runs
    read back and checked, so a run that ran other knobs stops the resume
    before anything runs;
  - the loop: each run in order, skipped when finished ("already finished,
    not re-run"), otherwise run (with the live progress line) and read back
    through core/run_folder.py;
  - the series folder results/<id>/ appears with its first finished run
    (that run and the record file are staged together), so a campaign
    failing before it leaves nothing; later every run's folder is whole
    (run.run stages it), the record file is rewritten atomically after
    every run, and a failure or Ctrl-C says where the finished runs are
    and how to go on (--resume <id>).

A campaign without a record file (scale) puts its runs straight into the
results folder: no series folder, no resume.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, ClassVar

from ybbench.analysis import limits
from ybbench.core import formats, history_record, run_folder
from ybbench.core.catalog import TESTID
from ybbench.core.errors import UserError
from ybbench.core.files import keeps_finished, staged_dir
from ybbench.core.progress import RunProgress
from ybbench.run import k6_process, k6run

ID_MAX = 48  # a series id leaves 16 of a testid's 64 characters to its runs' suffixes


@dataclass
class Child:
    """One `ybbench run` of a campaign."""

    testid: str
    workload: str
    head: str  # names the run in what is said ("step 2/5 vus 4"); without a series folder, in its error
    live: str  # the live progress line's phase while it runs
    item: object = None  # the campaign's own: its step, row, phase or cluster
    before: str | None = None  # said before it runs (where k6's output may follow it: scale)


def show(v: object) -> str:
    """A parameter's value in a message: knobs as A=1,B=2."""
    if isinstance(v, dict):
        return ",".join(f"{k}={show(x)}" for k, x in sorted(v.items())) or "(none)"
    if isinstance(v, list):
        return ",".join(map(show, v)) or "(none)"
    return "(none)" if v is None else str(v)


def difference(new: object, old: object) -> str:
    """'<new> here, <old>' of a parameter, down to the first difference
    where it nests (doe's runs: 'd1-r2-1: knobs: ...')."""
    path = ""
    while isinstance(new, dict) and isinstance(old, dict) and any(
            isinstance(x, (dict, list)) for x in (*new.values(), *old.values())):
        k = next(k for k in sorted(set(new) | set(old)) if new.get(k) != old.get(k))
        path, new, old = path + f"{k}: ", new.get(k), old.get(k)
    return f"{path}{show(new)} here, {show(old)}"


@dataclass(kw_only=True)
class Campaign:
    """The plan, the resume and the loop; a campaign subclasses it with its
    own fields and the methods below marked "the campaign's"."""

    KIND: ClassVar[str] = "campaign"  # "a sweep id is used once", "no sweep at ..."
    RECORD: ClassVar[str | None] = None  # the record file in the series folder ("sweep.json"); None: no folder
    WHAT: ClassVar[str] = "runs"  # "the finished steps are kept in ..."
    CHILD: ClassVar[str] = "run"  # "step s1-vus2 ran other parameters than this sweep's"
    ID_FROM: ClassVar[str] = "--id"  # how a run's id is made, in its error
    DIFFERS: ClassVar[str] = "differs"  # "--set differs from the sweep's: ..."
    NAMES: ClassVar[dict[str, str]] = {}  # params() key -> its name in that message

    id: str  # the series id; the runs' ids start with it
    results: Path
    resume: bool = False
    prometheus: str | None = None
    loki: str | None = None
    quiet: bool = True  # False: k6's output shown, no live line (scale without --quiet)
    found: set[str] = field(default_factory=set)  # resumed: the runs already finished
    records: dict[str, dict] = field(default_factory=dict)  # testid -> record(), found or run
    runs: dict[str, run_folder.Run] = field(default_factory=dict)  # testid -> the run, as read back

    @property
    def folder(self) -> Path:
        return self.results / self.id

    # --- the campaign's -------------------------------------------------

    def children(self) -> list[Child]:
        """The runs, in the order they go."""
        raise NotImplementedError

    def params(self) -> dict:
        """What must match for a resume."""
        return {}

    def knobs(self, child: Child) -> dict[str, str]:
        """What the run is given, at the time it runs (earlier runs' records are in self.records)."""
        raise NotImplementedError

    def ran_with(self, child: Child) -> dict[str, str]:
        """Knobs a finished run must have run with to be this campaign's."""
        return {}

    def record(self, child: Child, run: run_folder.Run) -> dict:
        """Its numbers, from the run read back; a UserError if they do not fit."""
        raise NotImplementedError

    def add(self, doc: dict, child: Child, rec: dict) -> bool:
        """Its record into the record file's content; True stops the campaign here."""
        return False

    def run_options(self, child: Child) -> dict:
        """More of k6run.run's keywords for this run (ab: warmup_s, labels)."""
        return {}

    def resumed(self, old: dict) -> None:
        """Take what the campaign keeps from its old record file (doe: its order)."""

    def unplanned(self, testid: str) -> str:
        return f"{self.CHILD} {testid} is finished but not in this {self.KIND}'s plan"

    def found_note(self, child: Child, rec: dict) -> str:
        """After "already finished, not re-run"."""
        return ""

    def ran_line(self, child: Child, rec: dict, seconds: float) -> str | None:
        """What is said once it ran."""
        return None

    # --- the plan -------------------------------------------------------

    def prepare(self) -> None:
        """Every check of the campaign before any load (its plan() ends
        with it); a resume reads its finished runs back."""
        for c in self.children():
            if not TESTID.match(c.testid):
                raise UserError(f"{self.CHILD} id {c.testid!r} ({self.ID_FROM}): use 1-64 letters, digits, . _ -")
            if self.RECORD is None and (self.results / c.testid).exists():
                raise UserError(f"{self.results / c.testid} exists: a run id is used once")
        if self.RECORD is not None and self.resume:
            self._check_resume()
        elif self.RECORD is not None and self.folder.exists():
            raise UserError(f"{self.folder} exists: a {self.KIND} id is used once (or --resume {self.id})")
        k6_process.check_services(self.prometheus, self.loki)
        if self.RECORD is not None and self.resume:
            # Finished: whatever run folders exist, whether or not the record
            # file was rewritten after them (an interruption between the two).
            for c in self.children():
                if run_folder.finished(self.folder / c.testid):
                    self._read(c, self.folder / c.testid)
                    self.found.add(c.testid)

    def _check_resume(self) -> None:
        path = self.folder / self.RECORD
        if not path.is_file():
            raise UserError(f"--resume {self.id}: no {self.KIND} at {self.folder} (no {self.RECORD})")
        old = run_folder.read_json(path, f"--resume {self.id}")  # checked against its schema
        try:
            before = old["params"]
            if not isinstance(before, dict):
                raise ValueError("params is not an object")
        except (KeyError, TypeError, ValueError) as e:
            raise UserError(f"--resume {self.id}: {path} is not a {self.KIND}'s ({e})") from None
        for k, v in self.params().items():
            if before.get(k) != v:
                raise UserError(f"--resume {self.id}: {self.NAMES.get(k, k)} {self.DIFFERS}: "
                                f"{difference(v, before.get(k))} in {path}")
        try:
            self.resumed(old)
        except (ValueError, KeyError, TypeError) as e:
            raise UserError(f"--resume {self.id}: {path} is not a {self.KIND}'s ({e})") from None
        planned = {c.testid for c in self.children()}
        for testid in run_folder.finished_runs(self.folder, f"{self.id}-"):
            if testid not in planned:
                raise UserError(f"--resume {self.id}: {self.unplanned(testid)}")

    def _read(self, child: Child, folder: Path) -> dict:
        run = run_folder.read(folder)
        wrong = {k: run.knobs.get(k) for k, v in self.ran_with(child).items() if run.knobs.get(k) != v}
        if run.params.get("workload") != child.workload or wrong:
            raise UserError(f"{self.CHILD} {run.testid} ran other parameters than this {self.KIND}'s: "
                            f"{run.params.get('workload')} {show(wrong)}")
        self.runs[child.testid] = run
        self.records[child.testid] = rec = self.record(child, run)
        return rec

    # --- the loop -------------------------------------------------------

    def run_all(self, doc: dict, say: Callable[[str], None] = print) -> int:
        """Run (or resume) every run, `doc` (the record file's content)
        growing with each; returns the exit code: 99 when a run's k6 said
        99 (thresholds crossed: errors), else 0."""
        children = self.children()
        if formats.BY_NAME.get(self.RECORD):
            doc["format_version"] = formats.version(formats.BY_NAME[self.RECORD])
        staged = self.RECORD is not None and not self.resume  # the folder appears with its first run
        passed: list[str] = []
        keeping = keeps_finished(self.folder, doc, self.RECORD, self.WHAT, self.id) if self.RECORD else nullcontext()
        with keeping:
            for n, child in enumerate(children, start=1):
                last = n == len(children)
                passed.append(child.testid)
                if child.testid in self.found:
                    rec = self.records[child.testid]
                    say(f"{child.head}: already finished, not re-run{self.found_note(child, rec)}")
                    stop = self._added(doc, child, rec, last, self.folder)
                else:
                    started = time.time()
                    home = self.folder if self.RECORD else self.results
                    with staged_dir(home) if staged else nullcontext(home) as where:
                        rec = self._run(child, where, n, say)
                        stop = self._added(doc, child, rec, last, where)
                    if staged:  # the run was read from the stage, now renamed
                        self.runs[child.testid] = replace(self.runs[child.testid], folder=home / child.testid)
                    staged = False
                    # The history store beside the results folder (core/history_record.py).
                    said = history_record.keep(self.runs[child.testid].folder, self.results)
                    if said:
                        say(said)
                    line = self.ran_line(child, rec, time.time() - started)
                    if line:
                        say(line)
                if stop:
                    break
        return 99 if any(self.runs[t].params.get("k6_exit_code") == 99 for t in passed) else 0

    def _run(self, child: Child, where: Path, n: int, say: Callable[[str], None]) -> dict:
        if child.before:
            say(child.before)
        settings = [f"{k}={v}" for k, v in self.knobs(child).items()]
        try:
            with RunProgress(child.live) if self.quiet else nullcontext() as live:
                k6run.run(child.workload, testid=child.testid, results=where, prometheus=self.prometheus,
                          loki=self.loki, settings=settings, quiet=self.quiet, on_line=live.feed if live else None,
                          **self.run_options(child))
        except UserError as e:
            if self.RECORD:
                raise  # keeps_finished says where the finished runs are
            kept = f"; the {self.WHAT} before it are kept in {self.results}" if n > 1 else ""
            raise UserError(f"{child.head}: {e}{kept}", exit_code=e.exit_code) from None
        limits.record(where / child.testid, self.prometheus)  # what limited it, in its folder before it is read
        return self._read(child, where / child.testid)

    def _added(self, doc: dict, child: Child, rec: dict, last: bool, where: Path) -> bool:
        stop = self.add(doc, child, rec)
        if self.RECORD:
            doc["status"] = "stopped early" if stop else "complete" if last else "running"
            formats.write(where / self.RECORD, formats.BY_NAME.get(self.RECORD), doc)
        return stop
