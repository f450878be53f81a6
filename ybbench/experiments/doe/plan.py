"""The `run:` section of a design file: how each run of the sign table
becomes one `ybbench run` (a workload and its knobs). It is read and
checked with the rest of the file, before anything runs, and every problem
names the file, the place and what is wrong.

    run:
      workload: kv-load              # every row's, unless a factor sets it
      duration: 10s                  # every row's DURATION
      response: ops_per_s            # y, from each row's summary.json (RESPONSES)
      knobs: {VUS: 8}                # every row's (and the load's)
      shuffle: 7                     # the run order's shuffle number (default: drawn, recorded)
      factors:                       # each factor: what its level 1 and level 2 change
        A: {knob: OP_SIZE, values: [1, 100]}
        B: {workload: [kv-random-read, kv-load]}
        D: {knobs: [{ISOLATION: read_committed}, {ISOLATION: repeatable_read}]}
      load:                          # once, before the rows: the keys read rows read
        workload: kv-load
        keys: 20000
        knobs: {OP_SIZE: 100}
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ybbench.core import catalog, inputs
from ybbench.core.durations import DURATION
from ybbench.core.errors import UserError

# "seed" is shuffle's old name, still read: in ybbench a seed is a published benchmark.
RUN_KEYS = {"workload", "duration", "response", "knobs", "factors", "load", "shuffle", "seed"}
MAP_KEYS = {"workload", "knob", "values", "knobs"}
LOAD_KEYS = {"workload", "keys", "duration", "knobs"}
LOAD_DURATION = "10m"  # the load's limit: it stops once it has written its keys

# y per row, from its summary.json (k6-scripts/lib/summary.js).
RESPONSES = {
    "ops_per_s": "ops/s, summed over the row's ops",
    "p50_ms": "p50 latency (ms) of the row's op (of a mixed workload: the op with the highest p99)",
    "p95_ms": "p95 latency (ms), as p50_ms",
    "p99_ms": "p99 latency (ms), as p50_ms",
    "avg_ms": "mean latency (ms), as p50_ms",
}
RESPONSE_UNITS = {"ops_per_s": "ops/s"}

# Read workloads read the keys a load wrote (KEY_PREFIX, MAX_WRITTEN_KEY):
# the load that writes their key shape and table.
LOADER = {"sql-selects": "sql-inserts", "sql-updates": "sql-inserts", "kv-read-heavy": "kv-load",
          "kv-recent-read-heavy": "kv-load", "kv-random-read": "kv-load"}
# Workloads that may run several ops; their per-op latency is in the
# summary only with OP_LATENCY_SUMMARY=on or --prometheus.
MIXED = {"sql-updates", "sql-secondary-index", "kv-read-heavy", "kv-recent-read-heavy", "ycsb"}
# Knobs the design sets itself.
OWN_KNOBS = {"DURATION": "run.duration", "KEY_PREFIX": "the design (run.load for read rows)",
             "MAX_WRITTEN_KEY": "the design (run.load.keys)", "NUM_UNIQUE_KEYS": "the design (run.load.keys)"}


@dataclass
class Load:
    workload: str
    keys: int
    duration: str
    knobs: dict[str, str]


@dataclass
class Row:
    """One run of the sign table: what `ybbench run` gets."""

    run: int  # 1-based, the sign table's order
    levels: dict[str, str]  # letter -> level, as shown
    workload: str
    knobs: dict[str, str]  # without the key knobs the design adds when it runs


@dataclass
class RunSpec:
    duration: str
    response: str
    knobs: dict[str, str]  # every row's and the load's
    sources: dict[str, str]  # knob -> where the file sets it
    rows: list[Row]
    load: Load | None
    shuffle: int | None
    replications: int = 1
    mapped: dict[str, str] = field(default_factory=dict)  # letter -> what it changes, for the output

    @property
    def unit(self) -> str:
        return RESPONSE_UNITS.get(self.response, "ms")


def _knob_value(where: str, value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise UserError(f"{where}: expected a number or text, got {value!r}")
    text = str(value).strip()
    if not text or "\n" in text:
        raise UserError(f"{where}: expected a number or text on one line, got {value!r}")
    return text


def _knob_name(where: str, name: object) -> str:
    if name in OWN_KNOBS:
        raise UserError(f"{where}: {name} is set by {OWN_KNOBS[name]}")
    if name not in catalog.KNOBS:
        raise UserError(f"{where}: unknown knob {name!r}; known: {', '.join(catalog.KNOBS)}")
    return name


def _whole(where: str, knobs: dict[str, str], name: str, default: int = 1) -> int:
    """A knob that the checks here compare as a whole number."""
    if name not in knobs:
        return default
    if not re.fullmatch(r"[0-9]+", knobs[name]) or int(knobs[name]) < 1:
        raise UserError(f"{where}: {name}={knobs[name]!r} is not a whole number >= 1")
    return int(knobs[name])


def _knobs(where: str, raw: object) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise UserError(f"{where}: expected a mapping of knob to value, such as {{VUS: 8}}")
    return {_knob_name(where, k): _knob_value(f"{where}.{k}", v) for k, v in raw.items()}


def _workload(where: str, name: object) -> str:
    if name not in catalog.workloads():
        raise UserError(f"{where}: unknown workload {name!r}; known: {', '.join(catalog.workloads())}")
    return name


def _pair(where: str, value: object, what: str) -> list:
    if not isinstance(value, list) or len(value) != 2:
        raise UserError(f"{where}: expected two {what} (level 1, level 2), got {value!r}")
    return value


def duration(where: str, text: object) -> str:
    if not isinstance(text, str) or not DURATION.match(text) or not re.search(r"[1-9]", text):
        raise UserError(f"{where}: {text!r} is not a duration such as 30s, 5m or 1m30s")
    return text


def _factor_map(where: str, raw: object) -> tuple[list[str] | None, list[dict[str, str]]]:
    """(the two workloads or None, the two levels' knobs)."""
    m = inputs.mapping(where, raw, MAP_KEYS)
    if "knob" in m and "knobs" in m:
        raise UserError(f"{where}: give knob with values, or knobs (one mapping per level), not both")
    if ("knob" in m) != ("values" in m):
        raise UserError(f"{where}: knob and values go together: {{knob: OP_SIZE, values: [1, 100]}}")
    if not m:
        raise UserError(f"{where}: say what the levels change: workload, knob with values, or knobs")
    workloads = None
    if "workload" in m:
        workloads = [_workload(f"{where}.workload", w) for w in _pair(f"{where}.workload", m["workload"],
                                                                       "workloads")]
    knobs: list[dict[str, str]] = [{}, {}]
    if "knob" in m:
        name = _knob_name(f"{where}.knob", m["knob"])
        values = _pair(f"{where}.values", m["values"], "values")
        knobs = [{name: _knob_value(f"{where}.values[{i}]", v)} for i, v in enumerate(values)]
    elif "knobs" in m:
        levels = _pair(f"{where}.knobs", m["knobs"], "mappings of knobs")
        knobs = [_knobs(f"{where}.knobs[{i}]", x) for i, x in enumerate(levels)]
        if set(knobs[0]) != set(knobs[1]):
            raise UserError(f"{where}.knobs: both levels must set the same knobs, got "
                            f"{', '.join(sorted(knobs[0])) or 'none'} and {', '.join(sorted(knobs[1])) or 'none'}")
    if (workloads is None or workloads[0] == workloads[1]) and knobs[0] == knobs[1]:
        raise UserError(f"{where}: both levels run the same workload and knobs; the factor would change nothing")
    return workloads, knobs


def parse(raw: object, where: str, factors, design, replications: int) -> RunSpec:
    """`factors`: the file's Factor list; `design`: its Design."""
    w = f"{where}: run"
    run = inputs.mapping(w, raw, RUN_KEYS)
    letters = [f.letter for f in factors]
    default_workload = _workload(f"{w}.workload", run["workload"]) if "workload" in run else None
    if "duration" not in run:
        raise UserError(f"{w}: missing duration (each row's DURATION, such as 30s)")
    dur = duration(f"{w}.duration", run["duration"])
    response = run.get("response", "ops_per_s")
    if response not in RESPONSES:
        raise UserError(f"{w}.response: {response!r} is not one of: "
                        + "; ".join(f"{k} ({v})" for k, v in RESPONSES.items()))
    knobs = _knobs(f"{w}.knobs", run.get("knobs"))
    sources = {k: "run.knobs" for k in knobs}
    if "shuffle" in run and "seed" in run:
        raise UserError(f"{w}: shuffle and seed: give one (seed is shuffle's old name)")
    key = "seed" if "seed" in run else "shuffle"
    shuffle = run.get(key)
    if shuffle is not None and (isinstance(shuffle, bool) or not isinstance(shuffle, int) or shuffle < 0):
        raise UserError(f"{w}.{key}: expected a whole number >= 0, got {shuffle!r}")

    maps = run.get("factors")
    if not isinstance(maps, dict) or not maps:
        raise UserError(f"{w}.factors: expected a mapping of each factor letter to what its levels change, "
                        f"such as A: {{knob: OP_SIZE, values: [1, 100]}}")
    by_letter, workload_by = {}, None
    for letter, m in maps.items():
        fw = f"{w}.factors.{letter}"
        if letter not in letters:
            raise UserError(f"{fw}: {letter!r} is not a factor of the design ({', '.join(letters)})")
        workloads, level_knobs = _factor_map(fw, m)
        if workloads is not None:
            if workload_by:
                raise UserError(f"{fw}.workload: factor {workload_by} sets the workload too; one factor may")
            workload_by = letter
        for k in level_knobs[0]:
            if k in sources:
                raise UserError(f"{fw}: {k} is also set by {sources[k]}; a knob has one source")
            sources[k] = f"run.factors.{letter}"
        by_letter[letter] = (workloads, level_knobs)
    missing = [f for f in factors if f.letter not in by_letter]
    if missing:
        raise UserError(f"{w}.factors: no mapping for {', '.join(f'{f.letter} ({f.name})' for f in missing)}: "
                        "say which workload or knobs each of its levels runs")
    if workload_by is None and default_workload is None:
        raise UserError(f"{w}: missing workload (no factor sets one)")

    rows = []
    for i, signs in enumerate(design.matrix):
        workload, row_knobs = default_workload, dict(knobs)
        for f, s in zip(factors, signs):
            workloads, level_knobs = by_letter[f.letter]
            lvl = 0 if s < 0 else 1
            if workloads:
                workload = workloads[lvl]
            row_knobs.update(level_knobs[lvl])
        rows.append(Row(i + 1, {f.letter: f.level(s) for f, s in zip(factors, signs)}, workload, row_knobs))

    load = _load(f"{w}.load", run.get("load"), knobs, sources)
    readers = sorted({r.workload for r in rows if r.workload in LOADER})
    if readers and load is None:
        raise UserError(f"{w}: rows run {', '.join(readers)}, which read the keys a load wrote: add "
                        f"run.load (workload {LOADER[readers[0]]}, keys)")
    for r in rows:
        if r.workload in LOADER and LOADER[r.workload] != load.workload:
            raise UserError(f"{w}.load.workload: {load.workload} does not write the keys {r.workload} reads "
                            f"(run {r.run}); {LOADER[r.workload]} does")
        if r.workload in LOADER and _whole(f"{w}: run {r.run}", r.knobs, "OP_SIZE") > load.keys:
            raise UserError(f"{w}: run {r.run} reads OP_SIZE={r.knobs['OP_SIZE']} keys a statement, more than "
                            f"the {load.keys} of run.load.keys")
    mapped = {x: ", ".join(filter(None, [f"workload {'/'.join(wl)}" if wl else "",
                                         ", ".join(f"{k} {a[k]}/{b[k]}" for k in a)]))
              for x, (wl, (a, b)) in by_letter.items()}
    return RunSpec(dur, response, knobs, sources, rows, load, shuffle, replications, mapped)


def _load(where: str, raw: object, knobs: dict[str, str], sources: dict[str, str]) -> Load | None:
    if raw is None:
        return None
    m = inputs.mapping(where, raw, LOAD_KEYS)
    for key in ("workload", "keys"):
        if key not in m:
            raise UserError(f"{where}: missing {key}")
    workload = _workload(f"{where}.workload", m["workload"])
    if workload not in LOADER.values():
        raise UserError(f"{where}.workload: {workload} is not a load; one of {', '.join(sorted(set(LOADER.values())))}")
    keys = m["keys"]
    if isinstance(keys, bool) or not isinstance(keys, int) or keys < 1:
        raise UserError(f"{where}.keys: expected a whole number of keys >= 1, got {keys!r}")
    own = _knobs(f"{where}.knobs", m.get("knobs"))
    for k in own:
        if sources.get(k) == "run.knobs":
            raise UserError(f"{where}.knobs: {k} is also set by run.knobs; a knob has one source")
    op_size = _whole(where, {**knobs, **own}, "OP_SIZE")
    if workload == "kv-load" and keys % op_size:
        raise UserError(f"{where}.keys: {keys} is not a multiple of the load's OP_SIZE {op_size}")
    return Load(workload, keys, duration(f"{where}.duration", m.get("duration", LOAD_DURATION)), {**knobs, **own})


def describe(spec: RunSpec, factors) -> list[str]:
    """What --run runs, for the printed design."""
    lines = [f"run (ybbench doe --run): {spec.duration} per run, {spec.replications} replication(s), "
             f"y = {spec.response} ({RESPONSES[spec.response]})"]
    lines += [f"  {f.letter} ({f.name}): {spec.mapped[f.letter]}" for f in factors]
    fixed = ", ".join(f"{k}={v}" for k, v in spec.knobs.items())
    if fixed:
        lines.append(f"  every run: {fixed}")
    if spec.load:
        ld = spec.load
        lines.append(f"  load, once before the rows: {ld.workload}, {ld.keys} keys"
                     + "".join(f", {k}={v}" for k, v in ld.knobs.items() if spec.knobs.get(k) != v))
    return lines
