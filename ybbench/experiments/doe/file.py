"""Reading a design file (DESIGN.yaml) and its results, checking everything
before any analysis. Every problem is a UserError that names the file, the
place in it, and what is wrong.

Results are matched to the design's runs by their factor levels, never by
row order: a row names the level of every factor, and the combination must
be one of the design's runs.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml

from ybbench.core import inputs
from ybbench.core.errors import UserError
from ybbench.experiments.doe import plan as doe_plan
from ybbench.experiments.doe.design import Design, order_word, parse_generator

TOP_KEYS = {"name", "description", "source", "factors", "generators", "response", "replications",
            "results", "interactions", "claims", "notes", "run"}
FACTOR_KEYS = {"name", "levels", "unit"}
RESPONSE_KEYS = {"name", "unit"}
RESULTS_KEYS = {"rows", "csv", "column"}
ROW_KEYS = {"y", "run", "source"}  # besides the factor letters
CLAIM_KEYS = {"says", "where"}
CLAIM_KINDS = {"largest", "smallest", "positive", "negative", "larger"}
CSV_KEYS = {"replication", "run", "source"}
LETTER = re.compile(r"^[A-Z]$")


@dataclass
class Factor:
    letter: str
    name: str
    levels: tuple[str, str]  # as shown: level 1 (coded -1), level 2 (+1)
    keys: tuple[str, str]  # as compared
    unit: str = ""

    def code(self, key: str) -> int:
        return -1 if key == self.keys[0] else 1

    def level(self, code: int) -> str:
        return self.levels[0] if code < 0 else self.levels[1]


@dataclass
class Claim:
    says: str
    where: str
    kind: str  # one of CLAIM_KINDS
    words: list[str]


@dataclass
class DesignFile:
    path: Path
    name: str
    description: str
    source: str
    factors: list[Factor]
    design: Design
    response: str
    unit: str
    y: np.ndarray | None  # runs x r, in the design's run order; None without results
    run_ids: list[str]  # each run's id in the source ("" if none given)
    run_sources: list[str]  # where each run's numbers come from
    interactions: list[str]
    claims: list[Claim]
    notes: str
    run: doe_plan.RunSpec | None  # how to run each row with k6 (`ybbench doe --run`)
    ignored_columns: list[str] = field(default_factory=list)

    def factor(self, letter: str) -> Factor:
        return next(f for f in self.factors if f.letter == letter)

    def describe_run(self, i: int) -> str:
        return ", ".join(f"{f.letter}={f.level(c)}" for f, c in zip(self.factors, self.design.matrix[i]))


def _scalar_key(value: object) -> str | None:
    """How a level compares: as YAML reads it, whether written as text or
    not (so 3, "3" and a CSV's 3 match; True, "True" and true match)."""
    if isinstance(value, str):
        value = _cell(value.strip())
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value).strip()
    return None


def _cell(text: str) -> object:
    """A CSV cell read as YAML reads a plain scalar."""
    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return v if isinstance(v, (bool, int, float, str)) else text


def _factors(where: str, raw: object) -> list[Factor]:
    if not isinstance(raw, dict) or not raw:
        raise UserError(f"{where}: expected a mapping of factor letter to {{name, levels}}")
    out, names = [], {}
    for letter, spec in raw.items():
        w = f"{where}.{letter}"
        if not isinstance(letter, str) or not LETTER.match(letter):
            raise UserError(f"{where}: factor {letter!r}: a factor is one capital letter A-Z "
                            "(give it a name with `name:`)")
        spec = inputs.mapping(w, spec, FACTOR_KEYS, {"levels"})
        name = inputs.text(f"{w}.name", spec.get("name"), required="name" in spec) or letter
        if name in names:
            raise UserError(f"{w}.name: {name!r} is also the name of {names[name]}")
        names[name] = letter
        levels = spec["levels"]
        if not isinstance(levels, list) or len(levels) != 2:
            raise UserError(f"{w}.levels: expected a list of two levels (level 1, level 2), got {levels!r}")
        keys = tuple(_scalar_key(v) for v in levels)
        if None in keys or "" in keys:
            raise UserError(f"{w}.levels: a level is a number or text, got {levels!r}")
        if keys[0] == keys[1]:
            raise UserError(f"{w}.levels: the two levels are the same ({levels[0]!r})")
        out.append(Factor(letter, name, (str(levels[0]), str(levels[1])), keys,
                          inputs.text(f"{w}.unit", spec.get("unit"))))
    if len(out) < 2:
        raise UserError(f"{where}: a design needs at least two factors")
    return out


def _generators(where: str, raw: object, letters: list[str]):
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise UserError(f"{where}: expected a list such as ['E = BC', 'F = AB']")
    return [parse_generator(g, letters) for g in raw]


def _match(df: DesignFile, where: str, levels: dict[str, object]) -> int:
    """The design run with these levels (index), or a UserError naming the
    level or the generator that does not fit."""
    codes = {}
    for f in df.factors:
        if f.letter not in levels:
            raise UserError(f"{where}: no level for {f.letter} ({f.name})")
        key = _scalar_key(levels[f.letter])
        if key not in f.keys:
            raise UserError(f"{where}: {f.letter} = {levels[f.letter]!r} is not a level of {f.letter} "
                            f"({f.name}): {f.levels[0]!r} or {f.levels[1]!r}")
        codes[f.letter] = f.code(key)
    for g in df.design.generators:
        want = g.sign * math.prod(codes[x] for x in g.word)
        if codes[g.factor] != want:
            fixed = ", ".join(f"{x} = {df.factor(x).level(codes[x])!r}" for x in g.word)
            raise UserError(f"{where}: not a run of this design: {g} gives {g.factor} = "
                            f"{df.factor(g.factor).level(want)!r} when {fixed}, "
                            f"not {levels[g.factor]!r}")
    row = np.array([codes[f.letter] for f in df.factors])
    return int(np.flatnonzero((df.design.matrix == row).all(axis=1))[0])


def _rows(df: DesignFile, where: str, rows: object) -> list[tuple[str, int, list[float], str, str]]:
    """(where, run index, ys, run id, source) per YAML row."""
    if not isinstance(rows, list) or not rows:
        raise UserError(f"{where}: expected a list of rows, each with every factor's level and y")
    allowed = ROW_KEYS | {f.letter for f in df.factors}
    out, seen = [], {}
    for i, row in enumerate(rows):
        label = f"results.rows[{i}]" + (f" (run {row['run']})" if isinstance(row, dict) and "run" in row else "")
        w = f"{where}[{i}]" + label[label.index("]") + 1:]
        row = inputs.mapping(w, row, allowed, {"y"})
        ys = row["y"] if isinstance(row["y"], list) else [row["y"]]
        if not ys:
            raise UserError(f"{w}.y: no values")
        ys = [inputs.number(f"{w}.y", v) for v in ys]
        run = _match(df, w, row)
        if run in seen:
            raise UserError(f"{w}: repeats the levels of {seen[run]} ({df.describe_run(run)}); "
                            "give all of a run's replications in one row's y list")
        seen[run] = label
        out.append((w, run, ys, str(row.get("run", "")), inputs.text(f"{w}.source", row.get("source"))))
    return out


def _csv_rows(df: DesignFile, where: str, path: Path, column: str) -> list[tuple[str, int, list[float], str, str]]:
    """One line per measurement: a column per factor (its letter or name),
    the response column, and optionally replication, run and source. Lines
    with the same levels are replications only when `replication` tells them
    apart."""
    try:
        text = path.read_text()
    except OSError as e:
        raise UserError(f"{where}: cannot read {path}: {e.strerror}") from None
    reader = csv.DictReader(text.splitlines())
    header = reader.fieldnames or []
    by_name = {}
    for f in df.factors:
        hits = [h for h in header if h.strip() in (f.letter, f.name)]
        if not hits:
            raise UserError(f"{path}: no column for factor {f.letter} ({f.name}); columns: {', '.join(header)}")
        by_name[f.letter] = hits[0]
    if column not in header:
        raise UserError(f"{path}: no response column {column!r}; columns: {', '.join(header)}")
    df.ignored_columns = [h for h in header if h not in by_name.values() and h != column and h not in CSV_KEYS]
    out, seen = [], {}
    for n, line in enumerate(reader, start=2):
        w = f"{path.name} line {n}"
        if None in line or any(v is None for v in line.values()):
            raise UserError(f"{w}: expected {len(header)} cells")
        run = _match(df, w, {x: _cell(line[h]) for x, h in by_name.items()})
        rep = line.get("replication", "").strip()
        if (run, rep) in seen:
            raise UserError(f"{w}: repeats the levels of line {seen[(run, rep)]} ({df.describe_run(run)})"
                            + ("" if "replication" in header else "; add a replication column to give several "
                               "measurements of one run"))
        seen[(run, rep)] = n
        out.append((w, run, [inputs.number(f"{w}: {column}", line[column])], line.get("run", "").strip(),
                    line.get("source", "").strip()))
    if not out:
        raise UserError(f"{path}: no rows")
    return out


def _collect(df: DesignFile, where: str, rows, replications: int | None) -> None:
    """Per run, all its values; then every run present, each with r values."""
    per_run: dict[int, list[float]] = {}
    first: dict[int, str] = {}
    for w, run, ys, rid, src in rows:
        first.setdefault(run, w)
        per_run.setdefault(run, []).extend(ys)
        df.run_ids[run] = df.run_ids[run] or rid
        if src and src not in df.run_sources[run]:
            df.run_sources[run] = "; ".join(filter(None, [df.run_sources[run], src]))
    missing = [i for i in range(df.design.runs) if i not in per_run]
    if missing:
        shown = "; ".join(f"sign table run {i + 1}: {df.describe_run(i)}" for i in missing[:4])
        more = f"; and {len(missing) - 4} more" if len(missing) > 4 else ""
        raise UserError(f"{where}: no results for {len(missing)} of the {df.design.runs} runs: {shown}{more}")
    ref = rows[0][1]
    expected = replications if replications is not None else len(per_run[ref])
    said = "replications: says" if replications is not None else f"{first[ref]} has"
    for _, run, *_ in rows:
        if len(per_run[run]) != expected:
            raise UserError(f"{first[run]}: {len(per_run[run])} replication(s) of {df.describe_run(run)}, but "
                            f"{said} {expected}; every run needs the same number")
    df.y = np.array([per_run[i] for i in range(df.design.runs)], dtype=float)


def _claims(df: DesignFile, where: str, raw: object) -> list[Claim]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise UserError(f"{where}: expected a list of claims")
    out = []
    for i, c in enumerate(raw):
        w = f"{where}[{i}]"
        c = inputs.mapping(w, c, CLAIM_KEYS | CLAIM_KINDS, {"says"})
        kinds = [k for k in c if k in CLAIM_KINDS]
        if len(kinds) != 1:
            raise UserError(f"{w}: give exactly one of {', '.join(sorted(CLAIM_KINDS))}")
        kind = kinds[0]
        words = c[kind] if isinstance(c[kind], list) else [c[kind]]
        if not words or not all(isinstance(x, str) and x for x in words):
            raise UserError(f"{w}.{kind}: expected effects such as C or AB, got {c[kind]!r}")
        if kind == "larger" and len(words) != 2:
            raise UserError(f"{w}.larger: expected two effects [bigger, smaller], got {words!r}")
        if kind == "smallest" and len(words) != 1:
            raise UserError(f"{w}.smallest: expected one main effect, got {words!r}")
        for x in words:
            if len(set(x)) != len(x):
                raise UserError(f"{w}.{kind}: {x!r} repeats a factor")
            try:
                df.design.find(x)  # names only the design's factors
            except UserError as e:
                raise UserError(f"{w}.{kind}: {e}") from None
        out.append(Claim(inputs.text(f"{w}.says", c["says"], True), inputs.text(f"{w}.where", c.get("where")), kind,
                         [order_word(x, df.design.factors) for x in words]))
    return out


def _interactions(df: DesignFile, where: str, raw: object) -> list[str]:
    letters = df.design.factors
    if raw is None:
        return [a + b for i, a in enumerate(letters) for b in letters[i + 1:]]
    if not isinstance(raw, list):
        raise UserError(f"{where}: expected a list of factor pairs such as [AB, BC]")
    out = []
    for x in raw:
        if not isinstance(x, str) or len(x) != 2 or x[0] == x[1] or not set(x) <= set(letters):
            raise UserError(f"{where}: {x!r} is not a pair of two different factors of {''.join(letters)}")
        out.append(x)
    return out


def load(path: Path) -> DesignFile:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise UserError(f"{path}: not valid YAML: {e}") from None
    where = str(path)
    raw = inputs.mapping(where, raw, TOP_KEYS, {"factors"})
    factors = _factors(f"{where}: factors", raw["factors"])
    letters = [f.letter for f in factors]
    try:
        design = Design(letters, _generators(f"{where}: generators", raw.get("generators"), letters))
    except UserError as e:
        raise UserError(f"{where}: {e}" if not str(e).startswith(where) else str(e)) from None
    response = inputs.mapping(f"{where}: response", raw.get("response") or {}, RESPONSE_KEYS)
    df = DesignFile(
        path=Path(path), name=inputs.text(f"{where}: name", raw.get("name")) or Path(path).stem,
        description=inputs.text(f"{where}: description", raw.get("description")),
        source=inputs.text(f"{where}: source", raw.get("source")), factors=factors, design=design,
        response=inputs.text(f"{where}: response.name", response.get("name")) or "y",
        unit=inputs.text(f"{where}: response.unit", response.get("unit")), y=None,
        run_ids=[""] * design.runs, run_sources=[""] * design.runs, interactions=[], claims=[],
        notes=inputs.text(f"{where}: notes", raw.get("notes")), run=None)
    df.interactions = _interactions(df, f"{where}: interactions", raw.get("interactions"))
    df.claims = _claims(df, f"{where}: claims", raw.get("claims"))
    replications = raw.get("replications")
    if replications is not None and (isinstance(replications, bool) or not isinstance(replications, int)
                                     or replications < 1):
        raise UserError(f"{where}: replications: expected a whole number >= 1, got {replications!r}")
    if raw.get("run") is not None:
        df.run = doe_plan.parse(raw["run"], where, factors, design, replications or 1)
    if raw.get("results") is not None:
        res = inputs.mapping(f"{where}: results", raw["results"], RESULTS_KEYS)
        if ("rows" in res) == ("csv" in res):
            raise UserError(f"{where}: results: give either rows (in this file) or csv (a file name)")
        if "rows" in res:
            if "column" in res:
                raise UserError(f"{where}: results.column: only for a csv; rows carry y")
            rows = _rows(df, f"{where}: results.rows", res["rows"])
        else:
            csv_path = Path(path).parent / inputs.text(f"{where}: results.csv", res["csv"], True)
            column = inputs.text(f"{where}: results.column", res.get("column")) or "y"
            rows = _csv_rows(df, f"{where}: results.csv", csv_path, column)
        _collect(df, f"{where}: results", rows, replications)
    elif df.claims and df.run is None:
        raise UserError(f"{where}: claims: need results (or a run: section) to check them against")
    return df
