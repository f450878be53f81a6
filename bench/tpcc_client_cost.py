"""TPC-C's client cost: tpmC, client CPU per transaction, round trips per
transaction (counted by the server: bench/tpcc_round_trips.py), New-Order's
latency and client memory of `tpcc` in throughput mode, per k6 client
(bench/client_efficiency.py's K6_CLIENTS) and per style (TPCC_STYLE:
procedures, one PL/pgSQL call a transaction; statements, BEGIN, each
statement a round trip, COMMIT: pgconn only), on one throwaway PostgreSQL 15
(pg_stat_statements preloaded; autovacuum off while counting), next to
pgbench calling the same New-Order function (the reference, in the same
run), and the load's time. A benchmark, not a test: it prints a table.

    python3 -m bench.tpcc_client_cost [--warehouses 2] [--vus 8] [--seconds 30] [--repeat 3]
                                      [--clients plain,pgx,pgconn] [--styles procedures,statements]

The setting of go-tpc's published figure (REFERENCE.md: v1.0.12, 2 warehouses,
8 threads, 30 s, no think time: 242 µs of client CPU a transaction, 28 MB).
Each row runs --repeat times, interleaved; the table shows the median and
the range. CPU is user + system of the client process (wait4), over the
transactions it completed (committed, rolled back or failed alike).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.client_efficiency import K6_CLIENTS, Measure, pgbench, run_measured
from bench.tpcc_round_trips import Counter, autovacuum_off
from tests.support.stack import BIN, REPO, Postgres
from ybbench.run.k6_process import k6_env

console = Console(width=220)  # the table unwrapped in logs and pipes
STYLES = ("procedures", "statements")


@dataclass
class Row:
    """One run: its client measure, and from summary.json tpmC and New-Order's latency (ms)."""

    measure: Measure
    trips: float  # round trips a transaction, by the server's counts
    tpmc: float | None = None
    no_p50: float | None = None
    no_p99: float | None = None
    attempt_p99: float | None = None  # statements: the final attempt's alone


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


def tpcc(pg: Postgres, client: str, style: str, warehouses: int, c_load: int, vus: int, seconds: int) -> Row:
    """One throughput-mode run of k6-scripts/tpcc.js, its round trips counted by the server."""
    with tempfile.TemporaryDirectory() as d:
        summary = Path(d) / "summary.json"
        env = k6_env(pg.env())
        env.update(K6_CLIENTS[client][1])
        env.update(YSQL_NODES=f"127.0.0.1:{pg.port}", DB_USER=pg.user, DB_NAME=pg.database, VUS=str(vus),
                   DURATION=f"{seconds}s", WAREHOUSES=str(warehouses), C_LOAD=str(c_load), SUMMARY_JSON=str(summary),
                   TPCC_STYLE=style)
        counter = Counter(pg)
        counter.start()
        _, cpu, rss = run_measured([str(BIN / "k6"), "run", "--quiet", "--no-color",
                                    str(REPO / "k6-scripts" / "tpcc.js")], env)
        trips = counter.stop()
        s = json.loads(summary.read_text())
    if s["errors"]:
        raise RuntimeError(f"tpcc with {client}, {style}: {s['errors']} errors {s['errors_by_class']}")
    txns = sum(o["count"] for o in s["ops"].values())  # one iteration, one transaction
    retries = sum(o.get("retries", 0) for o in s["ops"].values())
    # Each attempt is one of the server's transactions: what is left is what was not taken out.
    console.print(f"  {style}: the server's transactions {trips.transactions}, k6's {txns} + {retries} retried, "
                  f"statements {trips.statements}, rolled back {trips.rollbacks}, blocks {trips.blocks}",
                  highlight=False)
    # Without our Go helpers' histograms (plain, pgx) k6 keeps no per-op latency unless OP_LATENCY_SUMMARY=on,
    # whose sorting would cost client CPU here: none then.
    no = s["ops"]["new_order"]["latency_ms"] or {}
    attempt = (s["tpcc"].get("attempts") or {}).get("new_order", {}).get("latency_ms") or {}
    return Row(Measure(txns, s["duration_s"], cpu, rss), trips.total / txns, s["tpcc"]["tpmc"], no.get("p50"), no.get("p99"),
               attempt.get("p99"))


def reference(pg: Postgres, script: str, vus: int, seconds: int) -> Row:
    """pgbench calling New-Order's function, its round trips counted as k6's."""
    counter = Counter(pg)
    counter.start()
    m = pgbench(pg, script, vus, seconds)
    return Row(m, counter.stop().total / m.ops)


def median_range(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--warehouses", type=int, default=2)
    ap.add_argument("--vus", type=int, default=8)
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--clients", default="plain,pgx,pgconn", help="k6 clients of the procedures style")
    ap.add_argument("--styles", default=",".join(STYLES), help="statements runs with pgconn only")
    a = ap.parse_args()
    clients, styles = a.clients.split(","), a.styles.split(",")
    unknown = [c for c in clients if c not in K6_CLIENTS] + [s for s in styles if s not in STYLES]
    if unknown:
        ap.error(f"unknown: {','.join(unknown)}; clients: {', '.join(K6_CLIENTS)}; styles: {', '.join(STYLES)}")
    # TPCC_STYLE=statements needs DB_DRIVER=pgconn (tpcc.js refuses the others).
    rows = ([(c, "procedures") for c in clients] if "procedures" in styles else []) + \
        ([("pgconn", "statements")] if "statements" in styles else [])
    load_at_start = loadavg()
    pg = Postgres.start()
    try:
        with tempfile.TemporaryDirectory() as d:
            took, loaded = load(pg, Path(d), a.warehouses)
        c_load = loaded["written"]["c_load"]
        autovacuum_off(pg)
        # The reference: pgbench calling New-Order's function with fixed arguments, as many clients.
        items = ",".join(str(i) for i in range(1, 11))
        ref_script = (f"\\set d random(1, 10)\n\\set c random(1, 3000)\n"
                      f"SELECT tpcc_no(1, :d, :c, '{{{items}}}'::int[], '{{{','.join(['1'] * 10)}}}'::int[], "
                      f"'{{{','.join(['5'] * 10)}}}'::int[]);\n")
        # pgbench after the first run of the procedures style: its setup makes the functions.
        if rows[0][1] != "procedures":
            rows.insert(0, ("pgconn", "procedures"))
        got: dict[tuple[str, str], list[Row]] = {r: [] for r in [*rows, ("pgbench", "")]}
        for r in range(a.repeat):
            for client, style in got:
                if client == "pgbench":
                    row = reference(pg, ref_script, a.vus, a.seconds)
                else:
                    row = tpcc(pg, client, style, a.warehouses, c_load, a.vus, a.seconds)
                got[client, style].append(row)
                m = row.measure
                console.print(f"round {r + 1} {client} {style}: {m.ops} transactions, {m.us_per_op:.1f} µs CPU each, "
                              f"{row.trips:.2f} round trips each, {m.max_rss_kb / 1024:.0f} MB", highlight=False)
    finally:
        pg.stop()
    console.print(table(got, a, took, f"{load_at_start} at the start, {loadavg()} at the end"))


def table(got: dict[tuple[str, str], list[Row]], a, took: float, load: str) -> Table:
    ref = statistics.median(r.measure.us_per_op for r in got["pgbench", ""])
    t = Table(title=f"tpcc throughput mode: {a.warehouses} warehouses, {a.vus} VUs, {a.seconds} s, median (range) "
                    f"of {a.repeat}; load of {a.warehouses} warehouses: {took:.1f} s; load average {load}")
    for col in ("client", "style", "tpmC", "transactions/s", "client CPU µs/txn", "× pgbench",
                "round trips/txn (server)", "New-Order p50 ms", "p99 ms", "final attempt p99 ms", "peak RSS MB"):
        t.add_column(col, justify="left" if col in ("client", "style") else "right")
    for (c, style), runs in got.items():
        label = "pgbench -M prepared, New-Order's function" if c == "pgbench" else K6_CLIENTS[c][0]

        def some(f):  # a column's values, where the row has them
            return [v for v in map(f, runs) if v is not None]
        t.add_row(label, style or "procedures", median_range(some(lambda r: r.tpmc), ".0f"),
                  median_range([r.measure.rate for r in runs], ".0f"),
                  median_range([r.measure.us_per_op for r in runs], ".1f"),
                  f"{statistics.median(r.measure.us_per_op for r in runs) / ref:.2f}",
                  median_range([r.trips for r in runs], ".2f"),
                  median_range(some(lambda r: r.no_p50), ".2f"), median_range(some(lambda r: r.no_p99), ".2f"),
                  median_range(some(lambda r: r.attempt_p99), ".2f"),
                  median_range([r.measure.max_rss_kb / 1024 for r in runs], ".0f"))
    return t


if __name__ == "__main__":
    main()
