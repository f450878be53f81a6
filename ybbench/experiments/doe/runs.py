"""`ybbench doe DESIGN.yaml --run`: every run of the design, each
replication one `ybbench run` (run.run), then the analysis of what they
measured.

Everything lives in results/<design-id>/: doe.json (the plan, the seeded
random run order, each finished run's y; rewritten atomically after each
run), the load's folder `<design-id>-load` when read rows need keys, one
folder per run and replication `<design-id>-r<run>-<replication>`, and
analysis/ (results.json and the charts). As in `ybbench sweep`, the design
folder appears with its first finished k6 run, each run's folder is whole
(run.run stages it) or absent, and `--resume <design-id>` runs only the
runs whose folder is missing.
"""

from __future__ import annotations

import json
import random
import re
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ybbench.core import catalog
from ybbench.core.errors import UserError
from ybbench.core.files import keeps_finished, staged_dir, write_json
from ybbench.core.progress import RunProgress
from ybbench.experiments.doe import analysis as doe_report
from ybbench.experiments.doe.file import DesignFile, load
from ybbench.experiments.doe.plan import LOADER, MIXED, OWN_KNOBS, Row, RunSpec
from ybbench.run import k6_process, k6run

DESIGN_ID_MAX = 40  # leaves room for -r<run>-<replication> in a 64-char testid


@dataclass
class Job:
    """One k6 run: a row of the sign table, one replication."""

    testid: str
    row: Row
    rep: int  # 1-based


@dataclass
class Plan:
    df: DesignFile
    spec: RunSpec
    design_id: str
    results: Path
    settings: dict[str, str]  # --set, every run
    prometheus: str | None
    loki: str | None
    resume: bool
    seed: int
    order: list[Job]  # the order the runs go in
    done: dict[str, dict] = field(default_factory=dict)  # testid -> its record (resumed)
    load_record: dict | None = None  # the load's, once run or found

    @property
    def folder(self) -> Path:
        return self.results / self.design_id

    @property
    def load_id(self) -> str:
        return f"{self.design_id}-load"

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


def jobs(design_id: str, spec: RunSpec) -> list[Job]:
    return [Job(f"{design_id}-r{row.run}-{rep}", row, rep) for row in spec.rows
            for rep in range(1, spec.replications + 1)]


def shuffled(all_jobs: list[Job], seed: int) -> list[Job]:
    """Runs in a random order (a drift of the machine over time then spreads
    over every effect instead of landing on one), reproducible by seed."""
    order = list(all_jobs)
    random.Random(seed).shuffle(order)
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
    seed = spec.seed if spec.seed is not None else random.SystemRandom().randrange(2 ** 31)
    p = Plan(df, spec, did, results, knobs, prometheus, loki, bool(resume), seed, [])
    p.order = shuffled(jobs(did, spec), seed)
    if resume:
        _check_resume(p)
    elif p.folder.exists():
        raise UserError(f"{p.folder} exists: a design id is used once (or --resume {did})")
    if out is None and (p.folder / "analysis").exists():
        raise UserError(f"{p.folder / 'analysis'} exists: this design is finished and analysed")
    k6_process.check_services(prometheus, loki)
    return p


def _check_resume(p: Plan) -> None:
    """The design ran the same plan; its order is kept, and its finished
    runs are whatever folders exist (doe.json may lag one run behind)."""
    doc_path = p.folder / "doe.json"
    try:
        old = json.loads(doc_path.read_text())
        old_params, order = old["params"], old["order"]
    except OSError:
        raise UserError(f"--resume {p.design_id}: no design at {p.folder} (no doe.json)") from None
    except (ValueError, KeyError) as e:
        raise UserError(f"--resume {p.design_id}: {doc_path} is not a design's ({e})") from None
    new = p.params()
    for k, v in new.items():
        if old_params.get(k) != v:
            what = _first_difference(v, old_params.get(k))
            raise UserError(f"--resume {p.design_id}: {k} differs from the design's in {doc_path}: {what}")
    by_id = {j.testid: j for j in p.order}
    p.seed, p.order = old["seed"], [by_id[t] for t in order]
    if p.spec.load and (p.folder / p.load_id).is_dir():
        p.load_record = load_record(p, p.folder / p.load_id)
    for j in p.order:
        if (p.folder / j.testid).is_dir():
            p.done[j.testid] = job_record(p, j, p.folder / j.testid)


def _first_difference(new, old) -> str:
    if isinstance(new, dict) and isinstance(old, dict):
        for k in sorted(set(new) | set(old)):
            if new.get(k) != old.get(k):
                return f"{k}: {_first_difference(new.get(k), old.get(k))}"
    return f"{json.dumps(new)} here, {json.dumps(old)} before"


def _read(folder: Path) -> tuple[dict, dict]:
    try:
        return (json.loads((folder / "summary.json").read_text()),
                json.loads((folder / "params.json").read_text()))
    except (OSError, ValueError) as e:
        raise UserError(f"run {folder.name}: no usable summary.json/params.json ({e})") from None


def _check_ran(folder: Path, params: dict, workload: str, want: dict[str, str]) -> None:
    knobs = params.get("knobs", {})
    wrong = {k: knobs.get(k) for k, v in want.items() if knobs.get(k) != v}
    if params.get("workload") != workload or wrong:
        raise UserError(f"run {folder.name} ran other parameters than this design's: {params.get('workload')} "
                        + ", ".join(f"{k}={v}" for k, v in wrong.items()))


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


def job_record(p: Plan, job: Job, folder: Path) -> dict:
    summary, params = _read(folder)
    want = p.job_knobs(job)
    if job.row.workload in LOADER:
        want.update(KEY_PREFIX=p.load_record["key_prefix"] if p.load_record else params["knobs"].get("KEY_PREFIX"),
                    MAX_WRITTEN_KEY=str(p.spec.load.keys))
    _check_ran(folder, params, job.row.workload, want)
    return {"testid": job.testid, "run": job.row.run, "replication": job.rep, "workload": job.row.workload,
            "y": response(summary, p.spec.response, job.testid),
            "ops_per_s": sum(o["per_second"] for o in summary["ops"].values()), "errors": summary["errors"],
            "k6_exit_code": params.get("k6_exit_code"), "summary": f"{job.testid}/summary.json"}


def load_record(p: Plan, folder: Path) -> dict:
    summary, params = _read(folder)
    _check_ran(folder, params, p.spec.load.workload, p.load_knobs())
    if summary["rows_written"] != p.spec.load.keys:
        raise UserError(f"load {folder.name}: wrote {summary['rows_written']} of its {p.spec.load.keys} keys "
                        f"(errors {summary['errors']}); a longer run.load.duration, or a new design id")
    return {"testid": folder.name, "key_prefix": params["knobs"]["KEY_PREFIX"], "keys": summary["rows_written"],
            "ops_per_s": sum(o["per_second"] for o in summary["ops"].values())}


def execute(p: Plan, say=print) -> tuple[dict, int]:
    """Run (or resume) the design; returns doe.json's content and the exit code."""
    doc = {"design_id": p.design_id, "file": str(p.df.path), "params": p.params(), "seed": p.seed, "order": [j.testid for j in p.order],
           "prometheus": p.prometheus, "loki": p.loki, "load": p.load_record, "runs": dict(p.done),
           "status": "running"}
    folder, n = p.folder, len(p.order)
    staged = [not p.resume]  # the design folder appears with its first finished k6 run

    def unit():
        first, staged[0] = staged[0], False
        return staged_dir(folder) if first else nullcontext(folder)

    def save(where: Path) -> None:
        doc["status"] = "complete" if len(doc["runs"]) == n else "running"
        write_json(where / "doe.json", doc)

    with keeps_finished(folder, doc, "doe.json", "runs", p.design_id):
        if p.spec.load and p.load_record is None:
            ld = p.spec.load
            with unit() as where:
                with RunProgress(f"load: {ld.workload}, {ld.keys} keys") as live:
                    k6run.run(ld.workload, testid=p.load_id, results=where, prometheus=p.prometheus, loki=p.loki,
                                settings=_settings({**p.load_knobs(), "KEY_PREFIX": catalog.fresh_prefix("l")}),
                                quiet=True, on_line=live.feed)
                p.load_record = doc["load"] = load_record(p, where / p.load_id)
                save(where)
            say(f"load {p.load_id}: {ld.workload} wrote {ld.keys} keys")
        elif p.load_record:
            say(f"load {p.load_id}: already finished, not re-run")
        for i, job in enumerate(p.order, start=1):
            head = f"run {i}/{n} {job.testid} ({_levels(job.row)})"
            if job.testid in p.done:
                say(f"{head}: already finished, not re-run (y = {p.done[job.testid]['y']:.6g})")
                continue
            started = time.time()
            with unit() as where:
                with RunProgress(f"{head} {job.row.workload}, {p.spec.duration}") as live:
                    k6run.run(job.row.workload, testid=job.testid, results=where, prometheus=p.prometheus,
                                loki=p.loki, settings=_settings(_keys(p, job)), quiet=True, on_line=live.feed)
                rec = doc["runs"][job.testid] = job_record(p, job, where / job.testid)
                save(where)
            errors = f", {rec['errors']} errors" if rec["errors"] else ""
            say(f"{head}: {job.row.workload}, {p.spec.response} = {rec['y']:.6g}{errors} "
                f"({time.time() - started:.0f} s)")
    save(folder)  # a resume that found every run finished
    code = 99 if any(r["k6_exit_code"] == 99 for r in doc["runs"].values()) else 0
    return doc, code


def _keys(p: Plan, job: Job) -> dict[str, str]:
    knobs = p.job_knobs(job)
    if job.row.workload in LOADER:
        knobs.update(KEY_PREFIX=p.load_record["key_prefix"], MAX_WRITTEN_KEY=str(p.spec.load.keys))
    elif job.row.workload in catalog.NEW_KEYS:
        knobs["KEY_PREFIX"] = catalog.fresh_prefix("w")
    return knobs


def _settings(knobs: dict[str, str]) -> list[str]:
    return [f"{k}={v}" for k, v in knobs.items()]


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
    print(f"design {p.design_id}: {p.df.design.runs} runs x {spec.replications} replication(s), "
          f"{spec.duration} each, in a random order (seed {p.seed}){' (resumed)' if p.resume else ''}", flush=True)
    if p.df.y is not None:
        print("  (the file's results: are not used: y is measured here)", flush=True)
    doc, code = execute(p, say=lambda s: print(s, flush=True))
    measured(p, doc)
    out = a.out or str(p.folder / "analysis")
    print(f"\ny = {spec.response} from each run's summary.json (results: {p.folder})\n")
    doe_report.report(p.df, out, a.alpha)
    doc["analysis"] = out
    write_json(p.folder / "doe.json", doc)
    return code
