"""go-ycsb (v1.0.3, its PostgreSQL driver: lib/pq under database/sql, each
statement prepared per connection) beside our ycsb workload in `make
bench`: the same records, fields, threads and request distribution, on its
own table (its schema: YCSB_KEY and FIELD0..9 varchar), which it loads
itself outside the measured part. native/build.sh builds its command with
YBBENCH_BENCH=1 (native/go-ycsb/go.mod). Its statements are counted from
its own output and checked against the server's pg_stat_statements, as
sysbench's are."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from bench.peak_rss import vm_hwm_kb
from tests.support.stack import BIN, Postgres

GO_YCSB = BIN / "go-ycsb"
TABLE = "usertable_goycsb"
# YCSB's core workloads a and c as our ycsb workload runs them in the bench:
# uniform keys, every field read, one field updated.
MIXES = {"ycsb-a": {"readproportion": 0.5, "updateproportion": 0.5}, "ycsb-c": {"readproportion": 1, "updateproportion": 0}}


def properties(pg: Postgres, records: int, clients: int, mix: dict, **extra) -> Path:
    """A properties file (mode 0600: it holds the password, which go-ycsb
    takes only as a property)."""
    props = {"pg.host": "127.0.0.1", "pg.port": pg.port, "pg.user": pg.user, "pg.password": pg.password,
             "pg.db": pg.database, "pg.sslmode": "disable", "table": TABLE, "workload": "core",
             "recordcount": records, "operationcount": 10**9, "fieldcount": 10, "fieldlength": 100,
             "threadcount": clients, "requestdistribution": "uniform", "readallfields": "true",
             "scanproportion": 0, "insertproportion": 0, **mix, **extra}
    fd, name = tempfile.mkstemp(suffix=".properties")
    with os.fdopen(fd, "w") as f:
        f.writelines(f"{k}={v}\n" for k, v in props.items())
    return Path(name)


def load(pg: Postgres, records: int, clients: int) -> None:
    """Its table made anew and loaded by go-ycsb itself, then vacuumed."""
    p = properties(pg, records, clients, MIXES["ycsb-c"], dropdata="true", operationcount=records)
    try:
        out = subprocess.run([str(GO_YCSB), "load", "postgresql", "-P", str(p)], capture_output=True, text=True,
                             timeout=1800)
    finally:
        p.unlink()
    loaded = int(pg.query(f"SELECT count(*) FROM {TABLE}"))
    if out.returncode != 0 or loaded != records:
        text = (out.stdout + out.stderr).replace(pg.password, "<password>")
        raise RuntimeError(f"go-ycsb load: exit {out.returncode}, {loaded} of {records} rows:\n{text[-2000:]}")
    pg.query(f"VACUUM ANALYZE {TABLE}")


def statements_at_server(pg: Postgres) -> int:
    return int(pg.query("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                        f"WHERE query ~* '\\m{TABLE}\\M' AND query ~* '^\\s*(select|update)'"))


def operations(text: str) -> int:
    """Its statements: the Count of each READ and UPDATE line of its final
    report (not TOTAL, their sum where it prints one)."""
    tail = text.split("Run finished", 1)[-1]
    counts = [int(m.group(2)) for m in re.finditer(r"^(READ|UPDATE)\s.*?Count: (\d+)", tail, re.M)]
    if not counts:
        raise RuntimeError(f"go-ycsb: no READ or UPDATE count in its output:\n{text[-2000:]}")
    return sum(counts)


def length(text: str) -> float:
    """Its own run length, `Run finished, takes 2.898083169s` (a Go
    duration: 1m2.5s, 950.1ms)."""
    m = re.search(r"Run finished, takes ((?:[\d.]+(?:ms|µs|us|ns|h|m|s))+)", text)
    if m is None:
        raise RuntimeError(f"go-ycsb: no `Run finished` line in its output:\n{text[-2000:]}")
    unit = {"h": 3600, "m": 60, "s": 1, "ms": 1e-3, "µs": 1e-6, "us": 1e-6, "ns": 1e-9}
    return sum(float(n) * unit[u] for n, u in re.findall(r"([\d.]+)(ms|µs|us|ns|h|m|s)", m.group(1)))


def run(pg: Postgres, case: str, records: int, clients: int, seconds: int, preexec_fn=None):
    """One measured run: go-ycsb's transaction phase, stopped with SIGINT
    after `seconds` (its maxexecutiontime is not honoured), which it answers
    with its final report. (statements, seconds, CPU seconds, peak RSS KB);
    its statements must be those the server ran on its table."""
    p = properties(pg, records, clients, MIXES[case])
    before = statements_at_server(pg)
    try:
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen([str(GO_YCSB), "run", "postgresql", "-P", str(p)], stdout=out,
                                    stderr=subprocess.STDOUT, text=True, preexec_fn=preexec_fn)
            # Peak RSS from its own VmHWM (bench/peak_rss.py says why not wait4's).
            hwm, stop_at, signalled = 0, time.monotonic() + seconds, False
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                hwm = max(hwm, vm_hwm_kb(proc.pid))
                if not signalled and time.monotonic() >= stop_at:
                    proc.send_signal(signal.SIGINT)
                    signalled = True
                time.sleep(0.1)
            out.seek(0)
            # It prints its properties, the password among them.
            text = out.read().replace(pg.password, "<password>")
    finally:
        p.unlink()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"go-ycsb run: exit {os.waitstatus_to_exitcode(status)}:\n{text[-2000:]}")
    ops = operations(text)
    server = statements_at_server(pg) - before
    if server != ops:
        raise RuntimeError(f"go-ycsb {case}: {ops} operations in its output, {server} statements on {TABLE} at the server")
    return ops, length(text), usage.ru_utime + usage.ru_stime, hwm or usage.ru_maxrss
