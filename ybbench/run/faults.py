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

import json
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request
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
    "pause": ["pause"],
    "resume": ["unpause"],
    # Not compose commands: routes in the server's network namespace (netns.py).
    "partition": [],
    "heal": [],
}
SERVICE = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
TSERVER = re.compile(r"^yb-tserver-[0-9]+$")
# The YugabyteDB servers of the compose file: a partition's target and peers.
YB_SERVER = re.compile(r"^yb-(master|tserver)-[0-9]+$")
MASTER = re.compile(r"^yb-master-[0-9]+$")
# `kill:master-leader`: the master that leads when the event is due.
MASTER_LEADER = "master-leader"
# The masters' web port (YugabyteDB's --webserver_port default for yb-master).
MASTER_WEB_PORT = 7000
# A tserver's endpoints and their export_type, as targets/yugabytedb.json.
TSERVER_EXPORTS = {9000: "tserver_export", 12000: "cql_export", 13000: "ysql_export"}


@dataclass
class Event:
    at: float
    action: str
    service: str
    # The service it acted on when SERVICE names a role (master-leader).
    target: str | None = None

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
        if service == MASTER_LEADER and action != "kill":
            raise UserError(f"--event {text!r}: {MASTER_LEADER} is only for kill (kill:{MASTER_LEADER})")
        if action in ("partition", "heal") and not YB_SERVER.match(service):
            raise UserError(f"--event {text!r}: {action} takes a YugabyteDB server, e.g. yb-tserver-2 or yb-master-1")
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
        if e.service == MASTER_LEADER:
            if services and not [s for s in services if MASTER.match(s)]:
                raise UserError(f"--event {e.at:g}s:{e.action}:{e.service}: the compose project has no "
                                "yb-master-N service")
            continue
        if services and e.service not in services:
            raise UserError(f"--event {e.at:g}s:{e.action}:{e.service}: the compose project has no service "
                            f"{e.service!r} (it has {', '.join(sorted(services))})")


def running(service: str) -> bool:
    """Whether the engine has a running container of the service."""
    return _has_status(service, "running")


def paused(service: str) -> bool:
    """Whether the engine has a paused (frozen) container of the service."""
    return _has_status(service, "paused")


def _has_status(service: str, status: str) -> bool:
    p = _compose("ps", "--status", status, "--services", service)
    return p.returncode == 0 and service in p.stdout.split()


# What the engine must show after an action: a running container or none.
RUNS_AFTER = {"stop": False, "kill": False, "start": True, "restart": True, "add": True, "resume": True}


def _inspect(ids: list[str]) -> list[dict]:
    if not ids:
        return []
    p = subprocess.run(["docker", "inspect", *ids], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"docker inspect: {(p.stderr or p.stdout).strip()[:300]}")
    return json.loads(p.stdout)


def containers() -> dict[str, dict]:
    """The project's running service containers by service (`docker inspect`)."""
    p = _compose("ps", "-q")
    if p.returncode != 0:
        raise RuntimeError(f"docker compose ps: {(p.stderr or p.stdout).strip()[:300]}")
    found = {}
    for c in _inspect(p.stdout.split()):
        labels = c["Config"]["Labels"] or {}
        if labels.get("com.docker.compose.oneoff") != "True":
            found[labels.get("com.docker.compose.service", "")] = c
    return found


def _addresses(c: dict) -> dict[str, str]:
    """network name -> the container's IPv4 address on it."""
    return {n: v["IPAddress"] for n, v in (c["NetworkSettings"]["Networks"] or {}).items() if v.get("IPAddress")}


def master_leader() -> tuple[str | None, str]:
    """The master whose /api/v1/is-leader answers 200 with {"STATUS":"OK"}
    (YugabyteDB's src/yb/master/master-path-handlers.cc,
    HandleCheckIfLeader; a follower answers 503), asked at each running
    master's addresses; (None, why) unless exactly one leads."""
    leaders, said = [], []
    for service, c in sorted(containers().items()):
        if not MASTER.match(service):
            continue
        for ip in sorted(set(_addresses(c).values())):
            url = f"http://{ip}:{MASTER_WEB_PORT}/api/v1/is-leader"
            try:
                with urllib.request.urlopen(url, timeout=3) as r:
                    body = r.read().decode(errors="replace")
                    if r.status == 200 and json.loads(body) == {"STATUS": "OK"}:
                        leaders.append(service)
                    said.append(f"{service} {r.status} {body[:60]}")
            except urllib.error.HTTPError as e:
                said.append(f"{service} {e.code}")
            except (OSError, ValueError) as e:
                said.append(f"{service} {e}")
                continue
            break  # one answer per master
    if len(leaders) != 1:
        return None, f"{len(leaders)} masters lead ({'; '.join(said) or 'no running master'})"
    return leaders[0], "; ".join(said)


def _partition(e: Event) -> tuple[bool, str]:
    """Blackhole routes, in the server's network namespace, to every other
    running YugabyteDB server's address on the networks they share (heal:
    none of ours left); ok only when the namespace's routing table shows it."""
    from ybbench.run import netns
    found = containers()
    if e.service not in found:
        return False, f"{e.service} is not running: nothing to {e.action}"
    target = found[e.service]
    if target["State"].get("Paused"):
        return False, f"{e.service} is paused: resume it first"
    mine = _addresses(target)
    peers = sorted({ip for s, c in found.items() if s != e.service and YB_SERVER.match(s)
                    for n, ip in _addresses(c).items() if n in mine})
    before = netns.routes(target)
    if e.action == "partition":
        if before:
            return False, f"{e.service} is already partitioned from {', '.join(before)}"
        if not peers:
            return False, f"{e.service} shares no network with another running YugabyteDB server"
        after = netns.routes(target, add=peers)
        if sorted(after) != peers:
            return False, f"{e.service}: blackhole routes {after}, wanted {peers}"
        return True, f"{e.service} cut off from {', '.join(peers)} (blackhole routes in its network namespace)"
    if not before:
        return False, f"{e.service} is not partitioned: nothing to heal"
    after = netns.routes(target, delete=True)
    if after:
        return False, f"{e.service}: blackhole routes left after heal: {', '.join(after)}"
    return True, f"{e.service} reaches {', '.join(before)} again"


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
        if e.action in ("partition", "heal"):
            return _partition(e)
        service, said = e.service, ""
        if service == MASTER_LEADER:
            service, said = master_leader()
            if service is None:
                return False, f"no master leader to kill: {said}"
            e.target, said = service, f"{MASTER_LEADER} is {service} ({said})\n"
        if e.action in ("stop", "kill", "pause") and not running(service):
            return False, f"{said}{service} was not running: nothing to {e.action}"
        if e.action == "resume" and not paused(service):
            return False, f"{service} was not paused: nothing to resume"
        p = _compose(*ACTIONS[e.action], service, timeout=300)
        out = (said + p.stdout + p.stderr).strip()
        if p.returncode != 0:
            return False, out
        if e.action in RUNS_AFTER and running(service) != RUNS_AFTER[e.action]:
            state = "running" if not RUNS_AFTER[e.action] else "not running"
            return False, f"{out}\n{service} is {state} after {e.action}".strip()
        if e.action == "pause" and not paused(service):
            return False, f"{out}\n{service} is not paused after pause".strip()
    except (OSError, subprocess.TimeoutExpired, RuntimeError, ValueError) as err:
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
        if "time_unix_s" in r:
            # A role (master-leader) is labelled with the service it was.
            labels = {"job": "ybbench", "kind": "event", "testid": testid, "action": r["action"],
                      "service": r.get("target") or r["service"]}
            line = f"{r['action']} {r['service']}" + (f" ({r['target']})" if r.get("target") else "")
            logs.push(url, labels, [(int(r["time_unix_s"] * 1e9), line)])


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
            self.records.append({"at_s": e.at, "action": e.action, "service": e.service, "time_unix_s": started,
                                 "took_s": round(time.time() - started, 3), "ok": ok, "output": out[-2000:],
                                 **({"target": e.target} if e.target else {})})
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
