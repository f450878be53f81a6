"""A throwaway PostgreSQL 15 cluster on 127.0.0.1, for the tests and
`ybbench demo`: initdb into a temporary folder as the `postgres` user,
password authentication, fsync off; stop() removes it all."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

PG_BIN = Path(os.environ.get("PG_BIN", "/usr/lib/postgresql/15/bin"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_checked(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    """Run a set-up command; on failure, say what it printed."""
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return p


@dataclass
class Postgres:
    """A throwaway PostgreSQL 15 cluster with password authentication."""

    port: int
    user: str
    password: str
    database: str
    datadir: Path
    log_dir: Path
    options: str = ""  # the server's -c settings, for a restart

    @classmethod
    def start(cls, max_connections: int = 200, durable: bool = False) -> "Postgres":
        """durable: commits wait for their WAL to reach the kernel, so a
        killed server loses no acknowledged commit (fsync stays off: the
        machine does not crash)."""
        # Its own folder under /tmp: the server runs as `postgres`, which
        # cannot enter pytest's root-only temporary folders.
        root = Path(tempfile.mkdtemp(prefix="ybbench-pg-"))
        shutil.chown(root, "postgres")
        pw_file = root / "pw"
        password = secrets.token_urlsafe(18)
        pw_file.write_text(password + "\n")
        shutil.chown(pw_file, "postgres")
        pw_file.chmod(0o600)
        pg = cls(free_port(), "ybbench", password, "ybbench", root / "data", root)
        run_checked(["runuser", "-u", "postgres", "--", str(PG_BIN / "initdb"), "-D", str(pg.datadir),
                     "-U", pg.user, "-A", "scram-sha-256", f"--pwfile={pw_file}", "--no-sync"])
        pw_file.unlink()
        pg.options = (f"-c listen_addresses=127.0.0.1 -c port={pg.port} -c unix_socket_directories={root} "
                      f"-c max_connections={max_connections} -c fsync=off"
                      # Statement counts by kind, which the tests' YugabyteDB stand-in serves as YSQL's.
                      " -c shared_preload_libraries=pg_stat_statements"
                      + ("" if durable else " -c synchronous_commit=off"))
        pg.serve()
        pg.psql("postgres", f"CREATE DATABASE {pg.database}")
        pg.psql(pg.database, "CREATE EXTENSION pg_stat_statements")
        return pg

    def serve(self) -> None:
        """Start (or restart) the server on its data folder."""
        log = self.log_dir / "postgres.log"
        try:
            run_checked(["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D", str(self.datadir), "-o",
                         self.options, "-l", str(log), "-w", "start"])
        except RuntimeError as e:  # pg_ctl says "examine the log": show it
            tail = log.read_text(errors="replace").splitlines()[-15:] if log.exists() else []
            raise RuntimeError("\n".join([str(e), f"{log}:", *tail])) from None

    def env(self, password: str | None = None) -> dict:
        """Environment for clients: the password travels in PGPASSWORD only."""
        return dict(os.environ, PGPASSWORD=self.password if password is None else password)

    def psql(self, database: str, sql: str) -> str:
        out = subprocess.run(
            ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port),
             "-U", self.user, "-d", database, "-c", sql],
            check=True, capture_output=True, text=True, env=self.env(),
        )
        return out.stdout.strip()

    def query(self, sql: str) -> str:
        return self.psql(self.database, sql)

    def stop(self) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(PG_BIN / "pg_ctl"), "-D", str(self.datadir), "-m", "immediate", "stop"],
            capture_output=True,
        )
        shutil.rmtree(self.log_dir, ignore_errors=True)
