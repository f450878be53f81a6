"""Client CPU per operation: k6 (lib/pq and pgx) next to pgbench, on one
PostgreSQL, in one run. A benchmark, not a test: it prints a table.

    python3 -m bench.client_efficiency [--seconds 10] [--repeat 3] [--clients 16] [--memory-vus 400,2400]

For each workload, every client runs the same statements against the same
table for the same time with the same concurrency (kv-recent-read-heavy runs
kv-read-heavy's statements, sql-secondary-index sql-inserts' plus an index,
ycsb-analytic one scan per operation: they add no row here); a client's CPU (user +
system, from wait4 on its process) divided by the operations it completed
gives µs per operation. pgbench -M prepared is the reference, measured in
the same run. Each client runs --repeat times, interleaved with the others,
and the table shows the median and the range: on a shared 2-core machine
one run can be 15% off the next. Memory: k6's peak RSS with N VUs each holding a connection.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tests.stack import BIN, PG_BIN, REPO, Postgres
from ybbench.run import k6_env

ROWS = 200_000
PREFIX = "bench"
YCSB_RECORDS = 50_000
KV_PREFIX = "kvb"  # the large-dataset table: 50-byte keys, 256-byte values
KV_KEY = f"'{KV_PREFIX}:' || lpad(n::text, {50 - len(KV_PREFIX) - 1}, '0')"
YCSB_FIELDS = ", ".join(f"field{i}" for i in range(10))
console = Console(width=120)  # the table unwrapped in logs and pipes


@dataclass
class Measure:
    ops: int
    seconds: float  # wall time the tool reports for its load phase
    cpu: float  # user + system seconds of the client process
    max_rss_kb: int

    @property
    def rate(self) -> float:
        return self.ops / self.seconds

    @property
    def us_per_op(self) -> float:
        return self.cpu / self.ops * 1e6


def run_measured(cmd: list[str], env: dict, cwd: Path | None = None) -> tuple[str, float, int]:
    """Run a client to completion; its output, CPU seconds and peak RSS."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if proc.returncode not in (0, 99):
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{text[-2000:]}")
    return text, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def pgbench(pg: Postgres, script: str, clients: int, seconds: int) -> Measure:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    cmd = [str(PG_BIN / "pgbench"), "-n", "-M", "prepared", "-c", str(clients), "-j", "2", "-T", str(seconds),
           "-h", "127.0.0.1", "-p", str(pg.port), "-U", pg.user, "-f", f.name, pg.database]
    text, cpu, rss = run_measured(cmd, pg.env())
    os.unlink(f.name)
    ops = int(re.search(r"number of transactions actually processed: (\d+)", text).group(1))
    tps = float(re.search(r"tps = ([\d.]+)", text).group(1))
    return Measure(ops, ops / tps, cpu, rss)


def k6(pg: Postgres, workload: str, driver: str, clients: int, seconds: int, **knobs) -> Measure:
    with tempfile.TemporaryDirectory() as d:
        summary = Path(d) / "summary.json"
        env = k6_env(pg.env())  # as `ybbench run` runs k6
        env.update(YSQL_NODES=f"127.0.0.1:{pg.port}", DB_USER=pg.user, DB_NAME=pg.database, DB_DRIVER=driver,
                   VUS=str(clients), DURATION=f"{seconds}s", **{k: str(v) for k, v in knobs.items()})
        _, cpu, rss = run_measured(
            [str(BIN / "k6"), "run", "--quiet", "--no-color", "--summary-export", str(summary),
             str(REPO / "k6-scripts" / f"{workload}.js")], env)
        metrics = json.loads(summary.read_text())["metrics"]
    ops = metrics["iterations"]["count"]  # one statement per iteration
    errors = metrics.get("ybbench_errors", {}).get("count", 0)
    if errors:
        by_class = {k: v["count"] for k, v in metrics.items() if k.startswith("ybbench_errors{") and v.get("count")}
        raise RuntimeError(f"{workload} with {driver}, {clients} VUs: {errors} SQL errors {by_class}")
    return Measure(ops, ops / metrics["iterations"]["rate"], cpu, rss)


def load_table(pg: Postgres) -> None:
    pg.query("DROP TABLE IF EXISTS postgresqlkeyvalue")
    pg.query("CREATE TABLE postgresqlkeyvalue (k text PRIMARY KEY, v text)")
    pg.query(f"INSERT INTO postgresqlkeyvalue SELECT '{PREFIX}:' || n, 'val:' || n "
             f"FROM generate_series(0, {ROWS - 1}) n")
    pg.query("VACUUM ANALYZE postgresqlkeyvalue")
    # keyvalue as kv-load writes it (seeds 001, 004), for the kv reads.
    pg.query("DROP TABLE IF EXISTS keyvalue")
    pg.query("CREATE TABLE keyvalue (k text PRIMARY KEY, v bytea)")
    pg.query(f"INSERT INTO keyvalue SELECT {KV_KEY}, decode(repeat(md5(n::text), 16), 'hex') "
             f"FROM generate_series(0, {ROWS - 1}) n")
    pg.query("VACUUM ANALYZE keyvalue")


def load_ycsb(pg: Postgres) -> None:
    """usertable as k6's ycsb-load writes it (YCSB's hashed keys), and the
    same rows under `user<n>` keys for pgbench, which cannot hash."""
    k6(pg, "ycsb-load", "pgx", 16, 600, RECORD_COUNT=YCSB_RECORDS)
    pg.query("DROP TABLE IF EXISTS usertable_pgbench")
    pg.query("CREATE TABLE usertable_pgbench (LIKE usertable INCLUDING ALL)")
    pg.query(f"INSERT INTO usertable_pgbench SELECT 'user' || n, {', '.join(['repeat(md5(n::text), 3)'] * 10)} "
             f"FROM generate_series(0, {YCSB_RECORDS - 1}) n")
    pg.query("VACUUM ANALYZE usertable")
    pg.query("VACUUM ANALYZE usertable_pgbench")


# The same statements for every client: point SELECT by text key; single-row
# INSERT of a new key with a 64-byte row.
PGBENCH_SELECT = f"\\set n random(0, {ROWS - 1})\nSELECT k, v FROM postgresqlkeyvalue WHERE k = '{PREFIX}:' || :n;\n"
PGBENCH_INSERT = ("\\set n random(0, 9000000000000000000)\n"
                  "INSERT INTO postgresqlkeyvalue (k, v) VALUES ('pgb:' || :n, rpad('val:' || :n, 40, 'x'));\n")
PGBENCH_KV_READ = (f"\\set n random(0, {ROWS - 1})\n"
                   f"SELECT k, v FROM keyvalue WHERE k = {KV_KEY.replace('n::text', ':n::text')};\n")
PGBENCH_KV_LOAD = ("\\set n random(0, 9000000000000000000)\n"
                   "INSERT INTO keyvalue (k, v) VALUES (lpad(:n::text, 50, 'p'), decode(repeat(md5(:n::text), 16), 'hex'));\n")
# Half updates, half reads of the sql-inserts table (yb-sample-apps SqlUpdates).
PGBENCH_SQL_UPDATES = (f"\\set n random(0, {ROWS - 1})\n\\set r random(1, 100)\n"
                       f"\\if :r <= 50\nUPDATE postgresqlkeyvalue SET v = 'val:' || :n || ':1' WHERE k = '{PREFIX}:' || :n;\n"
                       f"\\else\nSELECT k, v FROM postgresqlkeyvalue WHERE k = '{PREFIX}:' || :n;\n\\endif\n")
# Seed 001's read-heavy mix: 0.5% updates of a 256-byte value, the rest reads.
PGBENCH_KV_READ_HEAVY = (f"\\set n random(0, {ROWS - 1})\n\\set r random(1, 1000)\n"
                         f"\\if :r <= 5\nUPDATE keyvalue SET v = decode(repeat(md5(:n::text), 16), 'hex') "
                         f"WHERE k = {KV_KEY.replace('n::text', ':n::text')};\n"
                         f"\\else\nSELECT k, v FROM keyvalue WHERE k = {KV_KEY.replace('n::text', ':n::text')};\n\\endif\n")
PGBENCH_YCSB_C = (f"\\set n random(0, {YCSB_RECORDS - 1})\n"
                  f"SELECT ycsb_key, {YCSB_FIELDS} FROM usertable_pgbench WHERE ycsb_key = 'user' || :n;\n")
# YCSB's load phase: new records of ten 100-byte fields.
PGBENCH_YCSB_LOAD = ("\\set n random(0, 9000000000000000000)\n"
                     f"INSERT INTO usertable_pgbench (ycsb_key, {YCSB_FIELDS}) VALUES ('pgb' || :n, "
                     + ", ".join(f"rpad(:n::text, 100, '{i}')" for i in range(10)) + ");\n")
# YCSB workload a: half reads of a whole record, half updates of one field,
# keys uniform (k6 runs with REQUEST_DISTRIBUTION=uniform to match).
PGBENCH_YCSB_A = (f"\\set n random(0, {YCSB_RECORDS - 1})\n\\set f random(0, 9)\n\\set r random(1, 100)\n"
                  f"\\if :r <= 50\nSELECT ycsb_key, {YCSB_FIELDS} FROM usertable_pgbench WHERE ycsb_key = 'user' || :n;\n"
                  "\\else\nUPDATE usertable_pgbench SET field3 = rpad(:f::text, 100, 'y') WHERE ycsb_key = 'user' || :n;\n"
                  "\\endif\n")


# (driver, label); "pgbench" is the reference, the others k6's DB_DRIVER.
CLIENTS = (("pgbench", "pgbench -M prepared"), ("postgres", "k6 + xk6-sql + lib/pq"), ("pgx", "k6 + xk6-sql + pgx"))


def throughput_table(pg: Postgres, clients: int, seconds: int, repeat: int, only: list[str] | None) -> Table:
    table = Table(title=f"Client efficiency: PostgreSQL 15 on loopback, {clients} clients, "
                        f"{repeat} runs of {seconds} s per client, interleaved (median, min–max)")
    for col in ("workload", "client", "ops/s", "client CPU µs/op", "min–max", "× pgbench"):
        table.add_column(col, justify="right" if col not in ("workload", "client") else "left")
    ycsb = {"REQUEST_DISTRIBUTION": "uniform", "RECORD_COUNT": YCSB_RECORDS}
    # name: (pgbench script, k6 workload, its knobs); writers get a fresh KEY_PREFIX per run.
    cases = {
        "select": (PGBENCH_SELECT, "sql-selects", {"KEY_PREFIX": PREFIX, "MAX_WRITTEN_KEY": ROWS}),
        "insert": (PGBENCH_INSERT, "sql-inserts", {}),
        "sql-updates": (PGBENCH_SQL_UPDATES, "sql-updates", {"KEY_PREFIX": PREFIX, "MAX_WRITTEN_KEY": ROWS}),
        "kv-random-read": (PGBENCH_KV_READ, "kv-random-read", {"KEY_PREFIX": KV_PREFIX, "MAX_WRITTEN_KEY": ROWS}),
        "kv-read-heavy": (PGBENCH_KV_READ_HEAVY, "kv-read-heavy", {"KEY_PREFIX": KV_PREFIX, "MAX_WRITTEN_KEY": ROWS}),
        "kv-load": (PGBENCH_KV_LOAD, "kv-load", {}),
        "ycsb-a": (PGBENCH_YCSB_A, "ycsb", dict(ycsb, YCSB_WORKLOAD="a")),
        "ycsb-c": (PGBENCH_YCSB_C, "ycsb", dict(ycsb, YCSB_WORKLOAD="c")),
        # Last: its runs add the most data, and a busier server changes the
        # client's cost per operation too (fewer operations per wakeup).
        "ycsb-load": (PGBENCH_YCSB_LOAD, "ycsb-load", {"RECORD_COUNT": 10**9}),
    }
    for name, (script, workload, knobs) in cases.items():
        if only is not None and name not in only:
            continue
        pg.query("CHECKPOINT")  # the last case's writes are not flushed during this one
        runs: dict[str, list[Measure]] = {driver: [] for driver, _ in CLIENTS}
        # Interleaved, so that a slow spell of the machine hits every client.
        for r in range(repeat):
            for driver, label in CLIENTS:
                console.log(f"{name}: {label} ({r + 1}/{repeat})")
                if driver == "pgbench":
                    runs[driver].append(pgbench(pg, script, clients, seconds))
                    continue
                fresh = f"k6{driver}{r}{int(time.time())}"
                extra = (dict(knobs, KEY_PREFIX=fresh) if workload in ("sql-inserts", "kv-load")
                         else dict(knobs, TABLE=f"usertable_{fresh}") if workload == "ycsb-load" else knobs)
                runs[driver].append(k6(pg, workload, driver, clients, seconds, **extra))
        ref = statistics.median(m.us_per_op for m in runs["pgbench"])
        for driver, label in CLIENTS:
            us = [m.us_per_op for m in runs[driver]]
            table.add_row(name, label, f"{statistics.median(m.rate for m in runs[driver]):,.0f}",
                          f"{statistics.median(us):.1f}", f"{min(us):.1f}–{max(us):.1f}",
                          f"{statistics.median(us) / ref:.2f}")
    return table


def memory_table(pg: Postgres, vus_list: list[int], seconds: int) -> Table:
    table = Table(title="k6 memory: peak RSS with N VUs, each holding a pgx connection (sql-selects)")
    for col in ("VUs", "k6 peak RSS MB", "RSS / VUs KB", "KB per added VU"):
        table.add_column(col, justify="right")
    previous = None
    for vus in vus_list:
        console.log(f"memory: {vus} VUs")
        # All VUs connect at once: 2,400 SCRAM handshakes take PostgreSQL on
        # two cores past the default 10 s connect timeout.
        m = k6(pg, "sql-selects", "pgx", vus, seconds, KEY_PREFIX=PREFIX, MAX_WRITTEN_KEY=ROWS, DB_CONNECT_TIMEOUT=60)
        # The marginal cost is what sizing needs: RSS / VUs includes k6's own base.
        added = f"{(m.max_rss_kb - previous[1]) / (vus - previous[0]):,.0f}" if previous else "-"
        table.add_row(str(vus), f"{m.max_rss_kb / 1024:,.0f}", f"{m.max_rss_kb / vus:,.0f}", added)
        previous = (vus, m.max_rss_kb)
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=10, help="length of each run")
    ap.add_argument("--repeat", type=int, default=3, help="runs per client and workload, interleaved")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--memory-vus", default="400,2400", help="VU counts for the memory table ('' to skip)")
    ap.add_argument("--cases", help="comma-separated rows of the throughput table to run ('' for none; default all)")
    a = ap.parse_args()
    vus_list = [int(v) for v in a.memory_vus.split(",") if v]
    pg = Postgres.start(max_connections=max([200, *vus_list]) + 50)
    try:
        load_table(pg)
        load_ycsb(pg)
        only = None if a.cases is None else [c for c in a.cases.split(",") if c]
        if only != []:
            console.print(throughput_table(pg, a.clients, a.seconds, a.repeat, only))
        if vus_list:
            console.print(memory_table(pg, vus_list, min(a.seconds, 10)))
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
