"""`ybbench reproduce`: the shipped experiment files, bad input (exit 2,
nothing written), and a short two-phase experiment run end to end on the
native stack (real k6, real PostgreSQL), its printed table and
reproduce.json checked against each phase's own summary.json; then
--resume and `ybbench report` on it."""

from __future__ import annotations

import html
import json
import math
import re
import shutil
import time
from pathlib import Path

import pytest
import yaml

from ybbench.experiments.reproduce import expected
from ybbench.experiments.reproduce import file as experiment_file

from ..support import kernel, promrate, shared, ybbench_cli
from ..support.disk_reader import DirectReader
from ..support.stack import BIN, REPO, SHARED, free_port, wait_until

SEEDS = SHARED / "seeds"
SHIPPED = {"000": "seed-000-ysql-100-nodes.yaml", "001": "seed-001-ycql-large-datasets.yaml",
           "004": "seed-004-uncached-random-reads.yaml"}


cli = ybbench_cli.ybbench


# --- the shipped experiment files ---------------------------------------

@pytest.mark.parametrize("seed", sorted(SHIPPED))
def test_shipped_files_load_and_every_figure_says_where(seed):
    exp = experiment_file.load(REPO / "experiments" / SHIPPED[seed])
    assert exp.seed == seed and exp.source_file.startswith(seed)
    figures = [f for p in exp.phases for f in p.figures]
    assert figures
    for f in figures:
        assert f.value > 0 and f.unit == experiment_file.MEASURES[f.measure].unit and f.where and f.quote


@pytest.mark.parametrize("seed", sorted(SHIPPED))
def test_every_quote_is_the_seeds_text_verbatim(seed):
    exp = experiment_file.load(REPO / "experiments" / SHIPPED[seed])
    text_file = shared.need(SEEDS / exp.source_file, f"seed {seed}'s text")
    text = " ".join(text_file.read_text().split())
    missing = [(where, q) for where, q in exp.quotes() if " ".join(q.split()) not in text]
    assert not missing
    assert len(exp.quotes()) >= len([f for p in exp.phases for f in p.figures])


def test_the_tpcc_file_quotes_its_page_verbatim_and_says_each_rows_setup():
    """Not a seed: its page's words are kept beside it (no shared folder
    needed). Its rows, and the other pages' files: test_reproduce_tpcc.py."""
    exp = experiment_file.load(REPO / "experiments" / "tpcc-yugabytedb.yaml")
    text = " ".join(exp.source_text().read_text().split())
    assert exp.seed == "" and exp.url.startswith("https://docs.yugabyte.com/")
    missing = [(where, q) for where, q in exp.quotes() if " ".join(q.split()) not in text]
    assert not missing
    # The page's rows: 3 x 2, 4, 8, 16 vCPUs at 500, 1000, 2000, 4000 warehouses.
    rows = {p.name: {k: e.value for k, e in exp.setup_of(p).items()} for p in exp.phases if p.figures}
    assert {n: (r["nodes"], r["vcpus_per_node"], r["warehouses"]) for n, r in rows.items()} == \
        {"tpcc-500": (3, 2, 500), "tpcc-1000": (3, 4, 1000), "tpcc-2000": (3, 8, 2000), "tpcc-4000": (3, 16, 4000)}


def test_seed_000_scales_2400_threads_per_server_vcpu():
    exp = experiment_file.load(REPO / "experiments" / SHIPPED["000"])
    local = expected.Local("127.0.0.1:5433", nodes=1, cores_per_node=2, client_cores=2, on_this_machine=True,
                           ram_gb=8)
    # 2400 / (100 x 16) = 1.5 per vCPU; x 1 node x 2 cores = 3 VUs.
    assert expected.scaled_vus(exp, exp.phases[0], local)[0] == 3
    local.nodes, local.cores_per_node = 3, 4
    assert expected.scaled_vus(exp, exp.phases[0], local)[0] == 18


def test_seeds_002_and_003_print_their_analysis():
    for seed, words in (("002", "alias"), ("003", "fit")):
        r = cli("reproduce", seed)
        assert r.returncode == 0, r.stderr
        assert "holds the seed's published results" in r.stdout and words in r.stdout


# --- bad input: exit 2, the problem named, nothing written ---------------

GOOD = {
    "seed": "900", "name": "short", "source": {"file": "000-ysql-scaling-100-nodes.txt", "title": "t"},
    "setup": {"nodes": {"value": 100, "quote": "**Number of nodes:** 100"},
              "vcpus_per_node": {"value": 16, "quote": "(16 vCPUs)"}},
    "phases": [
        {"name": "insert", "workload": "sql-inserts", "knobs": {"ROW_BYTES": 64},
         "concurrency": {"value": 2400, "quote": "There are 2400 concurrent clients performing inserts."},
         "figures": [
             {"name": "insert throughput", "measure": "ops_per_s", "op": "insert", "value": 1260000,
              "unit": "ops/s", "scope": "cluster", "where": "INSERT", "quote": "1.26 million inserts per second"},
             {"name": "insert latency", "measure": "latency_avg_ms", "op": "insert", "value": 1.66, "unit": "ms",
              "scope": "node", "where": "INSERT", "quote": "1.66 milliseconds"},
             {"name": "rows", "measure": "rows", "value": 30e9, "unit": "rows", "scope": "cluster",
              "where": "setup", "quote": "30 billion unique rows"},
             {"name": "CPU", "measure": "cpu_percent", "value": 78, "unit": "%", "scope": "node",
              "where": "INSERT", "quote": "about 78%"}]},
        {"name": "select", "workload": "sql-selects", "reads": "insert",
         "concurrency": {"value": 2400, "quote": "2,400 concurrent clients"},
         "figures": [
             {"name": "select throughput", "measure": "ops_per_s", "op": "select", "value": 2800000,
              "unit": "ops/s", "scope": "cluster", "where": "SELECT", "quote": "2.8 million selects per second"},
             {"name": "select latency", "measure": "latency_avg_ms", "op": "select", "value": 0.56, "unit": "ms",
              "scope": "node", "where": "SELECT", "quote": "0.56ms"}]},
    ],
}


def with_change(path: list, value) -> dict:
    doc = json.loads(json.dumps(GOOD))
    at = doc
    for k in path[:-1]:
        at = at[k]
    if value is ...:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return doc


BAD_FILES = {
    "unknown top-level key": (with_change(["phase"], []), "unknown key 'phase'"),
    "no phases": (with_change(["phases"], []), "phases: expected a non-empty list"),
    "setup without vCPUs": (with_change(["setup", "vcpus_per_node"], ...), "setup: missing vcpus_per_node"),
    "setup value without its words": (with_change(["setup", "nodes"], {"value": 100}),
                                      "setup.nodes: give the seed's words"),
    "unknown workload": (with_change(["phases", 0, "workload"], "sql-upserts"),
                         "phases[0].workload: unknown workload 'sql-upserts'"),
    "unknown knob": (with_change(["phases", 0, "knobs"], {"ROWBYTES": 64}), "phases[0].knobs.ROWBYTES: unknown knob"),
    "a knob reproduce sets": (with_change(["phases", 0, "knobs"], {"DURATION": "1h"}),
                              "phases[0].knobs.DURATION: set by `ybbench reproduce`"),
    "reads a later phase": (with_change(["phases", 1, "reads"], "load"), "phases[1].reads: 'load' is not an earlier"),
    "reads another kind of load": (with_change(["phases", 1, "workload"], "kv-read-heavy"),
                                   "phases[1].reads: kv-read-heavy cannot read the keys of phase 'insert' "
                                   "(sql-inserts); it reads a kv-load phase's"),
    "a reader without reads": (with_change(["phases", 1, "reads"], ...), "phases[1].reads: sql-selects reads"),
    "figure without unit": (with_change(["phases", 0, "figures", 0, "unit"], ...), "figures[0]: missing unit"),
    "figure in the wrong unit": (with_change(["phases", 0, "figures", 0, "unit"], "Mops/s"),
                                 "figures[0].unit: 'Mops/s': ops_per_s is in 'ops/s'"),
    "unknown measure": (with_change(["phases", 0, "figures", 1, "measure"], "p99_ms"),
                        "figures[1].measure: unknown measure 'p99_ms'"),
    "figure without quote": (with_change(["phases", 0, "figures", 1, "quote"], ...), "figures[1]: missing quote"),
    "negative figure": (with_change(["phases", 0, "figures", 2, "value"], -1), "figures[2].value: -1"),
    "CPU per disk": (with_change(["phases", 0, "figures", 3, "scope"], "disk"),
                     "cpu_percent is observed per node, not per disk"),
    "no concurrency, no VUS": (with_change(["phases", 0, "concurrency"], ...),
                               "phases[0]: give the published concurrency, or knobs.VUS"),
    "tpmC without warehouses": (with_change(["phases", 0, "figures", 0], {
        "name": "tpmC", "measure": "tpmc", "value": 6415.7, "unit": "tpmC", "scope": "cluster", "where": "x",
        "quote": "y"}), "phases[0]: figure 'tpmC' is tpmC, compared per warehouse: give the published warehouses"),
    "a TPC-C op that is not one": (with_change(["phases", 0, "figures", 1, "op"], "neworder"),
                                   "figures[1].op: 'neworder': expected one of delivery, insert, new_order"),
    "not a seed, and no page": (with_change(["seed"], ...), "source: missing url"),
    "a page's words not kept": ({**with_change(["seed"], ...), "source": {
        "file": "sources/none.md", "title": "t", "url": "https://example.invalid/"}}, "none.md is not a file"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_experiment_file_stops_before_anything_runs(case, tmp_path):
    doc, message = BAD_FILES[case]
    f = tmp_path / "exp.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    results = tmp_path / "results"
    r = cli("reproduce", str(f), "--results", str(results), env={"K6": "/bin/true", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and str(f) in r.stderr
    assert not results.exists()


@pytest.mark.parametrize("args,message", [
    (["007"], "unknown seed '007'; known: 000 (seed-000-ysql-100-nodes.yaml), 001"),
    (["nope.yaml"], "unknown seed 'nope.yaml': neither a seed number, a named experiment nor an experiment file; known: 000 "
     "(seed-000-ysql-100-nodes.yaml), 001 (seed-001-ycql-large-datasets.yaml), 002 (seed-002-esle.yaml), "
     "003 (seed-003-scaling.yaml), 004 (seed-004-uncached-random-reads.yaml), tpcc-yugabytedb"),
    (["000", "--duration", "ten"], "--duration 'ten': expected a duration"),
    (["000", "--set", "VUSS=3"], "--set VUSS: unknown knob"),
    (["000", "--set", "MAX_WRITTEN_KEY=5"], "--set MAX_WRITTEN_KEY: reproduce sets MAX_WRITTEN_KEY"),
    (["000", "--set", "VUS=0"], "--set VUS=0: expected a positive whole number"),
    (["000", "--cores-per-node", "0"], "--cores-per-node 0: must be at least 1"),
    (["000", "--id", "a/b"], "--id 'a/b': use 1-48 letters"),
    (["000", "--resume", "none-such"], "--resume none-such: no reproduce at"),
    (["000", "--set", "YSQL_NODES=10.1.2.3:5433"], "give --cores-per-node"),
    (["000", "--set", "YSQL_NODES=127.0.0.1:5433,"], "--set YSQL_NODES=127.0.0.1:5433,: '' is not host:port"),
    (["002", "--duration", "5s"], "seed 002: seed-002-esle.yaml holds the seed's published results"),
])
def test_bad_options_stop_before_anything_runs(args, message, tmp_path):
    results = tmp_path / "results"
    r = cli("reproduce", *args, "--results", str(results), env={"K6": "/bin/true", "PATH": "/usr/bin:/bin"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr
    assert not results.exists()


# --- end to end on the native stack --------------------------------------

def printed_block(out: str, phase: str, figure: str) -> dict[str, str]:
    """The published/observed/ratio lines of one figure in the printed table."""
    section = out.split(f"\nphase {phase} (", 1)[1]
    block = {}
    for line in section.split(f"\n  {figure} (", 1)[1].splitlines()[1:]:
        if not line.startswith("    "):
            break
        key, _, rest = line.strip().partition(": ")
        block[key] = rest.strip()
    return block


@pytest.fixture(scope="module")
def reproduced(postgres, tmp_path_factory, binaries):
    """The short experiment above, 3 s per phase, on two entries of the test
    PostgreSQL (so per node is half the cluster) at 2 cores per node."""
    root = tmp_path_factory.mktemp("reproduce")
    f = root / "short.yaml"
    f.write_text(yaml.safe_dump(GOOD, sort_keys=False))
    env = postgres.env()
    env["K6"] = str(BIN / "k6")
    node = f"127.0.0.1:{postgres.port}"
    args = ["reproduce", str(f), "--duration", "3s", "--cores-per-node", "2", "--id", "rp1",
            "--set", f"YSQL_NODES={node},{node}", "--set", f"DB_USER={postgres.user}",
            "--set", f"DB_NAME={postgres.database}"]
    r = cli(*args, "--results", str(root / "results"), env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return {"root": root, "results": root / "results", "folder": root / "results" / "rp1", "out": r.stdout,
            "args": args, "env": env}


def summary(folder: Path, phase: str) -> dict:
    return json.loads((folder / f"rp1-{phase}" / "summary.json").read_text())


def test_observed_numbers_are_each_phases_summary(reproduced):
    folder, out = reproduced["folder"], reproduced["out"]
    doc = json.loads((folder / "reproduce.json").read_text())
    assert doc["status"] == "complete" and [p["name"] for p in doc["phases"]] == ["insert", "select"]
    ins, sel = summary(folder, "insert"), summary(folder, "select")
    # 2400 / (100 x 16) = 1.5 per vCPU, x 2 nodes x 2 cores = 6 VUs.
    assert [p["vus"] for p in doc["phases"]] == [6, 6]
    assert ins["scenario"]["vus"] == 6 and sel["scenario"]["vus"] == 6
    rows = {(r["phase"], r["figure"]): r for p in doc["phases"] for r in p["rows"]}
    cases = {
        ("insert", "insert throughput", ins["ops"]["insert"]["per_second"], 1260000),
        ("select", "select throughput", sel["ops"]["select"]["per_second"], 2800000),
    }
    for phase, fig, x, published in cases:
        assert x > 0
        obs = rows[(phase, fig)]["observed"]
        assert obs["cluster"] == pytest.approx(x) and obs["per_node"] == pytest.approx(x / 2)
        assert obs["per_core"] == pytest.approx(x / 4)
        ratio = (x / 2 / 2) / (published / 100 / 16)
        assert rows[(phase, fig)]["ratio"] == pytest.approx(ratio)
        printed = printed_block(out, phase, fig)
        assert printed["published"].startswith(f"{published} ops/s cluster, {published // 100} ops/s per node, "
                                                f"{published / 1600:g} ops/s per vCPU")
        nums = [float(n) for n in re.findall(r"([0-9.e+-]+) ops/s", printed["observed"])]
        assert nums == pytest.approx([x, x / 2, x / 4], rel=1e-5)
        assert float(printed["ratio observed/published"].split()[0]) == pytest.approx(ratio, rel=1e-5)
        assert "(per server core)" in printed["ratio observed/published"]
    for phase, fig, s, op, published in (("insert", "insert latency", ins, "insert", 1.66),
                                         ("select", "select latency", sel, "select", 0.56)):
        avg = s["ops"][op]["latency_ms"]["avg"]
        assert rows[(phase, fig)]["observed"] == {"value": pytest.approx(avg)}
        assert rows[(phase, fig)]["ratio"] == pytest.approx(avg / published)
        assert float(printed_block(out, phase, fig)["observed"].split()[0]) == pytest.approx(avg, rel=1e-5)
    written = rows[("insert", "rows")]["observed"]
    assert written["cluster"] == ins["rows_written"] and written["per_node"] == ins["rows_written"] / 2
    assert rows[("insert", "rows")]["ratio"] == pytest.approx(ins["rows_written"] / 2 / (30e9 / 100))


def test_the_select_phase_reads_exactly_the_keys_the_insert_phase_wrote(reproduced):
    folder = reproduced["folder"]
    ins, sel = summary(folder, "insert"), summary(folder, "select")
    params = json.loads((folder / "rp1-select" / "params.json").read_text())
    assert params["knobs"]["KEY_PREFIX"] == "rp1-insert"
    assert params["knobs"]["MAX_WRITTEN_KEY"] == str(ins["rows_written"])
    assert sel["ops"]["select"]["count"] > 0 and sel["keys_missing"] == 0 and sel["errors"] == 0


def test_what_is_not_observed_says_why_and_the_differences_are_plain(reproduced):
    doc = json.loads((reproduced["folder"] / "reproduce.json").read_text())
    cpu = next(r for p in doc["phases"] for r in p["rows"] if r["figure"] == "CPU")
    assert cpu["observed"] is None and cpu["ratio"] is None and "--prometheus" in cpu["not_observed"]
    assert "observed:  not observed: a host figure: needs node_exporter" in reproduced["out"]
    diffs = "\n".join(doc["differences"])
    assert "nodes: published 100 x 16 vCPU; here 2 node(s)" in diffs
    assert "phase insert: sql-inserts, 2400 threads / (100 nodes x 16 vCPU) = 1.5 per server vCPU" in diffs
    assert "they do not measure YugabyteDB" in diffs
    assert "differences from the published setup:" in reproduced["out"]
    # Each phase says what limited its run: its own limits.json's verdict, in the file and the printed table.
    for p in doc["phases"]:
        verdict = json.loads((reproduced["folder"] / p["testid"] / "limits.json").read_text())["verdict"]
        assert p["limited_by"] == verdict
        assert f"  limited by: {verdict['text']}" in reproduced["out"]


def test_resume_skips_finished_phases(reproduced, tmp_path):
    # An interruption after the insert phase: its folder kept, the select's gone.
    results = tmp_path / "results"
    shutil.copytree(reproduced["folder"], results / "rp1")
    shutil.rmtree(results / "rp1" / "rp1-select")
    before = (results / "rp1" / "rp1-insert" / "summary.json").read_bytes()
    resume = [a if a != "--id" else "--resume" for a in reproduced["args"]]
    r = cli(*resume, "--results", str(results), env=reproduced["env"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert "phase 1/2 insert: already finished, not re-run" in r.stdout
    assert (results / "rp1" / "rp1-insert" / "summary.json").read_bytes() == before
    doc = json.loads((results / "rp1" / "reproduce.json").read_text())
    assert doc["status"] == "complete"
    assert json.loads((results / "rp1" / "rp1-select" / "params.json").read_text())["knobs"]["MAX_WRITTEN_KEY"] == \
        str(json.loads(before)["rows_written"])
    # Other parameters than the reproduce's: refused, nothing run.
    changed = [*resume, "--duration", "4s"]
    changed.remove("3s"), changed.remove("--duration")
    r = cli(*changed, "--results", str(results), env=reproduced["env"])
    assert r.returncode == 2 and "--duration differs: 4s here, 3s in" in r.stderr


def test_report_of_a_reproduce_shows_expected_against_observed(reproduced):
    results = reproduced["results"]
    r = cli("report", "rp1", "--results", str(results))
    assert r.returncode == 0, r.stderr
    page = (results / "rp1" / "report.html").read_text()
    doc = json.loads((results / "rp1" / "reproduce.json").read_text())
    assert "Expected against observed: seed 900" in page
    for p in doc["phases"]:
        assert f'id="run-{p["testid"]}"' in page  # the phase runs themselves
        for row in p["rows"]:
            if row["ratio"] is not None:
                assert f"<td>{expected._n(row['ratio'])}</td>" in page
    data = json.loads((results / "rp1" / "report.json").read_text())
    assert data["expected"]["reproduce_id"] == "rp1"
    # The limited-by column: each phase's verdict beside its published and observed figures.
    for p in doc["phases"]:
        assert f"<td>{html.escape(p['limited_by']['text'])}</td>" in page


def _whole_seconds_mean(folder, op: str) -> tuple[float, int]:
    rows = json.loads((folder / "per-second.json").read_text())["ops"][op]
    counts = {t: n for t, n, _, _ in rows}
    inner = range(rows[0][0] + 1, rows[-1][0])
    return sum(counts.get(t, 0) for t in inner) / len(inner), len(inner)


def test_compare_two_reproduces_phase_by_phase(reproduced, tmp_path):
    """`ybbench compare rp1 rp2`: each phase against the same phase of the
    base, as two runs are compared; its numbers come from each phase's own
    per-second.json (no --prometheus), and the report of rp2 links it."""
    results = reproduced["results"]
    args = [a if a != "rp1" else "rp2" for a in reproduced["args"]]
    args[args.index("--cores-per-node") + 1] = "1"  # half the VUs per phase: a difference made on purpose
    r = cli(*args, "--results", str(results), env=reproduced["env"])
    assert r.returncode == 0, r.stdout + r.stderr
    out = results / "cmp-rp"
    c = cli("compare", "rp1", "rp2", "--results", str(results), "--out", str(out))
    assert c.returncode == 0, c.stderr
    doc = json.loads((out / "compare.json").read_text())
    one, two = (json.loads((results / rid / "reproduce.json").read_text()) for rid in ("rp1", "rp2"))
    names = [ph["name"] for ph in one["phases"]]
    assert doc["kind"] == "reproduce" and list(doc["phases"]) == names == [ph["name"] for ph in two["phases"]]
    for ph1, ph2 in zip(one["phases"], two["phases"]):
        d = doc["phases"][ph1["name"]]
        assert (d["base"], d["others"]) == (ph1["testid"], [ph2["testid"]])
        (cmp,) = d["comparisons"]
        s1 = json.loads((results / "rp1" / ph1["testid"] / "summary.json").read_text())
        s2 = json.loads((results / "rp2" / ph2["testid"] / "summary.json").read_text())
        assert set(cmp["ops"]) == set(s1["ops"]) & set(s2["ops"])
        for op, stat in cmp["ops"].items():
            # Each phase's ops/s from its own per-second.json: the mean count of its whole seconds (the
            # first and last hold part of a second), arithmetic here on the files the runs wrote.
            (b, n_b), (o, n_o) = (_whole_seconds_mean(results / rid / ph["testid"], op)
                                  for rid, ph in (("rp1", ph1), ("rp2", ph2)))
            assert stat["base_ops_per_s"] == pytest.approx(b, rel=1e-12), (stat, s1["ops"][op]["per_second"])
            assert stat["other_ops_per_s"] == pytest.approx(o, rel=1e-12), (stat, s2["ops"][op]["per_second"])
            assert stat["ratio"] == pytest.approx(o / b)
            # One run a side: a verdict only with 5 or more earlier runs of these series in the history store.
            hist = stat["spread"]["history_runs"]
            assert stat["runs"] == {"base": 1, "other": 1} and (len(hist) >= 5 or stat["low"] is None), stat
            assert stat["verdict"].startswith("no verdict: one run per side") == (stat["low"] is None), stat
        assert cmp["differences"]["knobs"]["VUS"] == {"base": str(ph1["vus"]), "other": str(ph2["vus"])}
        assert ph2["vus"] < ph1["vus"]
        assert f"phase {ph1['name']}" in c.stdout
    assert (out / "compare.html").read_text().count("<h2>phase ") == len(names)
    # The report of rp2 (its phase runs) links the compare.
    rep = cli("report", "rp2", "--results", str(results))
    assert rep.returncode == 0, rep.stderr
    runs = json.loads((results / "rp2" / "report.json").read_text())["runs"]
    assert [run["compares"] for run in runs] == [["../cmp-rp/compare.html"]] * len(names)
    assert (results / "rp2" / "../cmp-rp/compare.html").resolve() == (out / "compare.html").resolve()


def test_compare_refuses_a_reproduce_against_a_run_or_without_a_common_phase(reproduced, tmp_path):
    results = reproduced["results"]
    phase = json.loads((results / "rp1" / "reproduce.json").read_text())["phases"][0]["testid"]
    shutil.copytree(results / "rp1" / phase, results / phase, dirs_exist_ok=True)
    r = cli("compare", "rp1", phase, "--results", str(results), "--out", str(tmp_path / "a"))
    assert r.returncode == 2 and "compare a reproduce with reproduces" in r.stderr and phase in r.stderr
    renamed = results / "rp9"
    shutil.copytree(results / "rp1", renamed)
    doc = json.loads((renamed / "reproduce.json").read_text())
    for ph in doc["phases"]:
        ph["name"] = "other-" + ph["name"]
    (renamed / "reproduce.json").write_text(json.dumps(doc))
    r = cli("compare", "rp1", "rp9", "--results", str(results), "--out", str(tmp_path / "b"))
    assert r.returncode == 2 and "have no phase in common" in r.stderr, r.stderr
    assert not list(tmp_path.iterdir())
    shutil.rmtree(renamed), shutil.rmtree(results / phase)


@pytest.mark.alone  # the kernel's disk reads are the scrapes' to a few reads only on a quiet host
def test_host_figures_come_from_node_exporter_over_the_phase(postgres, prometheus, tmp_path):
    doc = json.loads(json.dumps(GOOD))
    doc["phases"] = doc["phases"][:1]
    doc["phases"][0]["figures"] += [
        {"name": "disk reads", "measure": "disk_reads_per_s", "value": 16400, "unit": "reads/s", "scope": "node",
         "where": "Disk", "quote": "16.4K disk read ops/sec"},
        {"name": "read size", "measure": "io_size_kb", "value": 29, "unit": "KB", "scope": "disk",
         "where": "Disk", "quote": "29KB"}]
    f = tmp_path / "host.yaml"
    f.write_text(yaml.safe_dump(doc, sort_keys=False))
    # A rate over the phase's 15 s window needs 2 node scrapes in it: when
    # this test is the first to use a fresh Prometheus (5 s scrapes), wait
    # until it holds 10 s of them, so that the window is not older than it.
    def scrapes() -> int:
        r = prometheus.api("query", query='max(count_over_time(node_cpu_seconds_total{mode="idle"}[1m]))')["result"]
        return int(r[0]["value"][1]) if r else 0
    wait_until(lambda: scrapes() >= 3, "3 node_exporter scrapes in Prometheus", timeout=60)
    env = postgres.env()
    env.update(K6=str(BIN / "k6"), K6_PROMETHEUS_RW_PUSH_INTERVAL="1s")
    results = tmp_path / "results"
    # The kernel's disk counters, from before the figures' window: it reaches
    # 15 s back from the phase's end, to before the CLI starts.
    disks = kernel.disks()
    counters = {(d, k): kernel.Sampler(lambda d=d, k=k: kernel.diskstats([d])[k])
                for d in disks for k in ("reads", "read_bytes")}
    time.sleep(5)
    # Known disk reads during k6's run, and only then: from when its log
    # opens to when its summary is written (both in the phase's staging
    # folder, inside the staged series folder .rph.*).
    ours = kernel.device_of(tmp_path)
    assert ours in disks

    def staged(name: str) -> bool:
        return bool(list(results.glob(f"*/.rph-insert.*/{name}")))
    reader = DirectReader(tmp_path / "read-me", begin=lambda: staged("k6.log"),
                          end=lambda: staged("summary.json") or (results / "rph" / "rph-insert").exists())
    try:
        # 12 s: the window's scrapes (5 s apart) are at least 5 s into the reads.
        r = cli("reproduce", str(f), "--duration", "12s", "--id", "rph", "--results", str(results),
                "--prometheus", prometheus.url, "--set", f"YSQL_NODES=127.0.0.1:{postgres.port}",
                "--set", f"DB_USER={postgres.user}", "--set", f"DB_NAME={postgres.database}", env=env)
    finally:
        reader.stop()
        for c in counters.values():
            c.stop()
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads((results / "rph" / "reproduce.json").read_text())
    ph = out["phases"][0]
    rows = {row["figure"]: row for row in ph["rows"]}
    # The phase: k6's start and end, as its run recorded them; the known reads began after its start.
    start, end = ph["window"]
    assert reader.times and start < reader.times[0]
    # The same CPU, asked of Prometheus independently: busy share of every
    # CPU's time over the phase's window (15 s at least), at its end.
    w = f"{max(15, math.ceil(end - start))}s"
    idle = prometheus.api("query", query=f'sum(rate(node_cpu_seconds_total{{mode="idle"}}[{w}])) / '
                                         f'count(node_cpu_seconds_total{{mode="idle"}})', time=f"{end:.3f}")
    assert idle["result"], (f"Prometheus has no node CPU rate over {w} at the phase's end ({end:.3f}): fewer than "
                            f"2 node_exporter scrapes landed in that window; the CLI said: {rows['CPU']['not_observed']}")
    busy = 100 * (1 - float(idle["result"][0]["value"][1]))
    cpu = rows["CPU"]
    assert 0 < cpu["observed"]["value"] <= 100 and cpu["observed"]["value"] == pytest.approx(busy, rel=1e-6)
    assert cpu["ratio"] == pytest.approx(cpu["observed"]["value"] / 78)

    # Disk reads: the kernel's counts at the times of the scrapes that
    # rate() over the phase's window reads, scaled as rate() scales them.
    # Prometheus gives only those scrapes' times (and the counter's value,
    # for the never-before-zero bound), not the figure.
    reads = bytes_read = 0.0
    rates = {"reads": 0.0, "bytes": 0.0}  # rate() of each series from its raw samples, as PromQL computes it
    for d in disks:
        (raw,) = prometheus.api("query", query=f'node_disk_reads_completed_total{{job="node", device="{d}"}}[10m]',
                                time=f"{end + 60:.3f}")["result"]
        win = promrate.window([(float(t), float(v)) for t, v in raw["values"]], end, float(w[:-1]))
        (raw_b,) = prometheus.api("query", query=f'node_disk_read_bytes_total{{job="node", device="{d}"}}[10m]',
                                  time=f"{end + 60:.3f}")["result"]
        win_b = promrate.window([(float(t), float(v)) for t, v in raw_b["values"]], end, float(w[:-1]))
        rates["reads"], rates["bytes"] = rates["reads"] + win.rate, rates["bytes"] + win_b.rate
        assert win, f"fewer than 2 scrapes of {d} in the {w} before the phase's end"
        grew = {k: counters[(d, k)].value_at(win.last) - counters[(d, k)].value_at(win.first)
                for k in ("reads", "read_bytes")}
        reads, bytes_read = reads + grew["reads"] * win.scale, bytes_read + grew["read_bytes"] * win.scale
        if d == ours:
            known = reader.between(win.first, win.last)
            # Ours are there: paced at 200/s, 5 s of them at least lie between the scrapes.
            assert known >= 100 and grew["reads"] >= 0.95 * known, (known, grew)
            # node_exporter reads the kernel some ms after its scrape's time: a few reads each end.
            slack = 20 * win.scale
    # Per node: the one node here.
    assert "node_disk_reads_completed_total" in rows["disk reads"]["source"]
    assert rows["disk reads"]["observed"]["per_node"] == pytest.approx(reads, rel=0.05, abs=slack)
    # Read size: bytes per read over the same scrapes (their scale cancels), in KiB: the kernel's within 5%, and
    # exactly the raw samples' rates, 1024 bytes to the KiB (a kB-for-KiB slip is 2.4%: the 5% alone passed it).
    size = rows["read size"]["observed"]
    assert size["value"] == pytest.approx(bytes_read / reads / 1024, rel=0.05)
    assert size["value"] == pytest.approx(rates["bytes"] / rates["reads"] / 1024, rel=1e-9)


def test_a_failed_first_phase_leaves_no_folder(postgres, tmp_path):
    f = tmp_path / "short.yaml"
    f.write_text(yaml.safe_dump(GOOD, sort_keys=False))
    env = postgres.env()
    env["K6"] = str(BIN / "k6")
    results = tmp_path / "results"
    r = cli("reproduce", str(f), "--duration", "3s", "--id", "rpf", "--results", str(results),
            "--set", f"YSQL_NODES=127.0.0.1:{free_port()}", "--set", f"DB_USER={postgres.user}", env=env)
    assert r.returncode == 107 and "sql-inserts failed (k6 exit 107)" in r.stderr, r.stdout + r.stderr  # k6's own
    assert not results.exists() or not list(results.iterdir())


def test_report_of_a_reproduces_runs_brings_its_table(reproduced, tmp_path):
    out = tmp_path / "phases.html"
    r = cli("report", "rp1-insert", "rp1-select", "--results", str(reproduced["folder"]), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "Expected against observed: seed 900" in out.read_text()
