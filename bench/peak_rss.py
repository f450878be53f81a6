"""A client's peak resident memory, read from its own /proc status while it
runs: wait4's ru_maxrss holds the forking Python's size too (a child keeps
its parent's high-water mark from before its exec: /bin/true under a 200 MB
Python reads 218 MB)."""

from __future__ import annotations

from pathlib import Path


def vm_hwm_kb(pid: int) -> int:
    """A running process's peak resident memory (kB); 0 once it has exited."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
