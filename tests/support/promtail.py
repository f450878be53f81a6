"""The project's Promtail config, run by the native Promtail on lines the
test gives it (stdin mode applies the first scrape config's pipeline
stages, the containers job's): --dry-run prints each line with the labels
the pipeline gave it; without it, Promtail pushes them to a Loki."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import threading
from pathlib import Path

from .kernel import stat_fields
from .stack import REPO, built, wait_until

CONFIG = REPO / "compose" / "promtail" / "promtail.yml"
# Its server on loopback and free ports; the config file stays unchanged.
LOOPBACK = ["-server.http-listen-address=127.0.0.1", "-server.http-listen-port=0",
            "-server.grpc-listen-address=127.0.0.1", "-server.grpc-listen-port=0"]
# What --dry-run prints per line: time, labels, line, through a tabwriter
# that pads a column to a multiple of 8 with one tab, or none when it is
# one already (a 32-character time); no label set here is 8, 16, ... long.
_ENTRY = re.compile(r"^\S+?[+-]\d{4}\t?\{([^}]*)\}\t?(.*)$")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _command(args: list[str], config: Path = CONFIG) -> list[str]:
    return [str(built("promtail") / "promtail"), f"-config.file={config}", "-config.expand-env=true", "--stdin",
            *LOOPBACK, *args]


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, "COMPOSE_PROJECT": "ybbench", **extra}


def labels_of(lines: list[str], timeout: float = 60) -> dict[str, dict[str, str]]:
    """Each line -> the labels Promtail's pipeline gives it (--dry-run).
    Stdin stays open until every line is printed: at end of input the
    dry-run printer can exit before printing the last entries (it closes
    its channel and returns without waiting)."""
    lines = [line for line in lines if line]  # Promtail skips empty lines
    wanted = set(lines)
    proc = subprocess.Popen(_command(["--dry-run"]), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env=_env({}))
    assert proc.stdin is not None and proc.stdout is not None

    def feed() -> None:
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()

    feeder = threading.Thread(target=feed)  # while this thread reads what Promtail prints
    feeder.start()
    timer = threading.Timer(timeout, proc.kill)  # a stuck Promtail fails the test, not the run
    timer.start()
    out: dict[str, dict[str, str]] = {}
    try:
        for row in proc.stdout:
            m = _ENTRY.match(row.rstrip("\n"))
            if m:
                out[m.group(2)] = dict(_LABEL.findall(m.group(1)))
                if wanted <= out.keys():
                    break
    finally:
        feeder.join()
        proc.stdin.close()
        proc.wait()
        timer.cancel()
    missing = [line for line in lines if line not in out]
    assert not missing, f"promtail printed no entry for {missing[:3]}"
    return out


def push(lines: list[str], loki_url: str, labels: dict[str, str]) -> None:
    """Ship lines to Loki through the pipeline, with `labels` on every line
    as Promtail's docker_sd relabeling would set them (service, testid)."""
    external = ",".join(f"{k}={v}" for k, v in labels.items())
    p = subprocess.run(_command([f"--client.external-labels={external}"]), input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=60, env=_env({"LOKI_URL": loki_url.rstrip("/")}))
    if p.returncode != 0:
        raise RuntimeError(f"promtail failed ({p.returncode}):\n{p.stderr[-3000:]}")


class Follower:
    """A log file followed (tail -F, from its end) through the pipeline to a
    Loki, `labels` on every line: a running stack's shipping of one service."""

    def __init__(self, log: Path, loki_url: str, labels: dict[str, str], out: Path, config: Path = CONFIG):
        external = ",".join(f"{k}={v}" for k, v in labels.items())
        promtail = _command([f"--client.external-labels={external}"], config)
        cmd = f"tail -n0 -F {shlex.quote(str(log))} | {shlex.join(promtail)}"
        self.out = open(out, "w")
        self.proc = subprocess.Popen(["bash", "-c", cmd], stdout=self.out, stderr=subprocess.STDOUT,
                                     env=_env({"LOKI_URL": loki_url.rstrip("/")}), start_new_session=True)

    def stop(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)  # bash, tail and promtail: the group it started
        self.proc.wait(10)
        # Promtail, on SIGTERM, retries its unsent batches (for minutes once its Loki is gone): a run was seen
        # to leave one behind, retrying a stopped Loki. What is left of the group after 10 s is killed.
        try:
            wait_until(lambda: not _group_alive(self.proc.pid), "promtail to stop", timeout=10, interval=0.2)
        except TimeoutError:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.out.close()


def _group_alive(pgid: int) -> bool:
    """A process of the group runs (zombies left out: where pid 1 reaps none, an orphan's stays)."""
    for pid in Path("/proc").glob("[0-9]*"):
        try:
            fields = stat_fields(int(pid.name))
        except OSError:  # gone since the glob
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False
