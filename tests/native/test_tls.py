"""TLS with a CA file (DB_SSLMODE=verify-full, DB_SSLROOTCERT), against a
real PostgreSQL 15 that serves TLS only: `ssl=on`, a server certificate for
the host name `localhost` signed by a CA the test makes with openssl, and
pg_hba with `hostssl ... scram-sha-256` and `hostnossl ... reject`, so no
plain connection gets in. Every statement path takes the file (lib/pq, pgx,
our pgconn; ybbench doctor and verify through psycopg), checks the server's
certificate against it and its host name, and says which file it used when
the check fails. Bad files are refused before k6 starts.

A run that fails at connect follows the unreachable database's convention
(tests/native/test_bad_input.py test_an_unreachable_database): k6 stops in
setup, `ybbench run` exits non-zero naming the node and the driver's words,
and leaves no results/<testid> folder and no table. The exit code is the
one an unreachable database gets, read from such a run here (k6's own
exit code, 107 for a setup that throws, since `ybbench run` passes k6's
code on; 2 before); a bad CA file is bad input, exit 2, before k6 starts."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import psycopg
import pytest

from ybbench.doctor import settings as doctor_settings
from ybbench.doctor import ysql

from ..support.certs import Certs
from ..support.stack import BIN, REPO, Postgres, free_port
from ..support.ybbench_cli import table_exists, verify, ybbench, ybbench_run

# Only TLS, with the password; plain connections refused. CERT_USER also
# needs a client certificate whose CN is its name, signed by the CA
# (ssl_ca_file), as YugabyteDB's `hostssl ... clientcert=verify-full`.
CERT_USER = "certuser"
PG_HBA = f"""\
hostssl all {CERT_USER} 127.0.0.1/32 scram-sha-256 clientcert=verify-full
hostssl all {CERT_USER} ::1/128 scram-sha-256 clientcert=verify-full
hostnossl all all 0.0.0.0/0 reject
hostnossl all all ::/0 reject
hostssl all all 127.0.0.1/32 scram-sha-256
hostssl all all ::1/128 scram-sha-256
"""


# Go's words (lib/pq, pgx, pgconn) and libpq's (psycopg) for a certificate
# that does not name the address connected to.
NOT_THE_HOST = re.compile(r"x509: cannot validate certificate for 127\.0\.0\.1 because it doesn't contain any IP SANs"
                          r'|does not match host name "127\.0\.0\.1"')


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """(PostgreSQL serving TLS only, the CA that signed its certificate,
    another CA that did not)."""
    # The server's leaf names `localhost` only: the one name a verify-full client may accept.
    certs = Certs(tmp_path_factory.mktemp("tls"))
    ca, other = certs.ca("ca"), certs.ca("other-ca")
    certs.server("server", "ca", dns=("localhost",))
    pg = Postgres.start()
    try:
        for f in ("server.crt", "server.key"):  # the server's, owner-only as PostgreSQL requires of the key
            shutil.copy(certs.dir / f, pg.datadir / f)
            shutil.chown(pg.datadir / f, "postgres", "postgres")
            (pg.datadir / f).chmod(0o600)
        pg.query("ALTER SYSTEM SET ssl = on")
        pg.query("ALTER SYSTEM SET ssl_cert_file = 'server.crt'")
        pg.query("ALTER SYSTEM SET ssl_key_file = 'server.key'")
        shutil.copy(ca, pg.datadir / "client-ca.pem")  # whose signature on a client certificate counts
        pg.query("ALTER SYSTEM SET ssl_ca_file = 'client-ca.pem'")
        (pg.datadir / "pg_hba.conf").write_text(PG_HBA)
        pg.query("SELECT pg_reload_conf()")
        yield pg, ca, other
    finally:
        pg.stop()


def connect(pg: Postgres, ca: Path, host: str = "localhost", sslmode: str = "verify-full"):
    return psycopg.connect(host=host, port=pg.port, user=pg.user, dbname=pg.database, password=pg.password,
                           sslmode=sslmode, sslrootcert=str(ca), connect_timeout=10)


def rows(pg: Postgres, ca: Path, table: str) -> int:
    """Counted by the database, over verify-full TLS."""
    with connect(pg, ca) as c:
        return c.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_the_server_takes_tls_only(tls):
    pg, ca, _ = tls
    with pytest.raises(psycopg.OperationalError, match="no encryption"):
        connect(pg, ca, sslmode="disable")
    with connect(pg, ca) as c:
        assert c.execute("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").fetchone()[0] is True


def run(tls, testid, tmp_path, driver="postgres", ca=None, host="localhost", k6="k6", sslmode="verify-full",
        port=None, **knobs):
    pg, good, _ = tls
    return ybbench_run("sql-inserts", pg, tmp_path / "results", testid=testid, extra_env={"K6": str(BIN / k6)},
                       knobs={"YSQL_NODES": f"{host}:{port or pg.port}", "DB_SSLMODE": sslmode,
                              "DB_SSLROOTCERT": str(ca or good), "DB_DRIVER": driver, "TABLE": f"tls_{testid}",
                              "VUS": "2", "DURATION": "2s", **knobs})


@pytest.fixture(scope="module")
def unreachable(binaries, tls, tmp_path_factory):
    """What `ybbench run` does when no server answers at YSQL_NODES: the
    convention a run that cannot connect follows."""
    port = free_port()
    r = run(tls, "unreachable", tmp_path_factory.mktemp("unreachable"), host="localhost", port=port)
    assert r.code != 0 and f'at localhost:{port} as "ybbench"' in r.output and "connection refused" in r.output, \
        r.output
    assert not r.folder.exists()
    return r


def nothing_written(pg, tmp_path, testid) -> None:
    results = tmp_path / "results"
    assert not results.exists() or not any(results.iterdir()), list(results.iterdir())
    assert not table_exists(pg, f"tls_{testid}")


# Every statement path, on the tests' k6 v1.8.1 (the real xk6-sql v1.0.5),
# and the compose image's k6 v2.2.0 with what `ybbench run` picks there.
PATHS = [("k6", "postgres"), ("k6", "pgx"), ("k6", "pgconn"), ("k6-v2", "pgconn")]


@pytest.mark.parametrize("k6,driver", PATHS, ids=[f"{k}-{d}" for k, d in PATHS])
def test_a_run_over_verify_full(binaries, tls, tmp_path, testid, k6, driver):
    pg, ca, _ = tls
    r = run(tls, testid, tmp_path, driver, k6=k6)
    assert r.code == 0, r.output
    written = r.digest()["rows_written"]
    assert written > 0 and rows(pg, ca, f"tls_{testid}") == written
    params = json.loads((r.folder / "params.json").read_text())
    assert params["knobs"]["DB_SSLROOTCERT"] == str(ca) and params["knobs"]["DB_DRIVER"] == driver
    assert params["versions"]["server"].startswith("PostgreSQL 15")  # read over TLS with the CA too
    # ybbench verify reads every acknowledged write back over verify-full,
    # with the CA file the run recorded.
    p, doc = verify(tmp_path / "results", testid, pg)
    assert p.returncode == 0, p.stdout + p.stderr
    assert doc["present"]["count"] == written and doc["lost"]["count"] == 0, doc


def test_verify_checks_the_host_name_with_the_runs_ca(binaries, tls, tmp_path, testid):
    pg, ca, _ = tls
    r = run(tls, testid, tmp_path)
    assert r.code == 0, r.output
    p, _ = verify(tmp_path / "results", testid, pg, "--node", f"127.0.0.1:{pg.port}")
    assert p.returncode == 2, p.stdout + p.stderr
    assert NOT_THE_HOST.search(p.stderr) and f"DB_SSLROOTCERT={ca}" in p.stderr, p.stderr


@pytest.mark.parametrize("driver", ["postgres", "pgx"])
def test_a_wrong_ca_stops_the_run_naming_the_file(binaries, tls, unreachable, tmp_path, testid, driver):
    pg, _, other = tls
    r = run(tls, testid, tmp_path, driver, ca=other)
    assert r.code == unreachable.code, r.output
    assert "certificate signed by unknown authority" in r.output, r.output
    assert f"DB_SSLROOTCERT={other}" in r.output, r.output
    nothing_written(pg, tmp_path, testid)


@pytest.mark.parametrize("driver", ["postgres", "pgx"])
def test_verify_full_checks_the_host_name(binaries, tls, unreachable, tmp_path, testid, driver):
    """The certificate names localhost only: verify-full to 127.0.0.1 must
    fail (a hostname check skipped, or verify-full downgraded, passes)."""
    pg, ca, _ = tls
    r = run(tls, testid, tmp_path, driver, host="127.0.0.1")
    assert r.code == unreachable.code, r.output
    assert NOT_THE_HOST.search(r.output) and f"DB_SSLROOTCERT={ca}" in r.output, r.output
    nothing_written(pg, tmp_path, testid)


@pytest.fixture
def k6_marker(tmp_path):
    """A k6 that leaves a mark when anything runs it, then runs the real one."""
    mark = tmp_path / "k6-ran"
    k6 = tmp_path / "k6"
    k6.write_text(f'#!/bin/sh\ntouch "{mark}"\nexec "{BIN / "k6"}" "$@"\n')
    k6.chmod(0o755)
    return k6, mark


@pytest.mark.parametrize("what", ["missing", "directory", "not-pem", "sslmode-disable"])
def test_a_bad_ca_file_is_refused_before_k6_starts(binaries, tls, tmp_path, testid, k6_marker, what):
    pg, ca, _ = tls
    k6, mark = k6_marker
    path = {"missing": tmp_path / "no-such-ca.pem", "directory": tmp_path, "not-pem": tmp_path / "ca.txt",
            "sslmode-disable": ca}[what]
    (tmp_path / "ca.txt").write_text("not a certificate\n")
    r = ybbench_run("sql-inserts", pg, tmp_path / "results", testid=testid, extra_env={"K6": str(k6)},
                    knobs={"YSQL_NODES": f"localhost:{pg.port}", "TABLE": f"tls_{testid}", "DB_SSLROOTCERT": str(path),
                           "DB_SSLMODE": "disable" if what == "sslmode-disable" else "verify-full"})
    assert r.code == 2, r.output
    assert f"DB_SSLROOTCERT={path}:" in r.output or f"DB_SSLROOTCERT={path} with DB_SSLMODE=disable" in r.output, \
        r.output
    assert {"missing": "No such file or directory", "directory": "is a directory", "not-pem": "no PEM certificate",
            "sslmode-disable": "set DB_SSLMODE=verify-full"}[what] in r.output, r.output
    assert not mark.exists(), "k6 ran"
    nothing_written(pg, tmp_path, testid)


def probe(tls, tmp_path, k6: str, driver: str, **knobs) -> dict:
    """tests/k6/tls_probe.js: one connection on one statement path."""
    pg, ca, _ = tls
    out = tmp_path / f"probe-{len(list(tmp_path.glob('probe-*')))}.json"
    env = dict(pg.env(), YSQL_NODES=f"localhost:{pg.port}", DB_USER=pg.user, DB_NAME=pg.database,
               DB_SSLMODE="verify-full", DB_SSLROOTCERT=str(ca), DB_DRIVER=driver, PROBE_OUT=str(out),
               YBBENCH_GO_HELPERS="1" if driver == "pgconn" else "0", K6_NO_USAGE_REPORT="true")
    env.update(knobs)
    p = subprocess.run([str(BIN / k6), "run", "--no-color", "--quiet", "--address", "127.0.0.1:0",
                        str(REPO / "tests" / "k6" / "tls_probe.js")], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and out.exists(), p.stdout + p.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("k6,driver", PATHS, ids=[f"{k}-{d}" for k, d in PATHS])
def test_each_statement_path_checks_the_ca_and_the_host_name(binaries, tls, tmp_path, k6, driver):
    """The DSN the workloads build, on each path by itself: pgconn's own
    connections are made in the load, after setup's lib/pq check, so a run
    alone would not show that they verify."""
    pg, ca, other = tls
    # A path the DSN must quote (lib/db.js): a space, a quote, a backslash.
    odd = tmp_path / "a CA's \\folder" / "root ca.pem"
    odd.parent.mkdir()
    shutil.copy(ca, odd)
    good = probe(tls, tmp_path, k6, driver, DB_SSLROOTCERT=str(odd))
    assert good["ok"] is True and good["ssl"] is True and good["version"].startswith("TLSv1."), good
    wrong = probe(tls, tmp_path, k6, driver, DB_SSLROOTCERT=str(other))
    assert not wrong["ok"] and "certificate signed by unknown authority" in wrong["error"], wrong
    by_ip = probe(tls, tmp_path, k6, driver, YSQL_NODES=f"127.0.0.1:{pg.port}")
    assert not by_ip["ok"] and NOT_THE_HOST.search(by_ip["error"]), by_ip
    # verify-ca checks the chain and not the name: the same address passes.
    ca_only = probe(tls, tmp_path, k6, driver, YSQL_NODES=f"127.0.0.1:{pg.port}", DB_SSLMODE="verify-ca")
    assert ca_only["ok"] is True and ca_only["ssl"] is True, ca_only
    if driver != "pgconn":  # setup's check (checkReachable) names the file; pgconn's errors are the load's
        assert f"DB_SSLROOTCERT={other}" in wrong["error"] and f"DB_SSLROOTCERT={ca}" in by_ip["error"]


def doctor_ysql(tls, monkeypatch, ca: Path, host: str = "localhost"):
    pg = tls[0]
    monkeypatch.setenv("PGPASSWORD", pg.password)
    s = doctor_settings.from_args([f"YSQL_NODES={host}:{pg.port}", f"DB_USER={pg.user}", f"DB_NAME={pg.database}",
                                   "DB_SSLMODE=verify-full", f"DB_SSLROOTCERT={ca}"],
                                  None, None, None, "/nonexistent")
    checks, _ = ysql.checks(s)
    return {c.name: c for c in checks}


def test_doctor_ysql_checks_over_tls(tls, monkeypatch):
    pg, ca, other = tls
    good = doctor_ysql(tls, monkeypatch, ca)
    node = f"ysql localhost:{pg.port}"
    assert [good[f"{node} {k}"].status for k in ("connect", "version", "statements")] == ["ok"] * 3, good
    wrong = doctor_ysql(tls, monkeypatch, other)
    assert wrong[f"{node} connect"].status == "fail"
    assert f"DB_SSLROOTCERT={other}" in wrong[f"{node} connect"].found, wrong
    assert "DB_SSLROOTCERT" in wrong[f"{node} connect"].todo


def test_doctor_refuses_a_missing_ca_file(tls, tmp_path):
    pg = tls[0]
    missing = tmp_path / "no-such-ca.pem"
    p = ybbench("doctor", "--out", tmp_path / "doctor.json", "--set", f"YSQL_NODES=localhost:{pg.port}",
                "--set", "DB_SSLMODE=verify-full", "--set", f"DB_SSLROOTCERT={missing}", env=pg.env())
    assert p.returncode == 2 and f"DB_SSLROOTCERT={missing}: cannot read the CA file" in p.stderr, p.stderr
    assert not (tmp_path / "doctor.json").exists()


# --- Client certificates: DB_SSLCERT and DB_SSLKEY ---------------------------

@pytest.fixture(scope="module")
def client(tls, tmp_path_factory):
    """CERT_USER, which pg_hba lets in only with a certificate whose CN is
    its name signed by the CA: (its certificate, its key mode 600, a
    certificate for another name, signed by the same CA, with its key)."""
    pg, ca, _ = tls
    certs = Certs(ca.parent)
    pg.query(f"CREATE ROLE {CERT_USER} LOGIN PASSWORD '{pg.password}'")
    pg.query(f"GRANT CREATE, USAGE ON SCHEMA public TO {CERT_USER}")
    return {cn: certs.client(cn, "ca", cn) for cn in (CERT_USER, "someone-else")}


def cert_run(tls, testid, tmp_path, driver="postgres", k6="k6", **knobs):
    return run(tls, testid, tmp_path, driver, k6=k6, DB_USER=CERT_USER, **knobs)


@pytest.mark.parametrize("k6,driver", PATHS, ids=[f"{k}-{d}" for k, d in PATHS])
def test_a_run_with_a_client_certificate(binaries, tls, client, tmp_path, testid, k6, driver):
    """Every statement path sends the certificate: the server, which lets
    CERT_USER in only with it, has the rows, and its own pg_stat_ssl shows
    the client's CN on the load's sessions; verify reads the rows back with
    the files the run recorded."""
    pg, ca, _ = tls
    crt, key = client[CERT_USER]
    r = cert_run(tls, testid, tmp_path, driver, k6, DB_SSLCERT=str(crt), DB_SSLKEY=str(key),
                 DB_STATEMENT_TIMEOUT_MS="0")
    assert r.code == 0, r.output
    written = r.digest()["rows_written"]
    assert written > 0 and rows(pg, ca, f"tls_{testid}") == written
    knobs = json.loads((r.folder / "params.json").read_text())["knobs"]
    assert (knobs["DB_SSLCERT"], knobs["DB_SSLKEY"]) == (str(crt), str(key))
    p, doc = verify(tmp_path / "results", testid, pg)
    assert p.returncode == 0 and doc["lost"]["count"] == 0, p.stdout + p.stderr


@pytest.mark.parametrize("k6,driver", PATHS, ids=[f"{k}-{d}" for k, d in PATHS])
def test_the_server_sees_the_client_certificate(binaries, tls, client, tmp_path, k6, driver):
    """pg_stat_ssl, read in the probe's own session on each statement path:
    the client DN the server saw is the certificate's."""
    crt, key = client[CERT_USER]
    got = probe(tls, tmp_path, k6, driver, DB_USER=CERT_USER, DB_SSLCERT=str(crt), DB_SSLKEY=str(key))
    assert got["ok"] is True, got
    assert got.get("client_dn") == f"/CN={CERT_USER}", got


@pytest.mark.parametrize("driver", ["postgres", "pgx"])
def test_without_the_client_certificate_the_server_refuses(binaries, tls, client, unreachable, tmp_path, testid,
                                                           driver):
    """The control: the same run without DB_SSLCERT, and with another
    name's certificate, is refused by the server (so the runs above got in
    by their certificate)."""
    pg, _, _ = tls
    r = cert_run(tls, testid, tmp_path, driver)
    assert r.code == unreachable.code and "certificate" in r.output.lower(), r.output
    crt, key = client["someone-else"]
    r = cert_run(tls, testid, tmp_path, driver, DB_SSLCERT=str(crt), DB_SSLKEY=str(key))
    assert r.code == unreachable.code, r.output
    assert f"DB_SSLCERT={crt}" in r.output, r.output
    nothing_written(pg, tmp_path, testid)


@pytest.mark.parametrize("what", ["missing-key", "open-key", "cert-alone", "key-is-cert", "sslmode-disable"])
def test_a_bad_client_certificate_is_refused_before_k6_starts(binaries, tls, client, tmp_path, testid, k6_marker,
                                                              what):
    pg, _, _ = tls
    k6, mark = k6_marker
    crt, key = client[CERT_USER]
    open_key = tmp_path / "open.key"
    shutil.copy(key, open_key)
    open_key.chmod(0o644)
    given = {"missing-key": {"DB_SSLCERT": crt, "DB_SSLKEY": tmp_path / "no-such.key"},
             "open-key": {"DB_SSLCERT": crt, "DB_SSLKEY": open_key},
             "cert-alone": {"DB_SSLCERT": crt},
             "key-is-cert": {"DB_SSLCERT": crt, "DB_SSLKEY": crt},
             "sslmode-disable": {"DB_SSLCERT": crt, "DB_SSLKEY": key}}[what]
    r = ybbench_run("sql-inserts", pg, tmp_path / "results", testid=testid, extra_env={"K6": str(k6)},
                    knobs={"YSQL_NODES": f"localhost:{pg.port}", "TABLE": f"tls_{testid}", "DB_USER": CERT_USER,
                           "DB_SSLMODE": "disable" if what == "sslmode-disable" else "verify-full",
                           **{k: str(v) for k, v in given.items()}})
    assert r.code == 2, r.output
    expected = {"missing-key": f"DB_SSLKEY={tmp_path / 'no-such.key'}: cannot read the client key file "
                               "(No such file or directory)",
                "open-key": f"DB_SSLKEY={open_key}: others can read the key (mode 0644)",
                "cert-alone": "DB_SSLCERT without DB_SSLKEY",
                "key-is-cert": f"DB_SSLKEY={crt}: no PEM private key in it",
                "sslmode-disable": f"DB_SSLCERT={crt} with DB_SSLMODE=disable"}[what]
    assert expected in r.output, r.output
    assert not mark.exists(), "k6 ran"
    nothing_written(pg, tmp_path, testid)


def test_doctor_connects_with_the_client_certificate(tls, client, monkeypatch):
    pg, ca, _ = tls
    monkeypatch.setenv("PGPASSWORD", pg.password)
    crt, key = client[CERT_USER]
    node = f"ysql localhost:{pg.port} connect"

    def connect_check(*cert):
        s = doctor_settings.from_args([f"YSQL_NODES=localhost:{pg.port}", f"DB_USER={CERT_USER}",
                                       f"DB_NAME={pg.database}", "DB_SSLMODE=verify-full", f"DB_SSLROOTCERT={ca}",
                                       *cert], None, None, None, "/nonexistent")
        return {c.name: c for c in ysql.checks(s)[0]}[node]

    assert connect_check(f"DB_SSLCERT={crt}", f"DB_SSLKEY={key}").status == "ok"
    refused = connect_check()
    assert refused.status == "fail" and "certificate" in refused.found.lower(), refused
