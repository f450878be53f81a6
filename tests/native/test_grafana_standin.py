"""The Grafana stand-in image's program (tests/compose/images/grafana), run
natively: it loads the repository's real provisioning and dashboards with the
env the compose file gives Grafana, and refuses to start on what would break
real Grafana, naming the file and the problem."""

from __future__ import annotations

import json
import shutil

import pytest

from ..support.grafana_standin import MOUNTS, Standin
from ..support.history_db import new_store_database
from ..support.stack import REPO, free_port, wait_until

pytestmark = pytest.mark.late  # Loki


@pytest.fixture
def standin(tmp_path):
    s = Standin(tmp_path)
    yield s
    if s.proc and s.proc.poll() is None:
        s.proc.kill()
        s.proc.communicate()


def test_compose_mounts_provisioning_where_grafana_reads_it():
    # The stand-in and upstream both default GF_PATHS_PROVISIONING to this.
    assert MOUNTS["../grafana/provisioning"] == "/etc/grafana/provisioning"


def test_repo_provisioning_loads_and_serves(standin):
    standin.popen()

    def healthy():
        if standin.proc.poll() is not None:  # fail now, not at the timeout
            pytest.fail(f"the stand-in exited {standin.proc.returncode}:\n{standin.proc.communicate()[1]}")
        return standin.get("/api/health")[0] == 200
    wait_until(healthy, "stand-in /api/health", timeout=30)

    code, health = standin.get("/api/health")
    assert code == 200 and health["database"] == "ok", health
    expected = {json.loads(p.read_text())["uid"] for p in (REPO / "grafana" / "dashboards").glob("*.json")}
    assert expected, "no dashboards in grafana/dashboards"
    code, found = standin.get("/api/search", "admin", standin.password)
    assert code == 200, code
    assert sorted(d["uid"] for d in found) == sorted(expected)
    assert all(d["type"] == "dash-db" and d["title"] for d in found), found
    code, sources = standin.get("/api/datasources", "admin", standin.password)
    assert code == 200 and [s for s in sources if s["isDefault"]], sources
    for user, password in (("admin", "wrong-" + standin.password), ("root", standin.password), (None, None)):
        assert standin.get("/api/search", user, password)[0] == 401, (user, password)
        assert standin.get("/api/datasources", user, password)[0] == 401, (user, password)

    log = standin.stop()
    assert standin.password not in log
    for p in (REPO / "grafana" / "dashboards").glob("*.json"):
        assert p.name in log, f"no log line for {p.name}:\n{log}"


def test_duplicate_dashboard_uid_fails_naming_both_files(standin):
    standin.edit_board("overview.json", lambda b: b.update(title="a copy with the same uid"), to="zz-copy.json")
    err = standin.fails()
    line = standin.error(err, "uid 'ybbench-overview'")
    assert "/overview.json" in line and "/zz-copy.json" in line, err


def test_unknown_datasource_uid_fails_naming_dashboard_and_uid(standin):
    def break_panel(board):
        panel = next(p for p in board["panels"] if p.get("targets"))
        panel["targets"][0]["datasource"] = {"type": "prometheus", "uid": "no-such-datasource"}
    standin.edit_board("overview.json", break_panel)
    err = standin.fails()
    standin.error(err, "overview.json", "Benchmark overview", "'no-such-datasource'", "not provisioned")


def test_undefined_template_variable_as_datasource_fails(standin):
    standin.edit_board("storage.json", lambda b: b["templating"]["list"].pop(0))  # drops $datasource
    standin.error(standin.fails(), "storage.json", "$datasource", "not a template variable")


def test_missing_password_file_fails_naming_the_variable(standin):
    standin.password_file.unlink()
    standin.error(standin.fails(), "GF_SECURITY_ADMIN_PASSWORD__FILE", str(standin.password_file))


def test_empty_password_file_fails(standin):
    standin.password_file.write_text("\n")
    standin.error(standin.fails(), "GF_SECURITY_ADMIN_PASSWORD__FILE", "is empty")


def test_datasource_without_type_fails(standin):
    standin.edit_yaml("datasources/datasources.yml",
                      lambda doc: next(d for d in doc["datasources"] if d["name"] == "Loki").pop("type"))
    standin.error(standin.fails(), "datasources.yml", "(Loki) has no type")


def test_two_default_datasources_fail(standin):
    standin.edit_yaml("datasources/datasources.yml", lambda doc: [d.update(isDefault=True) for d in doc["datasources"]])
    standin.error(standin.fails(), "datasources.yml", "only one datasource per organization can be marked as default")


def test_missing_dashboards_path_fails(standin):
    shutil.rmtree(standin.dash)
    standin.error(standin.fails(), "dashboards.yml", "options.path", str(standin.dash), "not a directory")


def test_datasource_health_queries_the_datasource_url(standin, prometheus, loki, tmp_path):
    """As Grafana's: each datasource's health is one query to its URL
    (Prometheus 1+1, Loki vector(1)+vector(1)); a URL where nothing listens
    answers 400 with status ERROR and the plugin's message."""
    closed = f"http://127.0.0.1:{free_port()}"
    standin.point_datasources({"ybbench-prometheus": prometheus.url, "ybbench-loki": closed})
    standin.serve()
    code, got = standin.get("/api/datasources/uid/ybbench-prometheus/health", "admin", standin.password)
    assert (code, got) == (200, {"status": "OK", "message": "Successfully queried the Prometheus API."})
    code, got = standin.get("/api/datasources/uid/ybbench-loki/health", "admin", standin.password)
    assert code == 400 and got["status"] == "ERROR", got
    assert got["message"].startswith("There was an error returned querying the Loki API.: ") and closed in got["message"]
    assert standin.get("/api/datasources/uid/ybbench-loki/health", "admin", "wrong")[0] == 401
    assert standin.get("/api/datasources/uid/no-such-uid/health", "admin", standin.password)[0] == 500
    standin.stop()
    # The same Loki URL fixed: healthy (the error above was the URL's, not Loki's).
    fixed = Standin(tmp_path / "fixed")
    fixed.point_datasources({"ybbench-loki": loki.url})
    try:
        fixed.serve()
        code, got = fixed.get("/api/datasources/uid/ybbench-loki/health", "admin", fixed.password)
        assert (code, got) == (200, {"status": "OK", "message": "Successfully queried the Loki API."})
    finally:
        fixed.kill()


def test_the_history_datasource_health_connects_as_its_user(standin, postgres, tmp_path):
    """As Grafana's PostgreSQL plugin: the health check connects with the
    datasource's user, database and the password from its $__file{...}
    (the secrets volume's file), and runs a statement; a wrong password
    answers 400 with PostgreSQL's reason. The password is in no log line."""
    made = new_store_database(postgres, tmp_path)
    password = made["password"]
    standin.point_history("127.0.0.1", postgres.port, made["db"], made["reader"], password)
    standin.serve()
    code, got = standin.get("/api/datasources/uid/ybbench-history/health", "admin", standin.password)
    assert (code, got) == (200, {"status": "OK", "message": "Database Connection OK"})
    standin.history_password_file.write_text("wrong-" + password)  # read at start: restart to see it
    log = standin.stop()
    standin.serve()
    code, got = standin.get("/api/datasources/uid/ybbench-history/health", "admin", standin.password)
    assert code == 400 and got["status"] == "ERROR" and "password authentication failed" in got["message"], got
    log += standin.stop()
    assert password not in log


def test_a_missing_file_named_by_file_expansion_fails(standin):
    standin.history_password_file.unlink()
    standin.error(standin.fails(), "datasources.yml", "$__file{", "history_grafana_password", "cannot read it")


def test_doctor_checks_each_provisioned_datasources_plugin(standin, monkeypatch):
    """doctor's `grafana plugin <type>`, through Grafana's plugins API: the
    three types the stack provisions are loaded; a datasource provisioned
    for a plugin this Grafana does not have (and, with preinstall off, will
    not download) fails naming it, the others still ok."""
    from ybbench.doctor import grafana as doctor_grafana

    standin.serve()
    url, auth = f"http://127.0.0.1:{standin.port}", ("admin", standin.password)
    got = {c.name: c for c in doctor_grafana.plugins(url, auth)}
    assert {n: c.status for n, c in got.items()} == {
        "grafana plugin grafana-postgresql-datasource": "ok", "grafana plugin loki": "ok",
        "grafana plugin prometheus": "ok"}
    standin.stop()

    def add(doc):
        doc["datasources"].append({"name": "ClickHouse", "uid": "extra-clickhouse", "type": "grafana-clickhouse-datasource",
                                   "access": "proxy", "url": "http://127.0.0.1:1"})
    standin.edit_yaml("datasources/datasources.yml", add)
    monkeypatch.setattr(doctor_grafana, "DATASOURCES", standin.prov / "datasources" / "datasources.yml")
    standin.serve()
    got = {c.name: c for c in doctor_grafana.plugins(url, auth)}
    bad = got["grafana plugin grafana-clickhouse-datasource"]
    assert bad.status == "fail" and "HTTP 404" in bad.found and "downloads none" in bad.todo, bad
    assert [c.status for n, c in got.items() if n != bad.name] == ["ok"] * 3
