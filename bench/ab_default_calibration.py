"""How often `ybbench ab` with its defaults is wrong, on real runs of this
machine: each comparison is one whole `ybbench ab` as a user runs it (no
--repeat: 5 runs a side, then as many as --resolve 5% asks, at most 20;
one warm-up run, 2 s of warm-up a run), A against S (the planted
slowdown: a "slower" is a detection) and A against A (a verdict is a
false one), alternately. A measurement, not a test: it prints the table
docs/measurements.md keeps.

    python3 -m bench.ab_default_calibration [--comparisons 20] [--duration 30s] [--work 40]

A and S read the same rows through bench/compare_calibration.py's views
(S hashes each key `work` times). Each line is printed as its ab ends, so
a run stopped early still says what it saw.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import uuid
from pathlib import Path

from bench.compare_calibration import BASE_VIEW, SLOW_VIEW, views, wilson, ybbench
from bench.compare_resolution import run
from ybbench.local.pglocal import Postgres


def one_ab(pg: Postgres, results: Path, aid: str, other_view: str, sel: dict) -> dict:
    """One default ab; its select comparison from its own compare.json."""
    args = ["ab", "sql-selects", "--id", aid, "--results", str(results), "--base", f"TABLE={BASE_VIEW}",
            "--other", f"TABLE={other_view}", "--history", str(results / "no-history.sqlite")]
    for k, v in {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database, **sel}.items():
        args += ["--set", f"{k}={v}"]
    p = ybbench(pg, *args)
    found = sorted((results / aid).glob("compare-*/compare.json"))
    if not found:
        raise SystemExit(p.stdout + p.stderr)
    return json.loads(found[-1].read_text())["comparisons"][0]["ops"]["select"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--comparisons", type=int, default=20, help="abs of each kind")
    ap.add_argument("--duration", default="30s", help="each run's DURATION (the workloads' default: 30s)")
    ap.add_argument("--vus", type=int, default=8)
    ap.add_argument("--work", type=int, default=40, help="hash the key this many times in S")
    a = ap.parse_args()
    pg = Postgres.start()
    try:
        results = Path(tempfile.mkdtemp(prefix="ab-default-calibration-"))
        rid = f"ad{uuid.uuid4().hex[:6]}"
        ins = run(pg, results, "sql-inserts", f"{rid}-ins", {"VUS": 4, "DURATION": "5s", "KEY_PREFIX": rid})
        sel = {"KEY_PREFIX": rid, "MAX_WRITTEN_KEY": ins["rows_written"], "VUS": a.vus, "DURATION": a.duration}
        views(pg, a.work)
        print(f"default ab, {a.comparisons} of each kind, {a.duration} runs, {a.vus} VUs, sql-selects on "
              f"PostgreSQL 15; S hashes each key {a.work} times; results {results}", flush=True)
        got: dict[str, list[dict]] = {"as": [], "aa": []}
        for i in range(a.comparisons):
            for kind, view in (("as", SLOW_VIEW), ("aa", BASE_VIEW)):
                s = one_ab(pg, results, f"{rid}-{kind}{i + 1}", view, sel)
                got[kind].append(s)
                print(f"  {kind}{i + 1}: {s['runs']['base']} + {s['runs']['other']} runs, {s['ratio']:.4f} "
                      f"[{s['low']:.4f}, {s['high']:.4f}] {s['verdict']}", flush=True)
        print(f"\n{'comparison':<26}{'n':>4}{'verdicts':>10}{'rate':>7}{'95% (Wilson)':>16}{'runs a side':>13}")
        for kind, rows in got.items():
            hits = sum(r["verdict"] == "slower" if kind == "as" else r["verdict"] in ("faster", "slower")
                       for r in rows)
            lo, hi = wilson(hits, len(rows))
            what = "A/S: slower" if kind == "as" else "A/A: faster or slower"
            runs = sum(r["runs"]["base"] for r in rows) / len(rows)
            print(f"{what:<26}{len(rows):>4}{hits:>10}{hits / len(rows):>7.2f}{f'[{lo:.2f}, {hi:.2f}]':>16}"
                  f"{runs:>13.1f}")
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
