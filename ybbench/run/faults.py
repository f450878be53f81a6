"""Faults and expansion during a run (seed 001): `ybbench run ... --event
AT:ACTION:SERVICE`, e.g. `20s:stop:yb-tserver-2`, `40s:start:yb-tserver-2`,
`60s:add:yb-tserver-4`.

Each event is a `docker compose` command on the compose stack (the project
and files of COMPOSE_PROJECT_NAME and COMPOSE_FILE, as `docker compose`
reads them; COMPOSE_FILE defaults to compose/docker-compose.yml), run AT
seconds after k6 starts while the load goes on. `add` starts a tserver of
the `expand` profile and writes its Prometheus target file, so Prometheus
scrapes it from then on; `remove` stops it and deletes the file. Every
event goes to results/<testid>/events.json and, with --loki, to Loki as
{job="ybbench", kind="event"}: the dashboards draw it as an annotation.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ybbench.core import logs
from ybbench.core.catalog import REPO
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.core.files import write_json

COMPOSE_FILE = REPO / "compose" / "docker-compose.yml"
# compose/docker-compose.yml mounts this folder as Prometheus' targets/.
TARGETS = REPO / "prometheus" / "targets" / "compose"
ACTIONS = {
    "stop": ["stop"],
    "start": ["start"],
    "kill": ["kill", "-s", "SIGKILL"],
    "restart": ["restart"],
    "add": ["--profile", "expand", "up", "-d", "--no-deps"],
    "remove": ["--profile", "expand", "rm", "-s", "-f"],
}
SERVICE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
TSERVER = re.compile(r"^yb-tserver-[0-9]+$")
# A tserver's endpoints and their export_type, as targets/yugabytedb.json.
TSERVER_EXPORTS = {9000: "tserver_export", 12000: "cql_export", 13000: "ysql_export"}


@dataclass
class Event:
    at: float
    action: str
    service: str

    def __str__(self) -> str:
        return f"{self.action} {self.service} at {self.at:g} s"


def parse(texts: list[str], duration: str | None) -> list[Event]:
    """The events in time order; each within DURATION when it is set."""
    duration_s = seconds("DURATION", duration) if duration else None
    events = []
    for text in texts:
        parts = text.split(":")
        if len(parts) != 3:
            raise UserError(f"--event {text!r}: expected AT:ACTION:SERVICE, e.g. 20s:stop:yb-tserver-2")
        at, action, service = parts
        if action not in ACTIONS:
            raise UserError(f"--event {text!r}: unknown action {action!r}; known: {', '.join(ACTIONS)}")
        if not SERVICE.match(service):
            raise UserError(f"--event {text!r}: {service!r} is not a compose service name")
        if action in ("add", "remove") and not TSERVER.match(service):
            raise UserError(f"--event {text!r}: {action} takes a tserver of the expand profile, e.g. yb-tserver-4")
        e = Event(seconds("--event", at), action, service)
        if duration_s is not None and e.at >= duration_s:
            raise UserError(f"--event {text!r}: at {e.at:g} s, not within the run's {duration_s:g} s")
        events.append(e)
    return sorted(events, key=lambda e: e.at)


def compose_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("COMPOSE_FILE", str(COMPOSE_FILE))
    return env


def _compose(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["docker", "compose", *args], env=compose_env(), capture_output=True, text=True,
                          timeout=timeout)


def check_compose(planned: list[Event] = ()) -> None:
    """Before the run: `docker compose` answers, the stack has a project,
    and every event names one of its services (compose itself answers a
    `stop` or `kill` of a service it does not have with success)."""
    try:
        p = _compose("ps", "--services")
        known = _compose("--profile", "*", "config", "--services")
    except (OSError, subprocess.TimeoutExpired) as e:
        raise UserError(f"--event needs `docker compose`: {e}") from None
    if p.returncode != 0:
        raise UserError(f"--event: `docker compose ps` failed: {(p.stderr or p.stdout).strip()[:300]}")
    services = set(known.stdout.split()) if known.returncode == 0 else set()
    for e in planned:
        if services and e.service not in services:
            raise UserError(f"--event {e.at:g}s:{e.action}:{e.service}: the compose project has no service "
                            f"{e.service!r} (it has {', '.join(sorted(services))})")


def running(service: str) -> bool:
    """Whether the engine has a running container of the service."""
    p = _compose("ps", "--status", "running", "--services", service)
    return p.returncode == 0 and service in p.stdout.split()


# What the engine must show after an action: a running container or none.
RUNS_AFTER = {"stop": False, "kill": False, "start": True, "restart": True, "add": True}


def target_file(service: str) -> Path:
    return TARGETS / f"yugabytedb-{service}.json"


def _write_targets(service: str) -> None:
    groups = [{"labels": {"export_type": kind, "node_prefix": "ybbench"}, "targets": [f"{service}:{port}"]}
              for port, kind in TSERVER_EXPORTS.items()]
    write_json(target_file(service), groups)  # atomic: Prometheus must never read half a file


def apply(e: Event) -> tuple[bool, str]:
    """Runs the event; ok only when compose succeeded and the engine shows
    its effect (compose exits 0 for a kill with no container to kill)."""
    try:
        if e.action in ("stop", "kill") and not running(e.service):
            return False, f"{e.service} was not running: nothing to {e.action}"
        p = _compose(*ACTIONS[e.action], e.service, timeout=300)
        out = (p.stdout + p.stderr).strip()
        if p.returncode != 0:
            return False, out
        if e.action in RUNS_AFTER and running(e.service) != RUNS_AFTER[e.action]:
            state = "running" if not RUNS_AFTER[e.action] else "not running"
            return False, f"{out}\n{e.service} is {state} after {e.action}".strip()
    except (OSError, subprocess.TimeoutExpired) as err:
        return False, str(err)
    if e.action == "add":
        _write_targets(e.service)
    elif e.action == "remove":
        target_file(e.service).unlink(missing_ok=True)
    return True, out


def to_loki(url: str, testid: str, records: list[dict]) -> None:
    """Each event that happened, at its time, as {job="ybbench",
    kind="event", testid, action, service}: the dashboards' annotation."""

    for r in records:
        if "time" in r:
            labels = {"job": "ybbench", "kind": "event", "testid": testid, "action": r["action"],
                      "service": r["service"]}
            logs.push(url, labels, [(int(r["time"] * 1e9), f"{r['action']} {r['service']}")])


class Schedule:
    """Runs the events on a thread, timed from start(); the records are
    events.json's content."""

    def __init__(self, events: list[Event], say=print):
        self.events, self.say, self.records = events, say, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self.t0 = time.time()
        if self.events:
            self.thread.start()

    def _run(self) -> None:
        for e in self.events:
            if self.stop.wait(max(0.0, self.t0 + e.at - time.time())):
                return
            started = time.time()
            ok, out = apply(e)
            self.records.append({"at_s": e.at, "action": e.action, "service": e.service, "time": started,
                                 "took_s": round(time.time() - started, 3), "ok": ok, "output": out[-2000:]})
            self.say(f"event: {e}{'' if ok else ' FAILED: ' + out[-300:]}")

    def finish(self) -> list[dict]:
        """After k6: events still due are not run; their absence is recorded."""
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join()
        done = {(r["at_s"], r["action"], r["service"]) for r in self.records}
        missed = [{"at_s": e.at, "action": e.action, "service": e.service, "ok": False,
                   "output": "not run: k6 had ended"} for e in self.events if (e.at, e.action, e.service) not in done]
        return self.records + missed
