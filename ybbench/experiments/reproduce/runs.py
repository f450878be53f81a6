"""`ybbench reproduce SEED`: one seed's experiment, scaled to this machine.

The experiment file (experiments/seed-NNN-*.yaml, file.py)
lists the phases; each is one `ybbench run` with the testid
`<reproduce-id>-<phase>` in results/<reproduce-id>/, next to
reproduce.json (published against observed, the differences), rewritten
atomically after every phase. The phases are a campaign
(experiments/campaign.py), as `ybbench sweep`'s steps are: the folder
appears with its first finished phase, every phase folder is whole, and
--resume skips the phases already run. Besides the seeds, a named file
(experiments/tpcc-yugabytedb.yaml: `ybbench reproduce tpcc-yugabytedb`)
reproduces a published table that is not a seed's. Seeds 002 and 003 ship
published results,
not phases: `reproduce` prints their analysis (`ybbench doe`, `ybbench
scale --throughput`).
"""

from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ybbench.analysis import limits
from ybbench.core import catalog, run_folder
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.experiments import campaign
from ybbench.experiments.reproduce import expected
from ybbench.experiments.reproduce.file import UNTIL_LOADED, Experiment, Phase, load
from ybbench.experiments.scale.file import ADDRESS
from ybbench.run import keys_from

EXPERIMENTS = catalog.REPO / "experiments"
# Seeds whose file holds published results to analyse, not phases to run.
ANALYSED = {"002": "ybbench doe", "003": "ybbench scale --throughput"}
DEFAULT_DURATION = "30s"
LOADS = {"sql-inserts", "kv-load"}  # phases that write the keys later phases read
# UNTIL_LOADED (file.py): loads of a fixed set of rows, which end when the
# rows are in (their DURATION is only an upper bound), so --duration does
# not cut them short.
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


def named() -> dict[str, Path]:
    """Experiment files that are not a seed's, by name (tpcc-yugabytedb)."""
    return {f.stem: f for f in sorted(EXPERIMENTS.glob("*.yaml")) if not f.name.startswith("seed-")}


def resolve(seed: str) -> tuple[str, Path]:
    """(seed number or "", experiment file) for 000, 0, seed-000, a named
    experiment or a path."""
    seeds, others = known_seeds(), named()
    listing = ", ".join([f"{k} ({p.name})" for k, p in seeds.items()] + list(others))
    m = re.fullmatch(r"(?:seed-)?([0-9]{1,3})", seed.strip())
    if m:
        key = m.group(1).zfill(3)
        if key not in seeds:
            raise UserError(f"unknown seed {seed!r}; known: {listing}; or give the path of an experiment file")
        return key, seeds[key]
    if seed.strip() in others:
        return "", others[seed.strip()]
    path = Path(seed)
    if not path.is_file():
        raise UserError(f"unknown seed {seed!r}: neither a seed number, a named experiment nor an experiment file; "
                        f"known: {listing}")
    same = [k for k, p in seeds.items() if p.resolve() == path.resolve()]
    return (same[0] if same else ""), path


@dataclass
class PhasePlan:
    phase: Phase
    testid: str
    vus: int
    vus_rule: str
    knobs: dict[str, str]  # every knob but those read from an earlier phase
    warmup_s: float = 0  # its first seconds, left out of what is compared (DURATION = --duration + warmup_s)
    warmup_rule: str = ""

    def how_long(self) -> str:
        """--duration, or "until loaded" for a load plan() gave no DURATION;
        with a warm-up, the measured time after it."""
        if "DURATION" not in self.knobs:
            return "until loaded"
        if not self.warmup_s:
            return self.knobs["DURATION"]
        measured = seconds("DURATION", self.knobs["DURATION"]) - self.warmup_s
        return f"{measured:g}s measured after a {self.warmup_s:g}s warm-up, left out"


def rows(exp: Experiment) -> dict[str, list[Phase]]:
    """The published rows: each phase with figures, and the phases it reads
    (its load, and theirs), in the file's order."""
    by_name = {p.name: p for p in exp.phases}
    out = {}
    for p in exp.phases:
        if not p.figures:
            continue
        names, at = {p.name}, p
        while at.reads:
            at = by_name[at.reads]
            names.add(at.name)
        out[p.name] = [x for x in exp.phases if x.name in names]
    return out


def _selected(exp: Experiment, row: str | None, published: bool) -> list[Phase]:
    """The phases to run: all, or one row's (--row); --published needs one row."""
    known = rows(exp)
    listing = ", ".join(known) or "(none: no phase has figures)"
    if row is None:
        if published and len(known) != 1:
            raise UserError(f"--published runs one row at its published size: give --row (rows of {exp.label()}: "
                            f"{listing})")
        return list(exp.phases) if not published else known[next(iter(known))]
    if row not in known:
        raise UserError(f"--row {row}: not a row of {exp.label()}; rows (a phase with figures, with the phases it "
                        f"reads): {listing}")
    return known[row]


def _check_scope(exp: Experiment, phases: list[Phase], knobs: dict[str, str], published: bool) -> None:
    """--set of a knob the file gives several of the chosen phases would give
    each the same value: several loads of the same size (each compared with
    its own row's figures), or several rows' sizes mixed. Refused, naming
    the phases and the way to run one row."""
    many = len({r for r, ps in rows(exp).items() if any(p in phases for p in ps)}) > 1
    for k, v in knobs.items():
        if published:
            have = [p for p in phases if k in p.published]
            if have:
                pub = ", ".join(f"{p.name}: {p.published[k]}" for p in have)
                raise UserError(f"--set {k}={v} with --published: --published runs the row's published {k} "
                                f"({pub}); give one of the two")
        given = [p for p in phases if k in p.knobs]
        loads = [p for p in given if p.workload in UNTIL_LOADED | LOADS]
        if not many or len(given) < 2 or (len({p.knobs[k] for p in given}) < 2 and len(loads) < 2):
            continue
        each = ", ".join(f"{p.name}: {p.knobs[k]}" for p in given)
        what = (f"{len(loads)} loads of {k}={v} (one per row, each compared with its own row's figures)"
                if len(loads) >= 2 else f"every one of them {k}={v}, whatever its row")
        first = next(r for r in rows(exp))
        raise UserError(f"--set {k}={v}: {exp.label()} gives {k} to {len(given)} phases of several rows ({each}); "
                        f"--set would run {what}. Run one row: --row {first} (rows: {', '.join(rows(exp))}), "
                        "with --published for its published knobs")


def _warmup(ph: Phase, override: float | None, given: str | None) -> tuple[float, str]:
    """A run phase's warm-up: the published one, or --warmup's."""
    if ph.warmup is None:
        return 0.0, ""
    published = seconds(f"phase {ph.name}'s warmup", ph.warmup.value, zero=True)
    if override is None:
        return published, f"warm-up {published:g}s left out, as published"
    return override, (f"warm-up {override:g}s left out (--warmup {given}; published {published:g}s)" if override
                      else f"no warm-up left out (--warmup 0; published {published:g}s)")


@dataclass(kw_only=True)
class Plan(campaign.Campaign):
    KIND, RECORD, WHAT, CHILD = "reproduce", "reproduce.json", "phases", "phase run"
    ID_FROM = "--id + the phase name"
    NAMES = {"file": "the experiment file", "duration": "--duration", "settings": "--set",
             "vus": "the VUs per phase (--set VUS, --cores-per-node)"}

    exp: Experiment
    duration: str
    settings: dict[str, str]
    local: expected.Local
    phases: list[PhasePlan]
    row: str | None = None  # --row: one published row's phases only
    published: bool = False  # --published: the row's published knobs

    def params(self) -> dict:
        """What must match for a resume."""
        out = {"file": str(self.exp.path), "duration": self.duration, "settings": self.settings,
               "vus": {p.phase.name: p.vus for p in self.phases}}
        if self.row:
            out["row"] = self.row
        if self.published:
            out["published"] = True
        if any(p.warmup_s for p in self.phases):
            out["warmup_s"] = {p.phase.name: p.warmup_s for p in self.phases if p.warmup_s}
        return out

    def children(self) -> list[campaign.Child]:
        out = []
        for i, pp in enumerate(self.phases, start=1):
            head = f"phase {i}/{len(self.phases)} {pp.phase.name}"
            out.append(campaign.Child(pp.testid, pp.phase.workload, head,
                                      f"{head} ({pp.phase.workload}, {pp.vus} VUs, {pp.how_long()})", pp))
        return out

    def knobs(self, child: campaign.Child) -> dict[str, str]:
        pp: PhasePlan = child.item
        ph, knobs = pp.phase, dict(pp.knobs)
        if ph.reads:
            # Read what the load phase wrote, as `run --keys-from` does: its
            # prefix and row count (or warehouses), its table and sizes; a
            # knob the phase or --set gives wins.
            read = next(x.testid for x in self.phases if x.phase.name == ph.reads)
            if read not in self.runs:
                raise UserError(f"phase {ph.name} reads phase {ph.reads}, which has not run")
            try:
                found = keys_from.knobs_from_loaded(ph.workload, self.runs[read])
            except UserError as e:
                raise UserError(f"phase {ph.name} reads phase {ph.reads}: {e}") from None
            knobs = {**found, **knobs}
        elif ph.workload == "tpcc-load" and "TABLE_PREFIX" not in knobs:
            # Its tables must be new: an earlier reproduce's (or an
            # interrupted attempt's) stay under their own prefix.
            knobs["TABLE_PREFIX"] = catalog.fresh_prefix("tpcc_") + "_"
        return knobs

    def ran_with(self, child: campaign.Child) -> dict[str, str]:
        return {"VUS": str(child.item.vus)}

    def run_options(self, child: campaign.Child) -> dict:
        pp: PhasePlan = child.item
        return {"warmup_s": pp.warmup_s} if pp.warmup_s else {}

    def record(self, child: campaign.Child, run: run_folder.Run) -> dict:
        """The phase's line of reproduce.json: published against observed."""
        pp: PhasePlan = child.item
        ph, summary, window = pp.phase, run.summary, run.window
        warehouses = (summary.get("tpcc") or summary.get("written") or {}).get("warehouses")
        rows = [expected.compare(self.exp, ph, f, expected.observe(f, pp.testid, summary, window, self.prometheus,
                                                                   warmup_s=pp.warmup_s, folder=run.folder),
                                 self.local, warehouses) for f in ph.figures]
        return {
            "name": ph.name, "workload": ph.workload, "testid": pp.testid, "vus": pp.vus, "vus_rule": pp.vus_rule,
            **({"warmup_s": pp.warmup_s} if pp.warmup_s else {}),
            "published_setup": {k: v.value for k, v in self.exp.setup_of(ph).items()}, "warehouses": warehouses,
            "duration": pp.how_long(),
            "knobs": run.knobs, "window": window,
            "rows_written": summary["rows_written"], "loads": ph.workload in LOADS,
            "row_bytes": _row_bytes(ph.workload, run.knobs), "k6_exit_code": run.params.get("k6_exit_code"),
            "ops_per_s": {op: o["per_second"] for op, o in summary["ops"].items()}, "rows": rows,
            "limited_by": limits.verdict_of(run.folder)}

    def add(self, doc: dict, child: campaign.Child, rec: dict) -> bool:
        doc["phases"].append(rec)
        doc["differences"] = expected.differences(self.exp, self.local, doc["phases"], self.duration)
        return False

    def found_note(self, child: campaign.Child, rec: dict) -> str:
        return f" ({self._numbers(child, rec)})"

    def ran_line(self, child: campaign.Child, rec: dict, seconds: float) -> str:
        return f"{child.head}: {self._numbers(child, rec)}"

    def _numbers(self, child: campaign.Child, rec: dict) -> str:
        ops = ", ".join(f"{op} {x:.1f} ops/s" for op, x in rec["ops_per_s"].items())
        return f"{ops}, errors {self.runs[child.testid].summary['errors']}"


def plan(seed: str, *, duration: str | None, settings: list[str], rid: str | None, resume: str | None,
         results: Path, prometheus: str | None = None, cores_per_node: int | None = None, row: str | None = None,
         published: bool = False, warmup: str | None = None, check: bool = True) -> Plan:
    """Every check that can be made before any load; raises UserError.
    row: one published row's phases (--row); published: at the row's
    published knobs; warmup: --warmup; check=False (--dry-run): the plan
    alone, without looking for k6, the services or the results folder."""
    key, path = resolve(seed)
    exp = load(path)
    duration = duration or DEFAULT_DURATION
    measured_s = seconds("--duration", duration)
    knobs = catalog.parse_settings(settings)
    for k, how in OWNED.items():
        if k in knobs:
            raise UserError(f"--set {k}: reproduce sets {k} for each phase (from {how})")
    chosen = _selected(exp, row, published)
    if published:
        bare = [p.name for p in chosen if not p.published]
        if bare:
            raise UserError(f"--published: phase {bare[0]} of {exp.label()} gives no published knobs (`published:` "
                            "in the file), so its published size is not known")
    _check_scope(exp, chosen, knobs, published)
    warm = seconds("--warmup", warmup, zero=True) if warmup is not None else None
    if warm is not None and not any(p.warmup for p in chosen):
        raise UserError(f"--warmup {warmup}: no phase of {exp.label()} here had a published warm-up to replace")
    if cores_per_node is not None and cores_per_node < 1:
        raise UserError(f"--cores-per-node {cores_per_node}: must be at least 1")
    ysql_nodes = knobs.get("YSQL_NODES", "127.0.0.1:5433")
    bad = [x for x in ysql_nodes.split(",") if not ADDRESS.match(x.strip())]
    if bad:
        raise UserError(f"--set YSQL_NODES={ysql_nodes}: {bad[0]!r} is not host:port (the node count comes from it)")
    local = expected.Local.from_knobs(ysql_nodes, cores_per_node)
    rid = catalog.series_id(rid, resume, f"reproduce-{key or exp.name[:20]}-{time.strftime('%Y%m%dT%H%M%S')}",
                            campaign.ID_MAX)
    if "VUS" in knobs and not re.fullmatch(r"[1-9][0-9]*", knobs["VUS"]):
        raise UserError(f"--set VUS={knobs['VUS']}: expected a positive whole number")
    phases = []
    for ph in chosen:
        own = ph.published if published else {}
        if "VUS" in knobs:
            vus, rule = int(knobs["VUS"]), f"VUS {knobs['VUS']} from --set (not scaled)"
        elif "VUS" in own:
            vus, rule = int(own["VUS"]), f"VUS {own['VUS']}, published (not scaled)"
        else:
            vus, rule = expected.scaled_vus(exp, ph, local)
        if any(k != "VUS" for k in own):
            rule += "; published knobs " + " ".join(f"{k}={v}" for k, v in own.items() if k != "VUS")
        warmup_s, warmup_rule = _warmup(ph, warm, warmup)
        until = {} if ph.workload in UNTIL_LOADED else {"DURATION": f"{measured_s + warmup_s:g}s"}
        phases.append(PhasePlan(ph, f"{rid}-{ph.name}", vus, f"{ph.workload}, {rule}",
                                {**ph.knobs, **own, **knobs, "VUS": str(vus), **until}, warmup_s, warmup_rule))
    p = Plan(id=rid, results=results, resume=bool(resume), prometheus=prometheus, exp=exp, duration=duration,
             settings=knobs, local=local, phases=phases, row=row, published=published)
    if check:
        p.prepare()
    return p


def dry_run_lines(p: Plan) -> list[str]:
    """What the plan would run, phase by phase: workload, VUs and their
    rule, duration and warm-up, knobs (those read from a load named), and
    the figures each phase's run is compared with."""
    e = p.exp
    which = f"row {p.row}" if p.row else "every row"
    out = [f"reproduce {p.id} (dry run: nothing runs, nothing is written): {e.label()} ({e.title}), {which}"
           f"{', at its published knobs' if p.published else ', scaled to this machine'}, {len(p.phases)} phase(s)",
           f"scaled to this machine: {p.local.describe()}"]
    for i, pp in enumerate(p.phases, start=1):
        ph = pp.phase
        out.append(f"phase {i}/{len(p.phases)} {ph.name}: {ph.workload}, {pp.vus} VUs, {pp.how_long()}")
        out.append(f"  VUs: {pp.vus_rule}")
        if pp.warmup_rule:
            out.append(f"  {pp.warmup_rule}")
        knobs = " ".join(f"{k}={v}" for k, v in sorted(pp.knobs.items()))
        out.append(f"  knobs: {knobs}")
        if ph.reads:
            out.append(f"  reads phase {ph.reads}: its WAREHOUSES (or keys), C constant and TABLE_PREFIX, as "
                       "run --keys-from gives them")
        elif ph.workload == "tpcc-load" and "TABLE_PREFIX" not in pp.knobs:
            out.append("  loads under a fresh TABLE_PREFIX")
        if ph.command:
            out.append(f"  published command: {ph.command.value}")
        setup = e.setup_of(ph)
        for f in ph.figures:
            wh = f", {setup['warehouses'].value} warehouses" if "warehouses" in setup else ""
            out.append(f"  compared with: {f.name} {f.qualifier + ' ' if f.qualifier else ''}{expected._n(f.value)} {f.unit} "
                       f"({setup['nodes'].value} nodes x {setup['vcpus_per_node'].value} vCPU{wh})")
    loads = [pp for pp in p.phases if pp.phase.workload in UNTIL_LOADED | LOADS]
    out.append(f"loads: {len(loads)}" + "".join(
        f"; {pp.phase.name} {pp.phase.workload} WAREHOUSES={pp.knobs['WAREHOUSES']}" if "WAREHOUSES" in pp.knobs
        else f"; {pp.phase.name} {pp.phase.workload}" for pp in loads))
    return out


def _row_bytes(workload: str, knobs: dict) -> int:
    if workload == "sql-inserts":
        return int(knobs.get("ROW_BYTES", 64))
    return int(knobs.get("KEY_BYTES", 50)) + int(knobs.get("VALUE_BYTES", 256))


def execute(p: Plan, say=print) -> tuple[dict, int]:
    """Run (or resume) the phases; returns reproduce.json's content and the exit code."""
    e = p.exp
    doc = {"reproduce_id": p.id, "seed": e.seed, "experiment": e.name, "file": str(e.path),
           "source": {"file": e.source_file, "title": e.title}, "params": p.params(), "prometheus": p.prometheus,
           "published_setup": {k: v.value for k, v in e.setup.items()}, "local": asdict(p.local),
           "phases": [], "differences": [], "status": "running"}
    code = p.run_all(doc, say)
    return doc, code


def _analysed(key: str, path: Path, a) -> int:
    """Seeds 002 and 003: their shipped results, analysed; nothing runs."""
    run_opts = {"--duration": a.duration, "--set": a.set, "--prometheus": a.prometheus, "--resume": a.resume,
                "--cores-per-node": a.cores_per_node, "--row": getattr(a, "row", None),
                "--published": getattr(a, "published", False), "--warmup": getattr(a, "warmup", None),
                "--dry-run": getattr(a, "dry_run", False)}
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
    dry = getattr(a, "dry_run", False)
    p = plan(a.seed, duration=a.duration, settings=a.set, rid=a.id, resume=a.resume, results=Path(a.results),
             prometheus=a.prometheus, cores_per_node=a.cores_per_node, row=getattr(a, "row", None),
             published=getattr(a, "published", False), warmup=getattr(a, "warmup", None), check=not dry)
    if dry:
        for line in dry_run_lines(p):
            print(line)
        return 0
    e = p.exp
    row = f", row {p.row}{' at its published knobs' if p.published else ''}" if p.row else ""
    print(f"reproduce {p.id}: {e.label()} ({e.title}){row}, {len(p.phases)} phase(s), {p.duration} each"
          f"{' (resumed)' if p.resume else ''}", flush=True)
    print(f"scaled to this machine: {p.local.describe()}", flush=True)
    for pp in p.phases:
        print(f"  {pp.phase.name}: {pp.vus_rule}" + (f"; {pp.warmup_rule}" if pp.warmup_rule else ""), flush=True)
    doc, code = execute(p, say=lambda s: print(s, flush=True))
    print()
    for line in expected.table_lines(doc):
        print(line)
    print("\ndifferences from the published setup:")
    for d in doc["differences"]:
        print(f"  - {d}")
    print(f"results: {p.folder}")
    return code
