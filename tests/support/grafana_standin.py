"""The Grafana stand-in image's program (tests/compose/images/grafana), run
natively on a copy of grafana/ laid out as the compose file mounts it."""

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

from .stack import REPO, free_port, wait_until

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
        # The secrets volume's files that provisioning reads ($__file{...}), here in a folder of their own;
        # the history store's password is a throwaway until point_history() names a real one.
        self.secrets = tmp / "secrets"
        self.secrets.mkdir()
        self.history_password_file = self.secrets / "history_grafana_password"
        self.history_password_file.write_text(secrets.token_urlsafe(18))
        self.edit_yaml("datasources/datasources.yml", self.read_secrets_here)
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

    def read_secrets_here(self, doc):
        """$__file{<the secrets mount>/NAME} -> $__file{<self.secrets>/NAME}; each such file must exist there."""
        prefix = f"$__file{{{MOUNTS['secrets']}/"
        for ds in doc["datasources"]:
            for key, value in (ds.get("secureJsonData") or {}).items():
                if isinstance(value, str) and value.startswith(prefix):
                    ds["secureJsonData"][key] = value.replace(prefix, f"$__file{{{self.secrets}/", 1)

    def point_history(self, host: str, port: int, database: str, user: str, password: str) -> None:
        """The history datasource at a PostgreSQL of the tests (compose's history-db:5432 here)."""
        def change(doc):
            (ds,) = [d for d in doc["datasources"] if d["uid"] == "ybbench-history"]
            ds["url"], ds["user"], ds["jsonData"]["database"] = f"{host}:{port}", user, database
        self.edit_yaml("datasources/datasources.yml", change)
        self.history_password_file.write_text(password + "\n")

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
            try:
                return e.code, json.loads(e.read())
            except ValueError:
                return e.code, None

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
        return self.proc.communicate(timeout=10)[1]

    def point_datasources(self, urls: dict[str, str]) -> None:
        """The provisioned datasources' URLs, by uid (compose's http://prometheus:9090 ... here)."""
        def change(doc):
            for ds in doc["datasources"]:
                ds["url"] = urls.get(ds["uid"], ds["url"])
        self.edit_yaml("datasources/datasources.yml", change)

    def serve(self) -> None:
        """Start it and wait until it answers /api/health."""
        self.popen()

        def healthy():
            if self.proc.poll() is not None:  # fail now, not at the timeout
                pytest.fail(f"the stand-in exited {self.proc.returncode}:\n{self.proc.communicate()[1]}")
            return self.get("/api/health")[0] == 200
        wait_until(healthy, "stand-in /api/health", timeout=30)

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()
