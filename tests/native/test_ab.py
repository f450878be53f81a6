"""`ybbench ab` on the native stack: repeated, interleaved runs of
sql-selects compared run against run. Identical sides (a view read either
way) get no verdict; a planted server-side slowdown (a view whose filter
hashes each key many times over, bench/compare_resolution.py's plant) is
called slower and fails the gate naming the op. The order the runs ran in
(their params.json), the warm-up run, the warm-up seconds (absent from
the measured series, per-second.json read here) and each side's prepare
command are checked against what ab documents; bad input is refused
before any load."""

from __future__ import annotations

import json
import math
import shutil
import uuid

import pytest

from ..support.stack import BIN
from ..support.ybbench_cli import ybbench, ybbench_run

# Quiet (tests/lanes.sh): ab's verdicts on identical and planted sides hold only with no neighbour but idle-priority
# builds.
pytestmark = pytest.mark.quiet

BASE_VIEW, SLOW_VIEW = "ab_base_view", "ab_slow_view"
# k6 starts its first iteration well within a second of ybbench starting it, so 3 s of warm-up leave out at
# least one whole second the series would otherwise hold, and 6 s runs keep two or more.
DURATION = "6s"
WARMUP_S = 3


@pytest.fixture(scope="module")
def keys(postgres, tmp_path_factory):
    results = tmp_path_factory.mktemp("ab-keys")
    rid = f"ab{uuid.uuid4().hex[:8]}"
    ins = ybbench_run("sql-inserts", postgres, results, testid=f"{rid}-ins",
                      knobs={"VUS": 4, "DURATION": "3s", "KEY_PREFIX": rid})
    assert ins.code == 0, ins.output
    # The same rows either way; the slow view makes the server hash each key 8000 times per row read.
    for name, n in ((BASE_VIEW, 1), (SLOW_VIEW, 8000)):
        postgres.query(f"CREATE OR REPLACE VIEW {name} AS SELECT k, v FROM postgresqlkeyvalue "
                       f"WHERE md5(repeat(k, {n})) <> ''")
    return {"KEY_PREFIX": rid, "MAX_WRITTEN_KEY": ins.digest()["rows_written"], "folder": ins.folder}


def ab(postgres, results, aid, *args, knobs=None):
    settings = {"YSQL_NODES": f"127.0.0.1:{postgres.port}", "DB_USER": postgres.user, "DB_NAME": postgres.database,
                "VUS": 4, "DURATION": DURATION, **(knobs or {})}
    cmd = ["ab", "sql-selects", "--id", aid, "--results", results, "--warmup", f"{WARMUP_S}s"]
    for k, v in settings.items():
        cmd += ["--set", f"{k}={v}"]
    env = {**postgres.env(), "K6": str(BIN / "k6")}
    return ybbench(*cmd, *args, env=env, timeout=600)


def read_keys(keys: dict) -> dict:
    """The load's keys as knobs set by hand."""
    return {k: keys[k] for k in ("KEY_PREFIX", "MAX_WRITTEN_KEY")}


def read(path):
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def identical(postgres, keys, tmp_path_factory):
    results = tmp_path_factory.mktemp("ab-same")
    # The load run in this results folder, as a user's would be: the reads take its keys from it.
    shutil.copytree(keys["folder"], results / keys["folder"].name)
    log = results / "prepared.txt"
    p = ab(postgres, results, "same", "--base", f"TABLE={BASE_VIEW}", "--other", f"TABLE={BASE_VIEW}",
           "--repeat", "3", "--warmup-runs", "1", "--alpha", "0.001", "--fail-on", "slower:5%",
           "--base-prepare", f"echo base >> {log}", "--other-prepare", f"echo other >> {log}",
           "--base-label", "build=a", "--other-label", "build=b", "--keys-from", keys["folder"].name)
    return p, results, log


def test_identical_sides_get_no_verdict(identical):
    """Identical settings: no verdict and the gate passes. At alpha 0.001 a correct statistic calls identical
    runs different once in 1000 (tests/unit/test_run_stats.py measures its rate on simulated runs)."""
    p, results, _ = identical
    assert p.returncode == 0, p.stdout + p.stderr
    (cmp,) = [d for d in (results / "same").iterdir() if d.name.startswith("compare-")]
    doc = read(cmp / "compare.json")
    c = doc["comparisons"][0]
    s = c["ops"]["select"]
    assert s["verdict"] == "no significant difference", s
    assert s["runs"] == {"base": 3, "other": 3} and s["low"] < 1 < s["high"]
    assert c["base_runs"] == ["same-base1", "same-base2", "same-base3"]
    assert c["other_runs"] == ["same-other1", "same-other2", "same-other3"]
    assert "slower:5% passes" in p.stdout and "(3 + 3 runs)" in p.stdout


def test_runs_go_in_the_documented_order_after_a_warmup_run(identical, postgres, keys):
    _, results, log = identical
    ab_doc = read(results / "same" / "ab.json")
    started = {d.name: read(d / "params.json")["started_unix_s"] for d in (results / "same").iterdir()
               if (d / "params.json").is_file()}
    by_time = sorted(started, key=started.get)
    assert by_time == ["same-warm1", "same-base1", "same-other1", "same-other2", "same-base2", "same-base3",
                       "same-other3"]
    assert ab_doc["order"] == by_time[1:] and ab_doc["status"] == "complete"
    assert [r["warmup"] for r in ab_doc["runs"]] == [True] + [False] * 6
    # Each side's prepare command ran before each of its runs, the warm-up (a base run) included.
    assert log.read_text().split() == ["base", "base", "other", "other", "base", "base", "other"]
    # --keys-from: every run reads the load's keys, its prefix and the database's count of its rows.
    n = int(postgres.query(f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{keys['KEY_PREFIX']}:%'"))
    for tid in by_time:
        knobs = read(results / "same" / tid / "params.json")["knobs"]
        assert (knobs["KEY_PREFIX"], knobs["MAX_WRITTEN_KEY"]) == (keys["KEY_PREFIX"], str(n)), tid
    # The labels a side was given, and which ab and side, are the run's (params.json: the history store's).
    assert read(results / "same" / "same-other2" / "params.json")["labels"] == {"build": "b", "ab": "same",
                                                                                "ab_side": "other"}


def test_warmup_seconds_are_left_out_of_the_measured_series(identical):
    _, results, _ = identical
    (cmp,) = [d for d in (results / "same").iterdir() if d.name.startswith("compare-")]
    doc = read(cmp / "compare.json")
    dropped = []
    for tid in ("same-base1", "same-other1", "same-other2", "same-base2", "same-base3", "same-other3"):
        params = read(results / "same" / tid / "params.json")
        assert params["warmup_s"] == WARMUP_S
        cut = params["started_unix_s"] + WARMUP_S
        rows = read(results / "same" / tid / "per-second.json")["ops"]["select"]
        # The whole seconds (not the first or last row, which are partial) that start at or after the cut.
        kept = {t: n for t, n, _, _ in rows[1:-1] if t >= cut}
        series = doc["runs"][tid]["ops"]["select"]["throughput"]["series"]
        assert [t - 1 for t in series["t"]] == sorted(kept) and series["v"] == [kept[t] for t in sorted(kept)]
        dropped += [t for t, *_ in rows[1:-1] if t < cut]
        assert doc["runs"][tid]["warmup_s"] == WARMUP_S
        assert doc["runs"][tid]["ops"]["select"]["throughput"]["mean_ops_per_s"] == pytest.approx(
            sum(kept.values()) / len(kept), rel=1e-12)
    assert dropped, "no run had a whole second inside its warm-up: nothing here would catch a warm-up ignored"


def test_a_planted_server_slowdown_is_slower_and_fails_the_gate(postgres, keys, tmp_path):
    p = ab(postgres, tmp_path, "slow", "--base", f"TABLE={BASE_VIEW}", "--other", f"TABLE={SLOW_VIEW}",
           "--repeat", "3", "--warmup-runs", "0", "--fail-on", "slower:5%", knobs=read_keys(keys))
    assert p.returncode == 1, p.stdout + p.stderr
    (cmp,) = [d for d in (tmp_path / "slow").iterdir() if d.name.startswith("compare-")]
    doc = read(cmp / "compare.json")
    s = doc["comparisons"][0]["ops"]["select"]
    # k6's own counts over k6's durations, run by run, say how much slower (outside compare's series).
    k6 = {side: [read(tmp_path / "slow" / f"slow-{side}{i}" / "summary.json")["ops"]["select"]["per_second"]
                 for i in (1, 2, 3)] for side in ("base", "other")}
    assert max(k6["other"]) < 0.8 * min(k6["base"]), k6
    assert s["verdict"] == "slower" and s["high"] < 0.95, s
    (failed,) = doc["gate"]["failed"]
    assert failed.startswith(f"select: slow:other against slow:base: {100 * (1 - s['ratio']):.1f}% slower")
    assert f"FAILED {failed}" in p.stdout and "differs from slow:base in: knobs TABLE" in p.stdout
    # The ratio is the geometric mean of each run's own ops/s, read here from each run's per-second.json
    # (whole seconds at or after its warm-up's end), not from compare.json's values.
    means = {side: [per_second_mean(tmp_path / "slow" / f"slow-{side}{i}") for i in (1, 2, 3)]
             for side in ("base", "other")}
    assert math.isclose(s["ratio"], math.exp(sum(math.log(v) for v in means["other"]) / 3
                                             - sum(math.log(v) for v in means["base"]) / 3), rel_tol=1e-9), means


def per_second_mean(run: Path) -> float:
    """A run's mean select ops/s over its whole seconds after the warm-up, from its own files."""
    params = read(run / "params.json")
    cut = params["started_unix_s"] + params["warmup_s"]
    rows = read(run / "per-second.json")["ops"]["select"]
    kept = [n for t, n, _, _ in rows[1:-1] if t >= cut]
    return sum(kept) / len(kept)


NOISY_VIEW = "ab_noisy_view"


def test_runs_too_far_apart_for_the_change_asked_get_more_runs_and_close_ones_stop(postgres, keys, tmp_path):
    """--resolve: runs whose spread cannot find the change asked for go on
    in A B B A runs up to --max-repeat; runs close enough for it stop where
    they started. The spread is planted: before every run, each side's
    prepare rebuilds the view both read, hashing each key 1 and 1500 times
    by turns (free, then slower than the slow view: a counter file says
    whose turn), so each side has a fast and a slow run among its first two
    (A B B A), identical sides' runs are tens of % apart and 5% needs
    hundreds a side. (Drawn at random, four draws close together made the
    runs 7% apart now and then.)"""
    turn = tmp_path / "turn"
    rebuild = (f"n=$(( $(cat {turn} 2>/dev/null || echo 0) + 1 )); echo $n > {turn}; "
               f"psql -X -q -h 127.0.0.1 -p {postgres.port} -U {postgres.user} -d {postgres.database} -c "
               f"\"CREATE OR REPLACE VIEW {NOISY_VIEW} AS SELECT k, v FROM postgresqlkeyvalue "
               f"WHERE md5(repeat(k, $(( n % 2 ? 1 : 1500 )))) <> ''\"")
    p = ab(postgres, tmp_path, "noisy", "--set", f"TABLE={NOISY_VIEW}", "--repeat", "2", "--resolve", "5%",
           "--max-repeat", "3", "--warmup-runs", "0", "--base-prepare", rebuild, "--other-prepare", rebuild,
           knobs=read_keys(keys))
    assert p.returncode == 0, p.stdout + p.stderr
    doc = read(tmp_path / "noisy" / "ab.json")
    # Two a side, then the third pair in the order A B B A A B continues.
    assert doc["order"] == ["noisy-base1", "noisy-other1", "noisy-other2", "noisy-base2", "noisy-base3",
                            "noisy-other3"], doc["order"]
    assert sorted(r["testid"] for r in doc["runs"]) == sorted(doc["order"])
    assert "going on to 3 a side" in p.stdout, p.stdout
    (cmp,) = [d for d in (tmp_path / "noisy").iterdir() if d.name.startswith("compare-")]
    s = read(cmp / "compare.json")["comparisons"][0]["ops"]["select"]
    assert s["runs"] == {"base": 3, "other": 3}, s["runs"]
    # The spread the line names is that of the first 2 + 2 runs' k6 counts: tens of % (sd of log ops/s).
    k6 = [math.log(read(tmp_path / "noisy" / f"noisy-{t}" / "summary.json")["ops"]["select"]["per_second"])
          for t in ("base1", "base2", "other1", "other2")]
    assert max(k6) - min(k6) > math.log(1.3), k6

    # The same sides without the plant, asked for a change of 99%: three runs a side find it; no more run.
    p = ab(postgres, tmp_path, "close", "--base", f"TABLE={BASE_VIEW}", "--other", f"TABLE={BASE_VIEW}",
           "--repeat", "3", "--resolve", "99%", "--max-repeat", "5", "--warmup-runs", "0", knobs=read_keys(keys))
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(read(tmp_path / "close" / "ab.json")["order"]) == 6
    assert "a change of 99% is found 8 times in 10 with" in p.stdout and ": enough" in p.stdout, p.stdout


def test_a_failing_prepare_stops_the_ab_naming_it(postgres, keys, tmp_path):
    p = ab(postgres, tmp_path, "prep", "--repeat", "2", "--warmup-runs", "0", "--other-prepare", "echo broken; exit 3",
           knobs=read_keys(keys))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "run 2/4 other1: --other-prepare 'echo broken; exit 3' exited 3: broken" in p.stderr
    assert "Traceback" not in p.stderr
    # The run before it is kept, and ab.json says where ab stopped.
    assert sorted(d.name for d in (tmp_path / "prep").iterdir()) == ["ab.json", "prep-base1"]
    assert [r["testid"] for r in read(tmp_path / "prep" / "ab.json")["runs"]] == ["prep-base1"]


@pytest.mark.parametrize("args, words", [
    (["--repeat", "1"], ["--repeat 1: at least 2 runs a side"]),
    (["--warmup", "10s"], ["--warmup 10s: leaves nothing of DURATION=6s to measure"]),
    (["--warmup", "soon"], ["--warmup 'soon'"]),
    (["--base", "VUS=2"], ["--base VUS: also given with --set"]),
    (["--fail-on", "faster:5%"], ["faster is not a gate"]),
    (["--resolve", "five"], ["--resolve five: a change in percent"]),
    (["--resolve", "150%"], ["--resolve 150%: a change in percent between 0 and 100"]),
    (["--max-repeat", "3"], ["--max-repeat 3: at least --repeat (5)"]),
    (["--base", "NOPE=1"], ["NOPE"]),
])
def test_bad_input_is_refused_before_any_load(postgres, keys, tmp_path, args, words):
    p = ab(postgres, tmp_path, "bad", *args, knobs=read_keys(keys))
    assert p.returncode == 2, p.stdout + p.stderr
    for w in words:
        assert w in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and not list(tmp_path.iterdir())
