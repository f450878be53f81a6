"""Client CPU per operation: k6 (lib/pq; pgx; pgx with our Go helpers;
our Go helpers module's own statement path, pgconn) next to pgbench, and
sysbench where one of its OLTP scripts runs the same kind of statement
(SYSBENCH_CASES), on one PostgreSQL, in one run; and k6's memory. A
benchmark, not a test: it prints tables (~85 minutes on 2 cores: 61 for the
pinned and shared tables, 20 for the memory-over-time runs).

    python3 -m bench.client_efficiency [--seconds 10] [--repeat 3] [--clients 16] [--memory-vus 400,2400]
                                       [--cases select,...] [--k6-clients plain,pgx,go-helpers,pgconn,loop10,loop100]
                                       [--no-sysbench] [--rss-minutes 10] [--rss-clients pgconn,plain]
                                       [--pinning auto|pinned|shared|both] [--no-go-ycsb]

Pinned (the default on two cores or more, `--pinning auto`): the database
server on one half of the machine's cores and every client (pgbench,
sysbench, k6) on the other, as a load generator is deployed on a machine of
its own, so that a client's CPU per operation holds none of the server's
wakeups; then the same table with everything sharing every core. The
sizing table comes from the pinned run. loop10 and loop100 are the pgconn
client with OPS_PER_ITERATION=10 and 100 (the inner loop in Go,
k6-scripts/lib/loop.js), on the workloads that have it. go-ycsb v1.0.3
runs beside our ycsb on YCSB A and C (bench/go_ycsb.py; "× go-ycsb").

For each workload, every client runs the same statements against the same
table for the same time with the same concurrency (kv-recent-read-heavy runs
kv-read-heavy's statements, sql-secondary-index sql-inserts' plus an index,
ycsb-analytic one scan per operation: they add no row here); a client's CPU (user +
system, from wait4 on its process) divided by the statements it completed
gives µs per operation, and 10^6 over that, ops/s per client core, from
which the sizing table is computed. pgbench -M prepared is the reference,
measured in the same run, and sysbench the second ("× sysbench"): its
statements counted from its `queries:` line and checked against the
server's pg_stat_statements after every run. Each client runs --repeat times, interleaved with
the others, and the table shows the median and the range: on a shared
2-core machine one run can be 15% off the next. Memory: k6's peak RSS with
N VUs each holding a connection; and k6's RSS over a --rss-minutes run at
full rate, at minute 2 and at the end, with its slope, with the Go
helpers' fixed-size latency summary and with k6's own (every sample kept).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy
from rich.console import Console
from rich.table import Table

from bench import go_ycsb
from bench.peak_rss import vm_hwm_kb
from tests.support.stack import BIN, PG_BIN, REPO, Postgres
from ybbench.run.k6_process import k6_env

ROWS = 200_000
PREFIX = "bench"
YCSB_RECORDS = 50_000
KV_PREFIX = "kvb"  # the large-dataset table: 50-byte keys, 256-byte values
KV_KEY = f"'{KV_PREFIX}:' || lpad(n::text, {50 - len(KV_PREFIX) - 1}, '0')"
YCSB_FIELDS = ", ".join(f"field{i}" for i in range(10))
console = Console(width=150)  # the tables unwrapped in logs and pipes


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


# The cores every client runs on (pinned mode), or None: any core.
CLIENT_CPUS: set[int] | None = None


def on_client_cpus() -> None:
    """In the client's process before it starts (preexec_fn): its cores;
    its threads and children inherit them."""
    if CLIENT_CPUS is not None:
        os.sched_setaffinity(0, CLIENT_CPUS)


def server_pids(pg: Postgres) -> list[int]:
    """The postmaster (postmaster.pid's first line) and its children: the
    backends, checkpointer, WAL writer, ..."""
    root = int((pg.datadir / "postmaster.pid").read_text().split()[0])
    pids = [root]
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            ppid = next(int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("PPid:"))
        except (OSError, StopIteration):
            continue  # exited meanwhile
        if ppid == root:
            pids.append(int(status.parent.name))
    return pids


def pin_server(pg: Postgres, cpus: set[int]) -> None:
    """The server on these cores: the postmaster, which every new backend
    inherits them from, and its children already running."""
    for pid in server_pids(pg):
        try:
            os.sched_setaffinity(pid, cpus)
        except ProcessLookupError:
            pass  # a backend that just exited


def split_cores(cores: set[int]) -> tuple[set[int], set[int]]:
    """The server's half and the clients' half (the larger, when odd)."""
    ordered = sorted(cores)
    half = len(ordered) // 2
    return set(ordered[:half]), set(ordered[half:])


def cpu_list(cpus: set[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def run_measured(cmd: list[str], env: dict, cwd: Path | None = None) -> tuple[str, float, int]:
    """Run a client to completion; its output, CPU seconds and peak RSS.
    The RSS is the client's own high-water mark (VmHWM), read every 0.1 s
    until it exits: wait4's ru_maxrss also holds this Python's, which the
    forked child had before its exec (a /bin/true reads as large as it)."""
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, text=True,
                                preexec_fn=on_client_cpus)
        hwm = 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            hwm = max(hwm, vm_hwm_kb(proc.pid))
            time.sleep(0.1)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read()
    if proc.returncode not in (0, 99):
        raise RuntimeError(f"{cmd[0]} failed ({proc.returncode}):\n{text[-2000:]}")
    return text, usage.ru_utime + usage.ru_stime, hwm or usage.ru_maxrss


def pgbench(pg: Postgres, script: str, clients: int, seconds: int) -> Measure:
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as f:
        f.write(script)
    cmd = [str(PG_BIN / "pgbench"), "-n", "-M", "prepared", "-c", str(clients), "-j", "2", "-T", str(seconds),
           "-h", "127.0.0.1", "-p", str(pg.port), "-U", pg.user, "-f", f.name, pg.database]
    text, cpu, rss = run_measured(cmd, pg.env())
    os.unlink(f.name)
    ops, length = pgbench_operations(text)
    return Measure(ops, length, cpu, rss)


def pgbench_operations(text: str) -> tuple[int, float]:
    """Transactions pgbench completed, and its load phase's length: the
    count over its tps, which excludes the initial connection time."""
    ops = int(re.search(r"number of transactions actually processed: (\d+)", text).group(1))
    tps = float(re.search(r"tps = ([\d.]+)", text).group(1))
    return ops, ops / tps


# sysbench (Debian's 1.0.20 with its pgsql driver) runs its own bundled OLTP
# scripts, on its own table (sbtest1: id integer primary key, k integer,
# c char(120), pad char(60); ROWS rows, no secondary index, as ours have
# none), with uniform ids like our keys (sysbench's default is a hot spot).
# Per case: (test, label, what its event sends); each event is one statement
# here, and no BEGIN or COMMIT (docs/client-efficiency.md).
SYSBENCH_CASES = {
    "select": ("oltp_point_select", "sysbench oltp_point_select (prepared)"),
    "insert": ("oltp_insert", "sysbench oltp_insert (simple query)"),
    "sql-updates": ("oltp_update_non_index", "sysbench oltp_update_non_index (prepared)"),
}
SYSBENCH_TABLE = "sbtest1"


def sysbench_command(pg: Postgres, test: str, command: str, clients: int = 1, seconds: int = 0,
                     table_size: int = ROWS, **options) -> list[str]:
    """sysbench's command line: `prepare` and `cleanup` (outside the
    measured part) or `run` (--threads clients for --time seconds, prepared
    statements where its script prepares them: --db-ps-mode=auto). The
    password goes in PGPASSWORD (pg.env()), which libpq reads."""
    cmd = ["sysbench", "--db-driver=pgsql", "--pgsql-host=127.0.0.1", f"--pgsql-port={pg.port}",
           f"--pgsql-user={pg.user}", f"--pgsql-db={pg.database}", "--tables=1", f"--table-size={table_size}",
           "--create_secondary=off", *(f"--{k}={v}" for k, v in options.items())]
    if command == "run":
        cmd += [f"--threads={clients}", f"--time={seconds}", "--rand-type=uniform", "--db-ps-mode=auto"]
    return cmd + [test, command]


def sysbench_prepare(pg: Postgres, test: str, **options) -> None:
    """Its table made anew and loaded by sysbench itself, then vacuumed and
    flushed, as ours are: none of it measured."""
    for command in ("cleanup", "prepare"):
        run_measured(sysbench_command(pg, test, command, **options), pg.env())
    pg.query(f"VACUUM ANALYZE {SYSBENCH_TABLE}")
    pg.query("CHECKPOINT")


def sysbench_cleanup(pg: Postgres, test: str) -> None:
    run_measured(sysbench_command(pg, test, "cleanup"), pg.env())


def sysbench(pg: Postgres, test: str, clients: int, seconds: int, **options) -> Measure:
    """One measured sysbench run; its statements, from its own output, must
    be the statements on its table that the server ran in the run
    (pg_stat_statements' calls, before and after; not reset, which would
    move other readers' counters back): a mismatch stops the bench."""
    before = sysbench_statements_at_server(pg)
    text, cpu, rss = run_measured(sysbench_command(pg, test, "run", clients, seconds, **options), pg.env())
    ops, length = sysbench_operations(text)
    server = sysbench_statements_at_server(pg) - before
    if server != ops:
        raise RuntimeError(f"sysbench {test}: {ops} queries in its output, {server} statements on "
                           f"{SYSBENCH_TABLE} at the server")
    return Measure(ops, length, cpu, rss)


def sysbench_statements_at_server(pg: Postgres) -> int:
    """Statements on sysbench's table that the server has run, by
    pg_stat_statements (prepared or not, each call counted at its end)."""
    return int(pg.query("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                        f"WHERE query ~ '\\m{SYSBENCH_TABLE}\\M' AND query !~* '^\\s*(vacuum|create|drop)'"))


def sysbench_operations(text: str) -> tuple[int, float]:
    """Statements sysbench ran, and its load phase's length: its `queries:`
    line (every statement it sent, BEGIN and COMMIT too where a script
    sends them; not `transactions:`, which counts events of possibly many
    statements), over that line's rate. Errors it skipped stop the bench."""
    m = re.search(r"^\s*queries:\s+(\d+)\s+\(([\d.]+) per sec\.\)", text, re.M)
    if m is None:
        raise RuntimeError(f"sysbench: no queries line in its output:\n{text[-2000:]}")
    ops, rate = int(m.group(1)), float(m.group(2))
    errors = re.search(r"^\s*ignored errors:\s+(\d+)", text, re.M)
    if errors is None or int(errors.group(1)) or not ops:
        raise RuntimeError(f"sysbench: {ops} queries, ignored errors: {errors and errors.group(1)}")
    return ops, ops / rate


# k6 clients: (name, label, environment). "plain" is what any k6 with the
# official extensions runs (Grafana Cloud k6); "pgx" adds our pgx driver
# module; "go-helpers" also our Go helpers (k6/x/ybbench); "pgconn" runs
# the statements on that module's own path too, without xk6-sql, as
# `ybbench run` and the compose k6 do. Side by side, pgx and go-helpers are
# the A/B of the Go helpers, go-helpers and pgconn that of the statement
# path.
K6_CLIENTS = {
    "plain": ("k6 + xk6-sql + lib/pq", {"DB_DRIVER": "postgres", "YBBENCH_GO_HELPERS": "0"}),
    "pgx": ("k6 + xk6-sql + pgx", {"DB_DRIVER": "pgx", "YBBENCH_GO_HELPERS": "0"}),
    "go-helpers": ("k6 + xk6-sql + pgx + ybbench helpers", {"DB_DRIVER": "pgx", "YBBENCH_GO_HELPERS": "1"}),
    "pgconn": ("k6 + k6/x/ybbench (pgconn + helpers)", {"DB_DRIVER": "pgconn", "YBBENCH_GO_HELPERS": "1"}),
    # The inner loop in Go (OPS_PER_ITERATION, k6-scripts/lib/loop.js).
    "loop10": ("k6 + k6/x/ybbench, 10 ops per iteration",
               {"DB_DRIVER": "pgconn", "YBBENCH_GO_HELPERS": "1", "OPS_PER_ITERATION": "10"}),
    "loop100": ("k6 + k6/x/ybbench, 100 ops per iteration",
                {"DB_DRIVER": "pgconn", "YBBENCH_GO_HELPERS": "1", "OPS_PER_ITERATION": "100"}),
}
# The workloads with the inner loop; the loop clients skip the others.
LOOPED = {"sql-inserts", "sql-selects", "sql-updates", "ycsb"}  # ycsb: ycsb-a and ycsb-c, beside go-ycsb


def k6_command(pg: Postgres, workload: str, client: str, clients: int, seconds: int, summary: Path,
               **knobs) -> tuple[list[str], dict]:
    env = k6_env(pg.env())  # as `ybbench run` runs k6
    env.update(K6_CLIENTS[client][1])
    env.update(YSQL_NODES=f"127.0.0.1:{pg.port}", DB_USER=pg.user, DB_NAME=pg.database,
               VUS=str(clients), DURATION=f"{seconds}s", **{k: str(v) for k, v in knobs.items()})
    return [str(BIN / "k6"), "run", "--quiet", "--no-color", "--summary-export", str(summary),
            str(REPO / "k6-scripts" / f"{workload}.js")], env


def operations(metrics: dict, what: str) -> tuple[int, float]:
    """Statements run, and the run's length: only iterations tagged with an
    op count (an iteration that threw before its statement has none), and
    SQL errors stop the benchmark."""
    # Not idle iterations, nor the inner loop's own (each of N statements counted in its op).
    ops = sum(v["count"] for k, v in metrics.items()
              if k.startswith("iterations{op:") and k not in ("iterations{op:idle}", "iterations{op:loop}"))
    errors = metrics.get("ybbench_errors", {}).get("count", 0)
    if errors or not ops:
        by_class = {k: v["count"] for k, v in metrics.items() if k.startswith("ybbench_errors{") and v.get("count")}
        raise RuntimeError(f"{what}: {ops} statements, {errors} SQL errors {by_class}")
    return ops, metrics["iterations"]["count"] / metrics["iterations"]["rate"]


def fresh_name(client: str, round_: int) -> str:
    """A key prefix or table suffix no earlier run used: a SQL name (the
    scripts' TABLE takes lower-case letters, digits and _ only)."""
    return f"k6{client.replace('-', '_')}{round_}{int(time.time())}"


def k6(pg: Postgres, workload: str, client: str, clients: int, seconds: int, **knobs) -> Measure:
    with tempfile.TemporaryDirectory() as d:
        summary = Path(d) / "summary.json"
        cmd, env = k6_command(pg, workload, client, clients, seconds, summary, **knobs)
        _, cpu, rss = run_measured(cmd, env)
        metrics = json.loads(summary.read_text())["metrics"]
    ops, length = operations(metrics, f"{workload} with {K6_CLIENTS[client][0]}, {clients} VUs")
    return Measure(ops, length, cpu, rss)


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
    k6(pg, "ycsb-load", "pgconn", 16, 600, RECORD_COUNT=YCSB_RECORDS)
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


# (client, label); "pgbench" is the reference, the others K6_CLIENTS.
CLIENTS = (("pgbench", "pgbench -M prepared"), *((c, label) for c, (label, _) in K6_CLIENTS.items()))


def throughput_table(pg: Postgres, clients: int, seconds: int, repeat: int, only: list[str] | None,
                     k6_clients: list[str], per_core: dict[tuple[str, str], float],
                     use_sysbench: bool = True, where: str = "", use_go_ycsb: bool = False) -> Table:
    """The table; per_core gets each (workload, client)'s median ops/s per
    client core. use_sysbench: the sysbench case next to pgbench where a
    workload has one (SYSBENCH_CASES)."""
    chosen = [(c, label) for c, label in CLIENTS if c == "pgbench" or c in k6_clients]
    table = Table(title=f"Client efficiency: PostgreSQL 15 on loopback, {clients} clients, "
                        f"{repeat} runs of {seconds} s per client, interleaved (median, min–max){where}")
    # ops/s per client core = 10^6 / µs per op: what one core of this client
    # sustains; docs/client-efficiency.md's sizing is computed from it.
    for col in ("workload", "client", "ops/s", "client CPU µs/op", "min–max", "× pgbench", "× sysbench",
                "× go-ycsb", "ops/s per client core"):
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
    todo = [(name, case) for name, case in cases.items() if only is None or name in only]
    rounds = Rounds(clients, seconds, repeat, chosen, use_sysbench, use_go_ycsb)
    try:
        for name, case in todo:
            case_rows(pg, table, name, case, rounds, per_core)
    except BaseException as e:
        # The rows done are ~2.5 minutes each: print them before stopping.
        table.caption = f"stopped at {name}: {type(e).__name__}: {str(e)[-500:]}"
        console.print(table)
        if per_core:
            console.print(sizing_table(per_core))
        raise
    return table


@dataclass
class Rounds:
    """How every case runs: clients each, seconds a run, repeat runs per
    client; the (client, label)s chosen; sysbench beside pgbench or not."""
    clients: int
    seconds: int
    repeat: int
    chosen: list[tuple[str, str]]
    use_sysbench: bool
    use_go_ycsb: bool = False


def case_rows(pg: Postgres, table: Table, name: str, case: tuple, rounds: Rounds, per_core: dict) -> None:
    """One workload's rows: every client's runs, interleaved."""
    script, workload, knobs = case
    clients, seconds, repeat, chosen = rounds.clients, rounds.seconds, rounds.repeat, rounds.chosen
    # sysbench's case, if it has one, next to pgbench: its table made by
    # sysbench itself before the rounds, dropped after them.
    sb = SYSBENCH_CASES.get(name) if rounds.use_sysbench else None
    gy = rounds.use_go_ycsb and name in go_ycsb.MIXES
    case_clients = chosen[:1] + ([("sysbench", sb[1])] if sb else []) + \
        ([("go-ycsb", "go-ycsb v1.0.3 (lib/pq)")] if gy else []) + \
        [(c, label) for c, label in chosen[1:] if "OPS_PER_ITERATION" not in K6_CLIENTS[c][1] or workload in LOOPED]
    if sb:
        console.log(f"{name}: sysbench {sb[0]} prepare ({ROWS:,} rows)")
        sysbench_prepare(pg, sb[0])
    pg.query("CHECKPOINT")  # the last case's writes are not flushed during this one
    runs: dict[str, list[Measure]] = {client: [] for client, _ in case_clients}
    # Interleaved, so that a slow spell of the machine hits every client.
    for r in range(repeat):
        for client, label in case_clients:
            console.log(f"{name}: {label} ({r + 1}/{repeat})")
            if client == "pgbench":
                runs[client].append(pgbench(pg, script, clients, seconds))
                continue
            if client == "sysbench":
                runs[client].append(sysbench(pg, sb[0], clients, seconds))
                continue
            if client == "go-ycsb":
                runs[client].append(Measure(*go_ycsb.run(pg, name, YCSB_RECORDS, clients, seconds, on_client_cpus)))
                continue
            fresh = fresh_name(client, r)
            extra = (dict(knobs, KEY_PREFIX=fresh) if workload in ("sql-inserts", "kv-load")
                     else dict(knobs, TABLE=f"usertable_{fresh}") if workload == "ycsb-load" else knobs)
            runs[client].append(k6(pg, workload, client, clients, seconds, **extra))
    if sb:
        sysbench_cleanup(pg, sb[0])
    ref = statistics.median(m.us_per_op for m in runs["pgbench"])
    sb_ref = statistics.median(m.us_per_op for m in runs["sysbench"]) if sb else None
    gy_ref = statistics.median(m.us_per_op for m in runs["go-ycsb"]) if gy else None
    for client, label in case_clients:
        us = [m.us_per_op for m in runs[client]]
        table.add_row(name, label, f"{statistics.median(m.rate for m in runs[client]):,.0f}",
                      f"{statistics.median(us):.1f}", f"{min(us):.1f}–{max(us):.1f}",
                      f"{statistics.median(us) / ref:.2f}",
                      f"{statistics.median(us) / sb_ref:.2f}" if sb_ref else "–",
                      f"{statistics.median(us) / gy_ref:.2f}" if gy_ref else "–",
                      f"{1e6 / statistics.median(us):,.0f}")
        per_core[name, client] = 1e6 / statistics.median(us)


# Seed 000's headline rates (100 nodes; experiments/seed-000-ysql-100-nodes.yaml).
SEED_000 = {"insert": 1_260_000, "select": 2_800_000}
BUSY = 0.7  # keep a generator's k6 under 70% CPU: a saturated client hides latency


def sizing_table(per_core: dict[tuple[str, str], float]) -> Table:
    """Client cores from the ops/s per client core column: per 100K ops/s,
    and for seed 000's rates, at 100% and at 70% busy."""
    table = Table(title="Sizing from the ops/s per client core column: k6 cores needed "
                        f"(at 100% busy, and at {BUSY:.0%})")
    for col in ("workload", "client", "ops/s per core", "cores per 100K ops/s", f"at {BUSY:.0%}",
                "seed 000 rate", "cores for it", f"at {BUSY:.0%} "):
        table.add_column(col, justify="left" if col in ("workload", "client") else "right")
    for (name, client), rate in per_core.items():
        if client not in K6_CLIENTS:  # pgbench, sysbench: references, not sized
            continue
        seed = SEED_000.get(name)
        table.add_row(name, K6_CLIENTS[client][0], f"{rate:,.0f}", f"{1e5 / rate:.1f}", f"{1e5 / rate / BUSY:.1f}",
                      f"{seed:,}" if seed else "", f"{seed / rate:.0f}" if seed else "",
                      f"{seed / rate / BUSY:.0f}" if seed else "")
    return table


def memory_table(pg: Postgres, vus_list: list[int], seconds: int) -> Table:
    table = Table(title="k6 memory: peak RSS with N VUs, each holding a connection (sql-selects, pgconn)")
    for col in ("VUs", "k6 peak RSS MB", "RSS / VUs KB", "KB per added VU"):
        table.add_column(col, justify="right")
    previous = None
    for vus in vus_list:
        console.log(f"memory: {vus} VUs")
        # All VUs connect at once: 2,400 SCRAM handshakes take PostgreSQL on
        # two cores past the default 10 s connect timeout.
        m = k6(pg, "sql-selects", "pgconn", vus, seconds, KEY_PREFIX=PREFIX, MAX_WRITTEN_KEY=ROWS, DB_CONNECT_TIMEOUT=60)
        # The marginal cost is what sizing needs: RSS / VUs includes k6's own base.
        added = f"{(m.max_rss_kb - previous[1]) / (vus - previous[0]):,.0f}" if previous else "-"
        table.add_row(str(vus), f"{m.max_rss_kb / 1024:,.0f}", f"{m.max_rss_kb / vus:,.0f}", added)
        previous = (vus, m.max_rss_kb)
    return table


def rss_over_time(pg: Postgres, client: str, minutes: float, clients: int) -> dict:
    """One sql-selects run of `minutes` at full rate (closed model), k6's RSS
    read from /proc every 5 s."""
    with tempfile.TemporaryDirectory() as d:
        summary = Path(d) / "summary.json"
        cmd, env = k6_command(pg, "sql-selects", client, clients, int(minutes * 60), summary,
                              KEY_PREFIX=PREFIX, MAX_WRITTEN_KEY=ROWS, SUMMARY_JSON=Path(d) / "digest.json")
        samples: list[tuple[float, float]] = []
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True,
                                    preexec_fn=on_client_cpus)
            start = time.monotonic()
            while proc.poll() is None:
                time.sleep(5)
                try:
                    with open(f"/proc/{proc.pid}/status") as f:
                        kb = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
                except (OSError, StopIteration):
                    break  # exited between poll() and the read
                samples.append((time.monotonic() - start, kb / 1024))
            if proc.wait() not in (0, 99):
                out.seek(0)
                raise RuntimeError(f"sql-selects with {K6_CLIENTS[client][0]} failed:\n{out.read()[-2000:]}")
        ops, length = operations(json.loads(summary.read_text())["metrics"], f"RSS run with {K6_CLIENTS[client][0]}")
        source = json.loads((Path(d) / "digest.json").read_text())["latency_source"].split(":")[0]
    # The samples of the load (setup and teardown excluded), from minute 2.
    load = [(t, mb) for t, mb in samples if 120 <= t <= minutes * 60]
    t, mb = numpy.array(load).T
    slope = numpy.polyfit(t / 60, mb, 1)[0]
    return {"rate": ops / length, "at2": float(mb[0]), "end": float(mb[-1]), "slope": float(slope), "source": source}


def rss_table(pg: Postgres, k6_clients: list[str], minutes: float, clients: int) -> Table:
    table = Table(title=f"k6 memory over a {minutes:g}-minute run at full rate: sql-selects, {clients} VUs "
                        "(RSS every 5 s; slope by least squares from minute 2)")
    for col in ("client", "ops/s", "RSS at 2 min MB", "RSS at end MB", "end / 2 min", "slope MB/min",
                "summary latency from"):
        table.add_column(col, justify="left" if col in ("client", "summary latency from") else "right")
    for client in k6_clients:
        console.log(f"memory over time: {K6_CLIENTS[client][0]}, {minutes:g} min")
        m = rss_over_time(pg, client, minutes, clients)
        table.add_row(K6_CLIENTS[client][0], f"{m['rate']:,.0f}", f"{m['at2']:,.0f}", f"{m['end']:,.0f}",
                      f"{m['end'] / m['at2']:.2f}", f"{m['slope']:+.1f}", m["source"])
    return table


def positive(text: str) -> int:
    """A count that must be at least 1 (k6 refuses 0 VUs, a 0 s run measures nothing)."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"{n}: must be 1 or more")
    return n


def positive_list(text: str) -> list[int]:
    """Comma-separated counts, each at least 1; '' for none."""
    return [positive(v.strip()) for v in text.split(",") if v.strip()]


def not_negative(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not x >= 0:  # also NaN
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more")
    return x


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=positive, default=10, help="length of each run")
    ap.add_argument("--repeat", type=positive, default=3, help="runs per client and workload, interleaved")
    ap.add_argument("--clients", type=positive, default=16)
    ap.add_argument("--memory-vus", type=positive_list, default="400,2400",
                    help="VU counts for the memory table ('' to skip)")
    ap.add_argument("--cases", help="comma-separated rows of the throughput table to run ('' for none; default all)")
    ap.add_argument("--k6-clients", default=",".join(K6_CLIENTS),
                    help=f"k6 clients of the throughput table, of {', '.join(K6_CLIENTS)}")
    ap.add_argument("--no-sysbench", action="store_true", help="leave out the sysbench cases (SYSBENCH_CASES)")
    ap.add_argument("--rss-minutes", type=not_negative, default=10, help="length of the memory-over-time runs (0 to skip)")
    ap.add_argument("--rss-clients", default="pgconn,plain", help="k6 clients of the memory-over-time runs")
    ap.add_argument("--no-go-ycsb", action="store_true", help="leave out go-ycsb beside ycsb-a and ycsb-c")
    ap.add_argument("--pinning", choices=("auto", "pinned", "shared", "both"), default="auto",
                    help="pinned: server and clients on cores of their own; shared: all on every core; "
                         "both (auto's choice on 2 cores or more): pinned, then shared")
    a = ap.parse_args()
    vus_list = a.memory_vus
    k6_clients, rss_clients = ([c for c in v.split(",") if c] for v in (a.k6_clients, a.rss_clients))
    for c in k6_clients + rss_clients:
        if c not in K6_CLIENTS:
            ap.error(f"unknown k6 client {c!r}: one of {', '.join(K6_CLIENTS)}")
    only = None if a.cases is None else [c for c in a.cases.split(",") if c]
    if not a.no_sysbench and shutil.which("sysbench") is None:
        ap.error("sysbench is not installed: `make deps` (native/install-deps.sh) installs it, or --no-sysbench")
    ycsb = only is None or any(c.startswith("ycsb") for c in only)
    if ycsb and not a.no_go_ycsb and not go_ycsb.GO_YCSB.exists():
        ap.error(f"no {go_ycsb.GO_YCSB}: YBBENCH_BENCH=1 native/build.sh builds it (make bench does), or --no-go-ycsb")
    cores = os.sched_getaffinity(0)
    modes = {"auto": ("pinned", "shared") if len(cores) >= 2 else ("shared",), "both": ("pinned", "shared")}.get(
        a.pinning, (a.pinning,))
    if "pinned" in modes and len(cores) < 2:
        ap.error(f"--pinning {a.pinning}: this process may use {len(cores)} core; pinning needs two")
    server_cpus, client_cpus = split_cores(cores)
    pg = Postgres.start(max_connections=max([200, *vus_list]) + 50)
    global CLIENT_CPUS
    try:
        load_table(pg)
        if ycsb:
            load_ycsb(pg)
            if not a.no_go_ycsb:
                go_ycsb.load(pg, YCSB_RECORDS, a.clients)
        for mode in modes if only != [] else ():
            pinned = mode == "pinned"
            pin_server(pg, server_cpus if pinned else cores)
            CLIENT_CPUS = client_cpus if pinned else None
            where = (f"; pinned: server on CPU {cpu_list(server_cpus)}, clients on CPU {cpu_list(client_cpus)}"
                     if pinned else f"; shared: server and clients on CPU {cpu_list(cores)}")
            per_core: dict[tuple[str, str], float] = {}
            console.print(throughput_table(pg, a.clients, a.seconds, a.repeat, only, k6_clients, per_core,
                                           use_sysbench=not a.no_sysbench, where=where,
                                           use_go_ycsb=ycsb and not a.no_go_ycsb))
            if mode == modes[0]:  # the sizing from the first: pinned where it ran
                console.print(sizing_table(per_core))
        pin_server(pg, cores)
        CLIENT_CPUS = None
        if vus_list:
            console.print(memory_table(pg, vus_list, min(a.seconds, 10)))
        if a.rss_minutes > 0 and rss_clients:
            console.print(rss_table(pg, rss_clients, a.rss_minutes, a.clients))
    finally:
        pg.stop()


if __name__ == "__main__":
    main()
