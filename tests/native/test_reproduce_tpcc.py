"""`ybbench reproduce` of YugabyteDB's published TPC-C rows: the three
pages' experiment files (every quote verbatim in the page's excerpt, every
row's published setup); one published row run at its published size (one
load, at the row's warehouses, read from the plan and from --dry-run's
output); --set WAREHOUSES over several rows refused, or scoped to one
row; the published warm-up left out (each phase's DURATION, the figures
after it). Then two short runs on the native stack: a row at 1 warehouse,
its tpmC from the orders in the tables; and a run with a warm-up, its
compared figures those after it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ybbench.core.errors import UserError
from ybbench.experiments.reproduce import expected, runs
from ybbench.experiments.reproduce import file as experiment_file

from ..support import ybbench_cli
from ..support.stack import BIN, REPO
from ..support.tpcc_orders import run_orders

cli = ybbench_cli.ybbench
NO_K6 = {"K6": "/bin/true", "PATH": "/usr/bin:/bin"}

# Per file: row -> (nodes, vCPUs, published warehouses, published run VUs, published warm-up s).
ROWS = {
    "tpcc-yugabytedb": {
        "tpcc-500": (3, 2, 500, 50, 60), "tpcc-1000": (3, 4, 1000, 100, 60),
        "tpcc-2000": (3, 8, 2000, 200, 60), "tpcc-4000": (3, 16, 4000, 400, 300)},
    "tpcc-yugabytedb-high-scale": {
        "tpcc-10": (3, 2, 10, 1, 60), "tpcc-100": (3, 16, 100, 10, 60), "tpcc-1000": (3, 16, 1000, 100, 60),
        "tpcc-10k": (30, 16, 10000, 360, 900), "tpcc-150k": (75, 48, 150000, 9000, 0)},
    "tpcc-yugabytedb-horizontal": {
        "tpcc-3n": (3, 8, 2000, 200, 300), "tpcc-4n": (4, 8, 2666, 266, 300), "tpcc-5n": (5, 8, 3333, 333, 300),
        "tpcc-6n": (6, 8, 4000, 400, 300)},
}
# Every published figure: (row, measure) -> value.
FIGURES = {
    "tpcc-yugabytedb": {
        ("tpcc-500", "tpmc"): 6415.7, ("tpcc-500", "efficiency_percent"): 99.78, ("tpcc-500", "latency_avg_ms"): 64.08,
        ("tpcc-1000", "tpmc"): 12829.93, ("tpcc-1000", "efficiency_percent"): 99.77,
        ("tpcc-1000", "latency_avg_ms"): 73.97,
        ("tpcc-2000", "tpmc"): 25646.4, ("tpcc-2000", "efficiency_percent"): 99.71,
        ("tpcc-2000", "latency_avg_ms"): 54.21,
        ("tpcc-4000", "tpmc"): 51343.5, ("tpcc-4000", "efficiency_percent"): 99.81,
        ("tpcc-4000", "latency_avg_ms"): 39.46},
    "tpcc-yugabytedb-high-scale": {
        ("tpcc-10", "tpmc"): 125.83, ("tpcc-10", "efficiency_percent"): 97.85, ("tpcc-10", "latency_avg_ms"): 19.2,
        ("tpcc-100", "tpmc"): 1277.13, ("tpcc-100", "efficiency_percent"): 99.31, ("tpcc-100", "latency_avg_ms"): 10.36,
        ("tpcc-1000", "tpmc"): 12861.13, ("tpcc-1000", "efficiency_percent"): 100.01,
        ("tpcc-1000", "latency_avg_ms"): 16.09,
        ("tpcc-10k", "tpmc"): 128499.53, ("tpcc-10k", "efficiency_percent"): 99.92,
        ("tpcc-10k", "latency_avg_ms"): 26.4,
        ("tpcc-150k", "efficiency_percent"): 99.30, ("tpcc-150k", "latency_avg_ms"): 123.33},
    "tpcc-yugabytedb-horizontal": {
        ("tpcc-3n", "tpmc"): 25646.4, ("tpcc-3n", "efficiency_percent"): 99.71, ("tpcc-3n", "latency_avg_ms"): 54.21,
        ("tpcc-4n", "tpmc"): 34212.57, ("tpcc-4n", "efficiency_percent"): 99.79, ("tpcc-4n", "latency_avg_ms"): 53.92,
        ("tpcc-5n", "tpmc"): 42772.6, ("tpcc-5n", "efficiency_percent"): 99.79, ("tpcc-5n", "latency_avg_ms"): 51.01,
        ("tpcc-6n", "tpmc"): 51296.9, ("tpcc-6n", "efficiency_percent"): 99.72, ("tpcc-6n", "latency_avg_ms"): 62.09},
}


def plan(name: str, tmp_path: Path, **kw) -> runs.Plan:
    kw.setdefault("settings", [])
    return runs.plan(name, duration=kw.pop("duration", "60s"), rid="t", resume=None, results=tmp_path / "results",
                     check=False, **kw)


# --- the files -------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_quote_is_its_pages_words_and_every_row_its_setup(name):
    exp = experiment_file.load(REPO / "experiments" / f"{name}.yaml")
    assert exp.seed == "" and exp.url.startswith("https://docs.yugabyte.com/stable/benchmark/tpcc/")
    text = " ".join(exp.source_text().read_text().split())
    assert [(where, q) for where, q in exp.quotes() if " ".join(q.split()) not in text] == []
    rows = runs.rows(exp)
    assert list(rows) == list(ROWS[name])
    for row, (nodes, vcpus, warehouses, vus, warmup) in ROWS[name].items():
        run = rows[row][-1]
        setup = {k: e.value for k, e in exp.setup_of(run).items()}
        assert (setup["nodes"], setup["vcpus_per_node"], setup["warehouses"]) == (nodes, vcpus, warehouses)
        assert [p.workload for p in rows[row]] == ["tpcc-load", "tpcc"]
        assert rows[row][0].published["WAREHOUSES"] == str(warehouses) and run.published["VUS"] == str(vus)
        assert (experiment_file.seconds("w", run.warmup.value) if run.warmup else 0) == warmup
    assert {(p.name, f.measure): f.value for p in exp.phases for f in p.figures} == FIGURES[name]


@pytest.mark.parametrize("name", sorted(ROWS))
def test_every_published_efficiency_is_its_tpmc_over_the_cap_of_its_warehouses(name):
    """efficiency = tpmC / (12.86 x warehouses), to the published rounding:
    the warehouses each file takes (the horizontal page's commands, not its
    table) make every published row's figures agree."""
    figs = FIGURES[name]
    for row, (_, _, warehouses, _, _) in ROWS[name].items():
        if (row, "tpmc") in figs:
            assert 100 * figs[(row, "tpmc")] / (12.86 * warehouses) == pytest.approx(
                figs[(row, "efficiency_percent")], abs=0.006)


def test_the_scaling_pages_series_fits_through_ybbench_scale(tmp_path):
    r = cli("scale", "--throughput", str(REPO / "experiments" / "scaling" / "tpcc-yugabytedb-horizontal.yaml"),
            "--out", str(tmp_path / "fit"))
    assert r.returncode == 0, r.stderr
    fit = json.loads((tmp_path / "fit" / "results.json").read_text())
    assert [p["nodes"] for p in fit["points"]] == [3, 4, 5, 6]
    assert fit["fit"]["lambda"]["value"] == pytest.approx(25646.4 / 3, rel=0.01)


# --- one published row ---------------------------------------------------

@pytest.mark.parametrize("name,row", [(n, r) for n in sorted(ROWS) for r in ROWS[n]])
def test_a_published_row_loads_once_at_its_published_warehouses(name, row, tmp_path):
    nodes, vcpus, warehouses, vus, warmup = ROWS[name][row]
    p = plan(name, tmp_path, row=row, published=True, settings=["YSQL_NODES=10.0.0.1:5433"])
    loads = [pp for pp in p.phases if pp.phase.workload == "tpcc-load"]
    assert len(loads) == 1 and loads[0].knobs["WAREHOUSES"] == str(warehouses)
    assert [pp.phase.name for pp in p.phases] == [loads[0].phase.name, row]
    run = p.phases[1]
    assert run.phase.reads == loads[0].phase.name and "WAREHOUSES" not in run.knobs  # read from its load
    assert run.vus == vus and run.knobs["VUS"] == str(vus) and run.knobs["TPCC_MODE"] == "spec"
    assert run.warmup_s == warmup and run.knobs["DURATION"] == f"{60 + warmup}s"


def test_dry_run_prints_one_load_at_the_rows_warehouses_and_writes_nothing(tmp_path):
    results = tmp_path / "results"
    r = cli("reproduce", "tpcc-yugabytedb", "--row", "tpcc-1000", "--published", "--dry-run", "--duration", "5m",
            "--set", "YSQL_NODES=10.0.0.1:5433", "--results", str(results), env=NO_K6)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "dry run: nothing runs, nothing is written" in out and "row tpcc-1000, at its published knobs" in out
    assert "phase 1/2 load-1000: tpcc-load, 48 VUs, until loaded" in out
    assert "knobs: VUS=48 WAREHOUSES=1000 YSQL_NODES=10.0.0.1:5433" in out
    assert "phase 2/2 tpcc-1000: tpcc, 100 VUs, 300s measured after a 60s warm-up, left out" in out
    assert "DURATION=360s TPCC_MODE=spec VUS=100" in out
    assert "loads: 1; load-1000 tpcc-load WAREHOUSES=1000" in out
    assert "load-500" not in out and "tpcc-2000" not in out
    assert not results.exists()


def test_every_row_scaled_is_one_load_per_row(tmp_path):
    p = plan("tpcc-yugabytedb", tmp_path)
    loads = {pp.phase.name: pp.knobs["WAREHOUSES"] for pp in p.phases if pp.phase.workload == "tpcc-load"}
    assert loads == {"load-500": "2", "load-1000": "4", "load-2000": "8", "load-4000": "16"}
    assert {pp.phase.name: pp.vus for pp in p.phases if pp.phase.workload == "tpcc"} == {
        "tpcc-500": 1, "tpcc-1000": 1, "tpcc-2000": 1, "tpcc-4000": 2}


@pytest.mark.parametrize("args,message", [
    (["--set", "WAREHOUSES=500", "--set", "VUS=50"],
     "--set WAREHOUSES=500: tpcc-yugabytedb gives WAREHOUSES to 4 phases of several rows (load-500: 2, "
     "load-1000: 4, load-2000: 8, load-4000: 16); --set would run 4 loads of WAREHOUSES=500 (one per row, each "
     "compared with its own row's figures). Run one row: --row tpcc-500"),
    (["--set", "VUS=50"], "--set VUS=50: tpcc-yugabytedb gives VUS to 8 phases of several rows"),
    (["--published"], "--published runs one row at its published size: give --row (rows of tpcc-yugabytedb: "
                      "tpcc-500, tpcc-1000, tpcc-2000, tpcc-4000)"),
    (["--row", "load-500"], "--row load-500: not a row of tpcc-yugabytedb; rows (a phase with figures, with the "
                            "phases it reads): tpcc-500, tpcc-1000"),
    (["--row", "tpcc-500", "--published", "--set", "WAREHOUSES=10"],
     "--set WAREHOUSES=10 with --published: --published runs the row's published WAREHOUSES (load-500: 500)"),
    (["--row", "tpcc-500", "--warmup", "soon"], "--warmup 'soon': expected a duration"),
])
def test_set_over_several_rows_and_bad_row_options_are_refused(args, message, tmp_path):
    results = tmp_path / "results"
    r = cli("reproduce", "tpcc-yugabytedb", *args, "--results", str(results), env=NO_K6)
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr
    assert not results.exists()


def test_a_warmup_where_none_was_published_is_refused(tmp_path):
    with pytest.raises(UserError, match="--warmup 10s: no phase of seed 000 here had a published warm-up"):
        plan("000", tmp_path, warmup="10s")


def test_set_warehouses_on_one_row_is_that_rows_load_alone(tmp_path):
    p = plan("tpcc-yugabytedb", tmp_path, row="tpcc-2000", settings=["WAREHOUSES=1"])
    assert [(pp.phase.name, pp.knobs.get("WAREHOUSES")) for pp in p.phases] == [("load-2000", "1"),
                                                                                 ("tpcc-2000", "1")]


# --- the warm-up ---------------------------------------------------------

def test_the_published_warmup_is_added_to_each_run_and_left_out(tmp_path):
    p = plan("tpcc-yugabytedb", tmp_path, duration="2m")
    got = {pp.phase.name: (pp.warmup_s, pp.knobs.get("DURATION")) for pp in p.phases}
    assert got == {"load-500": (0, None), "tpcc-500": (60, "180s"), "load-1000": (0, None),
                   "tpcc-1000": (60, "180s"), "load-2000": (0, None), "tpcc-2000": (60, "180s"),
                   "load-4000": (0, None), "tpcc-4000": (300, "420s")}
    assert p.phases[1].how_long() == "120s measured after a 60s warm-up, left out"
    assert p.params()["warmup_s"] == {"tpcc-500": 60, "tpcc-1000": 60, "tpcc-2000": 60, "tpcc-4000": 300}
    short = plan("tpcc-yugabytedb", tmp_path, warmup="20s")
    assert {pp.warmup_s for pp in short.phases if pp.phase.workload == "tpcc"} == {20}
    assert short.phases[-1].warmup_rule == "warm-up 20s left out (--warmup 20s; published 300s)"
    none = plan("tpcc-yugabytedb", tmp_path, warmup="0")
    assert {pp.knobs.get("DURATION") for pp in none.phases if pp.phase.workload == "tpcc"} == {"60s"}


def test_figures_after_the_warmup_are_the_summarys_measured_and_the_seconds_after_it(tmp_path):
    exp = experiment_file.load(REPO / "experiments" / "tpcc-yugabytedb.yaml")
    ph = next(p for p in exp.phases if p.name == "tpcc-500")
    figs = {f.measure: f for f in ph.figures}
    summary = {"tpcc": {"mode": "spec", "tpmc": 30.0, "efficiency": 1.1, "warehouses": 2,
                        "measured": {"warmup_s": 20, "seconds": 60, "new_orders_committed": 25, "tpmc": 25.0,
                                     "efficiency": 25 / 25.72}}}
    t0 = 1_800_000_000
    # new_order ended in seconds t0 .. t0+79: 10 ms each in the warm-up, 2 ms after it.
    rows = [[t0 + i, 1, 10.0 if i < 20 else 2.0, [[0, 1]]] for i in range(80)]
    (tmp_path / "per-second.json").write_text(json.dumps({
        "format_version": 1, "workload": "tpcc", "testid": "x", "resolution_s": 1, "source": "this test",
        "histogram": {"kind": "log", "unit": "us", "gamma": 1.02020202020202, "relative_accuracy": 0.01},
        "ops": {"new_order": rows}}))
    window = (t0, t0 + 80)
    tpmc = expected.observe(figs["tpmc"], "x", summary, window, None, warmup_s=20, folder=tmp_path)
    assert tpmc[0] == 25.0 and "after the 20 s warm-up" in tpmc[2]
    eff = expected.observe(figs["efficiency_percent"], "x", summary, window, None, warmup_s=20, folder=tmp_path)
    assert eff[0] == pytest.approx(100 * 25 / 25.72)
    lat = expected.observe(figs["latency_avg_ms"], "x", summary, window, None, warmup_s=20, folder=tmp_path)
    assert lat[0] == pytest.approx(2.0)
    whole = expected.observe(figs["tpmc"], "x", summary, window, None)
    assert whole[0] == 30.0
    del summary["tpcc"]["measured"]
    assert "no tpcc.measured" in expected.observe(figs["tpmc"], "x", summary, window, None, warmup_s=20,
                                                  folder=tmp_path)[3]


# --- short runs on the native stack ---------------------------------------

def reproduce_row(postgres, results, row: str, rid: str, duration: str, warmup: str) -> tuple[dict, str]:
    """`ybbench reproduce tpcc-yugabytedb --row ROW` at 1 warehouse against the test PostgreSQL: its
    reproduce.json and what it printed."""
    r = cli("reproduce", "tpcc-yugabytedb", "--row", row, "--duration", duration, "--warmup", warmup,
            "--id", rid, "--results", str(results), "--set", f"YSQL_NODES=127.0.0.1:{postgres.port}",
            "--set", f"DB_USER={postgres.user}", "--set", f"DB_NAME={postgres.database}", "--set", "WAREHOUSES=1",
            env={**postgres.env(), "K6": str(BIN / "k6")})
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads((results / rid / "reproduce.json").read_text()), r.stdout


def test_one_row_at_one_warehouse_is_one_load_and_its_orders(postgres, binaries, tmp_path):
    """Row tpcc-1000 at 1 warehouse (--set WAREHOUSES, scoped to the row),
    no warm-up: one load, its tables, tpmC per warehouse from the orders in
    them against the page's 12829.93 / 1000."""
    results = tmp_path / "results"
    doc, _ = reproduce_row(postgres, results, "tpcc-1000", "rpt", "20s", "0")
    assert [p["name"] for p in doc["phases"]] == ["load-1000", "tpcc-1000"] and doc["params"]["row"] == "tpcc-1000"
    knobs = {p["name"]: json.loads((results / "rpt" / p["testid"] / "params.json").read_text())["knobs"]
             for p in doc["phases"]}
    prefix = knobs["load-1000"]["TABLE_PREFIX"]
    assert knobs["tpcc-1000"]["TABLE_PREFIX"] == prefix
    assert postgres.query(f"SELECT count(*) FROM {prefix}warehouse").strip() == "1"
    ph = doc["phases"][1]
    s = json.loads((results / "rpt" / ph["testid"] / "summary.json").read_text())
    orders = int(postgres.query(f"SELECT count(*) FROM {run_orders(prefix, s)}"))
    tpmc = orders / (s["duration_s"] / 60)
    rows = {row["measure"]: row for row in ph["rows"]}
    assert rows["tpmc"]["observed"]["per_warehouse"] == pytest.approx(tpmc, rel=1e-6)
    assert rows["tpmc"]["ratio"] == pytest.approx(tpmc / (12829.93 / 1000), rel=1e-6)
    assert rows["efficiency_percent"]["observed"]["value"] == pytest.approx(100 * tpmc / 12.86, rel=1e-6)
    assert "phase tpcc-1000's warm-up: published 60s; here none left out (--warmup 0)" in doc["differences"]


def test_a_run_with_a_warmup_compares_what_follows_it(postgres, binaries, tmp_path):
    """Row tpcc-500 at 1 warehouse, 15 s after a 10 s warm-up: the run lasts
    25 s, its params say 10 s left out, and every compared figure is the
    one after it (summary.json tpcc.measured; per-second.json's seconds)."""
    results = tmp_path / "results"
    doc, out = reproduce_row(postgres, results, "tpcc-500", "rpw", "15s", "10s")
    ph = doc["phases"][1]
    params = json.loads((results / "rpw" / ph["testid"] / "params.json").read_text())
    assert params["knobs"]["DURATION"] == "25s" and params["warmup_s"] == 10 and ph["warmup_s"] == 10
    s = json.loads((results / "rpw" / ph["testid"] / "summary.json").read_text())
    m = s["tpcc"]["measured"]
    assert m["warmup_s"] == 10 and 13 < m["seconds"] < 18
    assert m["new_orders_committed"] <= s["tpcc"]["new_orders"]["committed"]
    rows = {row["measure"]: row for row in ph["rows"]}
    assert rows["tpmc"]["observed"]["cluster"] == pytest.approx(m["tpmc"])
    assert "tpcc.measured (after the 10 s warm-up)" in rows["tpmc"]["source"]
    assert "phase tpcc-500 (tpcc, 1 VUs, 15s measured after a 10s warm-up, left out)" in out
