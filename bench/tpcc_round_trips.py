"""Round trips a TPC-C transaction as the server counts them, for
bench/tpcc_client_cost.py: the statements pg_stat_statements saw complete
in a run, plus BEGIN and COMMIT (or ROLLBACK) from pg_stat_database's
transactions, as tests/native/test_tpcc_statements.py reads them.

pg_stat_statements counts BEGIN and COMMIT only the first times a
connection runs them as prepared statements, and not a statement that
failed; pg_stat_database counts every transaction, those of each new
session's start-up, of the run's setup (autocommit) and of this module's
own queries too, which are taken out. So:

  blocks (BEGIN seen)   round trips = statements + 2 x transactions
  autocommit            round trips = statements + rollbacks (each a call
                        that raised: the procedures' unused item)

What stays in the blocks' transactions beyond k6's: one a connection (its
first BEGIN's prepare commits on its own): 8 in a run of 8 VUs. Autovacuum's
workers commit too: the caller turns it off (autovacuum_off).
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass

# Transaction control, counted from pg_stat_database instead.
CONTROL = re.compile(r"^\s*(BEGIN|START TRANSACTION|COMMIT|END|ROLLBACK)\b", re.I)
# tpcc.js's setup (each statement a transaction of its own): its reachability
# check, its indexes and functions, its check of the warehouses, the districts.
SETUP = ("CREATE ", "SELECT $1 AS ok", "SELECT count(*)::float8", "SELECT d_w_id, d_id, d_next_o_id")
OWN = "pg_stat_"  # this module's queries read pg_stat_* views

_SNAPSHOT = (
    "SELECT json_build_object('calls', (SELECT coalesce(json_agg(json_build_array(query, calls)), '[]') "
    "FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()), "
    "'commits', xact_commit, 'rollbacks', xact_rollback, 'sessions', sessions) "
    "FROM pg_stat_database WHERE datname = current_database()")
_OTHERS = ("SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND "
           "(backend_type = 'autovacuum worker' OR (backend_type = 'client backend' AND datname = current_database()))")


@dataclass(frozen=True)
class Counts:
    calls: dict[str, int]  # pg_stat_statements' calls by text, whitespace folded
    commits: int
    rollbacks: int
    sessions: int


@dataclass(frozen=True)
class RoundTrips:
    statements: int  # the run's statements that completed (pg_stat_statements)
    transactions: int  # the server's, others taken out
    rollbacks: int
    blocks: bool  # BEGIN was seen: the transactions are BEGIN ... COMMIT blocks

    @property
    def total(self) -> int:
        return self.statements + (2 * self.transactions if self.blocks else self.rollbacks)


def kind(text: str) -> str:
    """control, setup, own or run."""
    if CONTROL.match(text):
        return "control"
    if OWN in text:
        return "own"
    return "setup" if text.lstrip().startswith(SETUP) else "run"


def parse(snapshot: str) -> Counts:
    s = json.loads(snapshot)
    calls: dict[str, int] = {}
    for text, n in s["calls"]:
        key = " ".join(text.split())
        calls[key] = calls.get(key, 0) + n  # the same text may have several entries (user, top level)
    return Counts(calls, s["commits"], s["rollbacks"], s["sessions"])


def round_trips(before: Counts, after: Counts, own: int) -> RoundTrips:
    """Between two snapshots: `own` is this module's transactions that fell
    between them (each of its sessions' start-up is in `sessions`)."""
    by = {"control": 0, "setup": 0, "own": 0, "run": 0}
    began = 0
    for text, n in after.calls.items():
        delta = n - before.calls.get(text, 0)
        by[kind(text)] += delta
        if kind(text) == "control" and text.upper().startswith(("BEGIN", "START")):
            began += delta
    others = (after.sessions - before.sessions) + by["setup"] + own
    xacts = (after.commits + after.rollbacks) - (before.commits + before.rollbacks)
    return RoundTrips(by["run"], xacts - others, after.rollbacks - before.rollbacks, began > 0)


class Counter:
    """Counts one run: start() before it, stop() after it."""

    def __init__(self, pg):
        self.pg = pg

    def _quiet(self) -> int:
        """Waits until no other session of the database (and no autovacuum
        worker) is left: their counts reach pg_stat_database as they exit.
        Returns the queries it made (each a transaction)."""
        for n in range(1, 1200):
            if self.pg.query(_OTHERS) == "0":
                return n
            time.sleep(0.1)
        raise TimeoutError("sessions of the database still open after 120 s")

    def start(self) -> None:
        self._quiet()
        self.before = parse(self.pg.query(_SNAPSHOT))

    def stop(self) -> RoundTrips:
        polls = self._quiet()
        # The first snapshot's transaction ends after it read the counts; the polls after it.
        return round_trips(self.before, parse(self.pg.query(_SNAPSHOT)), 1 + polls)


def autovacuum_off(pg) -> None:
    """Its workers' transactions would count as the run's: off, and those
    already running (the setting stops new ones only) waited for."""
    pg.query("ALTER SYSTEM SET autovacuum = off")
    pg.query("SELECT pg_reload_conf()")
    Counter(pg)._quiet()
