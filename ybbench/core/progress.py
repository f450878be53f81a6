"""A live progress line for long runs: phase, elapsed time and live ops/s.

The ops/s come from k6's own progress lines, which k6 prints once a second
when its output is not a terminal ("running (01m02.0s), 8/8 VUs, 12345
complete and 0 interrupted iterations"): the completed iterations between
two lines over k6's clock between them. Every workload does one operation
per iteration, so iterations/s are ops/s. The line shows on a terminal only
(stderr); elsewhere the callers print one line per finished run.
"""

from __future__ import annotations

import re

K6_PROGRESS = re.compile(r"^running \((?:(\d+)h)?(?:(\d+)m)?([\d.]+)s\), (\d+)/(\d+) VUs, (\d+) complete")


def parse_k6_progress(line: str) -> tuple[float, int, int] | None:
    """(k6 elapsed s, VUs active, iterations complete) from one progress line."""
    m = K6_PROGRESS.match(line)
    if not m:
        return None
    h, mins, s, vus, _, done = m.groups()
    return int(h or 0) * 3600 + int(mins or 0) * 60 + float(s), int(vus), int(done)


class LiveOps:
    """Feed it k6's output lines; it keeps the latest ops/s."""

    def __init__(self):
        self.last: tuple[float, int, int] | None = None
        self.ops_per_s: float | None = None
        self.vus: int | None = None

    def feed(self, line: str) -> bool:
        now = parse_k6_progress(line)
        if now is None:
            return False
        if self.last is not None and now[0] > self.last[0]:
            self.ops_per_s = (now[2] - self.last[2]) / (now[0] - self.last[0])
        self.last, self.vus = now, now[1]
        return True

    def text(self) -> str:
        if self.ops_per_s is None:
            return "starting"
        return f"{self.ops_per_s:,.0f} ops/s, {self.vus} VUs"


class RunProgress:
    """`with RunProgress("step 2/5 vus 4") as p: run(..., on_line=p.feed)`."""

    def __init__(self, phase: str):
        self.phase = phase
        self.ops = LiveOps()
        self.live = None
        self.task = None

    def __enter__(self) -> "RunProgress":
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        if console.is_terminal:
            self.live = Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                 TextColumn("{task.fields[ops]}"), console=console, transient=True)
            self.live.start()
            self.task = self.live.add_task(self.phase, total=None, ops="starting")
        return self

    def feed(self, line: str) -> None:
        if self.ops.feed(line) and self.live:
            self.live.update(self.task, ops=self.ops.text())

    def __exit__(self, *exc) -> bool:
        if self.live:
            self.live.stop()
        return False
