"""A secured cluster's metrics, scraped as `ybbench targets` writes them:
the real Prometheus (the project's prometheus.yml unchanged, which
includes targets/*.scrape.yml) scraping
  - the YugabyteDB stand-in's endpoints (the real 2.23.1 captures) over
    HTTPS, as --webserver_certificate_file makes YugabyteDB serve them;
  - the real node_exporter with a web config: TLS and basic auth (bcrypt),
    as exporter-toolkit takes it.
Each certificate names `localhost` only, signed by a CA the test makes.

Then one fault planted per target kind, each in a Prometheus of its own,
and doctor's target check must name the culprit in the terms of the
setting to change: the wrong CA, a host name the certificate does not
hold, a plain-HTTP scrape of an HTTPS endpoint, a wrong password, no
credentials at all."""

from __future__ import annotations

import ssl
import warnings
from pathlib import Path

import pytest
import yaml

from ybbench.doctor import prometheus as doctor_prom
from ybbench.doctor.prometheus import Prom
from ybbench.run.scrape_access import SCRAPE_FILE

from ..support.captures import CAPTURES
from ..support.certs import Certs
from ..support.stack import BIN, CaptureServer, Process, Prometheus, free_port, wait_until

with warnings.catch_warnings():  # deprecated in 3.11; bcrypt through libxcrypt, as exporter-toolkit wants
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt
USER, PASSWORD = "prometheus", "scrape-secret-7f3a"
KINDS = ("master", "tserver", "ysql", "ycql")


@pytest.fixture(scope="module")
def tls_world(binaries, tmp_path_factory):
    d = tmp_path_factory.mktemp("scrape-tls")
    certs = Certs(d / "certs")
    ca, other = certs.ca("ca"), certs.ca("other-ca")
    crt, key = certs.server("localhost", "ca", dns=("localhost",))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    yb = {k: CaptureServer(CAPTURES / f"{k}.txt", host="localhost", advance=1.0, tls=ctx) for k in KINDS}
    web = d / "web.yml"
    web.write_text(yaml.safe_dump({
        "tls_server_config": {"cert_file": str(crt), "key_file": str(key)},
        "basic_auth_users": {USER: crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH))}}))
    port = free_port()
    node = Process("node_exporter", [str(BIN / "node_exporter"), f"--web.listen-address=127.0.0.1:{port}",
                                     f"--web.config.file={web}"], d)
    secrets = d / "secrets"
    secrets.mkdir()
    (secrets / "good").write_text(PASSWORD + "\n")
    (secrets / "wrong").write_text("not-the-password\n")
    try:
        yield {"ca": ca, "other": other, "yb": {k: s.server.server_address[1] for k, s in yb.items()},
               "node": port, "secrets": secrets, "dir": d}
    finally:
        node.stop()
        for s in yb.values():
            s.stop()


def targets_args(w, *, host="localhost", yb_ca=None, yb_scheme="https", node_scheme="https", secret="good",
                 node_auth=True) -> list[str]:
    yb = {k: f"{host}:{p}" for k, p in w["yb"].items()}
    args = ["--masters", yb["master"], "--tservers", yb["tserver"], "--ysql", yb["ysql"], "--ycql", yb["ycql"],
            "--node-exporters", f"{host}:{w['node']}", "--yb-scheme", yb_scheme, "--node-scheme", node_scheme]
    if yb_scheme == "https":
        args += ["--yb-ca-file", str(yb_ca or w["ca"])]
    if node_scheme == "https":
        args += ["--node-ca-file", str(w["ca"])]
    if node_auth:
        args += ["--node-basic-auth", USER, "--node-secret-file", str(w["secrets"] / secret)]
    return args


def started(w, name: str, **kw) -> Prometheus:
    """A Prometheus over these targets, once each has been scraped (up or not)."""
    prom = Prometheus(w["dir"] / name, targets_args(w, **kw), remote_write=False)

    def scraped():
        active = prom.api("targets", state="active")["activeTargets"]
        return len(active) == 6 and all(t["health"] != "unknown" for t in active)
    wait_until(scraped, "every target scraped once", timeout=60)
    return prom


def target_checks(prom: Prometheus) -> dict[str, object]:
    return {c.name.removeprefix("prometheus targets "): c for c in doctor_prom.targets(Prom(prom.url), True)}


@pytest.fixture(scope="module")
def secured(tls_world):
    prom = started(tls_world, "secured")
    yield prom
    prom.stop()


def test_every_secured_target_is_scraped(tls_world, secured):
    """Up, under the plain jobs' names, with prometheus.yml's relabelling
    (rpc_latency from handler_latency_*) applied to the HTTPS job too, and
    node_exporter's series read through its TLS and basic auth."""
    folder = tls_world["dir"] / "secured" / "targets"
    assert (folder / SCRAPE_FILE).is_file() and (folder / "yugabytedb-ca.crt").read_bytes() == \
        tls_world["ca"].read_bytes()
    assert yaml.safe_load((folder / "yugabytedb.json").read_text()) == []  # the secured kind is in the scrape file
    active = secured.api("targets", state="active")["activeTargets"]
    assert {(t["labels"]["job"], t["scrapeUrl"].split(":")[0]) for t in active} == {
        ("yugabytedb", "https"), ("node", "https"), ("prometheus", "http")}, active
    assert all(t["health"] == "up" for t in active), [(t["scrapeUrl"], t["lastError"]) for t in active]
    assert secured.query('rpc_latency_count{job="yugabytedb", export_type="master_export"}')
    assert secured.query('node_cpu_seconds_total{job="node", mode="idle"}')
    checks = target_checks(secured)
    assert {k: c.status for k, c in checks.items() if k != "postgres"} == {
        **{f"yugabytedb {e}": "ok" for e in doctor_prom.YB_EXPORTS}, "node": "ok", "prometheus": "ok"}


def test_the_password_is_in_no_config_prometheus_shows(tls_world, secured):
    """The scrape file names the password's file, never the password; the
    loaded config Prometheus serves neither."""
    text = (tls_world["dir"] / "secured" / "targets" / SCRAPE_FILE).read_text()
    assert PASSWORD not in text and str(tls_world["secrets"] / "good") in text
    assert PASSWORD not in secured.api("status/config")["yaml"]


@pytest.fixture(scope="module")
def faults_a(tls_world):
    """The YugabyteDB ports checked against another CA; node_exporter's
    HTTPS port scraped over plain HTTP."""
    prom = started(tls_world, "faults-a", yb_ca=tls_world["other"], node_scheme="http", node_auth=False)
    yield target_checks(prom)
    prom.stop()


@pytest.fixture(scope="module")
def faults_b(tls_world):
    """Every target by 127.0.0.1, which no certificate names."""
    prom = started(tls_world, "faults-b", host="127.0.0.1")
    yield target_checks(prom)
    prom.stop()


def test_the_wrong_ca_names_the_ca(faults_a):
    c = faults_a["yugabytedb master_export"]
    assert c.status == "fail", c
    assert "certificate is not signed by the CA Prometheus checks it with (yugabytedb-ca.crt)" in c.found, c.found
    assert "--yb-ca-file" in c.todo, c.todo


def test_plain_http_to_https_says_it_serves_https(faults_a):
    c = faults_a["node"]
    assert c.status == "fail" and "serves HTTPS; Prometheus scrapes it over plain HTTP" in c.found, c.found
    assert "--node-scheme https" in c.todo, c.todo


def test_a_host_the_certificate_does_not_hold(faults_b):
    for name in [*(f"yugabytedb {e}" for e in doctor_prom.YB_EXPORTS), "node"]:
        c = faults_b[name]
        assert c.status == "fail" and "certificate does not name the host Prometheus scrapes it by" in c.found, \
            (name, c.found)


@pytest.fixture(scope="module")
def faults_c(tls_world):
    """node_exporter with a wrong password (its name right); YugabyteDB's
    HTTPS ports scraped as plain HTTP."""
    prom = started(tls_world, "faults-c", secret="wrong", yb_scheme="http")
    yield target_checks(prom)
    prom.stop()


def test_wrong_scrape_password(tls_world, faults_c):
    c = faults_c["node"]
    assert c.status == "fail", c
    assert f"refused Prometheus' credentials (as {USER!r} with the password in {tls_world['secrets'] / 'wrong'})" \
        in c.found, c.found
    assert "YBBENCH_NODE_SCRAPE_SECRET_FILE" in c.todo, c.todo


def test_plain_http_to_the_yugabytedb_https_ports(faults_c):
    for e in doctor_prom.YB_EXPORTS:
        c = faults_c[f"yugabytedb {e}"]
        assert c.status == "fail" and "serves HTTPS; Prometheus scrapes it over plain HTTP" in c.found, c.found
        assert "--yb-scheme https" in c.todo


def test_no_credentials_where_they_are_asked(tls_world):
    prom = started(tls_world, "faults-d", node_auth=False)
    try:
        c = target_checks(prom)["node"]
    finally:
        prom.stop()
    assert c.status == "fail" and "asks for credentials; Prometheus sends none" in c.found, c.found
    assert "--node-basic-auth USER" in c.todo


def test_secured_flags_refused_when_they_contradict(tmp_path, tls_world):
    """Bad input: exit 2 naming the flags, nothing written."""
    import subprocess
    import sys

    from ..support.stack import REPO
    for args, said in [(["--yb-ca-file", str(tls_world["ca"])], "--yb-ca-file"),
                       (["--node-basic-auth", "u", "--node-bearer-token"], "give one way to authenticate"),
                       (["--yb-scheme", "https", "--yb-ca-file", str(tmp_path / "none.crt")], "cannot read it"),
                       (["--node-secret-file", "/x"], "--node-secret-file without")]:
        out = tmp_path / "out"
        p = subprocess.run([sys.executable, "-m", "ybbench", "targets", "--cluster", "c", "--masters", "m",
                            "--out", str(out), *args], cwd=REPO, capture_output=True, text=True)
        assert p.returncode == 2 and said in p.stderr, (args, p.stderr)
        assert not out.exists(), args


def test_what_the_settings_hide_is_skipped_not_failed(tls_world, monkeypatch):
    """A Prometheus that scrapes only itself, as on YugabyteDB Aeon (no
    scrape access) with no node_exporter: doctor's YugabyteDB and node
    target checks, its dashboards' YugabyteDB and node series and its room
    checks fail, YSQL having said -YB-; with YBBENCH_CLUSTER_METRICS=none and
    YBBENCH_NODE_METRICS=none they are skipped, saying so, and k6's and
    Prometheus' own are still checked."""
    from ybbench.doctor import queries, room
    prom = Prometheus(tls_world["dir"] / "aeon", [], remote_write=False)
    try:
        wait_until(lambda: prom.all_targets_up(1), "Prometheus scraping itself", timeout=60)
        p = Prom(prom.url)

        def checks():
            got = doctor_prom.targets(p, True) + queries.checks(p, True, []) + room.checks(p)
            return {c.name: c for c in got}
        monkeypatch.delenv("YBBENCH_CLUSTER_METRICS", raising=False)
        monkeypatch.delenv("YBBENCH_NODE_METRICS", raising=False)
        before = checks()
        monkeypatch.setenv("YBBENCH_CLUSTER_METRICS", "none")
        monkeypatch.setenv("YBBENCH_NODE_METRICS", "none")
        after = checks()
    finally:
        prom.stop()
    hidden = [f"prometheus targets yugabytedb {e}" for e in doctor_prom.YB_EXPORTS] + [
        "prometheus targets node", "room disk"]
    assert {n: before[n].status for n in hidden} == {n: "fail" for n in hidden}
    assert {n: after[n].status for n in hidden + ["room memory"]} == {n: "skipped" for n in hidden + ["room memory"]}
    assert "not visible, by your settings (YBBENCH_CLUSTER_METRICS=none" in \
        after["prometheus targets yugabytedb master_export"].found
    assert "not visible, by your settings (YBBENCH_NODE_METRICS=none" in after["prometheus targets node"].found
    # The overview dashboard reads YugabyteDB's and node series: failing before, not for them after.
    board = "queries dashboard ybbench-overview"
    assert before[board].status == "fail" and "rpc_latency_count" in before[board].found, before[board]
    assert after[board].status != "fail", after[board]
    assert "yugabytedb series not checked: not visible, by your settings" in after[board].found, after[board]
    assert "node series not checked: not visible, by your settings" in after[board].found, after[board]
    assert after["prometheus targets prometheus"].status == "ok"
