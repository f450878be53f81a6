"""What a run ran on, kept in its params.json as `versions` for the
history store (core/history_store.py): k6 and each of its extensions, as
`k6 version` lists them, and the database server's version, as the first
YSQL node answers `SELECT version()`. A part that cannot be read is left
out: versions are what is known, never a guess."""

from __future__ import annotations

import re
import subprocess

from ybbench.core.errors import UserError
from ybbench.run import k6_process, run_db

# The first word is the binary's own name ("k6-v2 v2.2.0 (go1.26.8, ...)"): any name a user gave it.
K6_LINE = re.compile(r"^\S+ (v\d+\.\d+\.\d+\S*) \(")
EXTENSION_LINE = re.compile(r"^\s+(\S+) (\S+), (k6/\S+) \[")


def k6_versions(k6: str) -> dict[str, str]:
    """{"k6": "v1.8.1", "k6/x/sql": "github.com/grafana/xk6-sql v1.0.5", ...}"""
    try:
        out = k6_process.version_text(k6)
    except (UserError, subprocess.TimeoutExpired):
        return {}
    found = {}
    for line in out.splitlines():
        if m := K6_LINE.match(line):
            found["k6"] = m.group(1)
        elif m := EXTENSION_LINE.match(line):
            found[m.group(3)] = f"{m.group(1)} {m.group(2)}"
    return found


def server_version(env: dict[str, str]) -> dict[str, str]:
    """{"server": "PostgreSQL 15.14 on ..."} from the run's first YSQL node,
    as the run's DB_USER and DB_NAME (libpq's PGPASSWORD or PGPASSFILE)."""
    import psycopg

    node = (env.get("YSQL_NODES") or "127.0.0.1:5433").split(",")[0].strip()  # the scripts' default
    if not node:
        return {}
    try:
        # utf8: psycopg reads SQL_ASCII text as bytes
        with run_db.connect(env, node, "ybbench versions", timeout=5, client_encoding="utf8") as conn:
            return {"server": conn.execute("SELECT version()").fetchone()[0]}
    except (psycopg.Error, ValueError):
        return {}


def versions(k6: str, env: dict[str, str]) -> dict[str, str]:
    return {**k6_versions(k6), **server_version(env)}
