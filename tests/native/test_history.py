"""`ybbench history` against Apache Otava itself, and the history store.

Otava is the ground truth: each synthetic series is written here as a CSV
with its own Otava config and `otava analyze` is run on it separately (the
venv native/install-deps.sh makes); `ybbench history` must report exactly
its change points. The store: two processes recording at once both land; a
corrupt or foreign store is refused naming it and left byte-identical;
importing twice gives the same store. The gate: exit 1 on a planted
regression, naming the op (ops/s down, p99 up); 0 on a flat series, on p99
going down and once the newest runs are back."""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys

import numpy as np
import pytest

from ybbench.analysis import otava
from ybbench.core.files import write_json

from ..support import results_files, shared
from ..support.stack import REPO
from ..support.ybbench_cli import ybbench


@pytest.fixture(scope="session", autouse=True)
def otava_installed():
    # Every test here runs Otava: missing, they skip (fail under YBBENCH_REQUIRE_TOOLS=1) before any fixture starts.
    shared.need_otava()


N, STEP = 60, 30


def fake_runs(results, name, ops_per_s, p99_ms, *, knobs=None, labels=None):
    """Run folders as `ybbench run` writes them, one a minute, select's figures given."""
    for i, (ops, p99) in enumerate(zip(ops_per_s, p99_ms)):
        tid = f"{name}-{i:02d}"
        p = results_files.params(tid, workload="sql-selects", knobs={"VUS": "4", **(knobs or {})},
                                 started=1_800_000_000 + 60 * i, finished=1_800_000_010 + 60 * i)
        if labels:
            p["labels"] = labels(i)
        write_json(results / tid / "params.json", p)
        lat = {"avg": p99 / 3, "p50": p99 / 4, "p90": p99 / 2, "p95": p99 / 1.5, "p99": p99, "max": p99 * 2}
        write_json(results / tid / "summary.json", results_files.summary(
            tid, {"select": results_files.op(int(ops * 10), ops, latency_ms=lat)}, workload="sql-selects",
            duration_s=10.0))


def otava_on_csv(folder, ops_per_s, p99_ms, magnitude=None) -> list[tuple[str, int]]:
    """`otava analyze` on a CSV and config written here (not ybbench's): (metric, index) of each change point;
    magnitude: Otava's own -M."""
    data = folder / "mine.csv"
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time", "ops", "p99"])
        for i, (o, p) in enumerate(zip(ops_per_s, p99_ms)):
            w.writerow([f"2025-06-01T{i // 60:02d}:{i % 60:02d}:00Z", o, p])
    conf = folder / "mine.yaml"
    conf.write_text(f"tests:\n  mine:\n    type: csv\n    file: {data}\n    time_column: time\n    metrics:\n"
                    "      ops: {column: ops, direction: 1}\n      p99: {column: p99, direction: -1}\n")
    p = subprocess.run([str(otava.program()), "analyze", "--config-file", str(conf), "mine", "--output", "json",
                        "--since", "2025-01-01", *(["-M", str(magnitude)] if magnitude else [])],
                       capture_output=True, text=True, env={"HOME": str(folder)})
    assert p.returncode == 0, p.stderr
    doc = json.loads(next(line for line in p.stdout.splitlines() if line.startswith("{")))
    names = {"ops": "select_ops_per_s", "p99": "select_p99_ms"}
    return sorted((names[c["metric"]], c["index"]) for g in doc["mine"] for c in g["changes"])


def history(results, *args):
    return ybbench("history", "--results", str(results), *args)


def series(seed: int, step: float):
    # 2% noise on ops/s, 3% on p99; ops/s steps by `step` at run 30.
    rng = np.random.default_rng(seed)
    ops = [1000 * (1 + step if i >= STEP else 1) * (1 + 0.02 * rng.standard_normal()) for i in range(N)]
    p99 = [4.0 * (1 + 0.03 * rng.standard_normal()) for _ in range(N)]
    return ops, p99


@pytest.mark.parametrize("seed,step", [(1, 0.10), (2, 0.10), (3, 0.0), (4, 0.0)])
def test_history_reports_exactly_otavas_change_points(tmp_path, seed, step):
    ops, p99 = series(seed, step)
    results = tmp_path / "results"
    fake_runs(results, "syn", ops, p99)
    p = history(results, "import")
    assert p.returncode == 0, p.stderr
    assert "60 runs added" in p.stdout
    p = history(results)
    assert p.returncode == 0, p.stderr
    doc = json.loads((results / "history" / "history.json").read_text())
    (s,) = doc["series"]
    assert [r["testid"] for r in s["runs"]] == [f"syn-{i:02d}" for i in range(N)]
    got = sorted((c["metric"], c["index"]) for c in s["change_points"])
    assert got == otava_on_csv(tmp_path, ops, p99)
    if step:
        # The planted step is found where it was planted (2% noise against a 10% step: Otava's p < 0.001).
        assert ("select_ops_per_s", STEP) in got
        c = next(c for c in s["change_points"] if c["metric"] == "select_ops_per_s")
        assert c["mean_before"] == pytest.approx(np.mean(ops[:STEP]), rel=1e-6)
        assert c["mean_after"] == pytest.approx(np.mean(ops[STEP:]), rel=1e-6)
        assert c["change_percent"] == pytest.approx((np.mean(ops[STEP:]) / np.mean(ops[:STEP]) - 1) * 100, rel=1e-5)
        assert not c["regression"] and c["first_after"] == f"syn-{STEP}" and len(c["runs_before"]) == STEP
        page = (results / "history" / "history.html").read_text()
        assert page.count("data:image/png;base64,") == 2 and "syn-30" in page


@pytest.mark.parametrize("given,magnitude", [("10%", 0.10), ("2", 0.02)])
def test_min_change_keeps_exactly_what_otavas_own_magnitude_keeps(tmp_path, given, magnitude):
    # A 5% step in 2% noise: Otava finds it; its -M 0.1 drops it, -M 0.02 keeps it.
    ops, p99 = series(6, 0.05)
    results = tmp_path / "results"
    fake_runs(results, "mag", ops, p99)
    assert history(results, "import").returncode == 0
    every, kept = otava_on_csv(tmp_path, ops, p99), otava_on_csv(tmp_path, ops, p99, magnitude)
    assert ("select_ops_per_s", STEP) in every
    assert (("select_ops_per_s", STEP) in kept) == (magnitude < 0.05)
    p = history(results, "--min-change", given)
    assert p.returncode == 0, p.stdout + p.stderr
    doc = json.loads((results / "history" / "history.json").read_text())
    assert doc["otava"]["min_change"] == magnitude
    (s,) = doc["series"]
    assert sorted((c["metric"], c["index"]) for c in s["change_points"]) == kept
    assert f"changes under {magnitude * 100:g}% passed over" in (results / "history" / "history.html").read_text()


@pytest.mark.parametrize("given,says", [("abc", "a percentage"), ("-5%", "from 0% to under 100%"),
                                        ("100%", "from 0% to under 100%"), ("nan", "from 0% to under 100%")])
def test_a_bad_min_change_is_refused_naming_it_and_writes_nothing(tmp_path, given, says):
    results = tmp_path / "results"
    fake_runs(results, "bad", [100.0] * 3, [1.0] * 3)
    p = history(results, f"--min-change={given}")  # argparse takes "-5%" after a space for an option
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"--min-change {given!r}: {says}" in p.stderr and "Traceback" not in p.stderr
    assert not (results / "history").exists() and not (results / "history.sqlite").exists()


def test_the_gate_fails_on_a_planted_regression_naming_the_op_and_passes_a_flat_series(tmp_path):
    ops, p99 = series(5, -0.10)  # ops/s 10% down from run 30 on: the newest runs are after it
    bad = tmp_path / "bad"
    fake_runs(bad, "bad", ops, p99)
    assert history(bad, "import").returncode == 0
    p = history(bad, "--fail-on", "regression")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "regression: sql-selects select ops/s -" in p.stderr and "from run bad-30" in p.stderr
    flat = tmp_path / "flat"
    fake_runs(flat, "flat", *series(3, 0.0))
    assert history(flat, "import").returncode == 0
    p = history(flat, "--fail-on", "regression")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "regression" not in p.stderr


def segments(seed: int, *levels: tuple[int, float], noise: float) -> list[float]:
    """`count` runs at each (count, level) in turn, each off its level by `noise` (relative, normal)."""
    rng = np.random.default_rng(seed)
    return [level * (1 + noise * rng.standard_normal()) for count, level in levels for _ in range(count)]


@pytest.mark.parametrize("p99_after", [5.0, 3.0])
def test_the_gate_fails_on_p99_going_up_and_passes_it_going_down(tmp_path, p99_after):
    # The other gate tests plant ops/s drops: here p99 alone steps (ops/s flat), so a p99 judged as if higher
    # were better fails this test both ways. Lower is better: up is a regression, down is not.
    ops = segments(7, (16, 1000.0), noise=0.02)
    p99 = segments(8, (8, 4.0), (8, p99_after), noise=0.03)
    worse = np.mean(p99[8:]) > np.mean(p99[:8])
    pct = (np.mean(p99[8:]) / np.mean(p99[:8]) - 1) * 100
    results = tmp_path / "results"
    fake_runs(results, "lat", ops, p99)
    assert history(results, "import").returncode == 0
    p = history(results, "--fail-on", "regression")
    (s,) = json.loads((results / "history" / "history.json").read_text())["series"]
    (c,) = s["change_points"]  # p99's step, where it was planted; none on ops/s
    assert (c["metric"], c["index"]) == ("select_p99_ms", 8)
    assert p.returncode == (1 if worse else 0), p.stdout + p.stderr
    assert c["regression"] == worse and ("worse" in p.stdout) == worse, p.stdout
    assert (f"regression: sql-selects select p99 ms {pct:+.1f}% from run lat-08" in p.stderr) == worse, p.stderr


@pytest.mark.parametrize("recovered", [True, False])
def test_the_gate_passes_once_the_newest_runs_are_back_and_fails_while_they_are_not(tmp_path, recovered):
    # ops/s drops 20% at run 12 and (recovered) comes back at run 24, to 99% of the old level (back, within
    # noise: a series back at its level lands under its old mean about half the time): Otava finds both
    # changes, and the gate fails only while the newest segment is nearer the dropped level than the old one.
    # 12 runs a segment: with 8, Otava found neither change in two draws of three.
    ops = segments(3, (12, 1000.0), (12, 800.0), (12, 990.0), noise=0.02)[:36 if recovered else 24]
    before, dropped, newest = np.mean(ops[:12]), np.mean(ops[12:24]), np.mean(ops[-12:])
    still_worse = abs(newest - dropped) < abs(newest - before)
    drop = (dropped / before - 1) * 100
    assert still_worse == (not recovered) and (not recovered or newest < before)
    results = tmp_path / "results"
    fake_runs(results, "rec", ops, segments(4, (len(ops), 4.0), noise=0.03))
    assert history(results, "import").returncode == 0
    p = history(results, "--fail-on", "regression")
    (s,) = json.loads((results / "history" / "history.json").read_text())["series"]
    assert [(c["metric"], c["index"]) for c in s["change_points"]] == [("select_ops_per_s", 12)] + (
        [("select_ops_per_s", 24)] if recovered else [])
    assert p.returncode == (1 if still_worse else 0), p.stdout + p.stderr
    assert (f"regression: sql-selects select ops/s {drop:+.1f}% from run rec-12" in p.stderr) == still_worse, p.stderr


def test_a_change_says_what_differs_and_order_by_label(tmp_path):
    # Labels commit=c00..c59 given in reverse time order: ordered by the label, the step is at 30 again.
    ops, p99 = series(1, 0.10)
    results = tmp_path / "results"
    fake_runs(results, "lab", ops[::-1], p99[::-1], labels=lambda i: {"commit": f"c{N - 1 - i:02d}"})
    assert history(results, "import").returncode == 0
    p = history(results, "--order-by", "label:commit")
    assert p.returncode == 0, p.stderr
    (s,) = json.loads((results / "history" / "history.json").read_text())["series"]
    c = next(c for c in s["change_points"] if c["metric"] == "select_ops_per_s")
    assert c["index"] == STEP
    assert c["differs"] == {"labels": {"commit": {"before": "c29", "after": "c30"}}}
    assert "commit c29 -> c30" in p.stdout


def _store_dump(path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_import_twice_gives_the_same_store(tmp_path):
    results = tmp_path / "results"
    fake_runs(results, "imp", *series(1, 0.0))
    assert history(results, "import").returncode == 0
    first = _store_dump(results / "history.sqlite")
    p = history(results, "import")
    assert p.returncode == 0 and "0 runs added, 60 already there" in p.stdout
    assert _store_dump(results / "history.sqlite") == first
    assert sum(1 for line in first if line.startswith('INSERT INTO "ybbench_history_runs"')) == N


RECORD_AT = """
import sys, time
from pathlib import Path
import psycopg  # loaded before the instant, as sqlite3 is: the race is in the store, not in imports
from ybbench.core import history_record
folder, store, at = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3])
time.sleep(max(0.0, at - time.time()))
print(history_record.record(folder, store))
"""


@pytest.mark.parametrize("fresh", [True, False])
def test_two_processes_recording_at_the_same_moment_both_land(tmp_path, fresh):
    # fresh: both also race to create the store.
    results = tmp_path / "results"
    fake_runs(results, "con", [100.0] * 8, [1.0] * 8)
    store = tmp_path / "history.sqlite"
    if not fresh:
        assert history(results, "--history", str(store), "import", str(results / "con-07")).returncode == 0
    import time
    at = time.time() + 3  # both started first, then released at the same instant
    procs = [subprocess.Popen([sys.executable, "-c", RECORD_AT, str(results / f"con-0{i}"), str(store), str(at)],
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(6)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, outs
    assert [o.strip() for o, _ in outs] == ["True"] * 6
    conn = sqlite3.connect(store)
    got = sorted(r[0] for r in conn.execute("SELECT testid FROM ybbench_history_runs"))
    conn.close()
    assert got == sorted([f"con-0{i}" for i in range(6)] + ([] if fresh else ["con-07"]))


OPEN_AT = """
import sys, time
from pathlib import Path
from ybbench.core import history_store
store, at = Path(sys.argv[1]), float(sys.argv[2])
while time.time() < at:  # spun, not slept: the six wake within microseconds of each other
    pass
history_store.Store(str(store)).close()
"""


def test_six_processes_opening_one_new_sqlite_store_at_once_all_open_it(tmp_path):
    """The narrow part of the race above, repeated: a new file that one
    process switches to WAL while another reads its header gets SQLITE_BUSY
    without the busy handler (seen: 28 of 240 opens refused as "database is
    locked" before the store retried such opens)."""
    failed = []
    for r in range(20):
        store = tmp_path / f"h{r}.sqlite"
        at = __import__("time").time() + 0.7
        procs = [subprocess.Popen([sys.executable, "-c", OPEN_AT, str(store), str(at)], cwd=REPO,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
        failed += [err.strip().splitlines()[-1] for p in procs for _, err in [p.communicate(timeout=120)]
                   if p.returncode != 0]
        conn = sqlite3.connect(store)
        assert conn.execute("SELECT value FROM ybbench_history_meta").fetchone() == ("1",)
        conn.close()
    assert failed == []


@pytest.mark.parametrize("content", ["garbage", "foreign", "newer"])
def test_a_corrupt_or_foreign_store_is_refused_and_left_as_it_was(tmp_path, content):
    results = tmp_path / "results"
    fake_runs(results, "bad", [100.0] * 3, [1.0] * 3)
    store = results / "history.sqlite"
    if content == "garbage":
        store.write_bytes(b"this is not a database\n" * 200)
    else:
        conn = sqlite3.connect(store)
        if content == "foreign":
            conn.execute("CREATE TABLE accounts (id int, balance int)")
            conn.execute("INSERT INTO accounts VALUES (1, 100)")
        else:  # ours, from a newer ybbench
            conn.execute("CREATE TABLE ybbench_history_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            conn.execute("INSERT INTO ybbench_history_meta VALUES ('format_version', '2')")
        conn.commit()
        conn.close()
    before = store.read_bytes()
    for args in (("import",), ()):
        p = history(results, *args)
        assert p.returncode == 2, p.stdout + p.stderr
        assert f"history store {store}:" in p.stderr and "left as it is" in p.stderr
        assert {"garbage": "not an SQLite database", "foreign": "not a ybbench history store (tables accounts",
                "newer": "format_version 2"}[content] in p.stderr
    assert store.read_bytes() == before
    assert sorted(f.name for f in results.iterdir() if f.name.startswith("history")) == ["history.sqlite"]


def test_a_runs_report_links_its_history_page(tmp_path):
    results = tmp_path / "results"
    fake_runs(results, "rep", *series(1, 0.10))
    fake_runs(results / "other", "out", [10.0] * 3, [1.0] * 3)  # in no history.json
    assert history(results, "import", str(results)).returncode == 0
    assert ybbench("report", "rep-05", "--results", str(results)).returncode == 0
    assert "ybbench history" not in (results / "rep-05" / "report.html").read_text()  # none written yet
    assert history(results).returncode == 0
    for testid, linked in (("rep-05", True), ("other/out-00", False)):
        p = ybbench("report", testid.split("/")[-1], "--results", str(results / testid).rsplit("/", 1)[0])
        assert p.returncode == 0, p.stderr
        page = (results / testid / "report.html").read_text()
        assert ('<a href="../history/history.html">' in page) == linked, testid


def test_postgresql_store_two_at_once_both_land_and_a_foreign_one_is_refused_untouched(postgres, tmp_path):
    # A fresh database: six processes race to create the schema and record at the same instant.
    results = tmp_path / "results"
    fake_runs(results, "pgc", [100.0] * 6, [1.0] * 6)
    db = f"hist_{tmp_path.name[-12:].replace('-', '_').lower()}"
    postgres.psql("postgres", f"CREATE DATABASE {db}")
    url = f"postgresql://{postgres.user}@127.0.0.1:{postgres.port}/{db}"
    import time
    at = time.time() + 3
    procs = [subprocess.Popen([sys.executable, "-c", RECORD_AT, str(results / f"pgc-0{i}"), url, str(at)],
                              cwd=REPO, env=postgres.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(6)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [o.strip() for o, _ in outs] == ["True"] * 6, outs
    got = postgres.psql(db, "SELECT string_agg(testid, ',' ORDER BY testid) FROM ybbench_history_runs")
    assert ",".join(f"pgc-0{i}" for i in range(6)) in got
    # A database whose ybbench_history_runs is someone else's (no meta table): refused, left as it was.
    other = f"{db}_x"
    postgres.psql("postgres", f"CREATE DATABASE {other}")
    postgres.psql(other, "CREATE TABLE ybbench_history_runs (id int); INSERT INTO ybbench_history_runs VALUES (7)")
    p = ybbench("history", "--results", str(results), "--history",
                f"postgresql://{postgres.user}@127.0.0.1:{postgres.port}/{other}", "import", env=postgres.env())
    assert p.returncode == 2 and "not a ybbench history store" in p.stderr, p.stderr
    tables = postgres.psql(other, "SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = 'public'")
    assert "ybbench_history_runs" in tables and "ybbench_history_meta" not in tables
    assert "7" in postgres.psql(other, "SELECT id FROM ybbench_history_runs")
