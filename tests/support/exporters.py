"""postgres_exporter (Debian's prometheus-postgres-exporter) for the
PostgreSQL baseline panels, on 127.0.0.1 with the password in its
environment only."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .stack import Postgres, Process, free_port

POSTGRES_EXPORTER = os.environ.get("POSTGRES_EXPORTER", "/usr/bin/prometheus-postgres-exporter")


def start_postgres_exporter(pg: Postgres, log_dir: Path) -> tuple[Process, str]:
    if not shutil.which(POSTGRES_EXPORTER):
        raise RuntimeError(f"{POSTGRES_EXPORTER} is missing: run native/install-deps.sh")
    port = free_port()
    env = dict(
        os.environ,
        DATA_SOURCE_URI=f"127.0.0.1:{pg.port}/{pg.database}?sslmode=disable",
        DATA_SOURCE_USER=pg.user,
        DATA_SOURCE_PASS=pg.password,
    )
    proc = Process("postgres_exporter", [POSTGRES_EXPORTER, f"--web.listen-address=127.0.0.1:{port}"], log_dir, env=env)
    return proc, f"127.0.0.1:{port}"
