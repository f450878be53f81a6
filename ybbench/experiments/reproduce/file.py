"""Reading an experiment file (experiments/seed-NNN-*.yaml, or a named one
such as experiments/tpcc-yugabytedb.yaml): a published setup, its phases in
order (workload, knobs, concurrency) and the figures it publishes, each with
its value, unit, scope and place in the source. The source is a seed (its
text in the project's shared folder) or a public page, whose quoted words
are kept beside the file (source.file, with source.url). Everything is
checked before any run; a problem is a UserError that names the file, the
place in it and what is wrong."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ybbench.core import catalog, inputs
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError

TOP_KEYS = {"seed", "name", "source", "setup", "phases", "differences", "notes"}
SOURCE_KEYS = {"file", "title", "url"}
ENTRY_KEYS = {"value", "quote", "note"}
# The published setup; nodes and vCPUs per node scale the concurrency.
SETUP_KEYS = {"database", "nodes", "vcpus_per_node", "instance_type", "cloud", "replication_factor", "disks",
              "ram_per_node_gb", "clients", "data", "data_per_node_gb", "block_cache_gb", "warehouses"}
# A phase's `setup` overrides the file's for that phase's figures: one file
# can hold a published table's rows, each measured on its own cluster.
# `warmup`: the published run's warm-up, left out of what is compared;
# `published`: the knobs of the published command itself (WAREHOUSES, VUS
# as connections or loader threads), which `reproduce --row R --published`
# runs instead of the file's scaled knobs.
PHASE_KEYS = {"name", "workload", "knobs", "concurrency", "duration", "reads", "command", "setup", "figures",
              "notes", "warmup", "published"}
FIGURE_KEYS = {"name", "measure", "op", "value", "unit", "scope", "qualifier", "where", "quote", "note"}
SCOPES = {"cluster", "node", "disk"}
OPS = {"insert", "select", "update", "scan", "new_order", "payment", "order_status", "delivery", "stock_level"}
PHASE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,19}$")
# Set by `ybbench reproduce` itself, never by a phase's knobs.
OWNED_KNOBS = {"DURATION", "KEY_PREFIX", "MAX_WRITTEN_KEY"}
# Workloads that read keys a load wrote (KEY_PREFIX, MAX_WRITTEN_KEY), and
# the load whose keys and table they read.
READERS = {w: load for w, load in catalog.READS_KEYS_OF.items() if load != "ycsb-load"}  # ycsb's phases set RECORD_COUNT
# Loads of a fixed set of rows, run until loaded (runs.py): no warm-up.
UNTIL_LOADED = {"tpcc-load"}


@dataclass(frozen=True)
class Measure:
    unit: str
    extensive: bool  # adds up over nodes (ops/s, rows), unlike a latency or a CPU %
    source: str  # "summary", "prometheus" or "none" (not measured in this version)
    scopes: frozenset = frozenset({"cluster", "node"})  # where it can be observed (expected.PROM_QUERIES)
    why_not: str = ""  # for source "none": why it is not observed


MEASURES = {
    "ops_per_s": Measure("ops/s", True, "summary"),
    "latency_avg_ms": Measure("ms", False, "summary"),
    "rows": Measure("rows", True, "summary"),
    # TPC-C: New-Orders a minute (compared per warehouse: the spec caps it
    # at 12.86 a warehouse) and tpmC / (12.86 x warehouses) in spec mode.
    "tpmc": Measure("tpmC", True, "summary"),
    "efficiency_percent": Measure("%", False, "summary"),
    "cpu_percent": Measure("%", False, "prometheus", frozenset({"node"})),
    "disk_reads_per_s": Measure("reads/s", True, "prometheus", frozenset({"node", "disk"})),
    "disk_read_mb_per_s": Measure("MB/s", True, "prometheus", frozenset({"disk"})),
    "io_size_kb": Measure("KB", False, "prometheus", frozenset({"disk"})),
    "dataset_tb": Measure("TB", True, "none", why_not="on-disk size is not measured by ybbench in this version "
                          "(the Storage growth dashboard shows YugabyteDB's SSTable bytes)"),
    "load_days": Measure("days", False, "none",
                         why_not="the load here runs for --duration, not to the seed's key count"),
}


@dataclass
class Entry:
    value: object
    quote: str = ""
    note: str = ""


@dataclass
class Figure:
    name: str
    measure: str
    value: float
    unit: str
    scope: str
    where: str
    quote: str
    op: str = ""  # the summary op (insert, select, update); "" = every op
    qualifier: str = ""  # "about", "under", ... as the seed says it
    note: str = ""


@dataclass
class Phase:
    name: str
    workload: str
    knobs: dict[str, str]
    concurrency: Entry | None  # published client threads (None: the seed gives none)
    duration: Entry | None
    reads: str  # the phase whose keys this one reads ("" = none)
    command: Entry | None
    figures: list[Figure]
    notes: str = ""
    setup: dict[str, Entry] = field(default_factory=dict)  # overrides the file's setup for this phase
    warmup: Entry | None = None  # the published warm-up (value: a duration), left out of what is compared
    published: dict[str, str] = field(default_factory=dict)  # the published command's knobs (--published)


@dataclass
class Experiment:
    path: Path
    seed: str  # "" for a source that is not a seed
    name: str
    source_file: str
    title: str
    setup: dict[str, Entry]
    phases: list[Phase]
    differences: list[str] = field(default_factory=list)
    notes: str = ""
    url: str = ""

    def setup_of(self, phase: Phase) -> dict[str, Entry]:
        """The published setup behind a phase's figures."""
        return {**self.setup, **phase.setup}

    def source_text(self) -> Path:
        """Where the quoted words are: the excerpt kept beside the experiment
        file; for a seed, its text's name in the shared folder's seeds/."""
        return Path(self.source_file) if self.seed else self.path.parent / self.source_file

    def label(self) -> str:
        return f"seed {self.seed}" if self.seed else self.name

    def quotes(self) -> list[tuple[str, str]]:
        """(place in the file, quote) for every quote the file holds."""
        out = [(f"setup.{k}", e.quote) for k, e in self.setup.items() if e.quote]
        for i, p in enumerate(self.phases):
            out += [(f"phases[{i}].setup.{k}", e.quote) for k, e in p.setup.items() if e.quote]
            for k in ("concurrency", "duration", "command", "warmup"):
                e = getattr(p, k)
                if e and e.quote:
                    out.append((f"phases[{i}].{k}", e.quote))
            out += [(f"phases[{i}].figures[{j}]", f.quote) for j, f in enumerate(p.figures)]
        return out


def _entry(where: str, raw: object) -> Entry:
    """A published fact: its value and the seed's words (or a note saying
    why there are none)."""
    m = inputs.mapping(where, raw, ENTRY_KEYS, {"value"})
    e = Entry(m["value"], inputs.text(f"{where}.quote", m.get("quote")), inputs.text(f"{where}.note", m.get("note")))
    if not e.quote and not e.note:
        raise UserError(f"{where}: give the seed's words (quote) or a note saying where the value comes from")
    return e


def _positive_int(where: str, e: Entry) -> int:
    n = inputs.number(f"{where}.value", e.value)
    if n < 1 or n != int(n):
        raise UserError(f"{where}.value: {e.value!r}: expected a positive whole number")
    return int(n)


def _figure(where: str, raw: object) -> Figure:
    m = inputs.mapping(where, raw, FIGURE_KEYS, {"name", "measure", "value", "unit", "scope", "where", "quote"})
    measure = m["measure"]
    if measure not in MEASURES:
        raise UserError(f"{where}.measure: unknown measure {measure!r}; known: {', '.join(MEASURES)}")
    unit = inputs.text(f"{where}.unit", m["unit"], required=True)
    if unit != MEASURES[measure].unit:
        raise UserError(f"{where}.unit: {unit!r}: {measure} is in {MEASURES[measure].unit!r}")
    scope = m["scope"]
    if scope not in SCOPES:
        raise UserError(f"{where}.scope: {scope!r}: expected one of {', '.join(sorted(SCOPES))}")
    if m.get("op") is not None and m["op"] not in OPS:
        raise UserError(f"{where}.op: {m['op']!r}: expected one of {', '.join(sorted(OPS))} "
                        "(the ops of a run's summary)")
    if scope not in MEASURES[measure].scopes:
        where_observed = " or per ".join(sorted(MEASURES[measure].scopes))
        raise UserError(f"{where}.scope: {measure} is observed per {where_observed}, not per {scope}")
    value = inputs.number(f"{where}.value", m["value"])
    if value <= 0:
        raise UserError(f"{where}.value: {m['value']!r}: a published figure is positive")
    return Figure(inputs.text(f"{where}.name", m["name"], required=True), measure, value, unit, scope,
                  inputs.text(f"{where}.where", m["where"], required=True),
                  inputs.text(f"{where}.quote", m["quote"], required=True),
                  op=inputs.text(f"{where}.op", m.get("op")), qualifier=inputs.text(f"{where}.qualifier", m.get("qualifier")),
                  note=inputs.text(f"{where}.note", m.get("note")))


def _knobs(where: str, raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a mapping of knob: value, got {type(raw).__name__}")
    out = {}
    for k, v in raw.items():
        if k not in catalog.KNOBS:
            raise UserError(f"{where}.{k}: unknown knob; known: {', '.join(catalog.KNOBS)}")
        if k in OWNED_KNOBS:
            raise UserError(f"{where}.{k}: set by `ybbench reproduce` (--duration; the keys a read phase reads "
                            "come from the phase named in `reads`)")
        if isinstance(v, (dict, list)) or v is None:
            raise UserError(f"{where}.{k}: {v!r}: expected a single value")
        out[k] = str(v).lower() if isinstance(v, bool) else str(v)
    return out


def _phase(where: str, raw: object, earlier: list[Phase]) -> Phase:
    m = inputs.mapping(where, raw, PHASE_KEYS, {"name", "workload", "figures"})
    name = m["name"]
    if not isinstance(name, str) or not PHASE_NAME.match(name):
        raise UserError(f"{where}.name: {name!r}: use 1-20 lower-case letters, digits and -, starting with a "
                        "letter or digit (it ends each phase's run id)")
    if name in {p.name for p in earlier}:
        raise UserError(f"{where}.name: {name!r} names two phases")
    workload = m["workload"]
    if workload not in catalog.workloads():
        raise UserError(f"{where}.workload: unknown workload {workload!r}; known: {', '.join(catalog.workloads())}")
    knobs = _knobs(f"{where}.knobs", m.get("knobs"))
    conc = _entry(f"{where}.concurrency", m["concurrency"]) if m.get("concurrency") is not None else None
    if conc is not None:
        _positive_int(f"{where}.concurrency", conc)
        if "VUS" in knobs:
            raise UserError(f"{where}.knobs.VUS: the VUs follow from the published concurrency (scaled to the "
                            "machine); give VUS only for a phase whose seed gives no concurrency")
    elif "VUS" not in knobs:
        raise UserError(f"{where}: give the published concurrency, or knobs.VUS when the seed gives none")
    reads = inputs.text(f"{where}.reads", m.get("reads"))
    if reads and reads not in {p.name for p in earlier}:
        raise UserError(f"{where}.reads: {reads!r} is not an earlier phase; earlier: "
                        f"{', '.join(p.name for p in earlier) or '(none)'}")
    if workload in READERS and not reads:
        raise UserError(f"{where}.reads: {workload} reads the keys a {READERS[workload]} phase wrote: name that phase")
    loader = next((p.workload for p in earlier if p.name == reads), None)
    if reads and READERS.get(workload) != loader:
        raise UserError(f"{where}.reads: {workload} cannot read the keys of phase {reads!r} ({loader}); "
                        + (f"it reads a {READERS[workload]} phase's" if workload in READERS else "it reads no keys"))
    figs = m["figures"]
    if not isinstance(figs, list):
        raise UserError(f"{where}.figures: expected a list (empty when the seed publishes none for the phase)")
    figures = [_figure(f"{where}.figures[{i}]", f) for i, f in enumerate(figs)]
    setup = _setup(f"{where}.setup", m["setup"], set()) if m.get("setup") is not None else {}
    warmup = _entry(f"{where}.warmup", m["warmup"]) if m.get("warmup") is not None else None
    if warmup is not None:
        if workload in UNTIL_LOADED:
            raise UserError(f"{where}.warmup: a {workload} phase runs until loaded; only a run has a warm-up")
        warmup.value = str(warmup.value)
        seconds(f"{where}.warmup.value", warmup.value, zero=True)
    published = _published(f"{where}.published", m.get("published"), workload)
    return Phase(name, workload, knobs, conc,
                 _entry(f"{where}.duration", m["duration"]) if m.get("duration") is not None else None,
                 reads, _entry(f"{where}.command", m["command"]) if m.get("command") is not None else None,
                 figures, inputs.text(f"{where}.notes", m.get("notes")), setup, warmup, published)


def _published(where: str, raw: object, workload: str) -> dict[str, str]:
    """The published command's own knobs: what `--published` runs. VUS is
    allowed here (the published connections or loader threads), a read
    phase's WAREHOUSES is not (it runs on its load's)."""
    if raw is None:
        return {}
    if isinstance(raw, dict) and workload in READERS and "WAREHOUSES" in raw:
        raise UserError(f"{where}.WAREHOUSES: a {workload} phase runs on the warehouses its load phase loaded "
                        "(give them in the load phase's published knobs)")
    out = _knobs(where, raw)
    if "VUS" in out and not re.fullmatch(r"[1-9][0-9]*", out["VUS"]):
        raise UserError(f"{where}.VUS: {out['VUS']!r}: expected a positive whole number")
    return out


def _setup(where: str, raw: object, required: set[str]) -> dict[str, Entry]:
    """A published setup (the file's, or a phase's overrides)."""
    m = inputs.mapping(where, raw, SETUP_KEYS, required)
    out = {k: _entry(f"{where}.{k}", v) for k, v in m.items()}
    for k in ("nodes", "vcpus_per_node", "warehouses"):
        if k in out:
            out[k].value = _positive_int(f"{where}.{k}", out[k])
    return out


def load(path: Path) -> Experiment:
    raw = inputs.load_yaml(path)
    top = inputs.mapping(str(path), raw, TOP_KEYS, {"name", "source", "setup", "phases"})
    where = lambda k: f"{path}: {k}"  # noqa: E731 - every message starts with the file
    seed = top.get("seed", "")
    if seed != "" and (not isinstance(seed, str) or not re.fullmatch(r"[0-9]{3}", seed)):
        raise UserError(f"{where('seed')}: {seed!r}: expected three digits in quotes, e.g. \"000\"")
    # A seed's text is in the shared folder; another source is a page (url)
    # whose quoted words are kept in a file beside this one.
    src = inputs.mapping(where("source"), top["source"], SOURCE_KEYS, {"file", "title"} | ({"url"} if not seed else set()))
    if seed and "url" in src:
        raise UserError(f"{where('source.url')}: a seed's source is its text in the shared folder (source.file)")
    setup = _setup(where("setup"), top["setup"], {"nodes", "vcpus_per_node"})
    phases_raw = top["phases"]
    if not isinstance(phases_raw, list) or not phases_raw:
        raise UserError(f"{where('phases')}: expected a non-empty list")
    phases: list[Phase] = []
    for i, p in enumerate(phases_raw):
        phases.append(_phase(where(f"phases[{i}]"), p, phases))
    diffs = top.get("differences") or []
    if not isinstance(diffs, list) or not all(isinstance(d, str) and d.strip() for d in diffs):
        raise UserError(f"{where('differences')}: expected a list of sentences")
    exp = Experiment(path, seed, inputs.text(where("name"), top["name"], required=True),
                     inputs.text(where("source.file"), src["file"], required=True),
                     inputs.text(where("source.title"), src["title"], required=True),
                     setup, phases, list(diffs), inputs.text(where("notes"), top.get("notes")),
                     inputs.text(where("source.url"), src.get("url")))
    for i, p in enumerate(phases):
        per_warehouse = [f.name for f in p.figures if f.measure == "tpmc"]
        if per_warehouse and "warehouses" not in exp.setup_of(p):
            raise UserError(f"{where(f'phases[{i}]')}: figure {per_warehouse[0]!r} is tpmC, compared per warehouse: "
                            "give the published warehouses (setup.warehouses, or the phase's setup.warehouses)")
    if not seed and not exp.source_text().is_file():
        raise UserError(f"{where('source.file')}: {exp.source_text()} is not a file: keep the quoted page's words "
                        "beside the experiment file")
    return exp
