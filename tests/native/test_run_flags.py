"""`ybbench run`'s k6-style flags on real runs of the native stack:
--vus/--duration/--rate make the knobs the --set forms make, --keys-from
reads exactly the keys a load wrote (the database counts them), --threshold
in k6's syntax judged on summary.json (a crossed one exits 99 naming the
op and its figure), what follows -- reaches k6, k6's own exit codes pass
through, and every refusal (exit 2, a message naming it, nothing written)."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid

import pytest

from ..support.stack import BIN
from ..support.ybbench_cli import ybbench, ybbench_run

TABLE = "postgresqlkeyvalue"


def _params(folder) -> dict:
    return json.loads((folder / "params.json").read_text())


@pytest.fixture(scope="module")
def load(postgres, tmp_path_factory):
    """A sql-inserts run made with --vus/--duration, its prefix fresh."""
    results = tmp_path_factory.mktemp("results")
    prefix = f"kf{uuid.uuid4().hex[:8]}"
    ins = ybbench_run("sql-inserts", postgres, results, testid=f"{prefix}-ins", knobs={"KEY_PREFIX": prefix},
                      extra_args=["--vus", "4", "--duration", "3s"])
    assert ins.code == 0, ins.output
    return results, prefix, ins


def test_vus_and_duration_make_the_knobs_set_makes(postgres, load):
    results, prefix, ins = load
    same = ybbench_run("sql-inserts", postgres, results, testid=f"{prefix}-set",
                       knobs={"KEY_PREFIX": f"{prefix}s", "VUS": 4, "DURATION": "3s"})
    assert same.code == 0, same.output
    a, b = _params(ins.folder)["knobs"], _params(same.folder)["knobs"]
    assert a["VUS"] == "4" and a["DURATION"] == "3s"
    assert {k: v for k, v in a.items() if k != "KEY_PREFIX"} == {k: v for k, v in b.items() if k != "KEY_PREFIX"}
    # k6 ran what the knobs say: its scenario.
    assert ins.digest()["scenario"]["vus"] == 4 and ins.digest()["scenario"]["duration"] == "3s"


def test_rate_is_the_open_model_at_that_rate(postgres, load):
    results, prefix, _ = load
    r = ybbench_run("sql-inserts", postgres, results, testid=f"{prefix}-rate", knobs={"KEY_PREFIX": f"{prefix}r"},
                    extra_args=["--rate", "200", "--vus", "2", "--duration", "3s"])
    assert r.code == 0, r.output
    knobs = _params(r.folder)["knobs"]
    assert (knobs["LOAD_MODEL"], knobs["RATE"], knobs["VUS"]) == ("constant-arrival-rate", "200", "2")
    scenario = r.digest()["scenario"]
    assert scenario["executor"] == "constant-arrival-rate" and scenario["rate"] == 200
    assert scenario["preAllocatedVUs"] == 2
    # 200/s for 3 s: k6 starts 600 iterations, give or take the last tick (dropped ones are counted apart).
    started = r.digest()["ops"]["insert"]["count"] + r.digest()["dropped_iterations"]
    assert 598 <= started <= 601, started


def test_keys_from_reads_exactly_the_keys_the_load_wrote(postgres, load):
    results, prefix, ins = load
    # The database's own count of the load's keys, and their numbers 0..N-1.
    n = int(postgres.query(f"SELECT count(*) FROM {TABLE} WHERE k LIKE '{prefix}:%'"))
    top = int(postgres.query(f"SELECT max(split_part(k, ':', 2)::bigint) FROM {TABLE} WHERE k LIKE '{prefix}:%'"))
    assert n > 1000 and top == n - 1
    sel = ybbench_run("sql-selects", postgres, results, testid=f"{prefix}-sel",
                      extra_args=["--keys-from", ins.folder.name, "--vus", "4", "--duration", "2s",
                                  "--threshold", "select:p(99)<10s", "--threshold", "errors==0"])
    assert sel.code == 0, sel.output
    params = _params(sel.folder)
    assert params["keys_from"] == ins.folder.name
    assert params["knobs"]["KEY_PREFIX"] == prefix and params["knobs"]["MAX_WRITTEN_KEY"] == str(n)
    d = sel.digest()
    assert d["ops"]["select"]["count"] > 100 and d["keys_missing"] == 0 and d["errors"] == 0
    # The thresholds held and are kept: each verdict is the summary's figure against the limit, arithmetic here.
    assert params["thresholds"] == ["select:p(99)<10s", "errors==0"]
    p99 = d["ops"]["select"]["latency_ms"]["p99"]
    assert d["thresholds"] == [
        {"threshold": "select:p(99)<10s", "op": "select", "figure": "p99", "limit": 10000.0, "value": p99,
         "ok": p99 < 10000},
        {"threshold": "errors==0", "op": None, "figure": "errors", "limit": 0.0, "value": 0.0, "ok": True}]
    assert ybbench("validate", sel.folder).returncode == 0
    # One key more (set by hand) and the script's own start-up check finds the top key missing: the count is the
    # load's to the key.
    over = ybbench_run("sql-selects", postgres, results, testid=f"{prefix}-over",
                       knobs={"KEY_PREFIX": prefix, "MAX_WRITTEN_KEY": n + 1, "VUS": 4, "DURATION": "2s"})
    assert over.code == 107 and f"key {prefix}:{n} is not in {TABLE}" in over.output, over.output


def test_a_threshold_that_cannot_hold_exits_99_naming_the_op_and_figure(postgres, load):
    results, prefix, ins = load
    r = ybbench_run("sql-selects", postgres, results, testid=f"{prefix}-thr",
                    extra_args=["--keys-from", ins.folder.name, "--duration", "2s", "--vus", "2",
                                "--threshold", "select:p99<1us", "--threshold", "rate>=1000000000",
                                "--threshold", "update:p(95)<5ms", "--threshold", "keys_missing==0"])
    assert r.code == 99, r.output
    d = r.digest()
    p99, rate = d["ops"]["select"]["latency_ms"]["p99"], d["ops"]["select"]["per_second"]
    assert f"threshold crossed: select:p99<1us: select p99 {p99:g} ms, limit 0.001 ms" in r.output
    assert f"threshold crossed: rate>=1000000000: select per_second {rate:g}, limit 1e+09" in r.output
    assert "threshold crossed: update:p(95)<5ms: the run had no update (its ops: select)" in r.output
    assert "keys_missing==0" not in r.output  # held: only crossed ones are said
    assert [e["ok"] for e in d["thresholds"]] == [False, False, False, True]
    assert _params(r.folder)["k6_exit_code"] == 0  # k6's own thresholds held: the 99 is ours
    assert ybbench("validate", r.folder).returncode == 0


def test_what_follows_the_double_dash_reaches_k6(postgres, load, tmp_path):
    results, prefix, _ = load
    log = tmp_path / "k6-own.log"
    r = ybbench_run("sql-inserts", postgres, results, testid=f"{prefix}-dd", knobs={"KEY_PREFIX": f"{prefix}d"},
                    extra_args=["--vus", "1", "--duration", "1s", "--", f"--log-output=file={log}"])
    assert r.code == 0, r.output
    assert _params(r.folder)["k6_args"] == [f"--log-output=file={log}"]
    assert "level=info" in log.read_text()  # k6 wrote its log where the flag said


def test_k6s_own_exit_code_passes_through(postgres, tmp_path):
    # sql-selects without its keys: the script stops at start-up, k6 exits 107 (ScriptException, k6's errext).
    r = ybbench_run("sql-selects", postgres, tmp_path, testid="nokeys", knobs={"DURATION": "1s"})
    assert r.code == 107, r.output
    assert "KEY_PREFIX is required" in r.output and not (tmp_path / "nokeys").exists()


@pytest.mark.parametrize("args, says", [
    (["--vus", "4", "--set", "VUS=8"], "--vus and --set VUS=8: give one"),
    (["--rate", "100", "--set", "LOAD_MODEL=closed"], "--rate and --set LOAD_MODEL=closed: give one"),
    (["--vus", "0"], "argument --vus: '0': a whole number, 1 or more"),
    (["--duration", "soon"], "--duration"),
    (["--threshold", "select:p(99.9)<5ms"], "p(99.9) is not among them"),
    (["--threshold", "select<5ms"], "k6's syntax"),
    (["--threshold", "select:dropped_iterations==0"], "the whole run's, not an op's"),
    (["--", "--vus", "3"], "-- --vus: ybbench sets this for k6 (use --vus instead)"),
])
def test_bad_flags_are_refused_before_any_load(postgres, tmp_path, args, says):
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid="refused", extra_args=args)
    assert r.code == 2 and says in r.output, r.output
    assert not (tmp_path / "results" / "refused").exists()


def test_keys_from_refuses_a_run_of_another_workload_or_that_wrote_nothing(postgres, load, tmp_path):
    results, prefix, ins = load
    sel = ybbench_run("sql-selects", postgres, results, testid="refused", extra_args=["--keys-from", f"{prefix}-sel"])
    assert sel.code == 2 and f"--keys-from {prefix}-sel: a sql-selects run; sql-selects reads the keys of a " \
        "sql-inserts run" in sel.output, sel.output
    missing = ybbench_run("sql-selects", postgres, results, testid="refused", extra_args=["--keys-from", "nosuchrun"])
    assert missing.code == 2 and "--keys-from nosuchrun: no run 'nosuchrun'" in missing.output, missing.output
    loads = ybbench_run("sql-inserts", postgres, results, testid="refused", extra_args=["--keys-from", ins.folder.name])
    assert loads.code == 2 and "--keys-from: sql-inserts reads no keys a load wrote" in loads.output
    clash = ybbench_run("sql-selects", postgres, results, testid="refused",
                        knobs={"MAX_WRITTEN_KEY": 5}, extra_args=["--keys-from", ins.folder.name])
    assert clash.code == 2 and f"MAX_WRITTEN_KEY=5 given, the run's is" in clash.output
    # A load that wrote nothing: the real run's folder with its count planted at 0.
    empty = tmp_path / "empty"
    shutil.copytree(ins.folder, empty / "none")
    s = json.loads((empty / "none" / "summary.json").read_text())
    s["rows_written"] = 0
    (empty / "none" / "summary.json").write_text(json.dumps(s))
    r = ybbench_run("sql-selects", postgres, empty, testid="refused", extra_args=["--keys-from", "none"])
    assert r.code == 2 and "--keys-from none: the run wrote no rows" in r.output, r.output
    assert not (results / "refused").exists() and not (empty / "refused").exists()


def test_version_names_the_k6_it_runs_and_its_extensions():
    own = subprocess.run([str(BIN / "k6"), "version"], capture_output=True, text=True).stdout
    p = ybbench("--version", env={"K6": str(BIN / "k6"), "PATH": "/usr/bin:/bin"})
    assert p.returncode == 0
    first = own.splitlines()[0].split()[1]  # "k6 v1.8.1 (...)" as k6 says it
    assert p.stdout.splitlines()[0].startswith("ybbench ") and f"k6 {first} ({BIN / 'k6'})" in p.stdout
    assert "k6/x/sql:" in p.stdout and "k6/x/sql" in own
