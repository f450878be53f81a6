"""`ybbench run --keys-from TESTID`: a read workload's keys from the load
run that wrote them, read from that run's folder instead of copied by hand
(KEY_PREFIX, MAX_WRITTEN_KEY, or YCSB's RECORD_COUNT, or TPC-C's
WAREHOUSES and C_LOAD, and the table and the key or field sizes the reads
must match)."""

from __future__ import annotations

from pathlib import Path

from ybbench.core import run_folder
from ybbench.core.catalog import READS_KEYS_OF
from ybbench.core.errors import UserError

# The load's knobs a reader must share, when the load set them.
SHARED_KNOBS = {"sql-inserts": ("TABLE",), "kv-load": ("TABLE", "KEY_BYTES", "VALUE_BYTES"),
                "ycsb-load": ("TABLE", "FIELD_COUNT", "FIELD_LENGTH"), "tpcc-load": ("TABLE_PREFIX",)}


def knobs_from_run(workload: str, testid: str, results: Path) -> dict[str, str]:
    """The knobs that make `workload` read what run `testid` wrote."""
    load = READS_KEYS_OF.get(workload)
    if load is None:
        readers = ", ".join(sorted(READS_KEYS_OF))
        raise UserError(f"--keys-from: {workload} reads no keys a load wrote (the workloads that do: {readers})")
    try:
        run = run_folder.load(results, testid)
    except UserError as e:
        raise UserError(f"--keys-from {testid}: {e}") from None
    return knobs_from_loaded(workload, run)


def knobs_from_loaded(workload: str, run: run_folder.Run) -> dict[str, str]:
    """knobs_from_run for a run already read (reproduce's load phase)."""
    load, testid = READS_KEYS_OF[workload], run.testid
    if run.params["workload"] != load:
        raise UserError(f"--keys-from {testid}: a {run.params['workload']} run; {workload} reads the keys of a "
                        f"{load} run")
    written = run.summary.get("rows_written") or 0
    if not written:
        raise UserError(f"--keys-from {testid}: the run wrote no rows: {workload} would have nothing to read")
    out = {k: run.knobs[k] for k in SHARED_KNOBS[load] if k in run.knobs}
    if load == "tpcc-load":
        w = run.summary.get("written") or {}
        return {**out, "WAREHOUSES": str(w["warehouses"]), "C_LOAD": str(w["c_load"])}
    if load == "ycsb-load":
        w = run.summary.get("written") or {}
        records = int(w.get("record_count") or run.knobs.get("RECORD_COUNT", 0))
        if w.get("insert_start", 0) != 0 or written != records:
            raise UserError(f"--keys-from {testid}: it wrote {written} of RECORD_COUNT={records} records (from "
                            f"INSERT_START={w.get('insert_start', 0)}): ycsb would read keys that are not there")
        return {**out, "RECORD_COUNT": str(records)}
    prefix = run.knobs.get("KEY_PREFIX") or (run.summary.get("written") or {}).get("prefix") or run.testid
    return {**out, "KEY_PREFIX": prefix, "MAX_WRITTEN_KEY": str(written)}


def merged(workload: str, testid: str, results: Path, knobs: dict[str, str]) -> dict[str, str]:
    """`knobs` with the load run's; a knob given that disagrees is refused."""
    found = knobs_from_run(workload, testid, results)
    clash = {k: (knobs[k], v) for k, v in found.items() if k in knobs and knobs[k] != v}
    if clash:
        raise UserError(f"--keys-from {testid}: " + "; ".join(
            f"{k}={mine} given, the run's is {theirs}" for k, (mine, theirs) in clash.items()))
    return {**found, **knobs}
