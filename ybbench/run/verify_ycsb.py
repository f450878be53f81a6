"""`ybbench verify` after ycsb-load or a YCSB run phase (a, b: updates):
is every record there, and each of its fields one a run wrote to it?

Records are `user<fnvhash64(keynum)>` (YCSB's CoreWorkload, insertorder
hashed). With FIELD_LENGTH >= 32 every field starts with a stamp: the load's
`L<tag>:<keynum>.<field>:`, an update's `U<tag>:<iteration>.<field>:`
(k6-scripts/ycsb-load.js, ycsb.js), the rest random printable characters.

- After ycsb-load: every key number the run attempted is read, in chunks
  (`ycsb_key = ANY(...)`): an acknowledged insert absent is lost, a failed
  one (`ybbench-unacked first=<iteration>`) unknown. Each field must be the
  load's for that record and field (this run's tag, its key number, its
  column), FIELD_LENGTH printable characters; an update's stamp of another
  run is counted as updated by another run (verify a load before its run
  phase to check every field the load wrote).
- After a run phase: every record 0 .. RECORD_COUNT - 1 must be there (the
  run does not insert). A field is a load's for that record and column (any
  load: the run phase does not know which), this run's update of that column
  by an iteration it attempted, or an earlier run's update of that column.
  Which record an update chose is not recorded (YCSB's key choice is random):
  an update's value moved to another record of the same column is not seen.
"""

from __future__ import annotations

import re
from pathlib import Path

from ybbench.core import run_folder
from ybbench.core.errors import UserError
from ybbench.run.verify_base import Attempted, Count, connect, iterations, example_lines, ops_per_iteration

STAMP = re.compile(r"([LU])([0-9a-z]+):(\d+)\.(\d+):")


def fnvhash64(n: int) -> int:
    """YCSB's Utils.fnvhash64 of a key number: FNV-1a 64 of its 8 bytes,
    low byte first, then Java's Math.abs of the signed result."""
    h = 0xCBF29CE484222325
    for _ in range(8):
        h = ((h ^ (n & 0xFF)) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
        n >>= 8
    return 2**64 - h if h >= 2**63 else h


def key_name(keynum: int) -> str:
    return f"user{fnvhash64(keynum)}"


def check(folder: Path, *, node: str | None = None, chunk: int = 10000, show: int = 20) -> dict:
    from psycopg import sql

    run = run_folder.read(folder)
    w = run.summary["written"]
    load = w["scheme"] == "ycsb-load"
    fields, length, tag = int(w["field_count"]), int(w["field_length"]), w["tag"]
    if load:
        counts, interrupted, unacked = iterations(folder, run, ("insert",))
        start = int(w["insert_start"])
    else:
        counts, interrupted, unacked = iterations(folder, run, ("select", "update"))
        start = 0
    per = 1 if load else ops_per_iteration(run)  # operations per k6 iteration (OPS_PER_ITERATION)
    attempted = Attempted(counts, per)
    gens = len(counts)
    last = max(((g + (c - 1) * gens) * per + per - 1 for g, c in enumerate(counts) if c), default=-1)

    def ours_update(i: int) -> bool:
        return i <= last and i in attempted

    c = {k: Count() for k in ("present", "lost", "unknown_present", "unknown_absent", "missing_field",
                             "never_written", "updated_by_this_run", "updated_by_another_run")}
    names = sql.SQL(", ").join(sql.Identifier(f"field{f}") for f in range(fields))
    query = sql.SQL("SELECT ycsb_key, {} FROM {} WHERE ycsb_key = ANY(%s)").format(names, sql.Identifier(w["table"]))
    numbers = (start + i for i in attempted.indexes()) if load else iter(range(int(w["record_count"])))
    with connect(w, node) as conn:
        if conn.execute("SELECT to_regclass(%s) IS NULL", [w["table"]]).fetchone()[0]:
            raise UserError(f"table {w['table']!r} does not exist in database {w['database']!r}")
        while True:
            batch = [n for _, n in zip(range(chunk), numbers)]
            if not batch:
                break
            want = [key_name(n) for n in batch]
            got = {row[0]: row[1:] for row in conn.execute(query, [want])}
            for n, k in zip(batch, want):
                unknown = load and (n - start) in unacked
                row = got.get(k)
                if row is None:
                    c["unknown_absent" if unknown else "lost"].add(k, show)
                    continue
                c["present"].add(k, 0)
                if unknown:
                    c["unknown_present"].add(k, show)
                for f, v in enumerate(row):
                    name = f"{k}.field{f}"
                    if v is None:
                        c["missing_field"].add(name, show)
                        continue
                    if len(v) != length or not all(" " <= ch <= "~" for ch in v):
                        c["never_written"].add(name, show)
                        continue
                    if not w.get("stamped"):
                        continue
                    m = STAMP.match(v)
                    if not m or int(m.group(4)) != f:
                        c["never_written"].add(name, show)
                    elif m.group(1) == "L":
                        if int(m.group(3)) != n or (load and m.group(2) != tag):
                            c["never_written"].add(name, show)
                    elif m.group(2) != tag:
                        c["updated_by_another_run"].add(name, 0)
                    elif load or not ours_update(int(m.group(3))):
                        c["never_written"].add(name, show)
                    else:
                        c["updated_by_this_run"].add(name, 0)
        total = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(w["table"]))).fetchone()[0]
    maybe_interrupted = interrupted if load else 0
    lost_at_least = max(0, c["lost"].n - maybe_interrupted)
    ok = lost_at_least == 0 and not any(c[k].n for k in ("missing_field", "never_written"))
    return {
        "testid": folder.name, "scheme": w["scheme"], "workload_keys": w, "generators": gens,
        "records_checked": c["present"].n + c["lost"].n + c["unknown_absent"].n,
        "unacknowledged": len(unacked), "interrupted_iterations": interrupted, "rows_in_table": total,
        "lost_at_least": lost_at_least, "ok": ok,
        **{k: {"count": v.n, "examples": v.examples} for k, v in c.items()},
    }


def lines(r: dict) -> list[str]:
    w = r["workload_keys"]
    load = r["scheme"] == "ycsb-load"
    what = (f"key numbers {w['insert_start']} .. {w['insert_start'] + w['insert_count'] - 1} (those attempted)"
            if load else f"records 0 .. {w['record_count'] - 1}")
    out = [f"verify {r['testid']}: {r['scheme']} {what} of {w['table']}, {w['field_count']} fields of "
           f"{w['field_length']}" + ("" if w.get("stamped") else " (unstamped, FIELD_LENGTH < 32: length and "
                                                                 "characters only)"),
           f"  records checked {r['records_checked']}, present {r['present']['count']}, lost {r['lost']['count']}; "
           f"rows in the table {r['rows_in_table']}",
           f"  unknown (statement failed or timed out) {r['unacknowledged']}" + (
               f": present {r['unknown_present']['count']}, absent {r['unknown_absent']['count']}" if load else ""),
           f"  fields missing {r['missing_field']['count']}, never written {r['never_written']['count']}, "
           f"updated by this run {r['updated_by_this_run']['count']}, by another run {r['updated_by_another_run']['count']}"]
    if r["interrupted_iterations"] and load:
        out.append(f"  {r['interrupted_iterations']} iterations were interrupted at the end of the run: at least "
                   f"{r['lost_at_least']} of the {r['lost']['count']} missing are lost")
    out += example_lines(r, ("lost", "missing_field", "never_written"))
    out.append("  OK: every record is there, each field one a run wrote to it" if r["ok"] else
               "  FAILED: records or fields lost, missing or never written")
    return out
