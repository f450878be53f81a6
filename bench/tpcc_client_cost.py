"""TPC-C's client cost: tpmC, client CPU per transaction and client memory
of `tpcc` in throughput mode, per k6 client (bench/client_efficiency.py's
K6_CLIENTS), on a throwaway PostgreSQL 15, next to pgbench calling the same
New-Order function (the reference, in the same run), and the load's time.
A benchmark, not a test: it prints a table.

    python3 -m bench.tpcc_client_cost [--warehouses 2] [--vus 8] [--seconds 30] [--repeat 3]
                                      [--clients plain,pgx,pgconn]

The setting of go-tpc's published figure (REFERENCE.md: v1.0.12, 2 warehouses,
8 threads, 30 s, no think time: 242 µs of client CPU a transaction, 28 MB).
Each client runs --repeat times, interleaved; the table shows the median and
the range. CPU is user + system of the client process (wait4), over the
transactions it completed (committed, rolled back or failed alike).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.client_efficiency import K6_CLIENTS, Measure, pgbench, run_measured
from tests.support.stack import BIN, REPO, Postgres
from ybbench.run.k6_process import k6_env

console = Console(width=150)


def load(pg: Postgres, results: Path, warehouses: int, prefix: str = "") -> tuple[float, dict]:
    """`ybbench run tpcc-load` as a user runs it; its wall time and summary."""
    testid = f"load{prefix}"
    cmd = [sys.executable, "-m", "ybbench", "run", "tpcc-load", "--testid", testid, "--results", str(results),
           "--quiet", "--set", f"WAREHOUSES={warehouses}", "--set", f"VUS={min(warehouses + 1, 16)}"]
    for k, v in {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database,
                 "TABLE_PREFIX": prefix}.items():
        cmd += ["--set", f"{k}={v}"]
    started = time.monotonic()
    p = subprocess.run(cmd, cwd=REPO, env={**pg.env(), "K6": str(BIN / "k6")}, capture_output=True, text=True)
    took = time.monotonic() - started
    if p.returncode:
        raise SystemExit(f"tpcc-load failed ({p.returncode}): {p.stdout[-2000:]}{p.stderr[-2000:]}")
    return took, json.loads((results / testid / "summary.json").read_text())


def tpcc(pg: Postgres, client: str, warehouses: int, c_load: int, vus: int, seconds: int) -> tuple[Measure, float]:
    """One throughput-mode run of k6-scripts/tpcc.js; its measure and tpmC."""
    with tempfile.TemporaryDirectory() as d:
        summary = Path(d) / "summary.json"
        env = k6_env(pg.env())
        env.update(K6_CLIENTS[client][1])
        env.update(YSQL_NODES=f"127.0.0.1:{pg.port}", DB_USER=pg.user, DB_NAME=pg.database, VUS=str(vus),
                   DURATION=f"{seconds}s", WAREHOUSES=str(warehouses), C_LOAD=str(c_load), SUMMARY_JSON=str(summary))
        _, cpu, rss = run_measured([str(BIN / "k6"), "run", "--quiet", "--no-color",
                                    str(REPO / "k6-scripts" / "tpcc.js")], env)
        s = json.loads(summary.read_text())
    if s["errors"]:
        raise RuntimeError(f"tpcc with {client}: {s['errors']} errors {s['errors_by_class']}")
    txns = sum(o["count"] for o in s["ops"].values())  # one iteration, one transaction
    return Measure(txns, s["duration_s"], cpu, rss), s["tpcc"]["tpmc"]


def median_range(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warehouses", type=int, default=2)
    ap.add_argument("--vus", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clients", default="plain,pgx,pgconn")
    a = ap.parse_args()
    clients = a.clients.split(",")
    unknown = [c for c in clients if c not in K6_CLIENTS]
    if unknown:
        raise SystemExit(f"--clients {','.join(unknown)}: unknown; known: {', '.join(K6_CLIENTS)}")
    pg = Postgres.start()
    try:
        with tempfile.TemporaryDirectory() as d:
            took, loaded = load(pg, Path(d), a.warehouses)
        c_load = loaded["written"]["c_load"]
        # The reference: pgbench calling New-Order's function with fixed arguments, as many clients.
        items = ",".join(str(i) for i in range(1, 11))
        ref_script = (f"\\set d random(1, 10)\n\\set c random(1, 3000)\n"
                      f"SELECT tpcc_no(1, :d, :c, '{{{items}}}'::int[], '{{{','.join(['1'] * 10)}}}'::int[], "
                      f"'{{{','.join(['5'] * 10)}}}'::int[]);\n")
        # pgbench after the first client: tpcc's setup makes the functions.
        got: dict[str, list[tuple[Measure, float | None]]] = {c: [] for c in [*clients, "pgbench"]}
        for r in range(a.repeat):
            for c in got:
                if c == "pgbench":
                    got[c].append((pgbench(pg, ref_script, a.vus, a.seconds), None))
                else:
                    got[c].append(tpcc(pg, c, a.warehouses, c_load, a.vus, a.seconds))
                m = got[c][-1][0]
                console.print(f"round {r + 1} {c}: {m.ops} transactions, {m.us_per_op:.1f} µs CPU each, "
                              f"{m.max_rss_kb / 1024:.0f} MB", highlight=False)
    finally:
        pg.stop()
    ref = statistics.median(m.us_per_op for m, _ in got["pgbench"])
    t = Table(title=f"tpcc throughput mode: {a.warehouses} warehouses, {a.vus} VUs, {a.seconds} s, "
                    f"median (range) of {a.repeat}; load of {a.warehouses} warehouses: {took:.1f} s")
    for col in ("client", "tpmC", "transactions/s", "client CPU µs/txn", "× pgbench", "peak RSS MB"):
        t.add_column(col, justify="left" if col == "client" else "right")
    for c, runs in got.items():
        label = "pgbench -M prepared, New-Order's function" if c == "pgbench" else K6_CLIENTS[c][0]
        tpm = [x for _, x in runs if x is not None]
        t.add_row(label, median_range(tpm, ".0f") if tpm else "-", median_range([m.rate for m, _ in runs], ".0f"),
                  median_range([m.us_per_op for m, _ in runs], ".1f"),
                  f"{statistics.median(m.us_per_op for m, _ in runs) / ref:.2f}",
                  median_range([m.max_rss_kb / 1024 for m, _ in runs], ".0f"))
    console.print(t)


if __name__ == "__main__":
    main()
