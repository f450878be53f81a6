"""`ybbench verify RUN`: after a load (sql-inserts, kv-load), is every
acknowledged write in the table, with the value written? (The other write
workloads' checks are their own modules, chosen by the scheme in the run's
summary.json: verify_updates, verify_ycsb, verify_index, verify_tpcc.)

What the run wrote comes from its own folder: summary.json's `written`
(the table, key prefix and sizes its setup() used) and insert count, and
k6.log's `ybbench-unacked` lines (a statement that failed or timed out:
its keys may or may not be there, so they are "unknown", never "lost").
Iteration n wrote indexes [n x rows, (n + 1) x rows); iterations 0 to
inserts + interrupted - 1 were attempted (per generator of a split run:
Attempted).

The table is read in two streams, in O(1) memory in the key count (the
failed writes' indexes are kept, a few per error): the expected keys in
chunks (`k = ANY(...)`), then every key with the run's prefix through a
server-side cursor, for keys the run never wrote.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from ybbench.core import formats, run_folder
from ybbench.core.catalog import TESTID
from ybbench.core.errors import UserError
from ybbench.run import verify_index, verify_tpcc, verify_updates, verify_ycsb
from ybbench.run.verify_base import Attempted, Count, connect as _connect, iterations, example_lines, ops_per_iteration



class SqlInsertsKeys:
    """sql-inserts: `<prefix>:<n>`, value `val:<n>` padded with x to fill
    row_bytes with the key (k6-scripts/lib/keys.js key, valueMaker)."""

    def __init__(self, w: dict):
        self.prefix, self.row_bytes = w["prefix"], int(w["row_bytes"])

    def key(self, n: int) -> str:
        return f"{self.prefix}:{n}"

    def index(self, k: str) -> int | None:
        s = k[len(self.prefix) + 1:]
        return int(s) if re.fullmatch(r"0|[1-9][0-9]*", s) else None

    def value_ok(self, n: int, v) -> bool:
        base = f"val:{n}"
        missing = self.row_bytes - (len(self.prefix) + 1 + len(str(n))) - len(base)
        return v == (base + "x" * missing if missing > 0 else base)


class KvKeys:
    """kv-load: `<prefix>:<n>` zero-padded to key_bytes, value_bytes random
    bytes whose first (up to 6) bytes are n, big-endian
    (k6-scripts/lib/keys.js paddedKeyMaker, randomValueMaker)."""

    def __init__(self, w: dict):
        self.prefix, self.width, self.size = w["prefix"], int(w["key_bytes"]), int(w["value_bytes"])
        self.digits = self.width - len(self.prefix) - 1

    def key(self, n: int) -> str:
        return f"{self.prefix}:{str(n).zfill(self.digits)}"

    def index(self, k: str) -> int | None:
        s = k[len(self.prefix) + 1:]
        if not s.isdigit() or self.key(int(s)) != k:
            return None
        return int(s)

    def value_ok(self, n: int, v) -> bool:
        stamp = min(self.size, 6)
        return v is not None and len(v) == self.size and bytes(v[:stamp]) == (n % 256 ** stamp).to_bytes(stamp, "big")


SCHEMES = {"sql-inserts": SqlInsertsKeys, "kv": KvKeys}
# The other write workloads' checks, each in its module.
CHECKS = {"sql-updates": verify_updates, "ycsb-load": verify_ycsb, "ycsb": verify_ycsb,
          "sql-secondary-index": verify_index, "tpcc": verify_tpcc}


def plan(folder: Path) -> dict:
    """What the run attempted and which statements failed, from its files;
    a run split over generators (--generators N) from each one's."""
    run = run_folder.read(folder)
    summary = run.summary
    written = summary.get("written")
    if not written or written.get("scheme") not in SCHEMES:
        raise UserError(f"run {folder.name} ({summary.get('workload')}) is not a load verify knows: "
                        "verify checks what sql-inserts, kv-load, sql-updates, ycsb-load, ycsb, "
                        "sql-secondary-index, tpcc-load and tpcc wrote")
    counts, interrupted, unacked = iterations(folder, run, ("insert",))
    rows = int(written["rows_per_iteration"]) * ops_per_iteration(run)
    return {"written": written, "attempted": Attempted(counts, rows),
            "interrupted": interrupted, "unacked": unacked}


def check(folder: Path, *, node: str | None = None, chunk: int = 10000, show: int = 20) -> dict:
    from psycopg import sql

    p = plan(folder)
    w = p["written"]
    keys = SCHEMES[w["scheme"]](w)
    attempted = p["attempted"]
    rows = attempted.rows
    table = sql.Identifier(w["table"])
    c = {k: Count() for k in ("present", "lost", "unknown_present", "unknown_absent", "wrong_value", "duplicates",
                             "unexpected")}
    with _connect(w, node) as conn:
        exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL", [w["table"]]).fetchone()[0]
        if not exists:
            raise UserError(f"table {w['table']!r} does not exist in database {w['database']!r}")
        indexes = attempted.indexes()
        while batch := list(itertools.islice(indexes, chunk)):
            want = [keys.key(n) for n in batch]
            got: dict[str, list] = {}
            for k, v in conn.execute(sql.SQL("SELECT k, v FROM {} WHERE k = ANY(%s)").format(table), [want]):
                got.setdefault(k, []).append(v)
            for n, k in zip(batch, want):
                vs = got.get(k)
                if not vs:
                    c["unknown_absent" if n in p["unacked"] else "lost"].add(k, show)
                    continue
                c["present"].add(k, 0)
                if n in p["unacked"]:
                    c["unknown_present"].add(k, show)
                if len(vs) > 1:
                    c["duplicates"].add(k, show, len(vs) - 1)
                if not all(keys.value_ok(n, v) for v in vs):
                    c["wrong_value"].add(k, show)
        # Every key with the run's prefix: a server-side cursor streams them.
        with conn.cursor(name="ybbench_verify") as cur:
            cur.itersize = chunk
            cur.execute(sql.SQL("SELECT k FROM {} WHERE left(k, %s) = %s").format(table),
                        [len(w["prefix"]) + 1, w["prefix"] + ":"])
            for (k,) in cur:
                n = keys.index(k)
                if n is None or n not in attempted:
                    c["unexpected"].add(k, show)
    # Interrupted iterations' keys are unknown too, but which they are is not
    # logged: up to that many of the missing keys may be theirs.
    maybe_interrupted = p["interrupted"] * rows
    lost_at_least = max(0, c["lost"].n - maybe_interrupted)
    ok = lost_at_least == 0 and not any(c[k].n for k in ("wrong_value", "duplicates", "unexpected"))
    return {
        "testid": folder.name, "workload_keys": w, "attempted_keys": len(attempted),
        "generators": len(attempted.counts),
        "acknowledged_keys": len(attempted) - len(p["unacked"]) - maybe_interrupted,
        "unacknowledged_keys": len(p["unacked"]), "interrupted_iterations": p["interrupted"],
        "lost_at_least": lost_at_least, "ok": ok,
        **{k: {"count": v.n, "examples": v.examples} for k, v in c.items()},
    }


def lines(r: dict) -> list[str]:
    w = r["workload_keys"]
    n = r["attempted_keys"]
    out = [f"verify {r['testid']}: {w['scheme']} keys {w['prefix']}:0 .. {w['prefix']}:{max(n - 1, 0)} "
           f"({n} attempted) in {w['table']}",
           f"  acknowledged {r['acknowledged_keys']}, present {r['present']['count']}, lost {r['lost']['count']}",
           f"  unknown (statement failed or timed out) {r['unacknowledged_keys']}: present "
           f"{r['unknown_present']['count']}, absent {r['unknown_absent']['count']}",
           f"  wrong value {r['wrong_value']['count']}, duplicates {r['duplicates']['count']}, "
           f"unexpected {r['unexpected']['count']}"]
    if r["interrupted_iterations"]:
        out.append(f"  {r['interrupted_iterations']} iterations were interrupted at the end of the run: their keys "
                   f"are unknown, so at least {r['lost_at_least']} of the {r['lost']['count']} missing are lost")
    out += example_lines(r, ("lost", "wrong_value", "duplicates", "unexpected"))
    out.append("  OK: every acknowledged write is there, with its value" if r["ok"] else
               "  FAILED: acknowledged writes are missing or wrong")
    return out


def command(testid: str, results: str, node: str | None, chunk: int) -> int:
    if not TESTID.match(testid):
        raise UserError(f"run id {testid!r}: use 1-64 letters, digits, . _ -")
    if chunk < 1:
        raise UserError(f"--chunk {chunk}: must be a positive number of keys")
    if node is not None and not re.fullmatch(r"[^:\s]+:\d{1,5}", node):
        raise UserError(f"--node {node!r}: expected host:port")
    folder = Path(results) / testid
    if not folder.is_dir():
        raise UserError(f"no run {testid!r}: {folder} does not exist")
    scheme = (run_folder.read(folder).summary.get("written") or {}).get("scheme")
    other = CHECKS.get(scheme)
    r = (other.check if other else check)(folder, node=node, chunk=chunk)
    r["format_version"] = formats.version("verify")
    formats.write(folder / "verify.json", "verify", r)
    for line in (other.lines if other else lines)(r):
        print(line)
    return 0 if r["ok"] else 1
