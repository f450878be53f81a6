"""Known disk reads: a thread reading a file with O_DIRECT, so that every
read bypasses the page cache and reaches the disk as one request of BLOCK
bytes (64 KiB is under any disk's max_sectors_kb, so none is split). It
starts when begin() says so and stops when end() does, keeping the time of
each read."""

from __future__ import annotations

import mmap
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

BLOCK = 64 * 1024


class DirectReader:
    def __init__(self, path: Path, begin: Callable[[], bool], end: Callable[[], bool], *,
                 size: int = 32 * 2**20, per_second: float = 200, timeout: float = 300):
        with open(path, "wb") as f:  # on disk before the first read
            f.write(os.urandom(size))
            f.flush()
            os.fsync(f.fileno())
        self.path, self.size, self.pause = path, size, 1 / per_second
        self.begin, self.end, self.timeout = begin, end, timeout
        self.times: list[float] = []  # when each read completed
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + self.timeout
        while not self.begin():
            if self._stop.wait(0.02) or time.monotonic() > deadline:
                return
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
        try:
            offset = 0
            while not self.end() and not self._stop.is_set() and time.monotonic() < deadline:
                assert os.preadv(fd, [buf], offset) == BLOCK
                self.times.append(time.time())
                offset = (offset + BLOCK) % self.size
                self._stop.wait(self.pause)  # a paced load, not the disk's all
        finally:
            os.close(fd)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def between(self, a: float, b: float) -> int:
        """Reads completed in (a, b]."""
        return sum(a < t <= b for t in self.times)
