"""Ground truth from the kernel for the tests: counters read from /proc
every 0.1 s in a thread, interpolated at any instant."""

from __future__ import annotations

import os
import threading
import time
from bisect import bisect_left
from pathlib import Path

HZ = os.sysconf("SC_CLK_TCK")


class Sampler:
    """Reads a kernel counter every 0.1 s in a thread; value_at(t)
    interpolates between the two samples around t."""

    def __init__(self, read):
        self.read, self.t, self.v = read, [], []
        self.after: list[float] = []  # when each read had returned: self.t[i] <= read time <= self.after[i]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self):
        while not self._stop.is_set():
            t = time.time()
            v = self.read()
            self.after.append(time.time())  # appended first: a reader that sees t[i] sees after[i] too
            self.v.append(v)
            self.t.append(t)
            self._stop.wait(0.1)

    def stop(self):
        self._stop.set()
        self._thread.join()

    def value_at(self, t: float) -> float:
        i = bisect_left(self.t, t)
        assert 0 < i < len(self.t), f"no kernel sample around {t}"
        (t0, v0), (t1, v1) = (self.t[i - 1], self.v[i - 1]), (self.t[i], self.v[i])
        return v0 + (v1 - v0) * (t - t0) / (t1 - t0)

    def bounds(self, t: float) -> tuple[float, float]:
        """A monotone counter's value at t lies between these two samples':
        the last read that had returned by t and the first begun at or after it."""
        below = bisect_left(self.after, t)  # reads [0, below) returned before t
        above = bisect_left(self.t, t)  # reads [above, ...) began at or after t
        assert 0 < below and above < len(self.t), f"no kernel sample around {t}"
        return self.v[below - 1], self.v[above]

    def rate(self, a: float, b: float) -> float:
        return (self.value_at(b) - self.value_at(a)) / (b - a)


def busy_cpu_seconds() -> float:
    """Every CPU's non-idle time, the modes node_exporter reports except
    idle: user nice system iowait irq softirq steal (guest is inside user)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + iowait + irq + softirq + steal) / HZ


def device_of(path: Path) -> str:
    """The block device (as /proc/diskstats and node_exporter name it) that holds path."""
    st = os.stat(path)
    return Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve().name


def writes_completed(device: str) -> float:
    return diskstats([device])["writes"]


def disks() -> list[str]:
    """This host's disks: whole block devices with hardware (or a virtio
    device) behind them. Loop, device-mapper and md devices have none (their
    reads land on a disk, and are counted there), nor has zram (memory)."""
    return sorted(d.name for d in Path("/sys/block").iterdir() if (d / "device").exists())


def diskstats(devices: list[str]) -> dict[str, float]:
    """reads, bytes read and writes completed, summed over devices, from
    /proc/diskstats (Documentation/admin-guide/iostats.rst: fields 1, 3 and
    5 after the name; sectors are 512 bytes whatever the device's)."""
    total, seen = {"reads": 0.0, "read_bytes": 0.0, "writes": 0.0}, set()
    with open("/proc/diskstats") as f:
        for line in f:
            parts = line.split()
            if parts[2] in devices:
                seen.add(parts[2])
                total["reads"] += float(parts[3])
                total["read_bytes"] += float(parts[5]) * 512
                total["writes"] += float(parts[7])
    assert seen == set(devices), f"{set(devices) - seen} not in /proc/diskstats"
    return total


def stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat's fields after the command's name (which may hold spaces and parentheses): [0] the
    state, [1] the parent, [2] the process group, [11] utime, [12] stime (proc(5), from field 3 on).
    FileNotFoundError once the process is gone."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def proc_cpu_seconds(pid: int) -> float:
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / HZ  # utime, stime
