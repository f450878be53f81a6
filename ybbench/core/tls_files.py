"""The TLS files of a YSQL connection, as libpq names them: DB_SSLROOTCERT
(sslrootcert, the CA the server's certificate is checked against),
DB_SSLCERT and DB_SSLKEY (sslcert, sslkey: a client certificate and its
key, for a cluster whose ysql_hba_conf_csv says `hostssl ... cert` or
`clientcert=verify-full`). Every client of the database takes them: the k6
scripts' DSN (lib/pq, pgx, pgconn: k6-scripts/lib/db.js), doctor, verify,
the session sampler and the server version in params.json (psycopg).
Checked here before anything connects, so that a missing, unreadable or
too-open file is bad input (exit 2, nothing written), not a driver's error
halfway into a run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ybbench.core.errors import UserError

# libpq's name -> the knob.
KNOBS = {"sslrootcert": "DB_SSLROOTCERT", "sslcert": "DB_SSLCERT", "sslkey": "DB_SSLKEY"}
KNOB = KNOBS["sslrootcert"]
PEM_CERTIFICATE = b"-----BEGIN CERTIFICATE-----"
PEM_KEY = b"PRIVATE KEY-----"


def _read(knob: str, value: str, what: str) -> tuple[Path, bytes]:
    path = Path(value).expanduser()
    try:
        return path, path.read_bytes()
    except IsADirectoryError:
        raise UserError(f"{knob}={value}: is a directory, not {what}") from None
    except OSError as e:
        raise UserError(f"{knob}={value}: cannot read {what} ({e.strerror})") from None


def _certificate(knob: str, value: str, noun: str, what: str) -> str:
    path, head = _read(knob, value, noun)
    if PEM_CERTIFICATE not in head:
        raise UserError(f"{knob}={value}: no PEM certificate in it (expected a '{PEM_CERTIFICATE.decode()}' "
                        f"block: {what})")
    return str(path.resolve())


def _key(value: str) -> str:
    knob = KNOBS["sslkey"]
    path, head = _read(knob, value, "the client key file")
    if PEM_KEY not in head:
        raise UserError(f"{knob}={value}: no PEM private key in it (expected a '-----BEGIN PRIVATE KEY-----' "
                        "block, the key of DB_SSLCERT)")
    if b"ENCRYPTED" in head:
        raise UserError(f"{knob}={value}: the key is encrypted; the drivers take no key password here: "
                        f"decrypt it (openssl pkey -in {value} -out client.key) and keep it mode 600")
    # libpq and lib/pq refuse a key that others can read (root may let its group read it).
    st = path.stat()
    allowed = 0o037 if st.st_uid == 0 else 0o077
    if st.st_mode & allowed:
        raise UserError(f"{knob}={value}: others can read the key (mode {stat.S_IMODE(st.st_mode):04o}); libpq "
                        f"and lib/pq refuse a key with group or world access: chmod 600 {value}")
    return str(path.resolve())


def check(given: dict[str, str], sslmode: str) -> dict[str, str]:
    """The files given (libpq name -> path, knobs not given left out), each
    checked and made absolute; a UserError names the knob and the file."""
    given = {k: v for k, v in given.items() if v}
    if given and sslmode == "disable":
        knob = KNOBS[next(iter(given))]
        raise UserError(f"{knob}={given[next(iter(given))]} with DB_SSLMODE=disable: TLS files are used only "
                        "over TLS; set DB_SSLMODE=verify-full (or verify-ca, require)")
    if ("sslcert" in given) != ("sslkey" in given):
        have, lack = ("DB_SSLCERT", "DB_SSLKEY") if "sslcert" in given else ("DB_SSLKEY", "DB_SSLCERT")
        raise UserError(f"{have} without {lack}: a client certificate needs its key, and the key its certificate")
    out = {}
    if "sslrootcert" in given:
        out["sslrootcert"] = _certificate(KNOB, given["sslrootcert"], "the CA file", "the cluster's root CA certificate")
    if "sslcert" in given:
        out["sslcert"] = _certificate(KNOBS["sslcert"], given["sslcert"], "the client certificate file",
                                      "the client certificate")
        out["sslkey"] = _key(given["sslkey"])
    return out


def from_env(env: dict[str, str]) -> dict[str, str]:
    """libpq name -> path, of the knobs set in env (a run's, already checked)."""
    return {k: env[knob] for k, knob in KNOBS.items() if env.get(knob)}


def check_env(env: dict[str, str]) -> None:
    """A run's environment: each TLS file checked and made absolute, so that
    k6 and a later `ybbench verify` (params.json, summary.json) read the
    same files from any folder."""
    for k, path in check(from_env(env), env.get("DB_SSLMODE", "disable")).items():
        env[KNOBS[k]] = path


def from_environment(knobs: dict[str, str]) -> dict[str, str]:
    """The TLS files from --set, else the environment, as the k6 scripts read them."""
    return {k: knobs.get(knob, os.environ.get(knob, "")) for k, knob in KNOBS.items()}


def from_written(written: dict) -> dict[str, str]:
    """The files a load's summary.json names (k6-scripts/lib/db.js where())."""
    return {k: written[k] for k in KNOBS if written.get(k)}


def psycopg_args(files: dict[str, str]) -> dict[str, str]:
    """psycopg.connect's sslrootcert, sslcert and sslkey, as given."""
    return dict(files)


TLS_WORDS = ("ssl", "tls", "certificate", "x509")


def explain(message: str, files: dict[str, str], sslmode: str, user: str = "") -> str:
    """A connection error, with DB_SSLMODE and the files named when it is
    about TLS (libpq says "certificate verify failed" without the file).
    PostgreSQL refuses a client certificate whose CN is not the user
    (clientcert=verify-full) with the password's words."""
    if files.get("sslcert") and "authentication failed" in message:
        return (f"{message} (with the client certificate {KNOBS['sslcert']}={files['sslcert']}: a server that "
                f"checks it (clientcert=verify-full) refuses one whose CN is not DB_USER={user} with these words too)")
    if not files or not any(w in message.lower() for w in TLS_WORDS):
        return message
    said = ", ".join(f"{KNOBS[k]}={v}" for k, v in files.items())
    return f"{message} (DB_SSLMODE={sslmode}, {said})"
