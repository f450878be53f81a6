"""The faults that leave a process alive (issue 23), without a compose
stack: `--event` parsing of partition, heal, pause, resume and
kill:master-leader; the master leader found from the masters' own
/api/v1/is-leader (served by the YugabyteDB stand-in's code, as YugabyteDB
answers it); and the partition's routes in a network namespace of its own.
tests/compose/test_compose_faults.py runs them for real."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ybbench.core.errors import UserError
from ybbench.run import faults as events
from ybbench.run import netns

from ..compose.images.yugabytedb.yb_standin import metrics_server
from ..support import shared
from ..support.stack import REPO, free_port


def test_the_new_actions_parse_in_time_order():
    got = events.parse(["36s:kill:master-leader", "3s:partition:yb-tserver-2", "16s:heal:yb-tserver-2",
                        "20s:pause:yb-tserver-3", "33s:resume:yb-tserver-3", "40s:partition:yb-master-2"], "50s")
    assert [(e.at, e.action, e.service) for e in got] == [
        (3, "partition", "yb-tserver-2"), (16, "heal", "yb-tserver-2"), (20, "pause", "yb-tserver-3"),
        (33, "resume", "yb-tserver-3"), (36, "kill", "master-leader"), (40, "partition", "yb-master-2")]
    # pause and resume take any service (a frozen Prometheus is a fault too).
    assert events.parse(["1s:pause:prometheus"], None)[0].service == "prometheus"


@pytest.mark.parametrize("text, says", [
    ("2s:partition:prometheus", "partition takes a YugabyteDB server"),
    ("2s:heal:k6", "heal takes a YugabyteDB server"),
    ("2s:pause:master-leader", "master-leader is only for kill"),
    ("2s:stop:master-leader", "master-leader is only for kill"),
    ("2s:freeze:yb-tserver-2", "unknown action 'freeze'"),
    ("60s:pause:yb-tserver-2", "not within the run's 50 s"),
    ("2s:partition", "expected AT:ACTION:SERVICE"),
])
def test_bad_new_events_are_refused_before_the_run(text, says):
    with pytest.raises(UserError, match=says):
        events.parse([text], "50s")


def test_a_new_event_is_not_a_command_run_inside_a_container():
    """Partition and heal run a helper container in the server's network
    namespace, pause and resume are compose commands: nothing is exec'd in
    a service's container (test_compose_images.py holds ybbench to that)."""
    assert not [a for a in events.ACTIONS.values() if "exec" in a]
    assert events.ACTIONS["pause"] == ["pause"] and events.ACTIONS["resume"] == ["unpause"]


LEADER, FOLLOWER = (200, b'{"STATUS":"OK"}'), (503, b"{")


def _serve(monkeypatch, tmp_path, answers: dict[str, tuple[int, bytes] | None]) -> list:
    capture = tmp_path / "master.txt"
    capture.write_text("# TYPE up gauge\nup 1\n")
    port = free_port()
    monkeypatch.setattr(events, "MASTER_WEB_PORT", port)
    found, servers = {}, []
    for i, (name, answer) in enumerate(answers.items(), start=2):
        ip = f"127.0.0.{i}"
        found[name] = {"Config": {"Labels": {}}, "NetworkSettings": {"Networks": {"ybbench": {"IPAddress": ip}}}}
        if answer is not None:  # None: a master that does not answer
            servers.append(metrics_server(capture, ip, port, more={
                "/api/v1/is-leader": lambda a=answer: (a[0], "application/json", a[1])}))
    monkeypatch.setattr(events, "containers", lambda: found)
    return servers


@pytest.mark.parametrize("answers, leader", [
    ({"yb-master-1": FOLLOWER, "yb-master-2": LEADER, "yb-master-3": FOLLOWER}, "yb-master-2"),
    ({"yb-master-1": None, "yb-master-2": FOLLOWER, "yb-master-3": LEADER}, "yb-master-3"),
    # The controls: no leader, two leaders, and a 200 that is not YugabyteDB's answer.
    ({"yb-master-1": FOLLOWER, "yb-master-2": FOLLOWER, "yb-master-3": FOLLOWER}, None),
    ({"yb-master-1": LEADER, "yb-master-2": LEADER, "yb-master-3": FOLLOWER}, None),
    ({"yb-master-1": (200, b"{"), "yb-master-2": FOLLOWER, "yb-master-3": FOLLOWER}, None),
])
def test_the_master_leader_is_the_one_is_leader_says(monkeypatch, tmp_path, answers, leader):
    servers = _serve(monkeypatch, tmp_path, answers)
    try:
        found, why = events.master_leader()
    finally:
        for s in servers:
            s.shutdown()
    assert found == leader, why
    if leader is None:
        assert "masters lead" in why


def test_kill_master_leader_fails_when_no_master_leads(monkeypatch, tmp_path):
    servers = _serve(monkeypatch, tmp_path, {"yb-master-1": FOLLOWER, "yb-master-2": FOLLOWER})
    e = events.Event(1.0, "kill", "master-leader")
    try:
        ok, out = events.apply(e)
    finally:
        for s in servers:
            s.shutdown()
    assert not ok and out.startswith("no master leader to kill: 0 masters lead") and e.target is None


def test_the_partition_helper_adds_and_removes_only_its_own_blackhole_routes():
    """The helper's rtnetlink code in a new network namespace: blackhole
    routes with our protocol number, listed back, and heal removes those and
    leaves a route of anyone else's (the control)."""
    shared.need_tool(os.geteuid() == 0 and shutil.which("unshare") is not None, "needs root and unshare(1)")
    script = ('ip route add blackhole 10.9.9.9 && python3 -c "$0" add 10.1.2.3 10.1.2.4 && '
              'python3 -c "$0" list && python3 -c "$0" del && ip route')
    p = subprocess.run(["unshare", "-n", "sh", "-c", script, netns.HELPER], capture_output=True, text=True,
                       cwd=REPO, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[:3] == ['["10.1.2.3", "10.1.2.4"]', '["10.1.2.3", "10.1.2.4"]', "[]"], lines
    assert lines[3:] == ["blackhole 10.9.9.9 "], lines
