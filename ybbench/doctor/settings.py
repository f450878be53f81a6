"""What doctor checks against: the knobs and defaults of `ybbench run`
(YSQL_NODES and the DB_* knobs through --set, DB_SSLROOTCERT's file
checked as run checks it, --prometheus, --loki and their YBBENCH_*
variables), Grafana, whose password is read from a
file, never from the command line, and the history store (--history,
YBBENCH_HISTORY)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ybbench.core import tls_files, visibility
from ybbench.core.catalog import REPO, parse_settings
from ybbench.core.errors import UserError
from ybbench.core.history_store import location

# Where compose mounts the secrets volume into the ybbench service. The
# file is grafana's own (uid 472, mode 600): the service's entrypoint
# copies it for the user who runs ybbench and names the copy in
# YBBENCH_GRAFANA_PASSWORD_FILE (compose/ybbench/entrypoint.sh).
GRAFANA_PASSWORD_FILE = "/run/secrets/ybbench/grafana_admin_password"
PASSWORD_FILE_VAR = "YBBENCH_GRAFANA_PASSWORD_FILE"


def default_password_file() -> str:
    return os.environ.get(PASSWORD_FILE_VAR) or GRAFANA_PASSWORD_FILE


@dataclass
class Settings:
    nodes: list[tuple[str, int]]
    user: str = "yugabyte"
    database: str = "yugabyte"
    sslmode: str = "disable"
    # DB_SSLROOTCERT, DB_SSLCERT, DB_SSLKEY as libpq names them, absolute (core/tls_files.py)
    tls: dict[str, str] = field(default_factory=dict)
    connect_timeout_s: int = 10
    prometheus: str | None = None
    loki: str | None = None
    grafana: str | None = None
    grafana_user: str = "admin"
    grafana_password: str | None = field(default=None, repr=False)
    k6: str | None = None  # the k6 `ybbench run` would use; None: not found
    loki_deadline_s: float = 60.0
    compose_env: Path = REPO / "compose" / ".env"  # the memory limits the room check compares with
    # The store runs are recorded in (--history, else $YBBENCH_HISTORY, else results/history.sqlite):
    # Grafana's History dashboard reads it when it is PostgreSQL.
    history: str = str(REPO / "results" / "history.sqlite")


def parse_nodes(value: str) -> list[tuple[str, int]]:
    """YSQL_NODES as the scripts read it: host:port,host:port,..."""
    nodes = []
    for part in value.split(","):
        host, colon, port = part.strip().rpartition(":")
        if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UserError(f"YSQL_NODES {value!r}: expected host:port,host:port,... ({part!r} is not host:port)")
        nodes.append((host, int(port)))
    return nodes


def read_password(path: str) -> str:
    try:
        return Path(path).read_text().rstrip("\n")
    except OSError as e:
        raise UserError(f"--grafana-password-file {path}: cannot read it ({e.strerror}); Grafana's admin "
                        "password is read from a file (compose writes it to the secrets volume)") from None


def from_args(settings: list[str], prometheus: str | None, loki: str | None, grafana: str | None,
              grafana_password_file: str, grafana_user: str = "admin", compose_env: str | None = None,
              history: str | None = None) -> Settings:
    knobs = parse_settings(list(settings))
    s = Settings(nodes=parse_nodes(knobs.get("YSQL_NODES", os.environ.get("YSQL_NODES", "127.0.0.1:5433"))),
                 prometheus=prometheus, loki=loki, grafana=grafana, grafana_user=grafana_user)
    for attr, knob in (("user", "DB_USER"), ("database", "DB_NAME"), ("sslmode", "DB_SSLMODE")):
        setattr(s, attr, knobs.get(knob, os.environ.get(knob, getattr(s, attr))))
    s.tls = tls_files.check(tls_files.from_environment(knobs), s.sslmode)
    visibility.hidden()  # a bad setting is bad input, before any check
    timeout = knobs.get("DB_CONNECT_TIMEOUT", os.environ.get("DB_CONNECT_TIMEOUT", "10"))
    if not timeout.isdigit():
        raise UserError(f"DB_CONNECT_TIMEOUT {timeout!r}: expected whole seconds")
    s.connect_timeout_s = int(timeout)
    if compose_env is not None:
        if not Path(compose_env).is_file():
            raise UserError(f"--compose-env {compose_env}: not a file (the compose .env whose YB_*_MEM_LIMIT "
                            "the room check compares with)")
        s.compose_env = Path(compose_env)
    if grafana:
        s.grafana_password = read_password(grafana_password_file)
    # As ybbench/run/k6_process.py k6_binary finds it; a missing k6 is a failing check, not bad input.
    s.k6 = os.environ.get("K6") or shutil.which("k6")
    s.history = location(REPO / "results", history)
    return s
