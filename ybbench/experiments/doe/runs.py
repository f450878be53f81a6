"""`ybbench doe DESIGN.yaml --run`: every run of the design, each
replication one `ybbench run` (run.run), then the analysis of what they
measured.

Everything lives in results/<design-id>/: doe.json (the plan, the random
run order and its shuffle number, each finished run's y; rewritten atomically after each
run), the load's folder `<design-id>-load` when read rows need keys, one
folder per run and replication `<design-id>-r<run>-<replication>`, and
analysis/ (results.json and the charts). The design is a campaign
(experiments/campaign.py), as `ybbench sweep` is: its folder appears with
its first finished k6 run, each run's folder is whole (run.run stages it)
or absent, and `--resume <design-id>` runs only the runs whose folder is
missing. Here: the runs (the load, the rows in their random order), their
keys, their y, and the analysis.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ybbench.core import catalog, formats, run_folder
from ybbench.core.errors import UserError
from ybbench.experiments import campaign
from ybbench.experiments.doe import analysis as doe_report
from ybbench.experiments.doe.file import DesignFile, load
from ybbench.experiments.doe.plan import LOADER, MIXED, OWN_KNOBS, Row, RunSpec

DESIGN_ID_MAX = 40  # leaves room for -r<run>-<replication> in a 64-char testid


@dataclass
class Job:
    """One k6 run: a row of the sign table, one replication."""

    testid: str
    row: Row
    rep: int  # 1-based


@dataclass(kw_only=True)
class Plan(campaign.Campaign):
    KIND, RECORD, WHAT, CHILD = "design", "doe.json", "runs", "run"
    ID_FROM, DIFFERS = "--id + run and replication", "differs from the design's"

    df: DesignFile
    spec: RunSpec
    settings: dict[str, str]  # --set, every run
    shuffle: int  # the number that drew the run order
    order: list[Job]  # the order the runs go in

    @property
    def load_id(self) -> str:
        return f"{self.id}-load"

    def job_knobs(self, job: Job) -> dict[str, str]:
        """What the file and --set give the row; the keys come at run time."""
        return {**self.settings, **job.row.knobs, "DURATION": self.spec.duration}

    def load_knobs(self) -> dict[str, str]:
        ld = self.spec.load
        return {**self.settings, **ld.knobs, "NUM_UNIQUE_KEYS": str(ld.keys), "DURATION": ld.duration}

    def params(self) -> dict:
        """What must match for a resume."""
        ld = self.spec.load
        return {"factors": {f.letter: list(f.levels) for f in self.df.factors},
                "generators": [str(g) for g in self.df.design.generators], "response": self.spec.response,
                "replications": self.spec.replications, "duration": self.spec.duration,
                "runs": {j.testid: {"workload": j.row.workload, "knobs": self.job_knobs(j)} for j in self.order},
                "load": ld and {"workload": ld.workload, "testid": self.load_id, "knobs": self.load_knobs()}}

    def resumed(self, old: dict) -> None:
        """The design's order is kept (and the shuffle number that drew it;
        "seed" in a doe.json written before it was renamed)."""
        by_id = {j.testid: j for j in self.order}
        self.shuffle = old["shuffle"] if "shuffle" in old else old["seed"]
        self.order = [by_id[t] for t in old["order"]]

    def children(self) -> list[campaign.Child]:
        """The load (when read rows need keys), then the rows' runs in the order."""
        ld, out = self.spec.load, []
        if ld:
            out.append(campaign.Child(self.load_id, ld.workload, f"load {self.load_id}",
                                      f"load: {ld.workload}, {ld.keys} keys"))
        for i, job in enumerate(self.order, start=1):
            head = f"run {i}/{len(self.order)} {job.testid} ({_levels(job.row)})"
            out.append(campaign.Child(job.testid, job.row.workload, head,
                                      f"{head} {job.row.workload}, {self.spec.duration}", job))
        return out

    def knobs(self, child: campaign.Child) -> dict[str, str]:
        if child.item is None:
            return {**self.load_knobs(), "KEY_PREFIX": catalog.fresh_prefix("l")}
        job = child.item
        knobs = self.job_knobs(job)
        if job.row.workload in LOADER:
            knobs.update(KEY_PREFIX=self.records[self.load_id]["key_prefix"], MAX_WRITTEN_KEY=str(self.spec.load.keys))
        elif job.row.workload in catalog.NEW_KEYS:
            knobs["KEY_PREFIX"] = catalog.fresh_prefix("w")
        return knobs

    def ran_with(self, child: campaign.Child) -> dict[str, str]:
        if child.item is None:
            return self.load_knobs()
        want = self.job_knobs(child.item)
        if child.workload in LOADER:
            want["MAX_WRITTEN_KEY"] = str(self.spec.load.keys)
            if self.load_id in self.records:
                want["KEY_PREFIX"] = self.records[self.load_id]["key_prefix"]
        return want

    def record(self, child: campaign.Child, run: run_folder.Run) -> dict:
        summary, job = run.summary, child.item
        if job is None:
            if summary["rows_written"] != self.spec.load.keys:
                raise UserError(f"load {run.testid}: wrote {summary['rows_written']} of its {self.spec.load.keys} "
                                f"keys (errors {summary['errors']}); a longer run.load.duration, or a new design id")
            return {"testid": run.testid, "key_prefix": run.knobs["KEY_PREFIX"], "keys": summary["rows_written"],
                    "ops_per_s": sum(o["per_second"] for o in summary["ops"].values())}
        return {"testid": job.testid, "run": job.row.run, "replication": job.rep, "workload": job.row.workload,
                "y": response(summary, self.spec.response, job.testid),
                "ops_per_s": sum(o["per_second"] for o in summary["ops"].values()), "errors": summary["errors"],
                "k6_exit_code": run.params.get("k6_exit_code"), "summary": f"{job.testid}/{run_folder.SUMMARY}"}

    def add(self, doc: dict, child: campaign.Child, rec: dict) -> bool:
        if child.item is None:
            doc["load"] = rec
        else:
            doc["runs"][child.testid] = rec
        return False

    def found_note(self, child: campaign.Child, rec: dict) -> str:
        return "" if child.item is None else f" (y = {rec['y']:.6g})"

    def ran_line(self, child: campaign.Child, rec: dict, seconds: float) -> str:
        if child.item is None:
            return f"load {child.testid}: {child.workload} wrote {rec['keys']} keys"
        errors = f", {rec['errors']} errors" if rec["errors"] else ""
        return f"{child.head}: {child.workload}, {self.spec.response} = {rec['y']:.6g}{errors} ({seconds:.0f} s)"


def jobs(design_id: str, spec: RunSpec) -> list[Job]:
    return [Job(f"{design_id}-r{row.run}-{rep}", row, rep) for row in spec.rows
            for rep in range(1, spec.replications + 1)]


def shuffled(all_jobs: list[Job], shuffle: int) -> list[Job]:
    """Runs in a random order (a drift of the machine over time then spreads
    over every effect instead of landing on one), the same for the same
    shuffle number."""
    order = list(all_jobs)
    random.Random(shuffle).shuffle(order)
    return order


def plan(path: str, *, design_id: str | None, resume: str | None, results: Path, settings: list[str],
         prometheus: str | None, loki: str | None, out: str | None, alpha: float) -> Plan:
    """Every check that can be made before any load; raises UserError."""
    doe_report.check_args(out, alpha)
    df = load(Path(path))
    if df.run is None:
        raise UserError(f"{path}: --run: the file has no run: section (which workload and knobs each "
                        "factor's levels run)")
    spec = df.run
    knobs = catalog.parse_settings(settings)
    for k in knobs:
        if k in OWN_KNOBS:
            raise UserError(f"--set {k}: set by {OWN_KNOBS[k]}")
        if k in spec.sources or (spec.load and k in spec.load.knobs and k not in spec.knobs):
            raise UserError(f"--set {k}: set by the design file ({spec.sources.get(k, 'run.load.knobs')})")
    if spec.response != "ops_per_s" and not prometheus:
        mixed = [r for r in spec.rows if r.workload in MIXED and {**knobs, **r.knobs}.get("OP_LATENCY_SUMMARY") != "on"]
        if mixed:
            raise UserError(f"{path}: run.response {spec.response}: run {mixed[0].run} ({mixed[0].workload}) may mix "
                            "ops, whose latencies are in its summary only with OP_LATENCY_SUMMARY=on "
                            "(run.knobs) or with --prometheus")
    did = catalog.series_id(design_id, resume,
                            f"{re.sub(r'[^A-Za-z0-9_.-]', '-', df.name)[:24]}-{time.strftime('%Y%m%dT%H%M%S')}",
                            DESIGN_ID_MAX)
    shuffle = spec.shuffle if spec.shuffle is not None else random.SystemRandom().randrange(2 ** 31)
    p = Plan(id=did, results=results, resume=bool(resume), prometheus=prometheus, loki=loki, df=df, spec=spec,
             settings=knobs, shuffle=shuffle, order=shuffled(jobs(did, spec), shuffle))
    p.prepare()
    if out is None and (p.folder / "analysis").exists():
        raise UserError(f"{p.folder / 'analysis'} exists: this design is finished and analysed")
    return p


def response(summary: dict, name: str, testid: str) -> float:
    """y from one run's summary.json (doe_plan.RESPONSES)."""
    ops = summary["ops"]
    if name == "ops_per_s":
        return float(sum(o["per_second"] for o in ops.values()))
    if not ops or any(o["latency_ms"] is None for o in ops.values()):
        raise UserError(f"run {testid}: its summary.json has no per-op latency for {name} "
                        "(OP_LATENCY_SUMMARY=on or --prometheus)")
    slowest = max(ops.values(), key=lambda o: o["latency_ms"]["p99"])
    return float(slowest["latency_ms"][name.removesuffix("_ms")])


def execute(p: Plan, say=print) -> tuple[dict, int]:
    """Run (or resume) the design; returns doe.json's content and the exit code."""
    doc = {"design_id": p.id, "file": str(p.df.path), "params": p.params(), "shuffle": p.shuffle,
           "order": [j.testid for j in p.order], "prometheus": p.prometheus, "loki": p.loki, "load": None, "runs": {},
           "status": "running"}
    code = p.run_all(doc, say)
    return doc, code


def _levels(row: Row) -> str:
    return ", ".join(f"{x}={v}" for x, v in row.levels.items())


def measured(p: Plan, doc: dict) -> None:
    """The runs' y into the design file's analysis, in the sign table's order."""
    df, r = p.df, p.spec.replications
    by_run = {j.row.run: [] for j in p.order}
    for j in sorted(p.order, key=lambda j: j.rep):
        by_run[j.row.run].append(doc["runs"][j.testid])
    df.y = np.array([[x["y"] for x in by_run[i + 1]] for i in range(df.design.runs)], dtype=float)
    assert df.y.shape == (df.design.runs, r)
    df.run_ids = [f"r{i + 1}" for i in range(df.design.runs)]
    df.run_sources = [", ".join(x["summary"] for x in by_run[i + 1]) for i in range(df.design.runs)]
    df.response, df.unit = p.spec.response, p.spec.unit


def command(a) -> int:
    p = plan(a.design, design_id=a.id, resume=a.resume, results=Path(a.results or catalog.REPO / "results"),
             settings=a.set,
             prometheus=a.prometheus, loki=a.loki, out=a.out, alpha=a.alpha)
    spec = p.spec
    print(f"design {p.id}: {p.df.design.runs} runs x {spec.replications} replication(s), "
          f"{spec.duration} each, in a random order (shuffle {p.shuffle}){' (resumed)' if p.resume else ''}", flush=True)
    if p.df.y is not None:
        print("  (the file's results: are not used: y is measured here)", flush=True)
    doc, code = execute(p, say=lambda s: print(s, flush=True))
    measured(p, doc)
    out = a.out or str(p.folder / "analysis")
    print(f"\ny = {spec.response} from each run's summary.json (results: {p.folder})\n")
    doe_report.report(p.df, out, a.alpha)
    doc["analysis"] = out
    formats.write(p.folder / "doe.json", "doe", doc)
    return code
