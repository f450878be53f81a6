"""doctor's room disk checks against the OS: the status each must have is
the one the free space statvfs reports on the host gives, by the
thresholds docs/docker-stack.md documents (fail under 2 GiB free, warn
under 10). A test machine's disk decides; CI's has had 5.6 GiB free."""

from __future__ import annotations

import os
from typing import Callable

GIB = 2**30
FAIL_UNDER, WARN_UNDER = 2.0, 10.0  # GiB, as documented
# The free space may move between doctor's scrape and this reading (the
# tests and Prometheus write meanwhile): near a threshold either side holds.
SLACK = 0.5


def documented_status(free_gib: float) -> str:
    return "fail" if free_gib < FAIL_UNDER else "warn" if free_gib < WARN_UNDER else "ok"


def free_gib(path: str) -> float:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize / GIB


def disk_checks(checks: list[dict]) -> list[dict]:
    return [c for c in checks if c["name"].startswith("room disk ")]


def disagreements(checks: list[dict], host_path: Callable[[str], str] = lambda mount: mount) -> dict:
    """{name: (status, found, what statvfs says)} for each room disk check
    (named "room disk INSTANCE MOUNT") whose status is not the documented one
    for the free space under host_path(MOUNT); empty when all agree."""
    out = {}
    for c in disk_checks(checks):
        path = host_path(c["name"].split(" ", 3)[3])
        free = free_gib(path)
        if c["status"] not in {documented_status(free - SLACK), documented_status(free + SLACK)}:
            out[c["name"]] = (c["status"], c["found"], f"statvfs: {free:.1f} GiB free under {path}")
    return out
