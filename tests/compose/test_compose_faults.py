"""Faults that leave a process alive, on the compose stack (issue 23):
`ybbench run --event` partitions a tserver from the other YugabyteDB
servers and heals it, freezes another and resumes it, and kills whichever
master leads, under sql-inserts through three tservers; each is in
events.json, Loki and Prometheus, and `ybbench verify` then finds every
acknowledged write. Events that cannot happen (a heal without a partition,
a resume of a service not paused) are failed events; a service the project
lacks is refused before the run.

The stack is tests/compose's (README.md there), as test_compose_stack.py
runs it, from a copy of the repository owned by a user who is not root;
this module starts its own and removes it at the end (the same project,
`ybbench-test`: run one module at a time)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

import pytest

from ..support.compose_stack import (EVERY_PROFILE, Compose, Engine, LokiApi, PromApi, build_images, eventually,
                                     owned_copy, take_down)
from ..support.stack import BIN

USER_UID = 12345
MASTERS = ("yb-master-1", "yb-master-2", "yb-master-3")


def new_testid(kind: str) -> str:
    return f"{kind}{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def stack(compose_binaries, tmp_path_factory):
    engine = Engine()
    c = Compose(build_images(), root=owned_copy(tmp_path_factory.mktemp("checkout"), USER_UID))
    downs = [(c, EVERY_PROFILE)]
    take_down(engine, downs)  # what an earlier, interrupted run left
    try:
        c("up", "-d", "--wait", "--wait-timeout", "300", timeout=900)
        yield c
    finally:
        take_down(engine, downs)
        engine.stop()


@pytest.fixture(scope="module")
def prom(stack):
    return PromApi(f"http://{stack.address('prometheus')}:9090")


def is_leader(stack, master: str) -> tuple[int, bytes]:
    """A master's /api/v1/is-leader: (status, body)."""
    try:
        with urllib.request.urlopen(f"http://{stack.address(master)}:7000/api/v1/is-leader", timeout=5) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def leaders(stack) -> list[str]:
    running = {stack.service_of(c) for c in stack.containers(one_off=False)}
    return [m for m in MASTERS if m in running and is_leader(stack, m) == (200, b'{"STATUS":"OK"}')]


def ybbench_env(stack) -> dict:
    return {**stack.env, **stack.files_env, "PYTHONPATH": str(stack.root), "K6": str(BIN / "k6"),
            "K6_PROMETHEUS_RW_PUSH_INTERVAL": "1s"}


def reaches(stack, service: str, *peers: tuple[str, int]) -> list[str]:
    """From inside SERVICE (its python3), one process: for each (host, port),
    'ok' or why it could not connect."""
    probe = ("import socket,sys\n"
             "for hp in sys.argv[1:]:\n"
             "    h, p = hp.rsplit(':', 1)\n"
             "    try:\n        socket.create_connection((h, int(p)), timeout=2).close(); print('ok')\n"
             "    except OSError as e:\n        print(type(e).__name__, e)\n")
    assert service.startswith(("yb-master-", "yb-tserver-")), service  # the yugabytedb image, as the comment says
    args = ("-c", probe, *(f"{h}:{p}" for h, p in peers))
    return stack("exec", "-T", service, "python3", *args).stdout.splitlines()  # image of: yb-tserver-1


def test_the_masters_elect_one_leader_and_answer_is_leader_as_yugabytedb(stack):
    """200 and {"STATUS":"OK"} on the leader, 503 and "{" on the others
    (master-path-handlers.cc, HandleCheckIfLeader; JsonWriter writes the
    object's "{" before the handler returns)."""
    found = eventually(lambda: leaders(stack), "a master leader", timeout=60)
    assert found == ["yb-master-1"], found
    assert [is_leader(stack, m) for m in MASTERS[1:]] == [(503, b"{"), (503, b"{")]


def test_partition_pause_and_master_leader_kill_under_load_lose_no_acknowledged_write(stack, prom, tmp_path):
    testid, results = new_testid("gray"), tmp_path / "results"
    env = ybbench_env(stack)
    nodes = ",".join(f"{stack.address(f'yb-tserver-{i}')}:5433" for i in (1, 2, 3))
    loki_url = f"http://{stack.address('loki')}:3100"
    # Each outage lasts 13 s: more than two of Prometheus's 5 s scrapes.
    cmd = [sys.executable, "-m", "ybbench", "run", "sql-inserts", "--testid", testid, "--results", str(results),
           "--quiet", "--prometheus", prom.base, "--loki", loki_url,
           "--set", f"YSQL_NODES={nodes}", "--set", "VUS=6", "--set", "DURATION=50s", "--set", "DB_CONNECT_TIMEOUT=2",
           "--event", "3s:partition:yb-tserver-2", "--event", "16s:heal:yb-tserver-2",
           "--event", "20s:pause:yb-tserver-3", "--event", "33s:resume:yb-tserver-3",
           "--event", "37s:kill:master-leader"]
    # Steady state before the faults: yb-master-1 leads alone. Waited for, not
    # sampled once: a CPU-starved stand-in can miss heartbeats for HEARD_S and
    # be leaderless for a moment, as a real Raft group can; a wrong or second
    # leader still fails here, naming what the masters said.
    def master_1_leads():
        found = leaders(stack)
        assert found == ["yb-master-1"], found
        return True

    eventually(master_1_leads, "yb-master-1 the only master leader", timeout=30)
    seen = {}
    started = time.time()
    run = None
    try:
        run = subprocess.Popen(cmd, cwd=stack.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)

        def cut_off():
            # Partitioned: tserver-2 reaches no other YugabyteDB server, while
            # the host (a client), Prometheus and its own port still reach it.
            seen["to_peers"] = reaches(stack, "yb-tserver-2", ("yb-tserver-1", 5433), ("yb-master-1", 7100),
                                       ("yb-tserver-3", 9000))
            assert not [r for r in seen["to_peers"] if r == "ok"], seen
            with urllib.request.urlopen(f"http://{stack.address('yb-tserver-2')}:9000/prometheus-metrics",
                                        timeout=5) as r:
                seen["from_host"] = r.status
            return True

        # From 3 s after k6 starts (ybbench and k6 start first) to the heal at 16 s.
        eventually(cut_off, "yb-tserver-2 cut off from its peers", timeout=60)
        out, _ = run.communicate(timeout=240)
        ended = time.time()
        new_leader = eventually(lambda: leaders(stack), "a new master leader", timeout=30)
    finally:
        if run is not None and run.poll() is None:  # the test failed midway: no later test runs beside it
            run.kill()
            run.wait()
        stack("start", *MASTERS, check=False)
        stack("unpause", "yb-tserver-3", check=False)
    assert run.returncode in (0, 99), out
    events = json.loads((results / testid / "events.json").read_text())["events"]
    assert [(e["action"], e["service"], e["ok"]) for e in events] == [
        ("partition", "yb-tserver-2", True), ("heal", "yb-tserver-2", True), ("pause", "yb-tserver-3", True),
        ("resume", "yb-tserver-3", True), ("kill", "master-leader", True)], events
    assert events[-1]["target"] == "yb-master-1" and new_leader == ["yb-master-2"], (events[-1], new_leader)
    assert "cut off from" in events[0]["output"] and seen["from_host"] == 200, seen
    # After the heal, tserver-2 reaches its peers again.
    assert reaches(stack, "yb-tserver-2", ("yb-tserver-1", 5433), ("yb-master-1", 7100)) == ["ok", "ok"]
    # Prometheus: the frozen tserver and the killed master were down; the
    # partitioned tserver never was (its clients and Prometheus still reach it).
    own = max(1, int(time.time() - started))
    assert prom.value(f'min_over_time(up{{instance="yb-tserver-3:9000"}}[{own}s])') == 0
    assert prom.value(f'min_over_time(up{{instance="yb-master-1:7000"}}[{own}s])') == 0
    assert prom.value(f'min_over_time(up{{instance="yb-tserver-2:9000"}}[{own}s])') == 1
    # k6's errors by SQLSTATE class: the run's summary and Prometheus agree.
    summary = json.loads((results / testid / "summary.json").read_text())
    assert summary["rows_written"] > 100
    # The stand-in's statements through the cut-off or frozen tserver wait
    # out the 13 s outage (its YSQL is a TCP forward), where a real tserver's
    # may fail once their deadlines pass: k6's slowest insert shows the wait.
    assert summary["ops"]["insert"]["latency_ms"]["max"] > 8000, summary["ops"]["insert"]
    by_class = {r["metric"]["sqlstate_class"]: int(float(r["value"][1])) for r in prom.query(
        f'sum by (sqlstate_class) (k6_ybbench_errors_total{{testid="{testid}"}})')}
    assert by_class == summary["errors_by_class"] and sum(by_class.values()) == summary["errors"], (
        by_class, summary, out[-2000:])
    print(f"\n{testid}: {summary['rows_written']} rows, errors {summary['errors']} "
          f"{summary['errors_by_class']}; ran {ended - started:.0f} s; insert {summary['ops']['insert']}; "
          f"events took {[(e['action'], e['took_s']) for e in events]}")
    loki = LokiApi(loki_url)
    marked = eventually(lambda: loki.lines(f'{{job="ybbench", kind="event", testid="{testid}"}}'), "the events in Loki")
    assert sorted(marked) == sorted(["partition yb-tserver-2", "heal yb-tserver-2", "pause yb-tserver-3",
                                     "resume yb-tserver-3", "kill master-leader (yb-master-1)"]), marked
    check = subprocess.run([sys.executable, "-m", "ybbench", "verify", testid, "--results", str(results)],
                           cwd=stack.root, env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    verified = json.loads((results / testid / "verify.json").read_text())
    unacked = sum(int(m) for m in re.findall(r"ybbench-unacked first=\d+ rows=(\d+)",
                                             (results / testid / "k6.log").read_text()))
    assert verified["lost"]["count"] == 0 and verified["present"]["count"] >= summary["rows_written"]
    assert verified["unacknowledged_keys"] == unacked, (verified["unacknowledged_keys"], unacked)
    assert verified["unknown_present"]["count"] + verified["unknown_absent"]["count"] == unacked
    print(check.stdout)


def test_partition_and_leader_kill_from_inside_the_ybbench_service(stack):
    """The same events through `docker compose run --rm ybbench`: its
    docker CLI starts the partition's helper container on the engine's
    socket, and asks the masters on the project's network which leads."""
    testid = new_testid("svcgray")
    before = eventually(lambda: leaders(stack), "a master leader", timeout=60)
    try:
        run = stack("run", "--rm", "ybbench", "run", "sql-inserts", "--testid", testid, "--quiet",
                    "--set", "VUS=2", "--set", "DURATION=16s", "--event", "2s:partition:yb-tserver-3",
                    "--event", "9s:heal:yb-tserver-3", "--event", "11s:kill:master-leader", check=False, timeout=300)
    finally:
        stack("start", *MASTERS, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    folder = stack.root / "results" / testid
    events = json.loads((folder / "events.json").read_text())["events"]
    assert [(e["action"], e["service"], e["ok"]) for e in events] == [
        ("partition", "yb-tserver-3", True), ("heal", "yb-tserver-3", True), ("kill", "master-leader", True)], events
    assert events[-1]["target"] == before[0], (events[-1], before)
    assert (folder / "events.json").stat().st_uid == USER_UID
    assert reaches(stack, "yb-tserver-3", ("yb-tserver-1", 5433)) == ["ok"]


def test_events_that_cannot_happen_fail_and_end_the_run_with_2(stack, prom, tmp_path):
    """A heal without a partition and a resume of a service not paused are
    failed events (events.json, ok false; exit 2 naming them); a pause of a
    service the project lacks, and a partition of one that is not a
    YugabyteDB server, are refused before any load."""
    results = tmp_path / "results"
    env = ybbench_env(stack)

    def ybbench_run(tid: str, *events: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "ybbench", "run", "sql-inserts", "--testid", tid, "--results", str(results),
             "--quiet", "--prometheus", prom.base, "--set", f"YSQL_NODES={stack.address('yb-tserver-1')}:5433",
             "--set", "VUS=2", "--set", "DURATION=8s", *(x for e in events for x in ("--event", e))],
            cwd=stack.root, env=env, capture_output=True, text=True, timeout=180)

    lacks = ybbench_run(new_testid("nosvc"), "2s:pause:yb-tserver-9")
    assert lacks.returncode == 2 and "no service 'yb-tserver-9'" in lacks.stderr, lacks.stderr
    not_yb = ybbench_run(new_testid("noyb"), "2s:partition:prometheus")
    assert not_yb.returncode == 2 and "partition takes a YugabyteDB server" in not_yb.stderr, not_yb.stderr
    assert not results.exists() or not any(results.iterdir())

    testid = new_testid("nope")
    run = ybbench_run(testid, "2s:heal:yb-tserver-3", "3s:resume:yb-tserver-3")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "heal yb-tserver-3 at 2 s failed: yb-tserver-3 is not partitioned" in run.stderr, run.stderr
    assert "resume yb-tserver-3 at 3 s failed: yb-tserver-3 was not paused" in run.stderr, run.stderr
    events = json.loads((results / testid / "events.json").read_text())["events"]
    assert [(e["action"], e["service"], e["ok"]) for e in events] == [
        ("heal", "yb-tserver-3", False), ("resume", "yb-tserver-3", False)], events
    assert json.loads((results / testid / "summary.json").read_text())["rows_written"] > 0
