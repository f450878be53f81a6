"""`ybbench reproduce SEED`: one seed's experiment, scaled to this machine.

The experiment file (experiments/seed-NNN-*.yaml, file.py)
lists the phases; each is one `ybbench run` with the testid
`<reproduce-id>-<phase>` in results/<reproduce-id>/, next to
reproduce.json (published against observed, the differences), rewritten
atomically after every phase. As with `ybbench sweep`, the folder appears
with its first finished phase, every phase folder is whole, and --resume
skips the phases already run. Seeds 002 and 003 ship published results,
not phases: `reproduce` prints their analysis (`ybbench doe`, `ybbench
scale --results`).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ybbench.core import catalog
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.core.files import keeps_finished, staged_dir, write_json
from ybbench.core.progress import RunProgress
from ybbench.experiments.reproduce import expected
from ybbench.experiments.reproduce.file import Experiment, Phase, load
from ybbench.experiments.scale.file import ADDRESS
from ybbench.experiments.sweep.runs import SWEEP_ID_MAX, _show
from ybbench.run import k6_process, k6run

EXPERIMENTS = catalog.REPO / "experiments"
# Seeds whose file holds published results to analyse, not phases to run.
ANALYSED = {"002": "ybbench doe", "003": "ybbench scale --results"}
DEFAULT_DURATION = "30s"
LOADS = {"sql-inserts", "kv-load"}  # phases that write the keys later phases read
# --set knobs that `reproduce` sets itself, and the option that sets them.
OWNED = {"DURATION": "--duration", "KEY_PREFIX": "the phase named in `reads`",
         "MAX_WRITTEN_KEY": "the phase named in `reads`"}


def known_seeds() -> dict[str, Path]:
    """Seed number -> its experiment file; where variants of a seed's file
    sit beside it (seed-002-esle-local.yaml), the shortest name is the seed's."""
    out: dict[str, Path] = {}
    for f in sorted(EXPERIMENTS.glob("seed-[0-9][0-9][0-9]-*.yaml"), key=lambda f: (len(f.name), f.name)):
        out.setdefault(f.name[5:8], f)
    return dict(sorted(out.items()))


def resolve(seed: str) -> tuple[str, Path]:
    """(seed number or "", experiment file) for 000, 0, seed-000 or a path."""
    seeds = known_seeds()
    listing = ", ".join(f"{k} ({p.name})" for k, p in seeds.items())
    m = re.fullmatch(r"(?:seed-)?([0-9]{1,3})", seed.strip())
    if m:
        key = m.group(1).zfill(3)
        if key not in seeds:
            raise UserError(f"unknown seed {seed!r}; known: {listing}; or give the path of an experiment file")
        return key, seeds[key]
    path = Path(seed)
    if not path.is_file():
        raise UserError(f"unknown seed {seed!r}: neither a seed number nor an experiment file; known: {listing}")
    same = [k for k, p in seeds.items() if p.resolve() == path.resolve()]
    return (same[0] if same else ""), path


@dataclass
class PhasePlan:
    phase: Phase
    testid: str
    vus: int
    vus_rule: str
    knobs: dict[str, str]  # every knob but those read from an earlier phase


@dataclass
class Plan:
    exp: Experiment
    rid: str
    results: Path
    duration: str
    settings: dict[str, str]
    local: expected.Local
    phases: list[PhasePlan]
    prometheus: str | None = None
    resume: bool = False
    done: set[str] = field(default_factory=set)  # resumed: phases already run

    @property
    def folder(self) -> Path:
        return self.results / self.rid

    def params(self) -> dict:
        """What must match for a resume."""
        return {"file": str(self.exp.path), "duration": self.duration, "settings": self.settings,
                "vus": {p.phase.name: p.vus for p in self.phases}}


def plan(seed: str, *, duration: str | None, settings: list[str], rid: str | None, resume: str | None,
         results: Path, prometheus: str | None = None, cores_per_node: int | None = None) -> Plan:
    """Every check that can be made before any load; raises UserError."""
    key, path = resolve(seed)
    exp = load(path)
    duration = duration or DEFAULT_DURATION
    seconds("--duration", duration)
    knobs = catalog.parse_settings(settings)
    for k, how in OWNED.items():
        if k in knobs:
            raise UserError(f"--set {k}: reproduce sets {k} for each phase (from {how})")
    if cores_per_node is not None and cores_per_node < 1:
        raise UserError(f"--cores-per-node {cores_per_node}: must be at least 1")
    ysql_nodes = knobs.get("YSQL_NODES", "127.0.0.1:5433")
    bad = [x for x in ysql_nodes.split(",") if not ADDRESS.match(x.strip())]
    if bad:
        raise UserError(f"--set YSQL_NODES={ysql_nodes}: {bad[0]!r} is not host:port (the node count comes from it)")
    local = expected.Local.from_knobs(ysql_nodes, cores_per_node)
    rid = catalog.series_id(rid, resume, f"reproduce-{key or exp.name[:20]}-{time.strftime('%Y%m%dT%H%M%S')}",
                            SWEEP_ID_MAX)
    if "VUS" in knobs and not re.fullmatch(r"[1-9][0-9]*", knobs["VUS"]):
        raise UserError(f"--set VUS={knobs['VUS']}: expected a positive whole number")
    phases = []
    for ph in exp.phases:
        if "VUS" in knobs:
            vus, rule = int(knobs["VUS"]), f"VUS {knobs['VUS']} from --set (not scaled)"
        else:
            vus, rule = expected.scaled_vus(exp, ph, local)
        testid = f"{rid}-{ph.name}"
        if not catalog.TESTID.match(testid):
            raise UserError(f"phase run id {testid!r} is longer than 64 characters: use a shorter --id")
        phases.append(PhasePlan(ph, testid, vus, f"{ph.workload}, {rule}",
                                {**ph.knobs, **knobs, "VUS": str(vus), "DURATION": duration}))
    p = Plan(exp, rid, results, duration, knobs, local, phases, prometheus, resume=bool(resume))
    if resume:
        _check_resume(p)
    elif p.folder.exists():
        raise UserError(f"{p.folder} exists: a reproduce id is used once (or --resume {rid})")
    k6_process.check_services(prometheus)
    return p


def _check_resume(p: Plan) -> None:
    doc_path = p.folder / "reproduce.json"
    if not doc_path.is_file():
        raise UserError(f"--resume {p.rid}: no reproduce at {p.folder} (no reproduce.json)")
    try:
        old = json.loads(doc_path.read_text())["params"]
    except (ValueError, KeyError) as e:
        raise UserError(f"--resume {p.rid}: {doc_path} is not a reproduce's ({e})") from None
    names = {"file": "the experiment file", "duration": "--duration", "settings": "--set",
             "vus": "the VUs per phase (--set VUS, --cores-per-node)"}
    for k, v in p.params().items():
        if old.get(k) != v:
            raise UserError(f"--resume {p.rid}: {names[k]} differs: {_show(v)} here, {_show(old.get(k))} in {doc_path}")
    # Finished phases: whatever folders exist, whether or not reproduce.json
    # was rewritten after them (an interruption between the two).
    p.done = {pp.phase.name for pp in p.phases if (p.folder / pp.testid / "summary.json").is_file()}


def _read_run(folder: Path) -> tuple[dict, dict]:
    try:
        return (json.loads((folder / "summary.json").read_text()), json.loads((folder / "params.json").read_text()))
    except (OSError, ValueError) as e:
        raise UserError(f"phase run {folder.name}: no usable summary.json/params.json ({e})") from None


def _row_bytes(workload: str, knobs: dict) -> int:
    if workload == "sql-inserts":
        return int(knobs.get("ROW_BYTES", 64))
    return int(knobs.get("KEY_BYTES", 50)) + int(knobs.get("VALUE_BYTES", 256))


def execute(p: Plan, say=print) -> tuple[dict, int]:
    """Run (or resume) the phases; returns reproduce.json's content and the exit code."""
    e = p.exp
    doc = {"reproduce_id": p.rid, "seed": e.seed, "experiment": e.name, "file": str(e.path),
           "source": {"file": e.source_file, "title": e.title}, "params": p.params(), "prometheus": p.prometheus,
           "published_setup": {k: v.value for k, v in e.setup.items()}, "local": asdict(p.local),
           "phases": [], "differences": [], "status": "running"}
    ran: dict[str, tuple[str, dict, dict]] = {}  # phase -> (testid, summary, params)
    todo = list(p.phases)

    def phase(where: Path) -> None:
        pp = todo.pop(0)
        ph, i, n = pp.phase, len(p.phases) - len(todo), len(p.phases)
        folder = where / pp.testid
        knobs = dict(pp.knobs)
        if ph.reads:
            # Read what the load phase wrote: its prefix, its row count, its table and key width.
            tid, summary, params = ran[ph.reads]
            if not summary["rows_written"]:
                raise UserError(f"phase {ph.reads} wrote no rows: phase {ph.name} has nothing to read")
            knobs.update(KEY_PREFIX=params["knobs"].get("KEY_PREFIX", tid),
                         MAX_WRITTEN_KEY=str(summary["rows_written"]))
            for k in ("TABLE", "KEY_BYTES"):
                if k in params["knobs"]:
                    knobs.setdefault(k, params["knobs"][k])
        if ph.name in p.done:
            say(f"phase {i}/{n} {ph.name}: already finished, not re-run")
        else:
            with RunProgress(f"phase {i}/{n} {ph.name} ({ph.workload}, {pp.vus} VUs, {p.duration})") as live:
                k6run.run(ph.workload, testid=pp.testid, results=where, prometheus=p.prometheus,
                            settings=[f"{k}={v}" for k, v in knobs.items()], quiet=True, on_line=live.feed)
        summary, params = _read_run(folder)
        if params.get("workload") != ph.workload or params.get("knobs", {}).get("VUS") != str(pp.vus):
            raise UserError(f"phase run {folder.name} ran other parameters than this reproduce's: "
                            f"{params.get('workload')} VUS={params.get('knobs', {}).get('VUS')}")
        ran[ph.name] = (pp.testid, summary, params)
        window = (params["started"], params["finished"])
        rows = [expected.compare(e, ph, f, expected.observe(f, pp.testid, summary, window, p.prometheus), p.local)
                for f in ph.figures]
        doc["phases"].append({
            "name": ph.name, "workload": ph.workload, "testid": pp.testid, "vus": pp.vus, "vus_rule": pp.vus_rule,
            "duration": p.duration, "knobs": params.get("knobs", {}), "window": window,
            "rows_written": summary["rows_written"], "loads": ph.workload in LOADS,
            "row_bytes": _row_bytes(ph.workload, knobs), "k6_exit_code": params.get("k6_exit_code"),
            "ops_per_s": {op: o["per_second"] for op, o in summary["ops"].items()}, "rows": rows})
        doc["differences"] = expected.differences(e, p.local, doc["phases"], p.duration)
        doc["status"] = "running" if todo else "complete"
        write_json(where / "reproduce.json", doc)
        ops = ", ".join(f"{op} {x:.1f} ops/s" for op, x in doc["phases"][-1]["ops_per_s"].items())
        say(f"phase {i}/{n} {ph.name}: {ops}, errors {summary['errors']}")

    with keeps_finished(p.folder, doc, "reproduce.json", "phases", p.rid):
        if not p.resume:
            with staged_dir(p.folder) as stage:  # the folder appears with its first phase
                phase(stage)
        while todo:
            phase(p.folder)
    return doc, 99 if any(ph["k6_exit_code"] == 99 for ph in doc["phases"]) else 0


def _analysed(key: str, path: Path, a) -> int:
    """Seeds 002 and 003: their shipped results, analysed; nothing runs."""
    run_opts = {"--duration": a.duration, "--set": a.set, "--prometheus": a.prometheus, "--resume": a.resume,
                "--cores-per-node": a.cores_per_node}
    given = [k for k, v in run_opts.items() if v]
    if given:
        raise UserError(f"seed {key}: {path.name} holds the seed's published results, not phases to run, so "
                        f"{', '.join(given)} do not apply (`reproduce {key}` prints {ANALYSED[key]}'s analysis)")
    out = str(Path(a.results) / a.id) if a.id else None
    print(f"seed {key}: {path.name} holds the seed's published results; their analysis ({ANALYSED[key]}):\n")
    if key == "002":
        from ybbench.experiments.doe.analysis import command as doe

        return doe(str(path), out, 0.05)
    from ybbench.experiments.scale.analysis import from_results

    return from_results(str(path), out, 0.05)


def command(a) -> int:
    key, path = resolve(a.seed)
    if key in ANALYSED:
        return _analysed(key, path, a)
    p = plan(a.seed, duration=a.duration, settings=a.set, rid=a.id, resume=a.resume, results=Path(a.results),
             prometheus=a.prometheus, cores_per_node=a.cores_per_node)
    e = p.exp
    print(f"reproduce {p.rid}: seed {e.seed} ({e.title}), {len(p.phases)} phase(s), {p.duration} each"
          f"{' (resumed)' if p.resume else ''}", flush=True)
    print(f"scaled to this machine: {p.local.describe()}", flush=True)
    for pp in p.phases:
        print(f"  {pp.phase.name}: {pp.vus_rule}", flush=True)
    doc, code = execute(p, say=lambda s: print(s, flush=True))
    print()
    for line in expected.table_lines(doc):
        print(line)
    print("\ndifferences from the published setup:")
    for d in doc["differences"]:
        print(f"  - {d}")
    print(f"results: {p.folder}")
    return code
