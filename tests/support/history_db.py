"""A history store's database on the test PostgreSQL with Grafana's
read-only user made by compose's own script
(compose/history-db/grafana-reader.sql), as the stack's history-db makes it
at its first start."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

from .stack import REPO

READER_SQL = REPO / "compose" / "history-db" / "grafana-reader.sql"


def run_reader_sql(postgres, db: str, reader: str, password_file: Path) -> subprocess.CompletedProcess:
    """compose's script on `db`, as its owner, the password read from `password_file`."""
    return subprocess.run(["psql", "-X", "-v", "ON_ERROR_STOP=1", "-v", f"reader={reader}", "-h", "127.0.0.1", "-p",
                           str(postgres.port), "-U", postgres.user, "-d", db, "-f", str(READER_SQL)],
                          env=postgres.env() | {"HISTORY_READER_PASSWORD_FILE": str(password_file)},
                          capture_output=True, text=True)


def new_store_database(postgres, tmp: Path) -> dict:
    """A fresh database and its reader: {db, reader, password}."""
    rid = uuid.uuid4().hex[:8]
    db, reader = f"store_{rid}", f"reader_{rid}"
    postgres.psql("postgres", f"CREATE DATABASE {db}")
    secret = tmp / f"reader_password_{rid}"
    secret.write_text("pw-" + uuid.uuid4().hex)
    secret.chmod(0o600)
    p = run_reader_sql(postgres, db, reader, secret)
    assert p.returncode == 0, p.stderr
    assert secret.read_text() not in p.stdout + p.stderr
    return {"db": db, "reader": reader, "password": secret.read_text()}
