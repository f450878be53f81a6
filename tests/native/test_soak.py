"""`make soak`'s short form (bench/soak.py, 60 s): the command runs, and its
numbers are real. Its ops counts are k6's own summary, Prometheus' counter
and the rows the table holds, all equal; verify finds 0 lost; its RSS
column is read from the k6 processes of each run, as this test sees them
from outside (/proc, polled while the soak runs). A doctored sample (the
soak's own pid, the other run's k6) is caught. Never a timing assertion."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench import soak
from tests.support.stack import REPO


def descendants(root: int) -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, command line) of every process under root."""
    procs = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
                cmd = [a.decode() for a in (d / "cmdline").read_bytes().split(b"\0") if a]
            except (OSError, IndexError, ValueError):
                continue
            procs[int(d.name)] = (ppid, cmd)
    out, frontier = {}, {root}
    while frontier:
        nxt = {p for p, (pp, _) in procs.items() if pp in frontier and p not in out}
        out.update({p: procs[p] for p in nxt})
        frontier = nxt
    return out


def status_kb(pid: int, field: str) -> int | None:
    """A memory field of /proc/<pid>/status, which the kernel prints in kB
    ("VmRSS:     1234 kB"), parsed here and not by the soak; None once the
    process is gone (a zombie has no memory fields)."""
    try:
        m = re.search(rf"^{field}:\s+(\d+) kB$", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return None
    return int(m[1]) if m else None


def check_rss(result: dict, seen: dict) -> None:
    """Each RSS sample is of a k6 this test saw running that run's testid
    (pid and start time), and within what the kernel said that process
    held at its peak (VmHWM, seen last just before it ended)."""
    for s in result["samples"]:
        for name, testid in result["testids"].items():
            k = s["k6"][name]
            if k["rss_kb"] is None:
                continue
            who = seen.get((k["pid"], k["start"]))
            assert who is not None, f"{name} at {s['t']:.0f} s: pid {k['pid']} is no k6 this test saw"
            assert f"testid={testid}" in who["cmd"], f"{name} at {s['t']:.0f} s: pid {k['pid']} runs {who['cmd']}"
            assert who["cmd"][0].endswith("k6") and who["cmd"][1] == "run", who["cmd"]
            assert who["min_rss"] * 0.9 <= k["rss_kb"] <= who["hwm"] * 1.05, (name, k, who)


@pytest.fixture(scope="module")
def soaked(tmp_path_factory):
    out = tmp_path_factory.mktemp("soak")
    proc = subprocess.Popen([sys.executable, "-m", "bench.soak", "--seconds", "60", "--seed-keys", "5000",
                             "--sample-s", "10", "--results", str(out / "results"), "--json", str(out / "soak.json")],
                            cwd=REPO, stdout=(out / "stdout").open("w"), stderr=subprocess.STDOUT)
    seen: dict = {}  # (pid, start) -> cmd, lowest VmRSS, VmHWM, as polled from here
    try:
        while proc.poll() is None:
            for pid, (ppid, cmd) in descendants(proc.pid).items():
                if len(cmd) > 1 and cmd[0].endswith("/k6") and ppid == proc.pid:
                    rss, hwm, start = status_kb(pid, "VmRSS"), status_kb(pid, "VmHWM"), soak.start_time(pid)
                    if None in (rss, hwm, start):
                        continue
                    w = seen.setdefault((pid, start), {"cmd": cmd, "min_rss": rss, "hwm": hwm})
                    w["min_rss"], w["hwm"] = min(w["min_rss"], rss), max(w["hwm"], hwm)
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = (out / "stdout").read_text()
    assert proc.returncode == 0, text[-4000:]
    return json.loads((out / "soak.json").read_text()), seen, text


def test_soak_counts_are_k6s_prometheus_and_the_tables(soaked):
    r, _, text = soaked
    ins, upd = r["k6"]["inserts"], r["k6"]["updates"]
    # 60 s at 200/s and 300/s: the load ran (not a timing claim: any real count).
    assert ins["iterations"] > 0 and upd["iterations"] > 0
    assert ins["errors"] == upd["errors"] == 0
    # Every insert k6 counted is a row in the table, and Prometheus has k6's count.
    assert ins["iterations"] == ins["ops"]["insert"] == r["rows_inserted"] == r["prometheus_totals"]["inserts"]
    assert upd["iterations"] == upd["ops"]["select"] + upd["ops"]["update"] == r["prometheus_totals"]["updates"]
    # The ops/s column telescopes to that count: its intervals cover the run.
    for name in ("inserts", "updates"):
        c = r["counts"][name]
        assert c[0] == 0 and c[-1] == r["prometheus_totals"][name]
        assert len(c) == len(r["samples"]) + 2
    # The printed counts table says the same.
    row = re.search(r"│ inserts\s*│\s*(\d+)\s*│ insert (\d+)\s*│\s*(\d+)\s*│\s*(\d+)\s*│\s*0\s*│\s*(\d+)\s*│", text)
    assert row, text[-3000:]
    assert int(row[1]) == int(row[2]) == int(row[3]) == int(row[5]) == r["rows_inserted"]
    assert int(row[4]) == ins["dropped"]
    # Prometheus' own series and RSS were read.
    assert r["prometheus_end"]["head_series"] > 0 and r["prometheus_end"]["rss_kb"] > 0
    # p99 per op, first and last quarter (a 60 s run: 15 s windows).
    assert r["window_s"] == 15
    for name, ops in (("inserts", {"insert"}), ("updates", {"select", "update"})):
        assert set(r["p99"][name]["first"]) == set(r["p99"][name]["last"]) == ops
    assert "first and last 15 s (a quarter of a run shorter than 20 minutes)" in " ".join(text.split())


def test_soak_verify_finds_nothing_lost(soaked):
    r, _, text = soaked
    vi, vu = r["verify"]["inserts"], r["verify"]["updates"]
    assert vi["ok"] and vi["exit"] == 0 and vi["lost_at_least"] == 0 and vi["lost"]["count"] == 0
    assert vi["present"]["count"] == vi["acknowledged_keys"] == r["rows_inserted"]
    assert vu["ok"] and vu["exit"] == 0 and vu["lost_at_least"] == 0
    assert vu["iterations"] == r["k6"]["updates"]["iterations"] and vu["keys"] == 5000
    assert len(re.findall(r"│ OK\s*│", text)) == 2, text[-2000:]


def test_soak_rss_is_each_runs_k6(soaked):
    r, seen, _ = soaked
    sampled = [s for s in r["samples"] if all(s["k6"][n]["rss_kb"] for n in r["testids"])]
    assert len(sampled) >= 3, r["samples"]
    check_rss(r, seen)
    # Both k6 processes were seen by this test, one per run.
    for testid in r["testids"].values():
        assert sum(f"testid={testid}" in w["cmd"] for w in seen.values()) == 1


def test_a_wrong_pid_is_caught(soaked):
    r, seen, _ = soaked
    s = next(s for s in r["samples"] if s["k6"]["inserts"]["rss_kb"])
    me = os.getpid()
    # Planted: the soak read its own (or any other) process instead of k6.
    bad = json.loads(json.dumps(r))
    bad["samples"][r["samples"].index(s)]["k6"]["inserts"].update(pid=me, start=soak.start_time(me),
                                                                 rss_kb=soak.status_kb(me))
    with pytest.raises(AssertionError, match="is no k6 this test saw"):
        check_rss(bad, seen)
    # Planted: the other run's k6 (right program, wrong run).
    bad = json.loads(json.dumps(r))
    k = bad["samples"][r["samples"].index(s)]["k6"]
    k["inserts"] = dict(k["updates"])
    with pytest.raises(AssertionError, match="runs"):
        check_rss(bad, seen)
    # Planted: the right pid, another number (Prometheus' RSS in its place).
    bad = json.loads(json.dumps(r))
    bad["samples"][r["samples"].index(s)]["k6"]["inserts"]["rss_kb"] = 4 * s["prometheus_rss_kb"]
    with pytest.raises(AssertionError):
        check_rss(bad, seen)


def test_children_with_finds_only_our_child_with_the_marker(tmp_path):
    """The soak's pid lookup: a direct child with the testid, not a
    grandchild with it, nor a child without it."""
    marker = f"testid=soak-probe-{os.getpid()}"
    nap = [sys.executable, "-c", "import time; time.sleep(30)"]
    ours = subprocess.Popen([*nap, marker])
    other = subprocess.Popen([*nap, "testid=another"])
    grand = subprocess.Popen(["sh", "-c", f"{' '.join(nap[:2])} 'import time; time.sleep(30)' {marker}; :"])
    try:
        time.sleep(0.3)
        assert soak.children_with(marker) == [ours.pid]
        assert soak.status_kb(ours.pid) > 0
    finally:
        for p in (ours, other, grand):
            p.kill()
            p.wait()
