"""A connection to a run's database from the run's settings, as k6 makes
its own: YSQL_NODES' node, DB_USER, DB_NAME, DB_SSLMODE and the TLS files
(core/tls_files.py); the password from libpq's PGPASSWORD or PGPASSFILE.
For what ybbench itself reads beside a run (versions, lock waits, NOPM)."""

from __future__ import annotations

from ybbench.core import tls_files


def connect(env: dict[str, str], node: str, application_name: str, timeout: int = 10, untracked: bool = False,
            **extra):
    """An autocommit psycopg connection to node (host:port); untracked: our
    own statements kept out of the server's pg_stat_statements (a
    superuser's setting: tried, not required)."""
    import psycopg

    host, _, port = node.rpartition(":")
    conn = psycopg.connect(host=host or node, port=int(port or 5433), user=env.get("DB_USER", "yugabyte"),
                           dbname=env.get("DB_NAME", "yugabyte"), sslmode=env.get("DB_SSLMODE", "disable"),
                           **tls_files.psycopg_args(tls_files.from_env(env)), connect_timeout=timeout,
                           autocommit=True, application_name=application_name, **extra)
    if untracked:
        try:
            conn.execute("SET pg_stat_statements.track = 'none'")
        except psycopg.Error:
            pass
    return conn
