"""`ybbench run --generators N`: one workload split over N local k6 processes.

Process i runs execution segment i-1/N:i/N of the same test, the segments
k6-operator gives its runners (pkg/segmentation), with the run's testid and
its own `instance_id` tag (as k6-operator's runners have), so Prometheus
keeps one series per process instead of N processes overwriting one. The
workloads draw new keys from exec.scenario.iterationInTest or
exec.vu.idInTest, unique across segments, so no two processes write one key.

All start together; each keeps its own summary, k6 summary export and log in
generators/g<i>/ of the run's staged folder; one failing stops the others and
fails the run, and the folder is never left half-written (files.staged_dir).
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ybbench.core import formats, latency, logs, per_second, run_folder
from ybbench.core.catalog import KNOBS, SCRIPTS, SECRET_NAMES
from ybbench.core.errors import UserError
from ybbench.core.files import staged_dir
from ybbench.core.progress import parse_k6_progress
from ybbench.run import summary_merge, tpcc_nopm, usage
from ybbench.run import thresholds as check_thresholds
from ybbench.run.k6_process import K6_DASHBOARD_ENV, K6_GO_ENV, K6_RAN, K6_REPORT, RunResult, k6_error

# One k6 uses a few cores well; more processes than this on one host is a
# typo, not a plan (k6-operator spreads larger tests over machines).
MAX_GENERATORS = 64
# A stopped k6 gets gracefulStop (10 s) and its teardown before it is killed.
STOP_WAIT_S = 30


def count(value: object) -> int:
    """--generators as a whole number from 1 to MAX_GENERATORS."""
    text = str(value).strip()
    if not re.fullmatch(r"[0-9]+", text) or not 1 <= int(text) <= MAX_GENERATORS:
        raise UserError(f"--generators {value!r}: a whole number of k6 processes from 1 to {MAX_GENERATORS}")
    return int(text)


def check_vus(n: int, knobs: dict[str, str]) -> None:
    """Each segment needs a VU: k6 splits VUS between the processes."""
    vus = knobs.get("VUS", "")
    if n > 1 and vus.isdigit() and int(vus) < n:
        raise UserError(f"--generators {n} with VUS={vus}: each generator needs at least one VU")


def segments(n: int) -> tuple[list[str], str]:
    """(segment of each process, the sequence), as k6-operator writes them."""
    cuts = ["0", *(f"{i}/{n}" for i in range(1, n)), "1"]
    return [f"{cuts[i]}:{cuts[i + 1]}" for i in range(n)], ",".join(cuts)


@dataclass
class Generator:
    name: str
    segment: str
    folder: Path
    proc: subprocess.Popen
    started: float
    ended: float | None = None
    code: int | None = None
    stamped: list[tuple[int, str]] = field(default_factory=list)  # (unix ns, line) for Loki


class Progress:
    """k6's progress lines of every process, summed into one line of the same
    form (progress.LiveOps reads it), once each process has reported anew."""

    def __init__(self, names: list[str]):
        self.latest: dict[str, tuple[float, int, int]] = {}
        self.fresh: set[str] = set()
        self.names = names

    def feed(self, name: str, line: str) -> str | None:
        now = parse_k6_progress(line)
        if now is None:
            return None
        self.latest[name] = now
        self.fresh.add(name)
        if self.fresh != set(self.names):
            return ""
        self.fresh.clear()
        elapsed = max(v[0] for v in self.latest.values())
        vus = sum(v[1] for v in self.latest.values())
        done = sum(v[2] for v in self.latest.values())
        return f"running ({elapsed:.1f}s), {vus}/{vus} VUs, {done} complete iterations, {len(self.names)} generators\n"


def _pump(g: Generator, lines: queue.Queue) -> None:
    try:
        with open(g.folder / "k6.log", "w") as log:
            assert g.proc.stdout is not None
            for line in g.proc.stdout:
                log.write(line)
                lines.put((g, line))
    finally:
        lines.put((g, None))  # always: the main loop waits for every stream's end


def _stop(gens: list[Generator]) -> None:
    for g in gens:
        if g.proc.poll() is None:
            g.proc.terminate()
    for g in gens:
        try:
            g.proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            g.proc.kill()
            g.proc.wait()


def run(workload: str, testid: str, final: Path, base_cmd: list[str], env: dict[str, str], n: int, *,
        prometheus: str | None, loki: str | None, quiet: bool, on_line: Callable[[str], None] | None,
        before: Callable[[Path], None] | None = None, extra: dict | None = None, thresholds=()):
    """Runs the N processes of one test into `final` (k6run.run's RunResult)."""
    script = SCRIPTS / f"{workload}.js"
    if "GOMEMLIMIT" not in os.environ and env.get("GOMEMLIMIT") == K6_GO_ENV["GOMEMLIMIT"]:
        # ybbench's default is a quarter of the machine for one k6: share it.
        env = {**env, "GOMEMLIMIT": f"{int(K6_GO_ENV['GOMEMLIMIT'].removesuffix('MiB')) // n}MiB"}
    seg, sequence = segments(n)
    names = [f"g{i}" for i in range(1, n + 1)]
    with staged_dir(final) as stage:
        if before:  # run --doctor (k6run.run)
            before(stage)
        gens: list[Generator] = []
        lines: queue.Queue = queue.Queue()
        threads = []
        watch = usage.Watch(env)  # each process's CPU, for the run's limits
        try:
            for i, name in enumerate(names):
                folder = stage / "generators" / name
                folder.mkdir(parents=True)
                cmd = [*base_cmd, "--address", "127.0.0.1:0", "--tag", f"instance_id={i + 1}",
                       "--execution-segment", seg[i], "--execution-segment-sequence", sequence,
                       "--summary-export", str(folder / "k6-summary.json"), str(script)]
                genv = {**K6_DASHBOARD_ENV, **env, "SUMMARY_JSON": str(folder / run_folder.SUMMARY)}
                if genv.get("K6_WEB_DASHBOARD") == "true":
                    genv["K6_WEB_DASHBOARD_EXPORT"] = str(folder / K6_REPORT)  # one file per process
                proc = subprocess.Popen(cmd, env=genv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                        encoding="utf-8", errors="replace")
                gens.append(Generator(name, seg[i], folder, proc, time.time()))
                watch.add(name, proc.pid, genv)
            for g in gens:
                t = threading.Thread(target=_pump, args=(g, lines), daemon=True)
                t.start()
                threads.append(t)
            _follow(gens, lines, quiet=quiet, on_line=on_line, loki=bool(loki), ran=K6_RAN, k6_error=k6_error)
        except BaseException:
            # A failure or Ctrl-C: every k6 ends before the stage is removed.
            _stop(gens)
            for t in threads:
                t.join(timeout=STOP_WAIT_S)
            watch.stop()
            raise
        for t in threads:
            t.join()
        usage.write(stage, watch.stop())
        if loki:
            for g in gens:
                logs.push(loki, {"job": "ybbench", "workload": workload, "testid": testid, "generator": g.name},
                          g.stamped)
        started = min(g.started for g in gens)
        finished = max(g.ended for g in gens)
        parts = []
        for g in gens:
            formats.check_file(g.folder / run_folder.SUMMARY, "summary")
            parts.append(run_folder.read_json(g.folder / run_folder.SUMMARY, f"generator {g.name} (segment {g.segment})"))
        merged = summary_merge.merge(parts, names)
        nopm = tpcc_nopm.add(merged, env) if workload == "tpcc" else None  # once, after every generator
        for entry, g in zip(merged["generators"], gens):
            entry.update(segment=g.segment, k6_exit_code=g.code)
        if prometheus:
            summary_merge.fill_latency(merged, {op: _prometheus_latency(prometheus, testid, op, started, finished)
                                                for op in merged["ops"]})
        formats.write(stage / run_folder.SUMMARY, "summary", merged)
        # Each generator's per-second series (k6 with our Go module): summed per second.
        series = [per_second.load(g.folder) for g in gens]
        if all(series):
            formats.write(stage / per_second.FILE, "per-second", per_second.merge(series, names))
        code = 99 if any(g.code == 99 for g in gens) else 0
        judged = check_thresholds.apply(stage, list(thresholds), code, quiet)
        formats.write(stage / run_folder.PARAMS, "params", {
            # run.run's params.json, and how the test was split
            "format_version": formats.version("params"), "workload": workload, "testid": testid,
            "knobs": {k: env[k] for k in KNOBS if k in env and not SECRET_NAMES.search(k)},
            "prometheus": prometheus, "loki": loki, "started_unix_s": started, "finished_unix_s": finished, "k6_exit_code": code,
            "generators": n,
            "execution_segments": {g.name: g.segment for g in gens},
            "execution_segment_sequence": sequence,
            "generator_exit_codes": {g.name: g.code for g in gens},
            **(extra or {}),
        })
        if not quiet:
            sys.stdout.write(summary_merge.text(merged) + (nopm or ""))
    return RunResult(testid, final, judged)


def _prometheus_latency(prometheus: str, testid: str, op: str, started: float, finished: float) -> dict | None:
    try:
        # Sums every series of the testid, that is every generator's histogram.
        return latency.from_prometheus(prometheus, testid, op, started, finished)
    except (OSError, KeyError, ValueError):
        return None  # the run stands without it, and latency_source says so


def _follow(gens: list[Generator], lines: queue.Queue, *, quiet: bool, on_line, loki: bool, ran, k6_error) -> None:
    """Shows the processes' output as it comes and waits for all of them; the
    first that fails raises, naming it."""
    progress = Progress([g.name for g in gens])
    open_streams = len(gens)
    while open_streams:
        g, line = lines.get()
        if line is None:
            open_streams -= 1
            g.code, g.ended = g.proc.wait(), time.time()
            if g.code not in ran:
                others = [o.name for o in gens if o is not g and o.proc.poll() is None]
                _stop(gens)
                stopped = f"; stopped {', '.join(others)}" if others else ""
                raise UserError(f"generator {g.name} (segment {g.segment}) failed (k6 exit {g.code}): "
                                f"{k6_error(g.folder / 'k6.log')}{stopped}", exit_code=g.code)
            continue
        if loki:
            g.stamped.append((time.time_ns(), line.rstrip("\n")))
        summed = progress.feed(g.name, line)
        if summed is None and not quiet:
            sys.stdout.write(f"[{g.name}] {line}")
        if summed:
            if not quiet:
                sys.stdout.write(f"[all] {summed}")
            if on_line:
                on_line(summed)
