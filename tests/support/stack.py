"""The native test stack: real PostgreSQL, Prometheus, node_exporter and k6
processes on 127.0.0.1, and an HTTP server that serves captured YugabyteDB
metrics. Nothing here listens beyond loopback."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from ybbench.local.pglocal import PG_BIN, Postgres, free_port, run_checked

from ..compose.images.yugabytedb.yb_standin import metrics_server

REPO = Path(__file__).resolve().parents[2]
# Real YugabyteDB 2.23.1 scrapes: test data kept in the repository
# (tests/data/yugabytedb-2.23.1/README.md says where they come from).
CAPTURES = REPO / "tests" / "data" / "yugabytedb-2.23.1"
# What stays outside the repository (YugabyteDB's Grafana dashboard 12620):
# the shared folder next to it, or $YBBENCH_SHARED; tests that need it skip
# without it.
SHARED = Path(os.environ.get("YBBENCH_SHARED", REPO.parent / "shared"))
BIN = Path(os.environ.get("YBBENCH_CACHE", Path.home() / ".cache" / "ybbench")) / "bin"
_built: set[str] = set()


def built(*modules: str) -> Path:
    """BIN, once native/build.sh has built these modules (folders of native/,
    or its groups core and late):
    it waits for a build of them already under way (make test's background
    one), is a no-op when they are built, and builds them otherwise
    (YBBENCH_NO_BUILD=1: use the cached ones as they are)."""
    todo = [m for m in modules if m not in _built]
    if todo and os.environ.get("YBBENCH_NO_BUILD") != "1":
        p = subprocess.run([str(REPO / "native" / "build.sh"), *todo], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        assert p.returncode == 0, f"native/build.sh {' '.join(todo)} failed:\n{p.stderr[-4000:]}"
    _built.update(todo)
    return BIN


def pgpass(path: Path, port: int, db: str, user: str, password: str) -> Path:
    """A PGPASSFILE for one database on 127.0.0.1 (owner-only, as libpq
    requires), so a password reaches psql and ybbench off their command line."""
    path.write_text(f"127.0.0.1:{port}:{db}:{user}:{password}\n")
    path.chmod(0o600)
    return path


def wait_until(check, what: str, timeout: float = 60.0, interval: float = 0.25):
    """Poll `check` until it returns a truthy value; fail naming `what`."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as e:  # noqa: BLE001 - reported below if it persists
            last = e
        time.sleep(interval)
    raise TimeoutError(f"timed out waiting for {what}" + (f": {last}" if last else ""))


class Process:
    """A background process whose output goes to a log file."""

    def __init__(self, name: str, cmd: list[str], log_dir: Path, env: dict | None = None, user: str | None = None):
        self.name = name
        self.log = log_dir / f"{name}.log"
        if user:
            cmd = ["runuser", "-u", user, "--", *cmd]
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    def tail(self, n: int = 20) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])

    def serves(self, url: str) -> bool:
        """True once `url` answers 200; raises with the log's tail if the
        process has exited (wait_until reports it)."""
        if not self.alive():
            raise RuntimeError(f"{self.name} exited:\n{self.tail()}")
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200


class CaptureServer:
    """One captured /prometheus-metrics page on its own loopback port, as
    one YugabyteDB endpoint (master, tserver, ysql or ycql) would serve it;
    the same server as the compose stack's YugabyteDB stand-in."""

    def __init__(self, capture: Path, host: str = "127.0.0.1", port: int = 0, path: str = "/prometheus-metrics",
                 advance: float = 0.0, statements=None, planted: dict[str, float] | None = None, tls=None):
        self.server = metrics_server(capture, host, port, path, advance, statements, planted=planted, tls=tls)
        self.address = f"{host}:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()  # frees the address for the next server on it


class Prometheus:
    """A Prometheus running the project's prometheus.yml unchanged: the
    config and rules are linked in, only the target files are rendered."""

    def __init__(self, root: Path, targets_args: list[str], config: Path = REPO / "prometheus" / "prometheus.yml",
                 remote_write: bool = True):
        root.mkdir(parents=True, exist_ok=True)
        (root / "prometheus.yml").symlink_to(config)  # another only for a benchmark's reference
        (root / "rules").symlink_to(REPO / "prometheus" / "rules")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        subprocess.run(
            ["python3", "-m", "ybbench", "targets", "--cluster", "native", "--prometheus", f"127.0.0.1:{self.port}",
             "--out", str(root / "targets"), *targets_args],
            check=True, capture_output=True, cwd=REPO,
        )
        self.proc = Process(
            "prometheus",
            [str(BIN / "prometheus"), f"--config.file={root / 'prometheus.yml'}", f"--storage.tsdb.path={root / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}",
             *(["--web.enable-remote-write-receiver"] if remote_write else [])],  # off: doctor's planted fault
            root,
        )
        wait_until(lambda: self.proc.serves(f"{self.url}/-/ready"), "Prometheus to be ready", timeout=60)

    def api(self, path: str, **params) -> dict:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=30) as r:
            body = json.load(r)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, promql: str) -> list[dict]:
        return self.api("query", query=promql)["result"]

    def all_targets_up(self, count: int) -> bool:
        """True once `count` targets are active and each has been scraped
        fine; otherwise raises with what is down (wait_until reports it)."""
        active = self.api("targets", state="active")["activeTargets"]
        down = [f"{t['scrapeUrl']}: {t['health']} {t['lastError']}" for t in active if t["health"] != "up"]
        if len(active) != count or down:
            raise AssertionError(f"{len(active)} of {count} targets active; not up: {down}")
        return True

    def stop(self) -> None:
        self.proc.stop()


class Loki:
    """Loki running compose/loki/loki.yml unchanged, with its LOKI_*
    variables set to loopback, free ports and a temporary folder."""

    def __init__(self, root: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, LOKI_LISTEN_ADDRESS="127.0.0.1", LOKI_HTTP_PORT=str(self.port),
                   LOKI_GRPC_PORT=str(free_port()), LOKI_DATA=str(root / "data"))
        config = REPO / "compose" / "loki" / "loki.yml"
        self.proc = Process("loki", [str(built("loki") / "loki"), f"-config.file={config}", "-config.expand-env=true"],
                            root, env=env)
        wait_until(lambda: self.proc.serves(f"{self.url}/ready"), "Loki to be ready", timeout=90)

    def lines(self, selector: str) -> list[str]:
        params = urllib.parse.urlencode({"query": selector, "limit": 5000, "since": "1h"})
        with urllib.request.urlopen(f"{self.url}/loki/api/v1/query_range?{params}", timeout=30) as r:
            body = json.load(r)
        return [line for stream in body["data"]["result"] for _, line in stream["values"]]

    def stop(self) -> None:
        self.proc.stop()
