"""How often `ybbench compare` is wrong, counted on real runs of this
machine: identical A/A comparisons (a verdict there is a false one) and
comparisons with a planted server-side slowdown (a "slower" there is a
detection). A measurement, not a test: it prints the table docs/reports.md
quotes.

    python3 -m bench.compare_calibration [--repeat 5] [--comparisons 20] [--duration 10s] [--warmup 2s]
                                         [--slowdown 0.05 | --work N]

The pool: two `ybbench ab` runs of sql-selects on a throwaway local
PostgreSQL 15, one after the other, each with its warm-up run and its
warm-up seconds as a user's would have:
  - ab 1, base A and other S, --repeat C x R: the A/S comparisons are its
    consecutive blocks of 2R runs in the order it ran (R of each side);
  - ab 2, base A and other A, --repeat C x R: the A/A comparisons likewise.
So every comparison is made of runs interleaved as `ybbench ab --repeat R`
makes them, and no run is in two comparisons of one kind. Each is compared
by `ybbench compare a1,...,aR b1,...,bR` (the CLI; no history store, so
nothing but the runs themselves).

A and S read the same rows through two views (bench/compare_resolution.py's
plant): A's filter hashes the key once, S's hashes it `work` times, so S
costs the server more CPU per select and nothing on the client changes;
--slowdown calibrates work to that fraction first (alternating 10 s runs).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from bench.compare_resolution import BIN, run
from ybbench.core.catalog import REPO
from ybbench.local.pglocal import Postgres

BASE_VIEW, SLOW_VIEW = "ab_base", "ab_slow"


def views(pg: Postgres, work: int) -> None:
    for name, n in ((BASE_VIEW, 1), (SLOW_VIEW, work)):
        pg.query(f"CREATE OR REPLACE VIEW {name} AS SELECT k, v FROM postgresqlkeyvalue "
                 f"WHERE md5(repeat(k, {n})) <> ''")


def ybbench(pg: Postgres | None, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    env = {**(pg.env() if pg else dict(os.environ)), "K6": str(BIN / "k6")}
    p = subprocess.run([sys.executable, "-m", "ybbench", *args], cwd=REPO, env=env, capture_output=True, text=True)
    if check and p.returncode not in (0, 1, 2):
        raise SystemExit(p.stdout + p.stderr)
    return p


def calibrate(pg: Postgres, results: Path, sel: dict, target: float, work: int) -> int:
    """work such that S is about `target` slower than A (two rounds of alternating 10 s runs)."""
    for i in range(3):
        views(pg, work)
        a = run(pg, results, "sql-selects", f"cal{i}a-{uuid.uuid4().hex[:4]}", {**sel, "TABLE": BASE_VIEW})
        s = run(pg, results, "sql-selects", f"cal{i}s-{uuid.uuid4().hex[:4]}", {**sel, "TABLE": SLOW_VIEW})
        got = 1 - s["ops"]["select"]["per_second"] / a["ops"]["select"]["per_second"]
        print(f"calibrate: work {work}: {100 * got:.1f}% slower", flush=True)
        work = max(2, round(work * target / got)) if got > 0.005 else work * 3
    return work


def pool(pg: Postgres, results: Path, aid: str, other_view: str, a) -> dict:
    args = ["ab", "sql-selects", "--id", aid, "--results", str(results), "--repeat", str(a.comparisons * a.repeat),
            "--warmup", a.warmup, "--warmup-runs", "1", "--base", f"TABLE={BASE_VIEW}", "--other",
            f"TABLE={other_view}", "--history", str(results / "no-history.sqlite")]
    conn = {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database}
    for k, v in {**conn, **a.sel}.items():
        args += ["--set", f"{k}={v}"]
    p = ybbench(pg, *args)
    if not (results / aid / "ab.json").is_file():
        raise SystemExit(p.stdout + p.stderr)
    return json.loads((results / aid / "ab.json").read_text())


def blocks(doc: dict, repeat: int) -> list[tuple[list[str], list[str]]]:
    """Consecutive blocks of 2 x repeat runs in the order they ran; a block not yet finished is left out (a pool
    stopped early, judged with --pool)."""
    side = {r["testid"]: r["side"] for r in doc["runs"]}
    out = []
    for j in range(0, len(doc["order"]), 2 * repeat):
        part = doc["order"][j:j + 2 * repeat]
        if len(part) == 2 * repeat and all(t in side for t in part):
            out.append(([t for t in part if side[t] == "base"], [t for t in part if side[t] == "other"]))
    return out


def judge(pg: Postgres, results: Path, aid: str, base: list[str], other: list[str]) -> dict:
    out = results / f"cmp-{uuid.uuid4().hex[:8]}"
    ybbench(pg, "compare", ",".join(base), ",".join(other), "--results", str(results / aid), "--out", str(out),
            "--history", str(results / "no-history.sqlite"))
    return json.loads((out / "compare.json").read_text())["comparisons"][0]["ops"]["select"]


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    c = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    m = (p + z * z / (2 * n)) / (1 + z * z / n)
    return max(0.0, m - c), min(1.0, m + c)


def pooled(got: list[dict]) -> tuple[float, float]:
    """(the between-run sd of log ops/s, each comparison's sides about their own means, pooled; the pool's
    ratio other/base: exp of the mean log difference over all comparisons)."""
    ss = df = 0.0
    diffs = []
    for g in got:
        for side in ("base", "other"):
            logs = [math.log(v) for v in g["values"][side]]
            m = sum(logs) / len(logs)
            ss += sum((x - m) ** 2 for x in logs)
            df += len(logs) - 1
        diffs.append(math.log(g["ratio"]))
    return math.sqrt(ss / df), math.exp(sum(diffs) / len(diffs))


def runs_for(sd: float, change: float, alpha: float = 0.05) -> int | None:
    """Runs a side that find `change` 8 times in 10 at this between-run sd (Welch, equal runs)."""
    from ybbench.core import run_stats

    return run_stats.runs_a_side(change, sd, alpha)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5, help="runs a side in each comparison")
    ap.add_argument("--comparisons", type=int, default=20, help="comparisons of each kind")
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--warmup", default="2s")
    ap.add_argument("--vus", type=int, default=8)
    ap.add_argument("--slowdown", type=float, default=0.05, help="the planted slowdown to calibrate to")
    ap.add_argument("--work", type=int, help="hash the key this many times in S (no calibration)")
    ap.add_argument("--only", choices=("aa", "as"), help="one kind only")
    ap.add_argument("--pool", type=Path, help="judge the pool already made in this folder (no new runs), "
                    "in comparisons of --repeat runs a side")
    a = ap.parse_args()
    pg = None if a.pool else Postgres.start()
    try:
        results = a.pool or Path(tempfile.mkdtemp(prefix="compare-calibration-"))
        if a.pool:
            rid = next(results.glob("*-as"), next(results.glob("*-aa"), None)).name.rsplit("-", 1)[0]
        else:
            rid = f"cc{uuid.uuid4().hex[:6]}"
            ins = run(pg, results, "sql-inserts", f"{rid}-ins", {"VUS": 4, "DURATION": "5s", "KEY_PREFIX": rid})
            a.sel = {"KEY_PREFIX": rid, "MAX_WRITTEN_KEY": ins["rows_written"], "VUS": a.vus, "DURATION": a.duration}
            a.work = a.work or calibrate(pg, results, {**a.sel, "DURATION": "10s"}, a.slowdown, 40)
            views(pg, a.work)
            print(f"pool: {a.comparisons} comparisons of each kind, {a.repeat} runs a side, {a.duration} runs "
                  f"(warm-up {a.warmup}), {a.vus} VUs, sql-selects on PostgreSQL 15; S hashes each key {a.work} "
                  f"times; results {results}", flush=True)
        rows = []
        for kind, view in (("as", SLOW_VIEW), ("aa", BASE_VIEW)):
            if a.only and a.only != kind:
                continue
            aid = f"{rid}-{kind}"
            if a.pool and not (results / aid / "ab.json").is_file():
                continue
            doc = (json.loads((results / aid / "ab.json").read_text()) if a.pool
                   else pool(pg, results, aid, view, a))
            got = [judge(pg, results, aid, b, o) for b, o in blocks(doc, a.repeat)]
            verdicts = [g["verdict"] for g in got]
            hits = sum(v == "slower" for v in verdicts) if kind == "as" else sum(v in ("faster", "slower")
                                                                                  for v in verdicts)
            rows.append((kind, len(got), hits, *pooled(got)))
            for g in got:
                print(f"  {kind}: {g['ratio']:.4f} [{g['low']:.4f}, {g['high']:.4f}] {g['verdict']}", flush=True)
        print()
        print(f"{'comparison':<26}{'n':>4}{'verdicts':>10}{'rate':>7}{'95% (Wilson)':>16}{'pool ratio':>12}"
              f"{'run sd':>9}{'runs a side for 5% / the ratio':>34}")
        for kind, n, hits, sd, ratio in rows:
            lo, hi = wilson(hits, n)
            what = "A/A: faster or slower" if kind == "aa" else "A/S: slower"
            need = f"{runs_for(sd, 0.05)} / {runs_for(sd, abs(ratio - 1)) if kind == 'as' else '-'}"
            print(f"{what:<26}{n:>4}{hits:>10}{hits / n:>7.2f}{f'[{lo:.2f}, {hi:.2f}]':>16}{ratio:>12.4f}"
                  f"{100 * sd:>8.2f}%{need:>34}")
    finally:
        if pg:
            pg.stop()


if __name__ == "__main__":
    main()
