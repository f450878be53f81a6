"""How often the default `ybbench ab` is wrong, on real runs of this
machine, made affordable: its stopping rule (experiments/ab_rule.py: 5
runs a side, then as many as --resolve 5% asks, at most 20) replayed over
disjoint stretches of two pools of interleaved runs, in time order, in
place of one whole ab a comparison. A measurement, not a test: it prints
the table docs/measurements.md keeps.

    python3 -m bench.ab_pool_calibration [--comparisons 20] [--duration 6s] [--warmup 1s] [--vus 8]
                                         [--work N] [--minutes M] [--pin] [--into DIR | --pool DIR]

The pools are two `ybbench ab`s of sql-selects on a throwaway local
PostgreSQL 15 (bench/compare_calibration.py's views: S hashes each key
`work` times, a slowdown planted in the server): A against S and A against
A. Each grows only as far as the rule asks (`ybbench ab --resume ID
--repeat N`, the A B B A order going on), A/S and A/A comparisons taking
turns, so both pools see the same hours of the machine. A comparison is
the pairs from where the one before it stopped: the rule reads their ops/s
as the CLI's ab does (compare.compare_runs on the pairs so far), and its
verdict is compare's on the pairs it stopped at. --pool DIR replays the
pools already made there (no new runs; comparisons end where a pool ends).
--into DIR keeps the pools between invocations, so a calibration longer
than a working session's share of the machine is made in parts (--minutes
each): every invocation adds a pair of pools on a fresh PostgreSQL, and
the table counts the comparisons of all of them, none across two. --pin
puts the server on one half of the cores and the client (ybbench, k6) on
the other, as bench.client_efficiency's pinned mode, so that where the
scheduler places them is not a difference between runs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import tempfile
import time
import uuid
from pathlib import Path

from bench.client_efficiency import pin_server, split_cores
from bench.compare_calibration import BASE_VIEW, SLOW_VIEW, calibrate, views, wilson, ybbench
from bench.compare_resolution import run
from ybbench.analysis import compare
from ybbench.analysis.compare_groups import Group
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.experiments import ab, ab_rule
from ybbench.local.pglocal import Postgres

OP = "select"
KINDS = (("as", SLOW_VIEW), ("aa", BASE_VIEW))


class Pool:
    """One ab's runs, grown on demand (pg None: a pool already made, never grown)."""

    def __init__(self, pg: Postgres | None, results: Path, aid: str, view: str, sel: dict, warmup: str):
        self.pg, self.results, self.aid, self.view, self.sel, self.warmup = pg, results, aid, view, sel, warmup
        self.pairs = self._made()

    def _made(self) -> int:
        path = self.results / self.aid / "ab.json"
        if not path.is_file():
            return 0
        done = {r["testid"] for r in json.loads(path.read_text())["runs"] if not r.get("warmup")}
        n = 0
        while f"{self.aid}-base{n + 1}" in done and f"{self.aid}-other{n + 1}" in done:
            n += 1
        return n

    def grow(self, pairs: int) -> bool:
        """At least `pairs` A/B pairs made; False when that cannot be (a pool given, or a run failed)."""
        if pairs <= self.pairs:
            return True
        if self.pg is None:
            return False
        first = self.pairs == 0
        args = ["ab", "sql-selects", *(["--id", self.aid] if first else ["--resume", self.aid]),
                "--results", str(self.results), "--repeat", str(pairs), "--warmup", self.warmup,
                "--warmup-runs", "1", "--base", f"TABLE={BASE_VIEW}", "--other", f"TABLE={self.view}",
                "--history", str(self.results / "no-history.sqlite")]
        for k, v in {"YSQL_NODES": f"127.0.0.1:{self.pg.port}", "DB_USER": self.pg.user,
                     "DB_NAME": self.pg.database, **self.sel}.items():
            args += ["--set", f"{k}={v}"]
        p = ybbench(self.pg, *args)
        self.pairs = self._made()
        if self.pairs < pairs:
            raise SystemExit(f"pool {self.aid} stopped at {self.pairs} pairs of {pairs}:\n{p.stdout}{p.stderr}")
        return True

    def compared(self, first: int, n: int) -> dict:
        """compare's document of pairs first .. first + n - 1 (1-based), the select op's."""
        where = self.results / self.aid
        sides = [Group(f"{self.aid}:{s}", [f"{self.aid}-{s}{i}" for i in range(first, first + n)], where)
                 for s in ab.SIDES]
        return compare.compare_runs(self.results, sides[0], sides[1:], None, 0.05, False)["comparisons"][0]["ops"]


def one(pool: Pool, first: int) -> dict | None:
    """The shipped rule from pair `first`: {'n': runs a side, 'verdict', 'ratio'}; None when the pool ends."""
    def runs_to(n: int):
        if not pool.grow(first + n - 1):
            return None
        return {op: (s["values"]["base"], s["values"]["other"]) for op, s in pool.compared(first, n).items()}

    change = float(ab.RESOLVE.rstrip("%")) / 100
    started = time.monotonic()
    if not pool.grow(first + ab.REPEAT - 1):
        return None
    n = ab_rule.resolve(runs_to, ab.REPEAT, ab.MAX_REPEAT, change, 0.05)
    if pool.pairs < first + n - 1:
        return None
    s = pool.compared(first, n)[OP]
    return {"n": n, "verdict": s["verdict"], "ratio": s["ratio"], "minutes": (time.monotonic() - started) / 60}


def replay(pools: dict[str, Pool], comparisons: int, until: float, say=print) -> dict[str, list[dict]]:
    """The kinds' comparisons in turn from each pool's first pair, until `comparisons` of each, the pool's
    end (a pool given) or the monotonic time `until` (no comparison starts after it)."""
    at = {kind: 1 for kind in pools}
    got: dict[str, list[dict]] = {kind: [] for kind in pools}
    for k in range(comparisons):
        for kind, pool in pools.items():
            if time.monotonic() >= until:
                return got
            g = one(pool, at[kind])
            if g is None:
                continue
            at[kind] += g["n"]
            got[kind].append(g)
            say(f"  {pool.aid} {k + 1}: pairs {at[kind] - g['n']}-{at[kind] - 1} ({g['n']} a side), "
                f"ratio {g['ratio']:.4f}, {g['verdict']}, {g['minutes']:.1f} min")
    return got


def table(got: dict[str, list[dict]]) -> None:
    print(f"{'comparison':<26}{'n':>4}{'verdicts':>10}{'rate':>7}{'95% (Wilson)':>16}{'runs a side':>13}"
          f"{'at the cap':>12}{'ratio (geo mean)':>18}")
    for kind, rows in got.items():
        if not rows:
            continue
        hits = sum(g["verdict"] == "slower" if kind == "as" else g["verdict"] in ("faster", "slower") for g in rows)
        lo, hi = wilson(hits, len(rows))
        what = "A/S: slower" if kind == "as" else "A/A: faster or slower"
        mean_n = sum(g["n"] for g in rows) / len(rows)
        capped = sum(g["n"] >= ab.MAX_REPEAT for g in rows)
        ratio = math.exp(sum(math.log(g["ratio"]) for g in rows if g["ratio"]) / len(rows))
        print(f"{what:<26}{len(rows):>4}{hits:>10}{hits / len(rows):>7.2f}{f'[{lo:.2f}, {hi:.2f}]':>16}"
              f"{mean_n:>13.1f}{capped:>12}{ratio:>18.4f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--comparisons", type=int, default=20, help="comparisons of each kind")
    ap.add_argument("--duration", default="6s", help="each run's DURATION")
    ap.add_argument("--warmup", default="1s", help="each run's first seconds left out (ab --warmup)")
    ap.add_argument("--vus", type=int, default=8)
    ap.add_argument("--work", type=int, help="hash the key this many times in S (no calibration)")
    ap.add_argument("--minutes", type=float, default=math.inf,
                    help="start no comparison after this many minutes (a session's share of the machine)")
    ap.add_argument("--into", type=Path, help="a folder kept between invocations: new pools are added beside the "
                    "ones it holds, and the table replays them all (each pool's comparisons stay inside it)")
    ap.add_argument("--pin", action="store_true", help="the server on half the cores, the client on the rest")
    ap.add_argument("--pool", type=Path, help="replay the pools already made in this folder (no new runs)")
    a = ap.parse_args()
    try:  # a bad duration before any run
        seconds("--duration", a.duration), seconds("--warmup", a.warmup, zero=True)
    except UserError as e:
        raise SystemExit(f"ab_pool_calibration: {e}") from None
    until = time.monotonic() + 60 * a.minutes
    results = a.pool or a.into or Path(tempfile.mkdtemp(prefix="ab-pool-calibration-"))
    results.mkdir(parents=True, exist_ok=True)
    made = sorted(p.name.rsplit("-", 1)[0] for p in results.glob("*-as") if (p / "ab.json").is_file())
    got: dict[str, list[dict]] = {kind: [] for kind, _ in KINDS}
    for rid in made:  # pools an earlier invocation made: replayed, not grown
        print(f"pool {rid} (made before): replayed", flush=True)
        for kind, rows in replay({k: Pool(None, results, f"{rid}-{k}", v, {}, a.warmup) for k, v in KINDS},
                                 a.comparisons, math.inf).items():
            got[kind] += rows
    if not a.pool:
        pg = Postgres.start()
        try:
            if a.pin:  # this process's children (ybbench, k6) inherit its cores
                server, client = split_cores(os.sched_getaffinity(0))
                pin_server(pg, server)
                os.sched_setaffinity(0, client)
                print(f"pinned: the server on cores {sorted(server)}, the client on {sorted(client)}", flush=True)
            rid = f"ap{uuid.uuid4().hex[:6]}"
            ins = run(pg, results, "sql-inserts", f"{rid}-ins", {"VUS": 4, "DURATION": "5s", "KEY_PREFIX": rid})
            sel = {"KEY_PREFIX": rid, "MAX_WRITTEN_KEY": ins["rows_written"], "VUS": a.vus, "DURATION": a.duration}
            work = a.work or calibrate(pg, results, {**sel, "DURATION": "10s"}, 0.05, 40)
            views(pg, work)
            print(f"pool {rid} in {results}: {a.duration} runs (warm-up {a.warmup}), {a.vus} VUs, sql-selects on "
                  f"PostgreSQL 15; S hashes each key {work} times; the rule: {ab.REPEAT} a side, then --resolve "
                  f"{ab.RESOLVE}, at most {ab.MAX_REPEAT}{'; pinned' if a.pin else ''}; "
                  f"started {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
                  flush=True)
            for kind, rows in replay({k: Pool(pg, results, f"{rid}-{k}", v, sel, a.warmup) for k, v in KINDS},
                                     a.comparisons, until).items():
                got[kind] += rows
        finally:
            pg.stop()
    print()
    table(got)


if __name__ == "__main__":
    main()
