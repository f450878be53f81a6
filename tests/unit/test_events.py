"""Fault events' schedule without a compose stack: an event still due when
k6 ends is never run, and events.json says so (issue 27: no test saw it).
The compose-stack tests run events for real (tests/compose/test_compose_stack.py:
stop, start, add, remove, kill, restart, and one that fails)."""

from __future__ import annotations

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
