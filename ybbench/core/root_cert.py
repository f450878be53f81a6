"""DB_SSLROOTCERT: the CA file (PEM) that TLS connections check the YSQL
server's certificate against, as libpq's sslrootcert. Every client of the
database takes it: the k6 scripts' DSN (lib/pq, pgx, pgconn:
k6-scripts/lib/db.js), doctor, verify and the server version in
params.json (psycopg). Checked here before anything connects, so that a
missing or unreadable file is bad input (exit 2, nothing written), not a
driver's error halfway into a run."""

from __future__ import annotations

import os
from pathlib import Path

from ybbench.core.errors import UserError

KNOB = "DB_SSLROOTCERT"
PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"


def check(value: str | None, sslmode: str) -> str:
    """The CA file as an absolute path ("" when none is given), or a
    UserError naming it: it must be a readable file holding a PEM
    certificate, and DB_SSLMODE must be one that uses TLS."""
    if not value:
        return ""
    path = Path(value).expanduser()
    if sslmode == "disable":
        raise UserError(f"{KNOB}={value} with DB_SSLMODE=disable: the CA file is used only over TLS; set "
                        "DB_SSLMODE=verify-full (or verify-ca, require)")
    try:
        head = path.read_bytes()
    except IsADirectoryError:
        raise UserError(f"{KNOB}={value}: is a directory, not a CA file (PEM)") from None
    except OSError as e:
        raise UserError(f"{KNOB}={value}: cannot read the CA file ({e.strerror})") from None
    if PEM_CERTIFICATE not in head:
        raise UserError(f"{KNOB}={value}: no PEM certificate in it (expected a '{PEM_CERTIFICATE.decode()}' "
                        "block: the cluster's root CA certificate)")
    return str(path.resolve())


def check_env(env: dict[str, str]) -> None:
    """A run's environment: DB_SSLROOTCERT checked and made absolute, so
    that k6 and a later `ybbench verify` (params.json, summary.json) read
    the same file from any folder."""
    if env.get(KNOB):
        env[KNOB] = check(env[KNOB], env.get("DB_SSLMODE", "disable"))


def psycopg_args(path: str | None) -> dict[str, str]:
    """psycopg.connect's sslrootcert, when one is given."""
    return {"sslrootcert": path} if path else {}


TLS_WORDS = ("ssl", "tls", "certificate", "x509")


def explain(message: str, path: str | None, sslmode: str) -> str:
    """A connection error, with the CA file and DB_SSLMODE named when it is
    about TLS (libpq says "certificate verify failed" without the file)."""
    if not path or not any(w in message.lower() for w in TLS_WORDS):
        return message
    return f"{message} (DB_SSLMODE={sslmode}, server certificate checked against {KNOB}={path})"


def from_environment(knobs: dict[str, str]) -> str:
    """DB_SSLROOTCERT from --set, else the environment, as the k6 scripts read it."""
    return knobs.get(KNOB, os.environ.get(KNOB, ""))
