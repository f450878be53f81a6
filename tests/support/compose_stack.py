"""The compose stack under test: a Docker engine (started here when none
runs, and stopped again), the stand-in images (tests/compose/images), and
the project's root compose.yaml (which includes compose/docker-compose.yml)
run unchanged with the test-only tests/compose/override.yml, on an internal
network; from the repository or from a copy of it owned by another user."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .stack import REPO, run_checked, wait_until

COMPOSE_FILE = REPO / "compose" / "docker-compose.yml"
# What a user runs at the repository root: it includes COMPOSE_FILE.
ROOT_FILE_NAME = "compose.yaml"
OVERRIDE_PATH = Path("tests") / "compose" / "override.yml"
ROOT_FILE = REPO / ROOT_FILE_NAME
OVERRIDE = REPO / OVERRIDE_PATH
BUILD_IMAGES = REPO / "tests" / "compose" / "images" / "build.sh"
# Its own project name: the tests never touch a user's `ybbench` project.
PROJECT = "ybbench-test"
NETWORK = f"{PROJECT}_ybbench"
# Where the dockerd started here runs its own containerd.
CONTAINERD_RUN = "/var/run/docker/containerd"


def docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


class Engine:
    """dockerd: the one already running, or one started here."""

    def __init__(self):
        self.proc = None
        if docker_answers():
            return
        if not shutil.which("dockerd"):
            raise RuntimeError("no Docker engine: install Debian's docker.io (native/install-deps.sh does)")
        self._start()

    def _start(self) -> None:
        self.log = Path(tempfile.mkdtemp(prefix="ybbench-dockerd-")) / "dockerd.log"
        with open(self.log, "w") as f:
            self.proc = subprocess.Popen(["dockerd"], stdout=f, stderr=subprocess.STDOUT)
        wait_until(docker_answers, f"dockerd to answer (log: {self.log})", timeout=60, interval=0.5)

    def restart(self) -> bool:
        """Kills a deadlocked engine started here and starts another (its
        containers, not live-restored, stop); False for one found running."""
        if not self.proc:
            return False
        self._kill()
        self._start()
        return True

    def _kill(self) -> None:
        self.proc.kill()
        self.proc.wait(60)
        # Its containerd too, and the pid file: a zombie's pid (where pid 1 reaps none) would pass for a
        # containerd still running, and the next dockerd would wait on it.
        subprocess.run(["pkill", "-KILL", "-f", f"containerd --config {CONTAINERD_RUN}/containerd.toml"])
        Path(CONTAINERD_RUN, "containerd.pid").unlink(missing_ok=True)

    def stop(self) -> None:
        if self.proc:
            self.proc.terminate()
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:  # deadlocked: it cannot stop its containers
                self._kill()


# Every profile the compose stack tests start: `down` takes the services of the profiles it is given only.
EVERY_PROFILE = ("--profile", "bench", "--profile", "pg", "--profile", "expand")


def take_down(engine: Engine, composes, projects=(PROJECT,)) -> None:
    """A module's clean-up: the projects' containers killed one at a time,
    then `compose(*profiles, "down", "-v", "--remove-orphans")` for each
    (compose, profiles) in `composes`. Debian 12's dockerd 20.10.24
    can deadlock when containers on a network exit at once (libnetwork's
    processEndpointDelete against getSvcRecords: moby/moby#46661, fixed in
    20.10.27), and `down` stops a service's containers at once: a cold
    run here hung there for good. If the engine deadlocks anyway, one started here is
    restarted and the downs run again."""
    def run():
        for project in projects:
            ids = subprocess.run(["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project={project}"],
                                 capture_output=True, text=True, timeout=60).stdout.split()
            for cid in ids:
                subprocess.run(["docker", "kill", cid], capture_output=True, timeout=60)
        for compose, profiles in composes:
            compose(*profiles, "down", "-v", "--remove-orphans", check=False, timeout=180)
    try:
        run()
    except subprocess.TimeoutExpired as e:
        if not engine.restart():
            raise RuntimeError(f"the Docker engine stopped answering ({e.cmd}): restart dockerd") from e
        run()


def build_images() -> dict[str, str]:
    """The stand-in images' tags, YBT_<NAME>_IMAGE -> tag."""
    out = run_checked([str(BUILD_IMAGES)], timeout=3600).stdout
    return dict(line.split("=", 1) for line in out.split())


@dataclass
class K6Run:
    code: int
    output: str

    @property
    def counts(self) -> dict[str, int]:
        """Statements per op, from the summary table k6 prints."""
        return {m[0]: int(m[1]) for m in re.findall(r"^  (insert|select|update|scan) +(\d+) ", self.output, re.M)}

    @property
    def errors(self) -> tuple[int, str]:
        m = re.search(r"^  errors (\d+)(?: \(SQLSTATE class ([^)]*)\))?  rows written (\d+)", self.output, re.M)
        assert m, f"no summary in k6's output:\n{self.output[-3000:]}"
        return int(m[1]), m[2] or ""

    @property
    def rows_written(self) -> int:
        return int(re.search(r"rows written (\d+)", self.output)[1])


def owned_copy(dest: Path, uid: int) -> Path:
    """The repository's files (tracked and untracked, not ignored) copied to
    DEST and owned by UID: a checkout of a user who is not root."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    for path in [dest, *dest.rglob("*")]:
        os.lchown(path, uid, uid)
    return dest


class Compose:
    """`docker compose -f compose.yaml -f tests/compose/override.yml` at the
    root of the repository, or of a copy of it (`root`)."""

    def __init__(self, images: dict[str, str], root: Path = REPO):
        # Only what the test names reaches Compose: no workload knob of the
        # caller's shell leaks into the runs.
        self.env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG")}
        self.env.update(images)
        self.root = root

    @staticmethod
    def command(*args: str, root: Path = REPO) -> list[str]:
        return ["docker", "compose", "-p", PROJECT, "-f", str(root / ROOT_FILE_NAME), "-f", str(root / OVERRIDE_PATH),
                *args]

    @property
    def files_env(self) -> dict[str, str]:
        """The project and files, for `docker compose` run by ybbench's events."""
        return {"COMPOSE_FILE": f"{self.root / ROOT_FILE_NAME}:{self.root / OVERRIDE_PATH}",
                "COMPOSE_PROJECT_NAME": PROJECT}

    def __call__(self, *args: str, env: dict | None = None, check: bool = True, timeout: float = 600):
        p = subprocess.run(self.command(*args, root=self.root), cwd=self.root, env={**self.env, **(env or {})},
                           capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
        return p

    def popen(self, *args: str, env: dict | None = None) -> subprocess.Popen:
        return subprocess.Popen(self.command(*args, root=self.root), cwd=self.root, env={**self.env, **(env or {})},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                stdin=subprocess.DEVNULL)

    def k6(self, service: str, profile: str, testid: str, **knobs) -> K6Run:
        """The README's command: `docker compose --profile P run --rm k6`."""
        p = self(*self.k6_args(service, profile), env=self.k6_env(testid, knobs), check=False)
        return K6Run(p.returncode, p.stdout + p.stderr)

    @staticmethod
    def k6_args(service: str, profile: str) -> list[str]:
        return ["--profile", profile, "run", "--rm", service]

    @staticmethod
    def k6_env(testid: str, knobs: dict) -> dict:
        return {"TESTID": testid, **{k: str(v) for k, v in knobs.items()}}

    def containers(self, all_: bool = False, one_off: bool = True) -> list[dict]:
        """`docker inspect` of the project's containers: running ones, or
        all; with or without the one-off containers of `compose run`."""
        ids = subprocess.run(["docker", "ps", "-q", *(["-a"] if all_ else []), "--filter",
                              f"label=com.docker.compose.project={PROJECT}"],
                             capture_output=True, text=True, check=True).stdout.split()
        if not ids:
            return []
        found = json.loads(subprocess.run(["docker", "inspect", *ids], capture_output=True, text=True,
                                          check=True).stdout)
        return [c for c in found if one_off or c["Config"]["Labels"].get("com.docker.compose.oneoff") != "True"]

    @staticmethod
    def service_of(container: dict) -> str:
        return container["Config"]["Labels"]["com.docker.compose.service"]

    def address(self, service: str) -> str:
        """The service's address on the internal network (no port is
        published on an internal network; the host reaches the bridge)."""
        for c in self.containers(one_off=False):
            if self.service_of(c) == service:
                return c["NetworkSettings"]["Networks"][NETWORK]["IPAddress"]
        raise LookupError(f"no running container of {service}")

    def ysql(self, query: str) -> str:
        """ysqlsh inside yb-tserver-1, as the compose healthcheck runs it."""
        return self("exec", "-T", "yb-tserver-1", "ysqlsh", "-h", "127.0.0.1", "-p", "5433", "-U", "yugabyte",
                    "-XAtc", query).stdout.strip()

    def pg(self, query: str) -> str:
        """psql inside the pg baseline's container, on its Unix socket."""
        return self("exec", "-T", "postgres", "psql", "-U", "ybbench", "-d", "ybbench", "-XAtc", query).stdout.strip()


class Api:
    """JSON over HTTP to a container's address."""

    def __init__(self, base: str):
        self.base = base

    def get(self, path: str, **params) -> dict:
        url = f"{self.base}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
        with urllib.request.urlopen(url, timeout=20) as r:
            return json.load(r)


class PromApi(Api):
    def query(self, promql: str) -> list[dict]:
        body = self.get("/api/v1/query", query=promql)
        assert body["status"] == "success", body
        return body["data"]["result"]

    def value(self, promql: str) -> float | None:
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def targets(self) -> list[dict]:
        return self.get("/api/v1/targets", state="active")["data"]["activeTargets"]


class LokiApi(Api):
    def lines(self, selector: str, since: str = "1h") -> list[str]:
        body = self.get("/loki/api/v1/query_range", query=selector, limit=5000, since=since)
        return [line for stream in body["data"]["result"] for _, line in stream["values"]]

    def label_values(self, label: str) -> list[str]:
        return self.get(f"/loki/api/v1/label/{label}/values", since="1h").get("data", [])


def eventually(check, what: str, timeout: float = 60):
    return wait_until(check, what, timeout=timeout, interval=1)
