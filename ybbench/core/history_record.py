"""What the history store keeps of one run (core/history_store.py), read
from its folder (core/run_folder.py): per op, ops/s over the measured
window and k6's own p50/p95/p99 (summary.json); errors by SQLSTATE class;
the workload and every knob; the versions and labels params.json holds
(`ybbench run --label`); the hosts the knobs name. CPU per node is not in a
run's folder (it is in Prometheus, read by the report), so it is kept as
null: the store says what is known."""

from __future__ import annotations

import json
import re
from pathlib import Path

from ybbench.core import history_store, run_folder
from ybbench.core.catalog import SECRET_NAMES
from ybbench.core.errors import UserError

# Knobs that name a run's own data (not how it ran): runs that differ only
# in these belong to one series. A TPC-C load's tables and its NURand
# constant (TABLE_PREFIX, C_LOAD) are new with each load: nightly tpcc runs
# on fresh loads are one series.
OWN_DATA_KNOBS = frozenset({"KEY_PREFIX", "MAX_WRITTEN_KEY", "TABLE_PREFIX", "C_LOAD"})


def series_key(workload: str, knobs: dict[str, str]) -> str:
    """The runs of one series share this: the workload and every knob but
    OWN_DATA_KNOBS, as sorted JSON."""
    return json.dumps({"workload": workload, "knobs": {k: v for k, v in knobs.items() if k not in OWN_DATA_KNOBS}},
                      sort_keys=True)


def _latency(op: dict, q: str) -> float | None:
    lat = op.get("latency_ms") or {}
    return lat.get(q)


def _limits(folder: Path) -> dict | None:
    """What limited the run and the CPU behind it (its limits.json,
    analysis/limits.py), for the store's cpu column; None without one."""
    doc = run_folder.optional(folder, run_folder.LIMITS)
    if doc is None:
        return None
    client = [f["figures"].get("cores_used") for f in doc["resources"] if f["resource"] == "client"]
    nodes = [f["figures"] for f in doc["resources"] if f["resource"] == "server-cpu" and f["status"] != "not-visible"]
    top = max(nodes, key=lambda n: n["share"]) if nodes else None
    return {"limited_by": doc["verdict"]["limit"], "verdict": doc["verdict"]["text"],
            "client_cores": sum(client) if client and None not in client else None,
            "busiest_node": top and top["node"], "busiest_node_share": top and top["share"]}


def figures(folder: Path) -> dict:
    """The store's row of the finished run in `folder` (a UserError naming
    what is missing or broken)."""
    run = run_folder.read(folder)
    s = run.summary
    knobs = run.shown_knobs
    nodes = [n.strip() for n in knobs.get("YSQL_NODES", "").split(",") if n.strip()]
    return {
        "testid": run.testid,
        "workload": run.params["workload"],
        "started_unix_s": run.params["started_unix_s"],
        "finished_unix_s": run.params["finished_unix_s"],
        "duration_s": s.get("duration_s"),
        "k6_exit_code": run.params.get("k6_exit_code"),
        "errors": s.get("errors"),
        "errors_by_class": s.get("errors_by_class", {}),
        "knobs": knobs,
        "labels": run.params.get("labels", {}),
        "versions": {k: v for k, v in run.params.get("versions", {}).items() if not SECRET_NAMES.search(k)},
        "hosts": {"ysql": nodes},
        "cpu": _limits(folder),
        "series_key": series_key(run.params["workload"], knobs),
        "ops": {
            name: {"ops_per_s": op.get("per_second"), "count": op.get("count"), "p50_ms": _latency(op, "p50"),
                   "p95_ms": _latency(op, "p95"), "p99_ms": _latency(op, "p99"), "errors": op.get("errors")}
            for name, op in s.get("ops", {}).items()
        },
    }


def run_folders(results: Path) -> list[Path]:
    """Every finished run's folder under `results`, at any depth (a
    campaign's runs are in its series folder): a folder with params.json
    and summary.json. Staging folders (dot-named: core/files.py) are not runs."""
    found = []
    for params in sorted(results.rglob(run_folder.PARAMS)):
        folder = params.parent
        if (folder / run_folder.SUMMARY).exists() and not any(p.startswith(".") for p in folder.relative_to(results).parts):
            found.append(folder)
    return found


LABEL = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


def parse_labels(given: list[str]) -> dict[str, str]:
    """`--label KEY=VALUE`s: each key once, plain (letters, digits, . _ -)."""
    labels: dict[str, str] = {}
    for item in given:
        key, eq, value = item.partition("=")
        if not eq or not LABEL.match(key):
            raise UserError(f"--label {item!r}: give KEY=VALUE, KEY of 1-64 letters, digits, . _ -")
        if key in labels:
            raise UserError(f"--label {key}: given twice")
        labels[key] = value
    return labels


def record(folder: Path, where: str) -> bool:
    """Keep the finished run in `folder` in the store at `where`; False when
    it was there already."""
    with history_store.Store(where) as store:
        return store.record(figures(folder))


def keep(folder: Path, results: Path, given: str | None = None) -> str | None:
    """record() into the run's store (history_store.location); a store that
    cannot take it comes back as a sentence to say, never as a failure: the
    run is whole in its folder either way."""
    try:
        record(folder, history_store.location(results, given))
    except UserError as e:
        return f"the run is not in the history: {e}"
    return None
