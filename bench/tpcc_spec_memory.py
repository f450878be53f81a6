"""Spec mode's client memory: k6's peak RSS running `tpcc` with
TPCC_MODE=spec (10 terminals a warehouse, keying and think times, 50
terminals on a VU) at two warehouse counts, on a throwaway PostgreSQL 15:
the RSS a warehouse costs at each size, the marginal cost of one more
warehouse between them, and what that makes at 1,000 warehouses. A
benchmark, not a test: it prints a table.

    python3 -m bench.tpcc_spec_memory [--small 5] [--large 50] [--seconds 60]

The target (a client that does not cost what BenchBase's 6 MB a warehouse
does): at most 1 MB of client memory a warehouse. Peak RSS is the k6
process's (its VmHWM), the same figure bench/client_efficiency
reports; efficiency and terminal_wait_ms come from the run's summary.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from bench.client_efficiency import K6_CLIENTS, run_measured
from bench.tpcc_client_cost import load
from tests.support.stack import BIN, REPO, Postgres
from ybbench.run.k6_process import k6_env

console = Console(width=150)
CLIENT = "pgconn"  # what `ybbench run` uses


def spec_run(pg: Postgres, warehouses: int, prefix: str, c_load: int, seconds: int) -> dict:
    """One spec-mode run at the default VUs; its peak RSS, CPU and summary figures."""
    with tempfile.TemporaryDirectory() as d:
        summary = Path(d) / "summary.json"
        env = k6_env(pg.env())
        env.update(K6_CLIENTS[CLIENT][1])
        env.update(YSQL_NODES=f"127.0.0.1:{pg.port}", DB_USER=pg.user, DB_NAME=pg.database, TPCC_MODE="spec",
                   DURATION=f"{seconds}s", WAREHOUSES=str(warehouses), C_LOAD=str(c_load), TABLE_PREFIX=prefix,
                   SUMMARY_JSON=str(summary))
        _, cpu, rss_kb = run_measured([str(BIN / "k6"), "run", "--quiet", "--no-color",
                                       str(REPO / "k6-scripts" / "tpcc.js")], env)
        s = json.loads(summary.read_text())
    if s["errors"]:
        raise RuntimeError(f"tpcc spec at {warehouses} warehouses: {s['errors']} errors {s['errors_by_class']}")
    t = s["tpcc"]
    return {"warehouses": warehouses, "vus": math.ceil(warehouses / 5), "rss_mb": rss_kb / 1024, "cpu_s": cpu,
            "tpmc": t["tpmc"], "efficiency": t["efficiency"], "wait_ms": t["terminal_wait_ms"],
            "transactions": sum(o["count"] for o in s["ops"].values())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=5)
    ap.add_argument("--large", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=60)
    a = ap.parse_args()
    if not 1 <= a.small < a.large:
        raise SystemExit(f"--small {a.small} --large {a.large}: need 1 <= small < large")
    pg = Postgres.start()
    runs, loads = [], []
    try:
        with tempfile.TemporaryDirectory() as d:
            for w, prefix in ((a.small, "s_"), (a.large, "l_")):
                took, loaded = load(pg, Path(d), w, prefix)
                loads.append(f"{w} in {took:.0f} s")
                runs.append(spec_run(pg, w, prefix, loaded["written"]["c_load"], a.seconds))
                console.print(f"{w} warehouses: {runs[-1]}", highlight=False)
    finally:
        pg.stop()
    small, large = runs
    marginal = (large["rss_mb"] - small["rss_mb"]) / (large["warehouses"] - small["warehouses"])
    t = Table(title=f"tpcc spec mode, {CLIENT}, {a.seconds} s a run, default VUs (warehouses / 5); "
                    f"loads: {', '.join(loads)}")
    for col in ("warehouses", "terminals", "VUs", "peak RSS MB", "MB / warehouse", "tpmC", "efficiency",
                "terminal wait ms", "client CPU ms/txn"):
        t.add_column(col, justify="right")
    for r in runs:
        t.add_row(str(r["warehouses"]), str(10 * r["warehouses"]), str(r["vus"]), f"{r['rss_mb']:.0f}",
                  f"{r['rss_mb'] / r['warehouses']:.2f}", f"{r['tpmc']:.1f}", f"{100 * r['efficiency']:.1f}%",
                  f"{r['wait_ms']:.1f}", f"{1000 * r['cpu_s'] / max(r['transactions'], 1):.2f}")
    console.print(t)
    at_1000 = small["rss_mb"] + marginal * (1000 - small["warehouses"])
    console.print(f"marginal: {marginal:.3f} MB a warehouse between {small['warehouses']} and {large['warehouses']}; "
                  f"at 1,000 warehouses that makes {at_1000:.0f} MB, {at_1000 / 1000:.2f} MB a warehouse "
                  "(target: at most 1 MB)", highlight=False)


if __name__ == "__main__":
    main()
