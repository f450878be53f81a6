"""The Grafana stand-in image's program (tests/compose/images/grafana), run
natively: it loads the repository's real provisioning and dashboards with the
env the compose file gives Grafana, and refuses to start on what would break
real Grafana, naming the file and the problem."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from ..support.stack import REPO, free_port, wait_until

SCRIPT = REPO / "tests" / "compose" / "images" / "grafana" / "grafana_standin.py"
GRAFANA = yaml.safe_load((REPO / "compose" / "docker-compose.yml").read_text())["services"]["grafana"]
MOUNTS = dict(v.split(":")[:2] for v in GRAFANA["volumes"])  # host path -> container path


class Standin:
    """A copy of grafana/ laid out in a temp dir the way the compose mounts it."""

    def __init__(self, tmp: Path):
        self.prov = tmp / "provisioning"
        self.dash = tmp / "dashboards"
        shutil.copytree(REPO / "grafana" / "provisioning", self.prov)
        shutil.copytree(REPO / "grafana" / "dashboards", self.dash)
        self.data = tmp / "data"
        self.data.mkdir()
        self.password = secrets.token_urlsafe(18)
        self.password_file = tmp / "grafana_admin_password"
        self.password_file.write_text(self.password + "\n")
        self.password_file.chmod(0o600)
        self.edit_yaml("dashboards/dashboards.yml", self.point_provider_at_copy)
        self.port = free_port()
        # The compose env, with the secret's path mapped to the temp file.
        self.env = {k: str(v) for k, v in GRAFANA["environment"].items()}
        assert self.env["GF_SECURITY_ADMIN_PASSWORD__FILE"].startswith(MOUNTS["secrets"] + "/")
        self.env.update(GF_SECURITY_ADMIN_PASSWORD__FILE=str(self.password_file), GF_PATHS_PROVISIONING=str(self.prov),
                        GF_PATHS_DATA=str(self.data), GF_SERVER_HTTP_PORT=str(self.port),
                        GF_SERVER_HTTP_ADDR="127.0.0.1")
        self.proc: subprocess.Popen | None = None

    def point_provider_at_copy(self, doc):
        """The provider must read where compose mounts ../grafana/dashboards; then read the copy."""
        target = MOUNTS["../grafana/dashboards"]
        providers = [p for p in doc["providers"] if p["options"]["path"] == target]
        assert providers, f"no dashboard provider reads {target}, where compose mounts ../grafana/dashboards"
        for p in providers:
            p["options"]["path"] = str(self.dash)

    def edit_yaml(self, rel: str, change):
        path = self.prov / rel
        doc = yaml.safe_load(path.read_text())
        change(doc)
        path.write_text(yaml.safe_dump(doc, sort_keys=False))

    def edit_board(self, name: str, change, to: str | None = None):
        board = json.loads((self.dash / name).read_text())
        change(board)
        (self.dash / (to or name)).write_text(json.dumps(board))

    def popen(self) -> subprocess.Popen:
        env = {k: v for k, v in os.environ.items() if not k.startswith("GF_")} | self.env
        self.proc = subprocess.Popen([sys.executable, str(SCRIPT)], env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        return self.proc

    def fails(self) -> str:
        """Start it, expect a non-zero exit before it serves; return its stderr."""
        try:
            out, err = self.popen().communicate(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            pytest.fail(f"the stand-in kept running: {self.proc.communicate()[1]}")
        assert self.proc.returncode != 0, f"the stand-in exited 0:\n{err}"
        assert "Traceback" not in err, err
        return err

    @staticmethod
    def error(err: str, *words: str) -> str:
        """The stand-in's error line holding all `words`."""
        lines = [l for l in err.splitlines() if "error:" in l and all(w in l for w in words)]
        assert lines, f"no error line with {words}:\n{err}"
        return lines[0]

    def get(self, path: str, user: str | None = None, password: str | None = None):
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}")
        if user is not None:
            req.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, json.load(r)
        except urllib.error.HTTPError as e:
            return e.code, None

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.communicate(timeout=10)[1]


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
    standin.edit_yaml("datasources/datasources.yml", lambda doc: doc["datasources"][-1].pop("type"))
    standin.error(standin.fails(), "datasources.yml", "(Loki) has no type")


def test_two_default_datasources_fail(standin):
    standin.edit_yaml("datasources/datasources.yml", lambda doc: [d.update(isDefault=True) for d in doc["datasources"]])
    standin.error(standin.fails(), "datasources.yml", "only one datasource per organization can be marked as default")


def test_missing_dashboards_path_fails(standin):
    shutil.rmtree(standin.dash)
    standin.error(standin.fails(), "dashboards.yml", "options.path", str(standin.dash), "not a directory")
