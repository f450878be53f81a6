"""`ybbench verify` after a sql-updates run: is every key's value one the
run wrote to it, and, with a single writer, the last acknowledged one?

What the run wrote needs no log of its statements: iteration i touches key
schedule.key(i) and is an update when schedule.is_update(i)
(k6-scripts/lib/keys.js updateSchedule, the same arithmetic), and an update
sets v to `val:<n>:<tag>.<i>`. Which iterations ran comes from the summary
(select + update counts, interrupted ones) and which updates failed from
k6.log's `ybbench-unacked first=<i>` lines. Key n's iterations are the
position (multiplier^-1 x (n - r x shift)) mod keys of each round r, so the
updates of a key are found newest first without a map of the keys.

Allowed values of key n:
- single writer (one VU, one generator: iteration order is time order):
  the last acknowledged update's, or any later update's whose outcome is
  unknown; the value from before the run only if no update of n was
  acknowledged.
- concurrent writers: any update of n by the run, acknowledged or unknown
  (which one wins depends on commit order, which the run does not record);
  the value from before the run only if no update of n was acknowledged.
A value from before the run is sql-inserts' `val:<n>` padded with x, or an
earlier update run's `val:<n>:...`.
"""

from __future__ import annotations

import re
from pathlib import Path

from ybbench.core import run_folder
from ybbench.run.verify_base import Attempted, Count, connect, iterations, example_lines, ops_per_iteration

PHI = 0.6180339887498949


class Schedule:
    """Iteration i's key and op (lib/keys.js updateSchedule)."""

    def __init__(self, keys: int, write_percent: float, multiplier: int, shift: int):
        self.keys, self.multiplier, self.shift = keys, multiplier, shift
        self.share = write_percent / 100
        self.inverse = pow(multiplier, -1, keys) if keys > 1 else 0

    def key(self, i: int) -> int:
        p = i % self.keys
        return (self.multiplier * p + (i // self.keys) * self.shift % self.keys) % self.keys

    def is_update(self, i: int) -> bool:
        return (float(i) * PHI) % 1.0 < self.share

    def touch(self, n: int, r: int) -> int:
        """The iteration of round r that touches key n."""
        return r * self.keys + self.inverse * (n - r * self.shift) % self.keys


def check(folder: Path, *, node: str | None = None, chunk: int = 10000, show: int = 20) -> dict:
    from psycopg import sql

    run = run_folder.read(folder)
    w = run.summary["written"]
    counts, interrupted, unacked = iterations(folder, run, ("select", "update"))
    per = ops_per_iteration(run)  # steps per k6 iteration (OPS_PER_ITERATION)
    attempted = Attempted(counts, per)
    gens = len(counts)
    last = max(((g + (c - 1) * gens) * per + per - 1 for g, c in enumerate(counts) if c), default=-1)
    s = run.summary.get("scenario") or {}
    single = gens == 1 and int(s.get("maxVUs") or s.get("vus") or 0) == 1
    keys, prefix, tag = int(w["keys"]), w["prefix"], w["tag"]
    sched = Schedule(keys, float(w["write_percent"]), int(w["multiplier"]), int(w["shift"]))
    ours = re.compile(rf"val:(\d+):{re.escape(tag)}\.(\d+)")

    def updates(n: int):
        """Key n's attempted updates, newest first."""
        for r in range(last // keys, -1, -1):
            i = sched.touch(n, r)
            if i <= last and i in attempted and sched.is_update(i):
                yield i

    def wrote(n: int, i: int) -> bool:
        return i <= last and i in attempted and sched.key(i) == n and sched.is_update(i)

    c = {k: Count() for k in ("present", "missing", "acknowledged_updated", "unknown_value", "lost_update", "stale",
                             "never_written", "duplicates")}
    with connect(w, node) as conn:
        for start in range(0, keys, chunk):
            ns = range(start, min(start + chunk, keys))
            want = [f"{prefix}:{n}" for n in ns]
            got: dict[str, list] = {}
            for k, v in conn.execute(sql.SQL("SELECT k, v FROM {} WHERE k = ANY(%s)").format(
                    sql.Identifier(w["table"])), [want]):
                got.setdefault(k, []).append(v)
            for n, k in zip(ns, want):
                vs = got.get(k)
                if not vs:
                    c["missing"].add(k, show)
                    continue
                c["present"].add(k, 0)
                if len(vs) > 1:
                    c["duplicates"].add(k, show, len(vs) - 1)
                # Newest first: the unknown ones down to the last acknowledged.
                tail, acked = [], None
                for i in updates(n):
                    if i in unacked:
                        tail.append(i)
                    else:
                        acked = i
                        break
                if acked is not None:
                    c["acknowledged_updated"].add(k, 0)
                for v in vs:
                    m = ours.fullmatch(v or "")
                    if m and int(m.group(1)) == n:
                        i = int(m.group(2))
                        if not wrote(n, i):
                            c["never_written"].add(k, show)
                        elif single and acked is not None and i < acked:
                            c["stale"].add(k, show)
                        elif i in unacked:
                            c["unknown_value"].add(k, 0)
                    elif m is None and v is not None and re.fullmatch(rf"val:{n}(x*|:.*)", v, re.DOTALL) \
                            and not v.startswith(f"val:{n}:{tag}."):
                        if acked is not None:
                            c["lost_update"].add(k, show)
                    else:
                        c["never_written"].add(k, show)
    # An interrupted iteration was taken as acknowledged: each may explain
    # one lost or stale value (its update may not have committed).
    violations = c["lost_update"].n + c["stale"].n
    lost_at_least = max(0, violations - interrupted)
    ok = lost_at_least == 0 and not any(c[k].n for k in ("missing", "never_written", "duplicates"))
    return {
        "testid": folder.name, "scheme": "sql-updates", "workload_keys": w, "keys": keys,
        "writers": "single" if single else "concurrent", "generators": gens, "iterations": len(attempted),
        "unacknowledged_updates": len(unacked), "interrupted_iterations": interrupted,
        "lost_at_least": lost_at_least, "ok": ok,
        **{k: {"count": v.n, "examples": v.examples} for k, v in c.items()},
    }


def lines(r: dict) -> list[str]:
    w = r["workload_keys"]
    out = [f"verify {r['testid']}: sql-updates of {w['prefix']}:0 .. {w['prefix']}:{r['keys'] - 1} in {w['table']}, "
           f"{r['iterations']} iterations, {r['writers']} writer(s) per key",
           f"  present {r['present']['count']}, missing {r['missing']['count']}; keys with an acknowledged update "
           f"{r['acknowledged_updated']['count']}",
           f"  unknown (update failed or timed out) {r['unacknowledged_updates']}: values they set "
           f"{r['unknown_value']['count']}",
           f"  lost update (the value from before the run) {r['lost_update']['count']}, stale (an older update's; "
           f"single writer only) {r['stale']['count']}, never written {r['never_written']['count']}, "
           f"duplicates {r['duplicates']['count']}"]
    if r["interrupted_iterations"]:
        out.append(f"  {r['interrupted_iterations']} iterations were interrupted at the end of the run: at least "
                   f"{r['lost_at_least']} of the lost and stale values are lost")
    out += example_lines(r, ("missing", "lost_update", "stale", "never_written", "duplicates"))
    out.append("  OK: every value is one the run wrote" + (", the last acknowledged or a later unknown one"
                                                             if r["writers"] == "single" else "")
               if r["ok"] else "  FAILED: values lost, stale or never written")
    return out
