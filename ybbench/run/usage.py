"""What a run used, sampled while it runs, for its limits: each k6
process's CPU, read from /proc/<pid>/stat once a second, and the cores it
may use (its CPU affinity, its cgroup's CPU quota, GOMAXPROCS); and the
database's sessions waiting on locks (db_sessions.py). Kept in the run's
folder as usage.json, which the limits analysis (analysis/limits.py)
reads. ybbench starts k6, so it can see it; where another program starts
k6 (k6 Cloud, the k6-operator) there is no usage.json and the analysis
says the client was not visible.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from ybbench.core import formats
from ybbench.run import db_sessions

FILE = "usage.json"
HZ = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 1.0


def _stat_after_name(pid: int) -> list[str]:
    # The fields after the command's name, which may hold spaces or parentheses.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float | None:
    """utime + stime of a live process, seconds; None once it is gone."""
    try:
        fields = _stat_after_name(pid)
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / HZ


def boot_time_s(stat: Path = Path("/proc/stat")) -> int | None:
    """The kernel's boot time (btime): node_exporter's node_boot_time_seconds
    of the same kernel, so the analysis can tell that client and server
    share a host (containers on one host share it too)."""
    try:
        for line in stat.read_text().splitlines():
            if line.startswith("btime "):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _cgroup_quota(pid: int) -> float | None:
    try:
        return cgroup_quota(Path(f"/proc/{pid}/cgroup").read_text())
    except OSError:
        return None


def cgroup_quota(cgroups: str, root: Path = Path("/sys/fs/cgroup")) -> float | None:
    """The tightest CPU quota (cores) on a process's cgroup (its
    /proc/<pid>/cgroup text) or its ancestors: cgroup v2's cpu.max, or v1's
    cpu.cfs_quota_us over cpu.cfs_period_us; None when there is none."""
    quotas = []
    for line in cgroups.splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # v2: one hierarchy
            base, read = root if (root / "cgroup.controllers").exists() else root / "unified", _v2_quota
        elif "cpu" in controllers.split(","):
            base, read = root / controllers, _v1_quota
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            q = read(base.joinpath(*parts[:depth]))
            if q is not None:
                quotas.append(q)
    return min(quotas) if quotas else None


def _v2_quota(folder: Path) -> float | None:
    try:
        quota, period = (folder / "cpu.max").read_text().split()
    except (OSError, ValueError):
        return None
    return None if quota == "max" else int(quota) / int(period)


def _v1_quota(folder: Path) -> float | None:
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError):
        return None
    return None if quota <= 0 else quota / period


def cores(pid: int, env: dict[str, str]) -> dict:
    """The cores a process may use: each bound that applies, and the
    tightest of them (capacity)."""
    try:
        affinity = len(os.sched_getaffinity(pid))
    except OSError:
        affinity = os.cpu_count() or 1
    got = {"affinity": affinity, "cgroup_quota": _cgroup_quota(pid)}
    try:
        got["gomaxprocs"] = int(env["GOMAXPROCS"]) if env.get("GOMAXPROCS") else None
    except ValueError:
        got["gomaxprocs"] = None  # Go ignores a value it cannot read
    got["capacity"] = min(v for v in got.values() if v)
    return got


class Watch:
    """Each k6 process's CPU seconds, once a second in a thread, from the
    moment it is added until stop(); the database's sessions beside it."""

    def __init__(self, env: dict[str, str]):
        self.sessions = db_sessions.Sampler(env)
        self.processes: list[dict] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def add(self, name: str, pid: int, env: dict[str, str]) -> None:
        entry = {"name": name, "cores": cores(pid, env), "samples": [], "_pid": pid}
        with self._lock:
            self.processes.append(entry)
        self._sample(entry)

    def _sample(self, entry: dict) -> None:
        cpu = cpu_seconds(entry["_pid"])
        if cpu is not None:
            entry["samples"].append([round(time.time(), 3), round(cpu, 3)])

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            with self._lock:
                for entry in self.processes:
                    self._sample(entry)

    def stop(self) -> dict:
        """The usage.json document; each process sampled once more."""
        self._stop.set()
        self._thread.join()
        for entry in self.processes:
            self._sample(entry)
        return {"format_version": formats.version("usage"),
                "host": {"cpus": os.cpu_count() or 1, "boot_time_unix_s": boot_time_s()},
                "processes": [{k: v for k, v in e.items() if not k.startswith("_")} for e in self.processes],
                "sessions": self.sessions.stop()}


def write(folder: Path, doc: dict) -> None:
    formats.write(folder / FILE, "usage", doc)
