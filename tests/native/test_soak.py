"""`make soak`'s short form (bench/soak.py, 60 s): the command runs, and its
numbers are real. Its ops counts are k6's own summary, Prometheus' counter
and the rows the table holds, all equal; verify finds 0 lost; its RSS
columns are read from the k6 processes of each run and from Prometheus, as
this test sees them from outside (/proc, polled while the soak runs); its
head series grow by the series this test pushes into that Prometheus
meanwhile; its p99 drift is each window's p99 in the runs' own
per-second.json. A doctored sample (the soak's own pid, the other run's
k6) is caught. Never a timing assertion."""

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
from tests.support.stack import BIN, REPO
from ybbench.core import per_second

# Quiet (tests/lanes.sh): its windows' p99 are each its own only with no neighbour but idle-priority builds.
pytestmark = pytest.mark.quiet

# Series this test pushes into the soak's Prometheus while it runs (promtool's
# remote write), each new: its head series must grow by them.
PROBE_SERIES = 1000
# Head series that may appear on their own between the soak's first sample
# and its end, beside the probe's: Prometheus' own metrics for handlers and
# queries first used then (the soak's queries at the end), k6's for an op or
# error first seen late. An allowance (a run here stayed within it), not a
# measured spread; the probe is 25 times it.
OTHER_NEW_SERIES = 40


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
            check_within(k["rss_kb"], who, name)


def check_within(rss_kb: int, who: dict, what: str) -> None:
    """rss_kb within what the kernel said of that process: no less than the
    least VmRSS polled (10% for a dip between two polls), no more than its
    peak (VmHWM)."""
    assert who["min_rss"] * 0.9 <= rss_kb <= who["hwm"] * 1.05, (what, rss_kb, who)


def check_prometheus_rss(result: dict, seen_prometheus: dict) -> None:
    """Every Prometheus RSS the soak reports (each sample's, the end's) is
    of the one Prometheus process this test saw under it."""
    (who,) = seen_prometheus.values()
    for s in result["samples"]:
        check_within(s["prometheus_rss_kb"], who, f"Prometheus at {s['t']:.0f} s")
    check_within(result["prometheus_end"]["rss_kb"], who, "Prometheus at the end")


def check_head_series(result: dict, pushed: tuple[float, float]) -> None:
    """The head series the soak reports grow by the PROBE_SERIES this test
    pushed between `pushed` (start, end): from the last sample before the
    push to every reading surely after it (Prometheus scrapes itself every
    5 s: the reading holds the last scrape; 10 s of margin), by no fewer and
    by at most OTHER_NEW_SERIES more."""
    at = [(result["t0"] + s["t"], s["head_series"]) for s in result["samples"]]
    before = [n for t, n in at if t < pushed[0]]
    after = [(f"{t - result['t0']:.0f} s", n) for t, n in at if t > pushed[1] + 10]
    after.append(("the end", result["prometheus_end"]["head_series"]))
    assert before, (at, pushed)
    for when, n in after:
        grown = n - before[-1]
        assert PROBE_SERIES <= grown <= PROBE_SERIES + OTHER_NEW_SERIES, (when, n, before[-1])


def window_p99(folder: Path, op: str, lo: float, hi: float) -> float:
    """p99 in ms of the op's iterations k6 timed in the seconds lo <= t < hi
    (per-second.json, written by the run itself)."""
    doc = per_second.load(folder)
    assert doc, f"no per-second.json in {folder}"
    return per_second.quantile(doc, per_second.buckets_of(doc, op, lo, hi), 0.99)


def check_drift(result: dict) -> None:
    """Each p99 of the drift table is its window's in the run's own
    per-second.json: the first window from the soak's start, the last up to
    its end (k6's last push, a second after t_end). increase() counts from
    the window's first push to its last, so what k6 timed before the first
    (within a push, 1 s, of the window's or the run's first second: at the
    start, the slow first iterations) or after the last is not in it: the
    p99 lies among those of the window less its first 0, 1 or 2 seconds and
    its last 0, 1 or 2, within 20% (Prometheus' native histograms: buckets
    9% wide, interpolated in; per-second.json's 1%). A 15 s window's p99
    moves with one second: a cold run's last window read 17.55 ms in
    Prometheus, 17.51 in per-second.json less its first second and last
    two, 22.25 with them."""
    w = result["window_s"]
    windows = {"first": (result["t0"], result["t0"] + w), "last": (result["t_end"] + soak.PUSH_S - w,
                                                                    result["t_end"] + soak.PUSH_S)}
    for name, testid in result["testids"].items():
        folder = Path(result["results"]) / testid
        doc = per_second.load(folder)
        for which, (lo, hi) in windows.items():
            for op, got in result["p99"][name][which].items():
                start = max(lo, min(t for t, *_ in doc["ops"][op]))  # the op's first second in the window
                want = [window_p99(folder, op, start + skip, hi - short)
                        for skip in (0, 1, 2) for short in (0, 1, 2)]
                assert min(want) / 1.2 <= got <= max(want) * 1.2, (name, which, op, got, want)


def push_probe(prometheus_url: str, out: Path) -> tuple[float, float]:
    """PROBE_SERIES new series into the soak's Prometheus, by promtool's
    remote write; the time it took (start, end)."""
    probe = out / "probe.prom"
    probe.write_text("".join(f'ybbench_soak_probe{{n="{i}"}} 1\n' for i in range(PROBE_SERIES)))
    began = time.time()
    # promtool adds the remote write path (/api/v1/write) to the URL itself.
    done = subprocess.run([str(BIN / "promtool"), "push", "metrics", prometheus_url, str(probe)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    return began, time.time()


@pytest.fixture(scope="module")
def soaked(tmp_path_factory):
    out = tmp_path_factory.mktemp("soak")
    proc = subprocess.Popen([sys.executable, "-m", "bench.soak", "--seconds", "60", "--seed-keys", "5000",
                             "--sample-s", "10", "--results", str(out / "results"), "--json", str(out / "soak.json")],
                            cwd=REPO, stdout=(out / "stdout").open("w"), stderr=subprocess.STDOUT)
    seen: dict = {}  # (pid, start) -> cmd, lowest VmRSS, VmHWM, as polled from here
    seen_prometheus: dict = {}  # the same, of the soak's Prometheus
    pushed = None
    try:
        while proc.poll() is None:
            for pid, (ppid, cmd) in descendants(proc.pid).items():
                k6 = len(cmd) > 1 and cmd[0].endswith("/k6") and ppid == proc.pid
                if not (k6 or (cmd and Path(cmd[0]).name == "prometheus" and ppid == proc.pid)):
                    continue
                rss, hwm, start = status_kb(pid, "VmRSS"), status_kb(pid, "VmHWM"), soak.start_time(pid)
                if None in (rss, hwm, start):
                    continue
                w = (seen if k6 else seen_prometheus).setdefault((pid, start), {"cmd": cmd, "min_rss": rss,
                                                                               "hwm": hwm})
                w["min_rss"], w["hwm"] = min(w["min_rss"], rss), max(w["hwm"], hwm)
            # Once the soak has printed its first sample: the probe, into its Prometheus.
            if pushed is None and seen_prometheus and re.search(r"^\s*[\d.]+ min: k6 RSS",
                                                                (out / "stdout").read_text(), re.M):
                (cmd,) = [w["cmd"] for w in seen_prometheus.values()]
                address = next(a.split("=", 1)[1] for a in cmd if a.startswith("--web.listen-address="))
                pushed = push_probe(f"http://{address}", out)
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = (out / "stdout").read_text()
    assert proc.returncode == 0, text[-4000:]
    assert pushed, "the soak printed no sample"
    return json.loads((out / "soak.json").read_text()), seen, text, seen_prometheus, pushed


def test_soak_counts_are_k6s_prometheus_and_the_tables(soaked):
    r, _, text, _, _ = soaked
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
    # p99 per op, first and last quarter (a 60 s run: 15 s windows), each its window's.
    assert r["window_s"] == 15
    for name, ops in (("inserts", {"insert"}), ("updates", {"select", "update"})):
        assert set(r["p99"][name]["first"]) == set(r["p99"][name]["last"]) == ops
    check_drift(r)
    assert "first and last 15 s (a quarter of a run shorter than 20 minutes)" in " ".join(text.split())


def test_soak_verify_finds_nothing_lost(soaked):
    r, _, text, _, _ = soaked
    vi, vu = r["verify"]["inserts"], r["verify"]["updates"]
    assert vi["ok"] and vi["exit"] == 0 and vi["lost_at_least"] == 0 and vi["lost"]["count"] == 0
    assert vi["present"]["count"] == vi["acknowledged_keys"] == r["rows_inserted"]
    assert vu["ok"] and vu["exit"] == 0 and vu["lost_at_least"] == 0
    assert vu["iterations"] == r["k6"]["updates"]["iterations"] and vu["keys"] == 5000
    assert len(re.findall(r"│ OK\s*│", text)) == 2, text[-2000:]


def test_soak_rss_is_each_runs_k6(soaked):
    r, seen, _, _, _ = soaked
    sampled = [s for s in r["samples"] if all(s["k6"][n]["rss_kb"] for n in r["testids"])]
    assert len(sampled) >= 3, r["samples"]
    check_rss(r, seen)
    # Both k6 processes were seen by this test, one per run.
    for testid in r["testids"].values():
        assert sum(f"testid={testid}" in w["cmd"] for w in seen.values()) == 1


def test_a_wrong_pid_is_caught(soaked):
    r, seen, _, _, _ = soaked
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


def test_soak_prometheus_rss_is_the_processes(soaked):
    """Prometheus' RSS as the kernel gave it for that process."""
    r, _, _, seen_prometheus, _ = soaked
    assert len(seen_prometheus) == 1, seen_prometheus  # one Prometheus, seen by this test
    check_prometheus_rss(r, seen_prometheus)


def test_soak_head_series_grow_by_the_series_pushed(soaked):
    r, _, _, _, pushed = soaked
    check_head_series(r, pushed)


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
