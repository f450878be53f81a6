"""`make bench`'s pinned mode (bench/client_efficiency.py): the database
server on one set of cores and every client on the other, checked against
the kernel: each process's Cpus_allowed_list in /proc/<pid>/status."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psycopg
import pytest

from bench import client_efficiency as ce
from tests.support.stack import Postgres

CORES = os.sched_getaffinity(0)
# The child prints the cores the kernel lets it run on.
OWN = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('Cpus_allowed_list:')))"


def allowed(pid: int) -> str:
    return cpus_allowed(Path(f"/proc/{pid}/status").read_text())


def cpus_allowed(status: str) -> str:
    return next(line.split()[1] for line in status.splitlines() if line.startswith("Cpus_allowed_list:"))


def kernel_list(cpus: set[int]) -> str:
    """The kernel's way of writing a set of cores: ranges, 0-3,6."""
    out, run = [], []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def status(pid: int) -> str:
    """/proc/PID/status, or "" for a process that has ended since /proc was listed."""
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return ""


@pytest.fixture
def server():
    pg = Postgres.start()
    yield pg
    pg.stop()


@pytest.mark.skipif(len(CORES) < 2, reason="pinning needs two cores")
def test_the_server_and_the_clients_run_on_cores_of_their_own(server, monkeypatch):
    server_cpus, client_cpus = ce.split_cores(CORES)
    assert server_cpus and client_cpus and not server_cpus & client_cpus and server_cpus | client_cpus == CORES
    ce.pin_server(server, server_cpus)
    # Every server process, the postmaster named by its pid file first,
    # and a backend forked after the pinning.
    root = int((server.datadir / "postmaster.pid").read_text().split()[0])
    children = [pid for pid in map(int, (p.parent.name for p in Path("/proc").glob("[0-9]*/status")))
                if f"PPid:\t{root}\n" in status(pid)]
    assert len(children) >= 3, children  # checkpointer, background writer, WAL writer, ...
    with psycopg.connect(host="127.0.0.1", port=server.port, user=server.user, dbname=server.database,
                         password=server.password) as c:
        backend = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        # Those still there (an autovacuum worker can end between the two looks).
        now = {pid: st for pid in [root, *children, backend] if (st := status(pid))}
        assert {root, backend} <= set(now)
        assert {pid: cpus_allowed(st) for pid, st in now.items()} == {pid: kernel_list(server_cpus) for pid in now}
    # A client as the bench starts it: on the other cores.
    monkeypatch.setattr(ce, "CLIENT_CPUS", client_cpus)
    text, _, _ = ce.run_measured([sys.executable, "-c", OWN], env={"PATH": "/usr/bin:/bin"})
    assert text.strip() == kernel_list(client_cpus)
    # Shared again: every core, for both.
    ce.pin_server(server, CORES)
    assert allowed(root) == kernel_list(CORES)
    monkeypatch.setattr(ce, "CLIENT_CPUS", None)
    text, _, _ = ce.run_measured([sys.executable, "-c", OWN], env={"PATH": "/usr/bin:/bin"})
    assert text.strip() == kernel_list(CORES)


def test_the_cores_split_in_two_halves():
    assert ce.split_cores({0, 1}) == ({0}, {1})
    assert ce.split_cores({0, 1, 2, 3, 4}) == ({0, 1}, {2, 3, 4})
    assert kernel_list({0, 1, 2, 5}) == "0-2,5"
