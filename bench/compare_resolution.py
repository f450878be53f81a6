"""`ybbench compare` at 1 s on the native stack: two identical runs of
sql-selects, and one with a planted server-side slowdown, compared from
their own per-second.json (no Prometheus), with the gate. A measurement,
not a test: it prints the intervals (docs/reports.md quotes them).

    python3 -m bench.compare_resolution [--seconds 60] [--vus 8] [--slowdown-work 100] [--calibrate]

The slowdown is planted in the server: every run reads through one view
of the table whose filter hashes the key repeated N times (md5(repeat(k,
N)) <> ''), evaluated once per row read; N is 1 for the identical runs and
`--slowdown-work` for the slow one, so every select costs the server the
same extra CPU, the statement's text is the same and nothing on the client
changes. --calibrate first measures 10 s runs with and without it and
scales N towards 10%. (Until 2026-11-26 this was a row-level security
policy, which the test server's user, its bootstrap superuser, bypasses:
no slowdown was ever planted, and the measurements made with it were of
three identical runs.)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

from ybbench.core.catalog import REPO
from ybbench.local.pglocal import Postgres

BIN = Path.home() / ".cache" / "ybbench" / "bin"


def run(pg: Postgres, results: Path, workload: str, testid: str, knobs: dict) -> dict:
    cmd = [sys.executable, "-m", "ybbench", "run", workload, "--testid", testid, "--results", str(results), "--quiet",
           "--set", f"YSQL_NODES=127.0.0.1:{pg.port}", "--set", f"DB_USER={pg.user}", "--set", f"DB_NAME={pg.database}"]
    for k, v in knobs.items():
        cmd += ["--set", f"{k}={v}"]
    p = subprocess.run(cmd, cwd=REPO, env={**pg.env(), "K6": str(BIN / "k6")}, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(p.stdout + p.stderr)
    return json.loads((results / testid / "summary.json").read_text())


def compare(results: Path, base: str, other: str, *extra: str) -> tuple[int, dict, str]:
    out = results / f"cmp-{uuid.uuid4().hex[:6]}"
    p = subprocess.run([sys.executable, "-m", "ybbench", "compare", base, other, "--results", str(results),
                        "--out", str(out), *extra], cwd=REPO, capture_output=True, text=True)
    if p.returncode not in (0, 1):
        raise SystemExit(p.stdout + p.stderr)
    return p.returncode, json.loads((out / "compare.json").read_text()), p.stdout


VIEW = "planted_slowdown"


def slow(pg: Postgres, n: int | None) -> None:
    """The view every select reads: the key hashed once (n None) or n times over."""
    pg.query(f"CREATE OR REPLACE VIEW {VIEW} AS SELECT k, v FROM postgresqlkeyvalue "
             f"WHERE md5(repeat(k, {n or 1})) <> ''")


def line(name: str, s: dict) -> str:
    return (f"{name}: ratio {s['ratio']:.4f} [{s['low']:.4f}, {s['high']:.4f}] ({s['verdict']}; "
            f"{s['resolution_s']['base']} s series, {s['seconds']['base']}/{s['seconds']['other']} s, "
            f"blocks of {s['block_length']['base']} s; ops/s {s['base_ops_per_s']:.0f} -> {s['other_ops_per_s']:.0f})")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--vus", type=int, default=8)
    ap.add_argument("--slowdown-work", type=int, default=100)
    ap.add_argument("--calibrate", action="store_true")
    ap.add_argument("--order", default="a,b,slow", help="the order the three runs are made in")
    a = ap.parse_args()
    pg = Postgres.start()
    try:
        results = Path(tempfile.mkdtemp(prefix="compare-resolution-"))
        rid = f"cr{uuid.uuid4().hex[:6]}"
        ins = run(pg, results, "sql-inserts", f"{rid}-ins", {"VUS": 4, "DURATION": "5s", "KEY_PREFIX": rid})
        sel = {"KEY_PREFIX": rid, "MAX_WRITTEN_KEY": ins["rows_written"], "VUS": a.vus, "TABLE": VIEW}
        n = a.slowdown_work
        if a.calibrate:
            for i in range(2):
                slow(pg, None)
                base = run(pg, results, "sql-selects", f"{rid}-cal{i}a", {**sel, "DURATION": "10s"})["ops"]["select"]
                slow(pg, n)
                got = run(pg, results, "sql-selects", f"{rid}-cal{i}b", {**sel, "DURATION": "10s"})["ops"]["select"]
                s = 1 - got["per_second"] / base["per_second"]
                print(f"calibrate: work {n}: {100 * s:.1f}% slower ({base['per_second']:.0f} -> {got['per_second']:.0f} ops/s)",
                      flush=True)
                n = max(1, round(n * 0.10 / s)) if s > 0 else n * 2
        for which in a.order.split(","):
            slow(pg, n if which == "slow" else None)
            run(pg, results, "sql-selects", f"{rid}-{which}", {**sel, "DURATION": f"{a.seconds}s"})
        print(f"{a.seconds} s runs of sql-selects, {a.vus} VUs, local PostgreSQL; slowdown work {n}; results {results}")
        _, d, _ = compare(results, f"{rid}-a", f"{rid}-b")
        print(line("identical a -> b", d["comparisons"][0]["ops"]["select"]))
        for base in ("a", "b"):
            code, d, out = compare(results, f"{rid}-{base}", f"{rid}-slow", "--fail-on", "slower:5%")
            print(line(f"planted slowdown {base} -> slow", d["comparisons"][0]["ops"]["select"]))
            print(f"  gate slower:5%: exit {code}: " + "; ".join(d["gate"]["messages"]))
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
