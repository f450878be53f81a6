"""`ybbench run` keeps k6's own HTML report (its web dashboard's export) in
results/<testid>/k6-report.html, with the run's numbers in it, and the
dashboard's HTTP server listens on loopback only, on a port of its own."""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from ..support.kernel import stat_fields
from ..support.stack import BIN, REPO

DATA_TAG = '<script id="data" type="application/json; charset=utf-8; gzip; base64">'


def k6_export_lines(page: Path) -> list[str]:
    """The page embeds its data as gzip+base64 JSON lines."""
    text = page.read_text()
    b64 = text[text.index(DATA_TAG) + len(DATA_TAG):].split("</script>", 1)[0]
    return gzip.decompress(base64.b64decode(b64)).decode().splitlines()


def k6_export(page: Path) -> dict[str, list[float]]:
    """The end-of-run (cumulative) aggregates per metric in an export:
    `metric` events name the metrics, and `cumulative` lists their values in
    sorted-name order (xk6-dashboard v0.8.1, dashboard/report.go, meter.go)."""
    events = [json.loads(line) for line in k6_export_lines(page)]
    names = sorted({n for e in events if e["event"] == "metric" for n in e["data"]})
    (cumulative,) = [e["data"] for e in events if e["event"] == "cumulative"]
    return dict(zip(names, cumulative))


def _address(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    return socket.inet_ntop(socket.AF_INET6, b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))


def tcp_listeners(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket `pid` listens on, from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            m = re.fullmatch(r"socket:\[(\d+)\]", os.readlink(fd))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    out = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            f = line.split()
            if f[3] == "0A" and f[9] in inodes:  # 0A: LISTEN
                addr, port = f[1].split(":")
                out.add((_address(addr), int(port, 16)))
    return out


def k6_child(parent: int) -> int | None:
    k6 = (BIN / "k6").resolve()
    for proc in Path("/proc").glob("[0-9]*"):
        try:  # any process may end between the listing and these reads
            if int(stat_fields(int(proc.name))[1]) == parent and (proc / "exe").resolve(strict=True) == k6:
                return int(proc.name)
        except OSError:
            continue
    return None


def start_run(postgres, results: Path, testid: str, extra_env: dict | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "ybbench", "run", "sql-inserts", "--testid", testid, "--results", str(results),
           "--quiet", "--set", f"YSQL_NODES=127.0.0.1:{postgres.port}", "--set", f"DB_USER={postgres.user}",
           "--set", f"DB_NAME={postgres.database}", "--set", "VUS=2", "--set", "DURATION=5s",
           "--set", f"KEY_PREFIX={testid}"]
    env = {**postgres.env(None), "K6": str(BIN / "k6"), **(extra_env or {})}
    return subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_run_keeps_k6s_html_report_and_its_dashboard_listens_on_loopback(postgres, binaries, tmp_path):
    testid = f"web{uuid.uuid4().hex[:8]}"
    proc = start_run(postgres, tmp_path, testid)
    seen: set[tuple[str, int]] = set()
    while proc.poll() is None:  # every listener k6 opens, while it runs
        k6 = k6_child(proc.pid)
        if k6:
            try:
                seen |= tcp_listeners(k6)
            except OSError:
                pass  # k6 just ended
        time.sleep(0.1)
    assert proc.returncode == 0, proc.stdout.read()
    # k6's REST API (6565, when free) and the dashboard: on 127.0.0.1 only.
    assert seen and {a for a, _ in seen} == {"127.0.0.1"}, seen
    assert [p for _, p in seen if p != 6565], f"no dashboard listener seen: {seen}"

    folder = tmp_path / testid
    export = k6_export(folder / "k6-report.html")
    summary = json.loads((folder / "k6-summary.json").read_text())["metrics"]
    count = summary["iterations"]["count"]
    assert count > 0
    assert export["iterations"][0] == count  # [count, rate]
    assert export["vus_max"] == [2]
    assert postgres.password not in "".join(k6_export_lines(folder / "k6-report.html"))


def test_users_dashboard_settings_win(postgres, binaries, tmp_path):
    testid = f"web{uuid.uuid4().hex[:8]}"
    mine = tmp_path / "mine.html"
    proc = start_run(postgres, tmp_path, testid, {"K6_WEB_DASHBOARD_EXPORT": str(mine)})
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert not (tmp_path / testid / "k6-report.html").exists()
    summary = json.loads((tmp_path / testid / "k6-summary.json").read_text())["metrics"]
    assert k6_export(mine)["iterations"][0] == summary["iterations"]["count"]


@pytest.mark.parametrize("env,off", [
    ({"DURATION": "15m"}, False),
    ({"DURATION": "15m1s"}, True),
    ({"DURATION": "1h"}, True),
    ({"DURATION": "2h", "K6_WEB_DASHBOARD": "true"}, False),  # the user's choice wins
    ({}, False),  # the scripts' 30 s
    ({"DURATION": "soon"}, False),  # k6 itself names a bad DURATION
])
def test_long_runs_keep_no_dashboard_whose_memory_grows_with_the_run(env, off):
    from ybbench.run.k6_process import long_runs_without_dashboard

    before = dict(env)
    long_runs_without_dashboard(env)
    assert (env.get("K6_WEB_DASHBOARD") == "false") == off
    assert {k: v for k, v in env.items() if k != "K6_WEB_DASHBOARD"} == {k: v for k, v in before.items() if k != "K6_WEB_DASHBOARD"}
