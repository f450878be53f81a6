"""Reading `ybbench scale`'s inputs, checked before anything runs: a
results file (throughput measured elsewhere, per node count) or a cluster
file (the clusters to run a workload against). Every problem is a
UserError naming the file, the place in it and what is wrong."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

from ybbench.core import inputs
from ybbench.core.errors import UserError

RESULTS_KEYS = {"name", "description", "source", "throughput", "rows", "csv", "notes"}
THROUGHPUT_KEYS = {"name", "unit"}
ROW_KEYS = {"nodes", "throughput", "replication", "source"}
CSV_COLUMNS = ("nodes", "throughput")
CLUSTERS_KEYS = {"name", "description", "clusters", "notes"}
CLUSTER_KEYS = {"name", "nodes", "ysql_nodes"}
NAME = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")  # part of a run id
ADDRESS = re.compile(r"^([A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$")


@dataclass
class Point:
    nodes: float
    throughput: float
    replication: str = ""
    source: str = ""  # where the number comes from (a seed's table, a run's summary.json)


@dataclass
class Measurements:
    name: str
    description: str = ""
    source: str = ""
    quantity: str = "throughput"
    unit: str = "ops/s"
    notes: str = ""
    points: list[Point] = field(default_factory=list)


@dataclass
class Cluster:
    name: str
    nodes: int
    ysql_nodes: list[str]

    def hosts(self) -> set[str]:
        return {a.rsplit(":", 1)[0] for a in self.ysql_nodes}


def _nodes(where: str, value: object) -> float:
    n = inputs.number(where, value)
    if n <= 0:
        raise UserError(f"{where}: {value!r} nodes: a node count is positive")
    return n


def _throughput(where: str, value: object) -> float:
    x = inputs.number(where, value)
    if x <= 0:
        raise UserError(f"{where}: {value!r}: throughput must be positive")
    return x


def _add(points: list[Point], seen: dict, where: str, p: Point) -> None:
    key = (p.nodes, p.replication)
    if key in seen:
        raise UserError(f"{where}: repeats {p.nodes:g} nodes of {seen[key]}; give each measurement of one "
                        "node count its own replication")
    seen[key] = where
    points.append(p)


def _csv_points(path: Path) -> list[Point]:
    try:
        text = path.read_text()
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in CSV_COLUMNS if c not in header]
    if missing:
        raise UserError(f"{path}: no column {', '.join(missing)}; expected nodes, throughput "
                        f"[, replication, source]; columns: {', '.join(header) or 'none'}")
    unknown = [h for h in header if h not in ROW_KEYS]
    if unknown:
        raise UserError(f"{path}: unknown column {', '.join(map(repr, unknown))}; known: {', '.join(sorted(ROW_KEYS))}")
    points, seen = [], {}
    for n, line in enumerate(reader, start=2):
        w = f"{path.name} line {n}"
        if None in line or any(v is None for v in line.values()):
            raise UserError(f"{w}: expected {len(header)} cells")
        line = {k.strip(): v.strip() for k, v in line.items()}
        _add(points, seen, w, Point(_nodes(f"{w}: nodes", line["nodes"]),
                                    _throughput(f"{w}: throughput", line["throughput"]),
                                    line.get("replication", ""), line.get("source", "")))
    if not points:
        raise UserError(f"{path}: no rows")
    return points


def load_results(path: Path) -> Measurements:
    """A YAML file (rows, or csv naming a CSV beside it) or a CSV file."""
    path = Path(path)
    if path.suffix.lower() == ".csv":
        return Measurements(name=path.stem, source=str(path), points=_csv_points(path))
    where = str(path)
    raw = inputs.mapping(where, inputs.load_yaml(path), RESULTS_KEYS)
    tp = inputs.mapping(f"{where}: throughput", raw.get("throughput") or {}, THROUGHPUT_KEYS)
    m = Measurements(
        name=inputs.text(f"{where}: name", raw.get("name")) or path.stem,
        description=inputs.text(f"{where}: description", raw.get("description")),
        source=inputs.text(f"{where}: source", raw.get("source")),
        quantity=inputs.text(f"{where}: throughput.name", tp.get("name")) or "throughput",
        unit=inputs.text(f"{where}: throughput.unit", tp.get("unit")) or "ops/s",
        notes=inputs.text(f"{where}: notes", raw.get("notes")))
    if ("rows" in raw) == ("csv" in raw):
        raise UserError(f"{where}: give either rows (in this file) or csv (a file name)")
    if "csv" in raw:
        m.points = _csv_points(path.parent / inputs.text(f"{where}: csv", raw["csv"], True))
        return m
    rows = raw["rows"]
    if not isinstance(rows, list) or not rows:
        raise UserError(f"{where}: rows: expected a list of {{nodes, throughput}}")
    seen: dict = {}
    for i, row in enumerate(rows):
        w = f"{where}: rows[{i}]"
        row = inputs.mapping(w, row, ROW_KEYS, {"nodes", "throughput"})
        rep = row.get("replication", "")
        _add(m.points, seen, w, Point(_nodes(f"{w}.nodes", row["nodes"]),
                                      _throughput(f"{w}.throughput", row["throughput"]),
                                      "" if rep is None else str(rep), inputs.text(f"{w}.source", row.get("source"))))
    return m


def _addresses(where: str, value: object) -> list[str]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise UserError(f"{where}: expected a list of host:port (or text host:port,host:port)")
    out = []
    for a in items:
        m = ADDRESS.match(a.strip()) if isinstance(a, str) else None
        if not m or not 0 < int(m.group(2)) < 65536:
            raise UserError(f"{where}: {a!r} is not host:port")
        out.append(a.strip())
    return out


def load_clusters(path: Path) -> tuple[str, list[Cluster]]:
    """The clusters, in the file's order; their node counts are the N of the fit."""
    path = Path(path)
    where = str(path)
    raw = inputs.mapping(where, inputs.load_yaml(path), CLUSTERS_KEYS, {"clusters"})
    items = raw["clusters"]
    if not isinstance(items, list) or not items:
        raise UserError(f"{where}: clusters: expected a list of {{name, nodes, ysql_nodes}}")
    out, names = [], set()
    for i, c in enumerate(items):
        w = f"{where}: clusters[{i}]"
        c = inputs.mapping(w, c, CLUSTER_KEYS, CLUSTER_KEYS)
        name = c["name"]
        if not isinstance(name, str) or not NAME.match(name):
            raise UserError(f"{w}.name: {name!r}: use 1-32 letters, digits, . _ - (it is part of the run id)")
        if name in names:
            raise UserError(f"{w}.name: {name!r} is used twice")
        names.add(name)
        n = c["nodes"]
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise UserError(f"{w}.nodes: {n!r}: a node count is a whole number >= 1")
        out.append(Cluster(name, n, _addresses(f"{w}.ysql_nodes", c["ysql_nodes"])))
    return inputs.text(f"{where}: name", raw.get("name")) or path.stem, out
