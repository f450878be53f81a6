"""Fault events' schedule without a compose stack: an event still due when
k6 ends is never run, and events.json says so (issue 27: no test saw it).
The compose-stack tests run events for real (tests/compose/test_compose_stack.py:
stop, start, add, remove, kill, restart, and one that fails)."""

from __future__ import annotations

import os
import time

from ybbench.run import faults as events


def test_an_event_due_after_k6_ended_is_recorded_as_not_run():
    said = []
    schedule = events.Schedule([events.Event(600.0, "stop", "yb-tserver-2")], say=said.append)
    schedule.start()
    time.sleep(0.2)  # k6 ends long before the event is due
    records = schedule.finish()
    assert not schedule.thread.is_alive()
    assert records == [{"at_s": 600.0, "action": "stop", "service": "yb-tserver-2", "ok": False,
                        "output": "not run: k6 had ended"}]
    assert said == []  # nothing was run, so nothing was said to have happened


def _engine(tmp_path, monkeypatch, *, fail: str = "", sticks: bool = False):
    """A stand-in `docker` on PATH for apply(): one service, running or not
    (a file); `docker compose <fail>` exits 1 (a planted failure), and with
    sticks a stop leaves the service running while compose says it stopped."""
    (tmp_path / "running").touch()
    docker = tmp_path / "bin" / "docker"
    docker.parent.mkdir()
    docker.write_text(f"""#!/bin/sh
shift; [ "$1" = --profile ] && shift 2; s={tmp_path}/running
[ "$1" = "{fail}" ] && {{ echo "planted: compose $1 failed" >&2; exit 1; }}
case "$1" in ps) [ -e $s ] && echo "$5";; stop|kill|rm) {'true' if sticks else 'rm -f $s'};; *) touch $s;; esac
""")
    docker.chmod(0o755)
    monkeypatch.setenv("PATH", f"{docker.parent}:{os.environ['PATH']}")
    monkeypatch.setattr(events, "TARGETS", tmp_path / "targets")
    (tmp_path / "targets").mkdir()
    events.target_file("yb-tserver-4").write_text("[]")


def test_an_event_is_ok_only_when_compose_succeeds_and_the_engine_shows_it(tmp_path, monkeypatch):
    _engine(tmp_path, monkeypatch)
    assert events.apply(events.Event(1.0, "stop", "yb-tserver-4"))[0] is True  # the control: all went well
    assert events.apply(events.Event(2.0, "remove", "yb-tserver-4"))[0] is True
    assert not events.target_file("yb-tserver-4").exists()


def test_a_failing_compose_command_is_a_failed_event(tmp_path, monkeypatch):
    # `remove` has no engine state to check after it: compose's exit code is all there is
    # (issue 27: if apply ignored it, no test would fail).
    _engine(tmp_path, monkeypatch, fail="rm")
    ok, out = events.apply(events.Event(1.0, "remove", "yb-tserver-4"))
    assert not ok and "planted: compose rm failed" in out
    assert events.target_file("yb-tserver-4").exists()  # Prometheus keeps scraping what is still there


def test_compose_saying_stopped_while_the_engine_runs_it_is_a_failed_event(tmp_path, monkeypatch):
    _engine(tmp_path, monkeypatch, sticks=True)
    ok, out = events.apply(events.Event(1.0, "stop", "yb-tserver-4"))
    assert not ok and "yb-tserver-4 is running after stop" in out
