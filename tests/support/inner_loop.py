"""The inner loop's knobs (OPS_PER_ITERATION) and the server's counters the
inner-loop tests read their expected values from (pg_stat_user_tables,
pg_stat_statements), and k6's own count of its loops."""

from __future__ import annotations

import re

from .stack import wait_until

N = 10
LOOP = {"OPS_PER_ITERATION": N, "DB_DRIVER": "pgconn"}
UNACKED = re.compile(r"ybbench-unacked first=(\d+) rows=(\d+)")


def stat(pg, table: str, column: str) -> int:
    return int(pg.query(f"SELECT coalesce({column}, 0) FROM pg_stat_user_tables WHERE relname = '{table}'") or 0)


def settled(pg, table: str, column: str, want: int) -> int:
    """The server's counter once its backends flushed it (at their exit,
    just after k6's): the wanted value, or what it shows after 10 s."""
    try:
        return wait_until(lambda: stat(pg, table, column) == want and want, f"{column} = {want}", 10) and want
    except TimeoutError:
        return stat(pg, table, column)


def calls(pg, statement: str) -> int:
    """The server's count of executions of a statement (pg_stat_statements,
    which the test PostgreSQL preloads)."""
    pg.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    return int(pg.query("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements "
                        f"WHERE query = '{statement}'") or 0)


def loops(run) -> int:
    """k6's own count of its complete iterations of the loop."""
    return int(run.metric("iterations{op:loop}").get("count", 0))


def unacked(run) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in UNACKED.findall((run.folder / "k6.log").read_text())]
