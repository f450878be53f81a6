"""The database's side of contention, sampled while a run runs: once a
second, on each of the run's first nodes, how many of the database's
sessions wait on a lock (pg_stat_activity.wait_event_type = 'Lock') and
how many are active. PostgreSQL counts no lock waits over time, so a run
samples them itself; the limits analysis (analysis/limits.py) reads the
mean share of sessions waiting. YugabyteDB's YSQL resolves most conflicts
in DocDB rather than with PostgreSQL's locks: there transaction_conflicts
and 40001 retries show contention."""

from __future__ import annotations

import threading
import time

from ybbench.run import run_db

SAMPLE_S = 1.0
MAX_NODES = 8  # one connection a node: a 100-node cluster is sampled on its first 8
QUERY = ("SELECT count(*) FILTER (WHERE wait_event_type = 'Lock'), count(*) FILTER (WHERE state = 'active') "
         "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()")


class Sampler:
    def __init__(self, env: dict[str, str]):
        self.env = env
        self.nodes = [n for n in env.get("YSQL_NODES", "127.0.0.1:5433").split(",") if n][:MAX_NODES]
        self.samples: list[list[float]] = []
        self.not_visible: str | None = None
        self._conns = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _connect(self) -> None:
        import psycopg

        for node in self.nodes:
            try:
                conn = run_db.connect(self.env, node, "ybbench sessions", untracked=True)
            except (psycopg.Error, ValueError) as e:
                self.not_visible = f"pg_stat_activity on {node} not read: {str(e).strip().splitlines()[0][:200]}"
                return
            self._conns.append(conn)

    def _loop(self) -> None:
        # The password comes as k6's does: PGPASSWORD or PGPASSFILE in the environment (libpq).
        self._connect()
        while self._conns and not self._stop.wait(SAMPLE_S):
            waiting = active = 0
            try:
                for conn in self._conns:
                    w, a = conn.execute(QUERY).fetchone()
                    waiting, active = waiting + w, active + a
            except Exception as e:  # a node that went away mid-run: the samples so far stand
                self.not_visible = f"pg_stat_activity stopped answering: {str(e).strip().splitlines()[0][:200]}"
                break
            self.samples.append([round(time.time(), 3), waiting, active])

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join(timeout=15)
        for conn in self._conns:
            try:
                conn.close()
            except Exception:
                pass
        return {"nodes": self.nodes, "samples": self.samples, "not_visible": self.not_visible}
