"""What every `ybbench verify` check shares: counts with examples, the
iterations a run attempted, its log's failed writes, the connection."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ybbench.core import run_folder, tls_files
from ybbench.core.errors import UserError

UNACKED = re.compile(r"ybbench-unacked first=(\d+) rows=(\d+)")
INTERRUPTED = re.compile(r"(\d+) complete and (\d+) interrupted iterations")


@dataclass
class Count:
    """A count and the first few examples (keys) behind it."""

    n: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, key: str, show: int, by: int = 1) -> None:
        self.n += by
        if len(self.examples) < show:
            self.examples.append(key)


@dataclass
class Attempted:
    """The key indexes a run attempted. k6's iterationInTest is unique across
    the generators of a split run but not dense: with N equal execution
    segments, generator g's j-th iteration is g + j x N. Iteration i wrote
    indexes [i x rows, (i + 1) x rows)."""

    counts: list[int]  # iterations attempted, per generator (one for a plain run)
    rows: int

    def __contains__(self, n: int) -> bool:
        it = n // self.rows
        return it // len(self.counts) < self.counts[it % len(self.counts)]

    def __len__(self) -> int:
        return sum(self.counts) * self.rows

    def indexes(self):
        """In increasing order, one at a time (O(1) memory)."""
        n = len(self.counts)
        last = max((g + (c - 1) * n for g, c in enumerate(self.counts) if c), default=-1)
        for it in range(last + 1):
            if it // n < self.counts[it % n]:
                yield from range(it * self.rows, (it + 1) * self.rows)


def read(path: Path, what: str) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        raise UserError(f"{path.parent}: {path.name} is missing: not a finished `ybbench run` ({what})") from None


def log_facts(log: str) -> tuple[int, set[int]]:
    """Interrupted iterations (k6's last progress line) and the indexes of
    the statements that failed or timed out."""
    counts = [int(m.group(2)) for m in INTERRUPTED.finditer(log)]
    unacked: set[int] = set()
    for m in UNACKED.finditer(log):
        first, n = int(m.group(1)), int(m.group(2))
        unacked.update(range(first, first + n))
    return (counts[-1] if counts else 0), unacked


def connect(written: dict, node: str | None):
    import psycopg

    host, _, port = (node or written["nodes"][0]).rpartition(":")
    sslmode, tls = written.get("sslmode", "disable"), tls_files.from_written(written)  # the run's TLS files
    try:
        return psycopg.connect(host=host, port=int(port), user=written["user"], dbname=written["database"],
                               sslmode=sslmode, **tls_files.psycopg_args(tls), connect_timeout=10,
                               application_name="ybbench verify",
                               client_encoding="utf8")  # text, not bytes, from a SQL_ASCII database too
    except psycopg.Error as e:
        said = tls_files.explain(str(e).strip().splitlines()[0], tls, sslmode, written["user"])
        raise UserError(f"cannot read the table back: database {written['database']!r} at {host}:{port} as "
                        f"{written['user']!r}: {said}") from None




def runs_of(folder: Path, run) -> list[Path]:
    """The folders with a k6.log and summary.json: the run's own, or each
    generator's of a run split over N equal execution segments."""
    params = run.params
    n = int(params.get("generators", 1))
    if n > 1 and list(params.get("execution_segments", {}).values()) != \
            [f"{'0' if i == 0 else f'{i}/{n}'}:{'1' if i == n - 1 else f'{i + 1}/{n}'}" for i in range(n)]:
        raise UserError(f"run {folder.name}: verify knows N equal execution segments, not "
                        f"{params.get('execution_segments')}")
    return [folder] if n == 1 else [folder / "generators" / f"g{i}" for i in range(1, n + 1)]


def ops_per_iteration(run) -> int:
    """N of a run with OPS_PER_ITERATION=N (k6-scripts/lib/loop.js): k6
    iteration n ran ops n x N .. n x N + N - 1."""
    return int((run.summary.get("written") or {}).get("ops_per_iteration", 1))


def iterations(folder: Path, run, ops: tuple[str, ...]) -> tuple[list[int], int, set[int]]:
    """Iterations attempted per generator (the ops' counts and the
    interrupted ones), interrupted in all, and the numbers the log names in
    its `ybbench-unacked` lines. With the inner loop, k6's iterations of it
    (iterations{op:loop}, which the summary keeps under k6), whose ops that
    the end of the run cut off are in the log as unacknowledged."""
    counts, interrupted, unacked = [], 0, set()
    loops = ops_per_iteration(run) > 1
    for part in runs_of(folder, run):
        stopped, failed = log_facts(read(part / "k6.log", "k6's log"))
        s = run_folder.summary(part)
        done = s.get("ops", {})
        if loops:
            ran = int(((s.get("k6") or {}).get("iterations{op:loop}") or {}).get("values", {}).get("count", 0))
        else:
            ran = sum(done.get(op, {}).get("count", 0) for op in ops)
        counts.append(ran + stopped)
        interrupted += stopped
        unacked |= failed
    return counts, interrupted, unacked


def example_lines(r: dict, kinds: tuple[str, ...], sep: str = ", ") -> list[str]:
    """A line of example keys for each kind of problem found ("..." when
    there were more than the examples kept)."""
    return [f"  {k.replace('_', ' ')}: {sep.join(r[k]['examples'])}"
            + (" ..." if r[k]["count"] > len(r[k]["examples"]) else "") for k in kinds if r[k]["examples"]]
