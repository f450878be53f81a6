"""`docker compose up`, for real: the project's root compose.yaml (which
includes compose/docker-compose.yml), unchanged, on stand-in images built
here (tests/compose/README.md), with the test-only override that swaps the
images and puts every container on an internal network. The stack runs from
a copy of the repository owned by a user who is not root (USER_UID), as a
user's checkout is: the `ybbench` service must write results/ as that user.

The tests run in file order against one stack: the pg baseline first, on a
project where nothing else runs yet (it must not boot YugabyteDB), then the
default services, the README's k6 commands, logs, restarts and a tserver
stopped under load. At the end everything they started is removed:
containers, networks, volumes, and dockerd if they started it."""

from __future__ import annotations

import base64
import json
import os
import re
import shlex
import subprocess
import sys
import time
import urllib.request
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from ybbench.core.files import write_json

from ..support import results_files, room
from ..support.compose_stack import (
    EVERY_PROFILE,
    NETWORK,
    PROJECT,
    Compose,
    Engine,
    K6Run,
    LokiApi,
    PromApi,
    build_images,
    eventually,
    owned_copy,
    take_down,
)
from ..support.dashboards import logql_failures
from ..support.stack import BIN, REPO

DEFAULT_SERVICES = {"yb-master-1", "yb-master-2", "yb-master-3", "yb-tserver-1", "yb-tserver-2", "yb-tserver-3",
                    "secrets", "prometheus", "node-exporter", "loki", "promtail", "grafana", "history-db"}
# Every scrape target: 3 masters, 9 tserver endpoints (tserver, YCQL, YSQL
# on each of 3), node_exporter, Prometheus, and the pg baseline's exporter.
TARGETS = 3 + 9 + 1 + 1 + 1
# The owner of the checkout the stack runs from: a user, not root.
USER_UID = 12345


def new_testid(kind: str) -> str:
    return f"{kind}{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def compose(compose_binaries, tmp_path_factory):
    engine = Engine()
    c = Compose(build_images(), root=owned_copy(tmp_path_factory.mktemp("checkout"), USER_UID))
    downs = [(c, EVERY_PROFILE)]
    take_down(engine, downs)  # what an earlier, interrupted run left
    try:
        yield c
    finally:
        take_down(engine, downs)
        engine.stop()


@pytest.fixture(scope="module")
def pg_baseline(compose):
    """The README's pg recipe, before anything else runs."""
    compose("--profile", "pg", "up", "-d", "--wait", "--wait-timeout", "180", "postgres", "postgres-exporter")
    testid = new_testid("pg")
    run = compose.k6("k6-pg", "pg", testid, VUS=4, DURATION="6s")
    return testid, run


@pytest.fixture(scope="module")
def stack(compose, pg_baseline):
    compose("up", "-d", "--wait", "--wait-timeout", "300", timeout=900)
    return compose


@pytest.fixture(scope="module")
def prom(stack):
    return PromApi(f"http://{stack.address('prometheus')}:9090")


@pytest.fixture(scope="module")
def loki(stack):
    return LokiApi(f"http://{stack.address('loki')}:3100")


@pytest.fixture(scope="module")
def inserts(stack):
    """The README's first k6 command, on the default three tservers."""
    testid = new_testid("ins")
    run = stack.k6("k6", "bench", testid, VUS=6, DURATION="12s")
    assert run.code == 0, run.output[-4000:]
    return testid, run


def test_pg_baseline_runs_k6_without_booting_yugabytedb(compose, pg_baseline):
    testid, run = pg_baseline
    assert run.code == 0, run.output[-4000:]
    inserted = run.counts["insert"]
    assert inserted > 100 and run.errors == (0, "")
    in_table = compose.pg(f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{testid}:%'")
    assert int(in_table) == inserted == run.rows_written
    started = {compose.service_of(c) for c in compose.containers(all_=True)}
    assert not {s for s in started if s.startswith("yb-")}, started
    prom = PromApi(f"http://{compose.address('prometheus')}:9090")
    eventually(lambda: prom.value('pg_up{job="postgres"}') == 1, "pg_up == 1 for the baseline")


def test_every_default_service_runs_and_is_healthy(stack):
    by_service = {}
    for c in stack.containers(all_=True, one_off=False):
        by_service[stack.service_of(c)] = c["State"]
    assert DEFAULT_SERVICES <= set(by_service), DEFAULT_SERVICES - set(by_service)
    assert by_service["secrets"]["Status"] == "exited" and by_service["secrets"]["ExitCode"] == 0
    for name in DEFAULT_SERVICES - {"secrets"}:
        state = by_service[name]
        assert state["Status"] == "running", (name, state)
        if "Health" in state:
            assert state["Health"]["Status"] == "healthy", (name, state["Health"])
    assert {n for n, s in by_service.items() if "Health" in s} >= {
        "yb-master-1", "yb-tserver-3", "prometheus", "loki", "grafana", "history-db"}


def test_every_prometheus_target_is_up_and_the_rules_evaluate(prom):
    def all_up():
        targets = prom.targets()
        down = [f"{t['scrapeUrl']}: {t['lastError']}" for t in targets if t["health"] != "up"]
        assert len(targets) == TARGETS and not down, (len(targets), down)
        return targets

    targets = eventually(all_up, f"{TARGETS} targets up", timeout=90)
    by_type = {}
    for t in targets:
        by_type.setdefault(t["labels"].get("export_type", t["labels"]["job"]), set()).add(t["labels"]["instance"])
    assert by_type["master_export"] == {f"yb-master-{i}:7000" for i in (1, 2, 3)}
    assert len(by_type["tserver_export"]) == len(by_type["cql_export"]) == len(by_type["ysql_export"]) == 3

    def evaluated():
        groups = prom.get("/api/v1/rules")["data"]["groups"]
        rules = [r for g in groups for r in g["rules"]]
        bad = [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
        assert rules and not bad, bad
        return rules

    eventually(evaluated, "every recording rule evaluated", timeout=60)
    # A rule over YugabyteDB's own series has data (the stand-in serves
    # real 2.23.1 captures, relabelled by the project's prometheus.yml).
    assert prom.query('rpc_latency_count{export_type="ysql_export"}')


def test_readme_k6_command_writes_exactly_the_rows_it_reports(stack, inserts, prom):
    testid, run = inserts
    inserted = run.counts["insert"]
    assert inserted > 100 and run.errors == (0, "")
    in_table = stack.ysql(f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{testid}:%'")
    assert int(in_table) == inserted == run.rows_written
    # k6's count reached Prometheus by remote write, exactly.
    eventually(lambda: prom.value(f'sum(k6_iterations_total{{testid="{testid}",op="insert"}})') == inserted,
               "k6_iterations_total to equal k6's count", timeout=30)


def test_readme_select_command_reads_the_keys_the_insert_wrote(stack, inserts):
    testid, run = inserts
    reads = stack.k6("k6", "bench", new_testid("sel"), WORKLOAD="sql-selects", KEY_PREFIX=testid,
                     MAX_WRITTEN_KEY=run.rows_written, VUS=3, DURATION="4s")
    assert reads.code == 0, reads.output[-4000:]
    assert reads.counts["select"] > 100 and reads.errors == (0, "")
    assert re.search(r"keys missing 0 ", reads.output)


def ybbench_service(stack, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """The README's `docker compose run --rm ybbench ARGS`, at the checkout's root."""
    return stack("run", "--rm", "ybbench", *args, check=False, timeout=timeout)


@pytest.fixture(scope="module")
def service_runs(stack):
    """The README's one command, `ybbench run ... --report` (the run and its
    report), then a two-step `sweep` and a `report` of its steps, each
    through the ybbench service, into the checkout's results/."""
    tid, sweep = new_testid("svc"), new_testid("sweep")
    # 30 s: the stack's k6 pushes every 5 s, so a rate point's window is 15 s of pushes; a
    # curve needs points whose window lies inside the run (a 15 s run has none: no curve).
    run = ybbench_service(stack, "run", "sql-inserts", "--testid", tid, "--quiet", "--set", "VUS=4",
                          "--set", "DURATION=30s", "--report")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    swept = ybbench_service(stack, "sweep", "sql-inserts", "--vus", "1,2", "--step-duration", "5s", "--id", sweep)
    assert swept.returncode == 0, swept.stdout[-3000:] + swept.stderr[-3000:]
    steps = [f"{sweep}-vus{n}" for n in (1, 2)]
    report = ybbench_service(stack, "report", *steps, "--results", f"results/{sweep}")
    assert report.returncode == 0, report.stdout[-3000:] + report.stderr[-3000:]
    results = stack.root / "results"
    return {"results": results, "run": results / tid, "sweep": results / sweep,
            "steps": [results / sweep / s for s in steps], "run_out": run, "report": report}


def test_ybbench_service_writes_results_as_the_checkouts_owner(stack, service_runs):
    results = service_runs["results"]
    assert results.stat().st_uid == USER_UID != 0
    files = [results, *results.rglob("*")]
    assert len(files) > 15 and service_runs["run"] / "report.html" in files
    assert service_runs["steps"][0] / "report.html" in files
    assert {(f.stat().st_uid, f.stat().st_gid) for f in files} == {(USER_UID, USER_UID)}
    # Pointed at the stack's own Prometheus and Loki, with no flag given.
    params = json.loads((service_runs["run"] / "params.json").read_text())
    assert (params["prometheus"], params["loki"]) == ("http://prometheus:9090", "http://loki:3100")
    assert params["knobs"]["YSQL_NODES"] == "yb-tserver-1:5433,yb-tserver-2:5433,yb-tserver-3:5433"


def test_ybbench_service_numbers_are_k6s(stack, service_runs):
    """Every run's summary.json holds k6's own counts (k6-summary.json), and
    the rows are in YSQL."""
    for folder in [service_runs["run"], *service_runs["steps"]]:
        ours = json.loads((folder / "summary.json").read_text())
        k6s = json.loads((folder / "k6-summary.json").read_text())["metrics"]
        count = k6s["iterations"]["count"]
        assert count > 0 and ours["ops"]["insert"]["count"] == count, folder.name
        assert ours["errors"] == 0 and ours["rows_written"] == count, folder.name
    tid = service_runs["run"].name
    in_table = stack.ysql(f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{tid}:%'")
    assert int(in_table) == json.loads((service_runs["run"] / "summary.json").read_text())["rows_written"]
    sweep = json.loads((service_runs["sweep"] / "sweep.json").read_text())
    assert len(sweep["steps"]) == 2


def test_ybbench_service_names_what_limited_each_run(service_runs):
    """Through the service, k6 runs in the ybbench container and is seen
    there (usage.json); the stack's node_exporter reads the same kernel, so
    its host is named as the client's own and its CPU split; YugabyteDB's
    counters are read. The verdict is printed, kept, and carried to the
    sweep's steps and ceiling."""
    folder = service_runs["run"]
    doc = json.loads((folder / "limits.json").read_text())
    seen = {f["resource"]: f for f in doc["resources"] if f["status"] != "not-visible"}
    assert {"client", "server-cpu", "yb-rpc-queue", "contention"} <= set(seen), doc["resources"]
    used = json.loads((folder / "usage.json").read_text())
    assert [p["name"] for p in used["processes"]] == ["k6"] and len(used["processes"][0]["samples"]) >= 25
    assert used["sessions"]["not_visible"] is None and used["sessions"]["samples"], used["sessions"]
    assert doc["shared_host"] and seen["server-cpu"]["figures"]["shared_with_client"] is True
    assert f"limits: {doc['verdict']['text']} " in service_runs["run_out"].stdout
    sweep = json.loads((service_runs["sweep"] / "sweep.json").read_text())
    steps = {s["testid"]: s["limited_by"] for s in sweep["steps"]}
    for step in service_runs["steps"]:
        assert steps[step.name] == json.loads((step / "limits.json").read_text())["verdict"]
    assert sweep["ceiling"]["limited_by"] in steps.values()


def test_ybbench_service_report_charts_have_data(service_runs):
    folder = service_runs["run"]
    assert f"report: /ybbench/results/{folder.name}/report.html" in service_runs["run_out"].stdout.splitlines()
    data = json.loads((folder / "report.json").read_text())
    (run,) = data["runs"]
    charts = {c["id"]: c for c in run["charts"]}
    summary = json.loads((folder / "summary.json").read_text())
    assert charts["summary_ops_per_second"]["data"] == {"insert": summary["ops"]["insert"]["per_second"]}
    ops = charts["ops_per_second"]
    assert ops.get("curve", True) and [v for v in ops["data"]["insert"]["v"] if v > 0], ops
    page = (folder / "report.html").read_text()
    pngs = [base64.b64decode(src.split(",", 1)[1]) for src in re.findall(r'src="(data:image/png;base64,[^"]*)"', page)]
    assert len(pngs) == len([c for c in run["charts"] if c.get("curve", True)]) >= 3
    assert all(p.startswith(b"\x89PNG\r\n\x1a\n") and len(p) > 2000 for p in pngs)
    # The sweep's steps in one report: each step's ops/s is its own summary's.
    first = service_runs["steps"][0]
    assert service_runs["report"].stdout.strip().endswith(f"results/{first.parent.name}/{first.name}/report.html")
    both = json.loads((first / "report.json").read_text())["runs"]
    assert [r["testid"] for r in both] == [s.name for s in service_runs["steps"]]
    for r, step in zip(both, service_runs["steps"]):
        ops = {c["id"]: c for c in r["charts"]}["summary_ops_per_second"]["data"]
        assert ops == {"insert": json.loads((step / "summary.json").read_text())["ops"]["insert"]["per_second"]}


def readme_quick_start() -> list[list[str]]:
    """The README's quick start, its first sh block, one argv per line."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Quick start"):]
    block = section[section.index("```sh\n") + 6:]
    return [shlex.split(line) for line in block[:block.index("```")].splitlines() if line.strip()]


def test_the_readmes_quick_start_through_the_service(stack):
    """The README's quick start as a user pastes it (the stack is up: its first line ran; its last one, down,
    is the fixture's), the load shorter: the inserts' rows are YSQL's, the selects read exactly those keys, the ab
    compares 2 + 2 runs and says so."""
    lines = readme_quick_start()
    assert lines[0] == ["docker", "compose", "up", "-d", "--wait"]
    assert lines[-1] == ["docker", "compose", "--profile", "*", "down"]
    shorter = {"60s": "6s", "5": "2"}  # --duration 60s and --repeat 5, for a test's time
    done = {}
    for argv in lines[1:-1]:
        assert argv[:5] == ["docker", "compose", "run", "--rm", "ybbench"], argv
        args = [shorter.get(a, a) if prev in ("--duration", "--repeat") else a for prev, a in zip(["", *argv], argv)]
        args = args[5:]
        if args[0] == "ab":  # its runs take the workload's 30 s unless told: 6 s each too
            args += ["--set", "DURATION=6s"]
        p = ybbench_service(stack, *args)
        assert p.returncode == 0, (args, p.stdout[-3000:] + p.stderr[-3000:])
        done[args[0] if args[0] != "run" else args[args.index("--testid") + 1]] = p
    assert set(done) == {"load1", "read1", "ab", "doctor"}, set(done)
    results = stack.root / "results"
    load = json.loads((results / "load1" / "summary.json").read_text())
    in_table = int(stack.ysql("SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE 'load1:%'"))
    assert in_table == load["rows_written"] > 100 and (results / "load1" / "report.html").is_file()
    # The users' k6: v2, the version compose pins, asked for native histograms as v2 takes them.
    versions = json.loads((results / "load1" / "params.json").read_text())["versions"]
    k6_pinned = re.search(r"^K6_VERSION=(\S+)", (REPO / "compose" / ".env").read_text(), re.M)[1]
    assert versions["k6"] == k6_pinned, versions
    assert "Legacy env var" not in (results / "load1" / "k6.log").read_text()
    read = json.loads((results / "read1" / "params.json").read_text())
    assert read["keys_from"] == "load1" and read["knobs"]["KEY_PREFIX"] == "load1"
    assert read["knobs"]["MAX_WRITTEN_KEY"] == str(in_table)
    reads = json.loads((results / "read1" / "summary.json").read_text())
    assert reads["ops"]["select"]["count"] > 100 and reads["keys_missing"] == 0 and reads["errors"] == 0
    (ab_id,) = [d.name for d in results.iterdir() if d.name.startswith("ab-sql-selects-")]
    (cmp,) = [d for d in (results / ab_id).iterdir() if d.name.startswith("compare-")]
    c = json.loads((cmp / "compare.json").read_text())["comparisons"][0]
    assert c["ops"]["select"]["runs"] == {"base": 2, "other": 2}
    assert c["differences"]["knobs"]["VUS"] == {"base": "8", "other": "16"}
    assert json.loads((results / ab_id / f"{ab_id}-base1" / "params.json").read_text())["knobs"]["DURATION"] == "6s"
    assert "2 + 2 runs" in done["ab"].stdout


def test_doe_run_through_the_service(stack):
    """The README's `docker compose run --rm ybbench doe FILE --run`, on
    seed 002's local design made short: every row runs against the stack's
    YSQL, each run's y in the analysis is its own k6 summary's ops/s, and
    the read rows found every key the load wrote."""
    did = new_testid("doe")
    doc = yaml.safe_load((REPO / "experiments" / "seed-002-esle-local.yaml").read_text())
    doc["replications"] = 1
    doc["run"].update(duration="3s", knobs={"VUS": 2, "TABLE": did.replace("-", "_")})
    doc["run"]["load"]["keys"] = 2000
    design = stack.root / "experiments" / f"{did}.yaml"
    design.write_text(yaml.safe_dump(doc, sort_keys=False))
    os.chown(design, USER_UID, USER_UID)
    r = ybbench_service(stack, "doe", f"experiments/{did}.yaml", "--run", "--id", did)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    folder = stack.root / "results" / did
    runs = sorted(p for p in folder.iterdir() if re.fullmatch(rf"{did}-r\d+-1", p.name))
    assert len(runs) == 4, sorted(p.name for p in folder.iterdir())
    assert {(f.stat().st_uid, f.stat().st_gid) for f in [folder, *folder.rglob("*")]} == {(USER_UID, USER_UID)}
    load = json.loads((folder / f"{did}-load" / "params.json").read_text())["knobs"]
    in_table = stack.ysql(f"SELECT count(*) FROM {load['TABLE']} WHERE k LIKE '{load['KEY_PREFIX']}:%'")
    assert int(in_table) == 2000
    y = {}
    for run in runs:
        summary = json.loads((run / "summary.json").read_text())
        k6s = json.loads((run / "k6-summary.json").read_text())["metrics"]
        assert summary["errors"] == 0 and sum(o["count"] for o in summary["ops"].values()) == k6s["iterations"]["count"]
        if json.loads((run / "params.json").read_text())["workload"] == "kv-random-read":
            assert summary["keys_missing"] == 0 and summary["ops"]["select"]["count"] > 0, run.name
        y[run.name] = sum(o["per_second"] for o in summary["ops"].values())
    res = json.loads((folder / "analysis" / "results.json").read_text())
    # One replication: each row's source is its run's summary.json.
    got = {Path(row["source"]).parent.name: v for row in res["runs"] for v in row["y"]}
    assert got == pytest.approx(y, rel=1e-12)


def test_tpcc_loads_runs_in_both_modes_and_verifies_through_the_service(stack):
    """The TPC-C commands of docs/workloads.md through the ybbench service:
    tpcc-load of one warehouse, tpcc in throughput and in spec mode with
    --keys-from it, and in the statements style (docs/tpcc.md: BEGIN, a
    round trip a statement, COMMIT, on the pgconn driver the image's k6
    carries), and verify of each run; every committed New-Order is in
    YSQL's orders (counted there)."""
    load = new_testid("tpccload")
    prefix = f"{load}_"
    r = ybbench_service(stack, "run", "tpcc-load", "--testid", load, "--quiet", "--set", "WAREHOUSES=1",
                        "--set", "VUS=2", "--set", f"TABLE_PREFIX={prefix}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    committed = 0
    statements = ("--set", "TPCC_STYLE=statements", "--set", "DB_DRIVER=pgconn")
    for mode, seconds, style in (("throughput", 5, ()), ("spec", 20, ()), ("throughput", 5, statements)):
        tid = new_testid(f"tpcc{mode[:4]}")
        r = ybbench_service(stack, "run", "tpcc", "--testid", tid, "--keys-from", load, "--quiet",
                            "--set", f"TPCC_MODE={mode}", "--set", f"DURATION={seconds}s", *style)
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
        t = json.loads((stack.root / "results" / tid / "summary.json").read_text())["tpcc"]
        assert t["mode"] == mode and (t["efficiency"] is None) == (mode == "throughput"), t
        assert t["style"] == ("statements" if style else "procedures"), t
        committed += t["new_orders"]["committed"]
        v = ybbench_service(stack, "verify", tid)
        assert v.returncode == 0, v.stdout[-3000:] + v.stderr[-3000:]
        assert json.loads((stack.root / "results" / tid / "verify.json").read_text())["ok"] is True
    # The load left 3,000 orders a district; each committed New-Order added one.
    assert int(stack.ysql(f"SELECT count(*) FROM {prefix}orders WHERE o_id > 3000")) == committed > 0


@pytest.mark.parametrize("args", [
    ("run", "no-such-workload"),
    ("doe", "experiments/no-such-design.yaml", "--run"),
    ("sweep", "sql-inserts", "--vus", "4,2"),
])
def test_bad_input_through_the_service_is_the_local_clis_error(stack, args):
    """The same error line and exit code as `ybbench` run locally in the
    same checkout, and nothing written."""
    before = sorted((stack.root / "results").rglob("*")) if (stack.root / "results").exists() else []
    served = ybbench_service(stack, *args)
    local = subprocess.run([sys.executable, "-m", "ybbench", *args], cwd=stack.root, capture_output=True, text=True,
                           env={**stack.env, "PYTHONPATH": str(stack.root)}, timeout=120)
    assert local.returncode == 2 and local.stderr.startswith("ybbench: error: "), local.stderr
    errors = [line for line in served.stderr.splitlines() if line.startswith("ybbench: error: ")]
    assert (served.returncode, errors) == (local.returncode, local.stderr.splitlines()), served.stderr
    assert "Traceback" not in served.stderr + served.stdout
    after = sorted((stack.root / "results").rglob("*")) if (stack.root / "results").exists() else []
    assert after == before


# Seconds an added tserver must stand, its target file written, before its
# remove. Prometheus's first scrape of a new file_sd target can come 15 s
# after the file: its discovery manager sends updates every 5 s (updatert),
# the scrape manager applies them every 5 s (--scrape.discovery-reload-interval)
# and a new target's first scrape waits up to one 5 s interval; 5 s more for a
# slow scrape. Events run one after another on one thread (ybbench/run/faults.py),
# so an add can start late and take long (8 s on a loaded 2-core machine):
# the schedules below leave more, and events.json shows what was left.
SCRAPE_WINDOW_S = 20


def assert_scrape_window(events: list[dict], service: str) -> None:
    """From events.json: the remove of SERVICE started at least
    SCRAPE_WINDOW_S after its add ended (time_unix_s + took_s: the add writes
    the target file last), so a scrape that never came is not the schedule's."""
    add, = [e for e in events if (e["action"], e["service"]) == ("add", service)]
    remove, = [e for e in events if (e["action"], e["service"]) == ("remove", service)]
    window = remove["time_unix_s"] - (add["time_unix_s"] + add["took_s"])
    assert window >= SCRAPE_WINDOW_S, (
        f"the schedule left {service} {window:.1f} s between its add's end and its remove, under "
        f"{SCRAPE_WINDOW_S} s: too tight for Prometheus to be sure to scrape it (add due at {add['at_s']:g} s, "
        f"took {add['took_s']} s; remove due at {remove['at_s']:g} s)")


def test_events_from_inside_the_ybbench_service(stack, prom):
    """`--event` through the service: its `docker compose` (the engine's
    socket, the project's name and files) adds a fourth tserver under load,
    whose target file it writes as the checkout's owner and Prometheus
    scrapes, then removes it; events.json says both happened."""
    testid = new_testid("svcev")
    target = stack.root / "prometheus" / "targets" / "compose" / "yugabytedb-yb-tserver-4.json"
    seen = []

    def scraped():
        seen.extend(t for t in prom.targets() if t["labels"]["instance"] == "yb-tserver-4:9000" and t["health"] == "up")
        if target.exists():
            seen.append(("owner", target.stat().st_uid))
        return [t for t in seen if not isinstance(t, tuple)]

    try:
        proc = stack.popen("run", "--rm", "ybbench", "run", "sql-inserts", "--testid", testid, "--quiet",
                           "--set", "VUS=2", "--set", "DURATION=40s", "--event", "2s:add:yb-tserver-4",
                           # 33 s, less the add's own time, for a scrape (SCRAPE_WINDOW_S).
                           "--event", "35s:remove:yb-tserver-4")
        try:
            eventually(scraped, "Prometheus scraping yb-tserver-4, added from the ybbench service", timeout=90)
            missed = None
        except TimeoutError as e:
            missed = e  # raised once events.json shows the schedule left room for a scrape
        out, _ = proc.communicate(timeout=300)
    finally:
        stack("--profile", "expand", "rm", "-s", "-f", "yb-tserver-4", check=False)
        target.unlink(missing_ok=True)
    assert proc.returncode == 0, out[-4000:]
    folder = stack.root / "results" / testid
    events = json.loads((folder / "events.json").read_text())["events"]
    assert [(e["action"], e["service"], e["ok"]) for e in events] == [
        ("add", "yb-tserver-4", True), ("remove", "yb-tserver-4", True)], events
    assert_scrape_window(events, "yb-tserver-4")
    assert missed is None, missed
    assert ("owner", USER_UID) in seen
    assert (folder / "events.json").stat().st_uid == USER_UID
    assert not [c for c in stack.containers(all_=True) if stack.service_of(c) == "yb-tserver-4"]


def test_faults_and_expansion_under_load_lose_no_acknowledged_write(stack, prom, tmp_path):
    """`ybbench run --event` on this stack (seed 001): a tserver stopped
    and started, a fourth added (Prometheus scrapes it) and removed, with
    k6 inserting through all three tservers; every event in events.json
    and in Loki; `ybbench verify` finds every acknowledged write."""
    testid, results = new_testid("faults"), tmp_path / "results"
    nodes = ",".join(f"{stack.address(f'yb-tserver-{i}')}:5433" for i in (1, 2, 3))
    env = {**stack.env, **stack.files_env, "PYTHONPATH": str(stack.root), "K6": str(BIN / "k6"),
           "K6_PROMETHEUS_RW_PUSH_INTERVAL": "1s"}
    loki_url = f"http://{stack.address('loki')}:3100"
    cmd = [sys.executable, "-m", "ybbench", "run", "sql-inserts", "--testid", testid, "--results", str(results),
           "--quiet", "--prometheus", prom.base, "--loki", loki_url,
           "--set", f"YSQL_NODES={nodes}", "--set", "VUS=6", "--set", "DURATION=60s", "--set", "DB_CONNECT_TIMEOUT=2",
           # Down from 3 s to 14 s: more than two of Prometheus's 5 s scrapes, so one lands while it
           # is down whatever the scrape's phase (5 s, as before, could fall between two).
           "--event", "3s:stop:yb-tserver-2", "--event", "14s:start:yb-tserver-2", "--event", "15s:add:yb-tserver-4",
           # 40 s after the add is due, which starts late when the start takes long and itself takes a
           # while: room for Prometheus's first scrape, checked from events.json (SCRAPE_WINDOW_S).
           "--event", "55s:remove:yb-tserver-4"]
    seen_t4 = []

    def scrape_t4():
        seen_t4.extend(t for t in prom.targets() if t["labels"]["instance"] == "yb-tserver-4:9000"
                       and t["health"] == "up")
        return seen_t4

    started = time.time()
    try:
        run = subprocess.Popen(cmd, cwd=stack.root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            eventually(scrape_t4, "Prometheus scraping the added yb-tserver-4", timeout=90)
            missed = None
        except TimeoutError as e:
            missed = e  # raised once events.json shows the schedule left room for a scrape
        out, _ = run.communicate(timeout=180)
    finally:
        stack("--profile", "expand", "rm", "-s", "-f", "yb-tserver-4", check=False)
        (stack.root / "prometheus" / "targets" / "compose" / "yugabytedb-yb-tserver-4.json").unlink(missing_ok=True)
    assert run.returncode == 99, out  # the stopped tserver's errors cross the threshold
    events = json.loads((results / testid / "events.json").read_text())["events"]
    assert [(e["action"], e["service"], e["ok"]) for e in events] == [
        ("stop", "yb-tserver-2", True), ("start", "yb-tserver-2", True), ("add", "yb-tserver-4", True),
        ("remove", "yb-tserver-4", True)]
    assert_scrape_window(events, "yb-tserver-4")
    assert missed is None, missed
    summary = json.loads((results / testid / "summary.json").read_text())
    assert summary["errors"] > 0 and summary["rows_written"] > 100
    # Down within this run's own window (an earlier test's stop of it is older).
    own = max(1, int(time.time() - started))
    assert prom.value(f'min_over_time(up{{instance="yb-tserver-2:9000"}}[{own}s])') == 0
    loki = LokiApi(loki_url)
    marked = eventually(lambda: loki.lines(f'{{job="ybbench", kind="event", testid="{testid}"}}'),
                        "the events in Loki")
    assert sorted(marked) == sorted(["stop yb-tserver-2", "start yb-tserver-2", "add yb-tserver-4",
                                     "remove yb-tserver-4"])
    check = subprocess.run([sys.executable, "-m", "ybbench", "verify", testid, "--results", str(results)], cwd=stack.root,
                           env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr
    verified = json.loads((results / testid / "verify.json").read_text())
    assert verified["lost"]["count"] == 0 and verified["present"]["count"] >= summary["rows_written"]


def _docker_events(container: str, since: float, until: float) -> list[dict]:
    """What the engine says happened to a container (docker events)."""
    out = subprocess.run(["docker", "events", "--since", f"{since:.3f}", "--until", f"{until:.3f}", "--filter",
                          f"container={container}", "--format", "{{json .}}"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def test_kill_restart_and_a_failed_event_land_in_events_json(stack, prom, tmp_path):
    """`kill` and `restart` under load, against what the engine and Prometheus saw; an event
    that fails (a second kill of a tserver already dead: compose itself exits 0 with "no
    container to kill") is recorded with ok false, the run's folder stays, and ybbench exits 2
    naming it; an event naming a service the project lacks is refused before the run (issue 27:
    no test could see events.apply take a failure for success)."""
    testid, results = new_testid("kill"), tmp_path / "results"
    env = {**stack.env, **stack.files_env, "PYTHONPATH": str(stack.root), "K6": str(BIN / "k6"),
           "K6_PROMETHEUS_RW_PUSH_INTERVAL": "1s"}

    def ybbench_run(tid: str, *events: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "ybbench", "run", "sql-inserts", "--testid", tid, "--results", str(results),
             "--quiet", "--prometheus", prom.base, "--set", f"YSQL_NODES={stack.address('yb-tserver-1')}:5433",
             "--set", "VUS=2", "--set", "DURATION=20s", *(x for e in events for x in ("--event", e))],
            cwd=stack.root, env=env, capture_output=True, text=True, timeout=180)

    unknown = ybbench_run(new_testid("nosvc"), "2s:stop:yb-tserver-9")
    assert unknown.returncode == 2 and "no service 'yb-tserver-9'" in unknown.stderr, unknown.stderr
    assert not results.exists() or not any(results.iterdir())

    (t3,) = [c["Id"] for c in stack.containers() if stack.service_of(c) == "yb-tserver-3"]
    started = time.time()
    # Down from 2 s to 14 s: more than two of Prometheus's 5 s scrape intervals, so at least one
    # scrape lands while it is down whatever the scrape's phase (7 s, as before, missed it on CI).
    run = ybbench_run(testid, "2s:kill:yb-tserver-3", "4s:kill:yb-tserver-3", "14s:restart:yb-tserver-3")
    ended = time.time()
    assert run.returncode == 2, run.stdout + run.stderr
    assert "kill yb-tserver-3 at 4 s failed: yb-tserver-3 was not running" in run.stderr
    assert "Traceback" not in run.stderr
    events = json.loads((results / testid / "events.json").read_text())["events"]
    assert [(e["action"], e["service"], e["ok"]) for e in events] == [
        ("kill", "yb-tserver-3", True), ("kill", "yb-tserver-3", False), ("restart", "yb-tserver-3", True)]
    assert json.loads((results / testid / "summary.json").read_text())["rows_written"] > 0
    # The engine: SIGKILL (signal 9), the process died with 137, then it was started again.
    seen = [(e["Action"], e["Actor"]["Attributes"].get("signal"), e["Actor"]["Attributes"].get("exitCode"))
            for e in _docker_events(t3, started, ended) if e["Action"] in ("kill", "die", "start")]
    assert seen[:2] == [("kill", "9", None), ("die", None, "137")], seen
    assert ("start", None, None) in seen[2:], seen
    # Prometheus saw yb-tserver-3 down within this run, and it is up again.
    own = max(1, int(time.time() - started))
    assert prom.value(f'min_over_time(up{{instance="yb-tserver-3:9000"}}[{own}s])') == 0
    eventually(lambda: prom.value('up{instance="yb-tserver-3:9000"}') == 1, "yb-tserver-3 up again", timeout=90)


def test_promtail_ships_every_container_log_and_k6_by_testid(stack, inserts, loki):
    testid, _ = inserts
    running = {stack.service_of(c) for c in stack.containers()}

    def shipped():
        services = set(loki.label_values("service"))
        assert running <= services, running - services
        return True

    eventually(shipped, "every running service's log in Loki", timeout=90)
    assert any("STAND-IN" in line for line in loki.lines('{service="yb-tserver-1"}'))
    k6_lines = eventually(lambda: loki.lines(f'{{service="k6", testid="{testid}"}}'), "k6's log by testid")
    assert any(f"keys {testid}:<n>" in line for line in k6_lines)


def test_a_ysql_error_reaches_loki_with_its_level(stack, loki):
    """YSQL's own log, not only the servers' glog lines: a failed statement's
    ERROR line, as PostgreSQL writes it, in Loki under the tserver's service
    with level="error". The YugabyteDB stand-in logs YSQL where the real
    tserver does under the compose file's flags (to files under the log dir
    unless --logtostderr), so this fails if compose ran the servers with
    --alsologtostderr alone, as a real host would."""
    table = f"ybbench_missing_{uuid.uuid4().hex[:8]}"
    failed = stack("exec", "-T", "yb-tserver-1", "ysqlsh", "-h", "127.0.0.1", "-p", "5433", "-U", "yugabyte", "-XAtc",
                   f"SELECT * FROM {table}", check=False)
    assert failed.returncode != 0 and "does not exist" in failed.stderr, failed.stdout + failed.stderr
    lines = eventually(lambda: loki.lines(f'{{service="yb-tserver-1", level="error"}} |= "{table}"'),
                       "YSQL's ERROR line in Loki with level=error", timeout=60)
    assert [line for line in lines if re.match(
        rf'^\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[\d+\] ERROR:  relation "{table}" does not exist', line)], lines


# A small log bound for the test (the stack's own is in compose/.env): 2
# files of 200 KiB. CHATTER writes 5,000 lines of ~300 bytes on disk
# (~1.5 MB, 3.7x the bound) at 10 lines every 0.1 s (~30 kB/s), after 4 s
# for Promtail (2 s discovery) to find the container; a file then fills in
# ~7 s, the time Promtail may fall behind before lines rotate away. At 50
# lines a step (a file in ~1.3 s) a busy 2-core CI host's Promtail once
# shipped 4,321 of the 5,000: a correct stack failing a test of the bound.
# The control, which Promtail need not follow, writes the same at full speed.
LOG_BOUND = {"LOG_MAX_SIZE": "200k", "LOG_MAX_FILE": "2"}
BOUND_BYTES = 2 * 200 * 1024
CHATTER_LINES = 5000
CHATTER = """pad=$(head -c 200 /dev/zero | tr '\\0' x)
sleep {wait}
i=0
while [ $i -lt {lines} ]; do
  echo "{tag} line $i $pad"
  i=$((i+1))
  [ $((i % 10)) -ne 0 ] || usleep {pause_us}
done
sleep {wait}"""


def chatter(stack, tag: str, *files: str, paced: bool = True) -> tuple[str, int]:
    """Run CHATTER as a one-off `secrets` container (busybox), under the
    test's log bound and any extra compose files (paced: at Promtail's
    pace; else at full speed); its name and the bytes of its json-file log
    on disk (the file and its rotated .1, .2, ...)."""
    name = f"{PROJECT}-{tag}"
    extra = [a for f in files for a in ("-f", f)]
    script = CHATTER.format(lines=CHATTER_LINES, tag=tag, wait=4 if paced else 0, pause_us=100000 if paced else 0)
    stack(*extra, "run", "-d", "--no-deps", "--name", name, "secrets", "sh", "-c", script, env=LOG_BOUND)
    try:
        subprocess.run(["docker", "wait", name], capture_output=True, check=True, timeout=120)
        log = Path(subprocess.run(["docker", "inspect", "-f", "{{.LogPath}}", name], capture_output=True, text=True,
                                  check=True).stdout.strip())
        written = sum(f.stat().st_size for f in log.parent.glob(log.name + "*"))
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    return name, written


def test_a_log_past_its_bound_is_rotated_and_promtail_keeps_every_line(stack, loki, tmp_path):
    """compose's logging options (x-logging): a container that writes 3.7x
    its bound keeps at most the bound on disk, and Promtail still ships
    every line to Loki (counted there). The control, the same service with
    its logging options reset, keeps all of it (Docker's default)."""
    tag = f"logbound{uuid.uuid4().hex[:6]}"
    name, written = chatter(stack, tag)
    # Docker rotates before a write once a file has reached max-size: each file may pass it by one line.
    assert written <= BOUND_BYTES + 2 * 400, written
    query = f'sum(count_over_time({{service="secrets", container="{name}"}} |= "{tag} line" [10m]))'

    def counted():
        result = loki.get("/loki/api/v1/query", query=query)["data"]["result"]
        assert result and int(result[0]["value"][1]) == CHATTER_LINES, result
        return True

    eventually(counted, f"all {CHATTER_LINES} lines of {name} in Loki", timeout=60)

    unbounded = tmp_path / "unbounded-logs.yml"
    unbounded.write_text("services:\n  secrets:\n    logging: !reset null\n")
    _, control = chatter(stack, f"nobound{uuid.uuid4().hex[:6]}", str(unbounded), paced=False)
    assert control > 3 * BOUND_BYTES, control


def test_prometheus_keeps_the_retention_its_config_file_sets(stack, prom):
    """storage.tsdb.retention.time in prometheus/prometheus.yml, and no
    retention flag on the container's command line (15d is also
    Prometheus' default: test_compose.py shows that this file's setting is
    the one read, with another value)."""
    assert prom.get("/api/v1/status/runtimeinfo")["data"]["storageRetention"] == "15d"
    args = [c["Args"] for c in stack.containers(one_off=False) if stack.service_of(c) == "prometheus"][0]
    assert "--config.file=/etc/prometheus/prometheus.yml" in args and not [a for a in args if "retention" in a], args


def test_every_dashboard_logql_query_finds_the_logs_the_containers_wrote(stack, inserts, loki):
    """The dashboards' Loki panels, annotations and variables, on what the
    compose stack's containers really wrote: levels parsed by Promtail's
    pipeline (the YugabyteDB stand-in logs in glog format, warns that it is
    a stand-in, and its first master says it became leader), k6's log by
    testid."""
    testid, _ = inserts
    values = {"testid": testid, "service": ".+", "__interval": "20s"}

    def none_fail():
        failures = logql_failures(loki.base, values)
        assert not failures, failures
        return True

    eventually(none_fail, "every dashboard LogQL query to return lines", timeout=60)


def test_published_ports_are_on_loopback_as_the_engine_has_them(stack):
    bindings = {}
    for c in stack.containers():
        for port, binds in (c["HostConfig"]["PortBindings"] or {}).items():
            for b in binds:
                bindings[(stack.service_of(c), port)] = b["HostIp"]
    assert {("prometheus", "9090/tcp"), ("grafana", "3000/tcp"), ("yb-tserver-1", "5433/tcp"),
            ("yb-master-1", "7000/tcp"), ("loki", "3100/tcp"), ("postgres", "5432/tcp")} <= set(bindings)
    assert {ip for ip in bindings.values()} == {"127.0.0.1"}, bindings


def test_containers_reach_nothing_outside(stack):
    """The network is internal: the engine drops whatever its bridge sends
    beyond its own subnet, and no outside name resolves (checked without
    sending a packet out)."""
    net = json.loads(subprocess.run(["docker", "network", "inspect", NETWORK], capture_output=True, text=True,
                                    check=True).stdout)[0]
    assert net["Internal"] is True
    subnet, bridge = net["IPAM"]["Config"][0]["Subnet"], f"br-{net['Id'][:12]}"
    rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=True).stdout
    assert f"! -d {subnet} -i {bridge} -j DROP" in rules, f"no drop rule for {bridge} leaving {subnet}"
    probe = ("import socket\n"
             "try:\n    socket.getaddrinfo('deb.debian.org', 80)\n    print('resolved')\n"
             "except socket.gaierror as e:\n    print('unresolved', e)\n"
             "print(socket.getaddrinfo('yb-master-1', 7000)[0][4][0])\n")
    out = stack("exec", "-T", "yb-tserver-1", "python3", "-c", probe).stdout.splitlines()
    assert out[0].startswith("unresolved"), out
    assert re.match(r"^\d+\.\d+\.\d+\.\d+$", out[1]), out  # service names do resolve


def secrets_listing(stack) -> dict[str, tuple[str, str, str]]:
    """name -> (mode, owner uid, sha256) of every file in the secrets volume."""
    image = stack.env["YBT_BUSYBOX_IMAGE"]
    out = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", f"{PROJECT}_secrets:/s:ro", image, "sh", "-c",
         "cd /s && for f in *; do echo \"$f $(stat -c '%a %u' \"$f\") $(sha256sum < \"$f\" | cut -c1-64)\"; done"],
        capture_output=True, text=True, check=True).stdout
    return {name: (mode, uid, digest) for name, mode, uid, digest in (line.split() for line in out.splitlines())}


def test_secrets_exist_once_readable_only_by_their_reader(stack):
    listing = secrets_listing(stack)
    owners = {name: (mode, uid) for name, (mode, uid, _) in listing.items()}
    assert owners == {"grafana_admin_password": ("600", "472"), "postgres_password": ("600", "999"),
                      "postgres_exporter_password": ("600", "65534"), "pgpass": ("600", "12345"),
                      "history_password": ("600", "999"), "history_reader_password": ("600", "999"),
                      "history_grafana_password": ("600", "472"), "history_pgpass": ("600", "0")}
    digest = {name: d for name, (_, _, d) in listing.items()}
    assert digest["history_reader_password"] == digest["history_grafana_password"] != digest["history_password"]
    # The grafana stand-in logs in with it: the file reached its reader.
    grafana = stack.address("grafana")
    password = stack("exec", "-T", "grafana", "cat", "/run/secrets/ybbench/grafana_admin_password").stdout.strip()
    req = urllib.request.Request(f"http://{grafana}:3000/api/search", headers={
        "Authorization": "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()})
    with urllib.request.urlopen(req, timeout=10) as r:
        loaded = {d["uid"] for d in json.load(r)}
    provisioned = {json.loads(f.read_text())["uid"] for f in (REPO / "grafana" / "dashboards").glob("*.json")}
    assert loaded == provisioned


# The checks doctor skips on this stack, with why (docs/docker-stack.md
# "ybbench doctor"); every other check must pass.
SKIPPED_HERE = {
    # A stand-in's limit: the YugabyteDB stand-in's YSQL is PostgreSQL
    # (version() has no -YB-, no yb_servers()).
    "ysql nodes cover the cluster": ("skipped", "not a YugabyteDB cluster"),
    # On any stack: services whose lines have no severity (ybbench/doctor/loki.py).
    "loki level ybbench": ("skipped", "ybbench CLI's output"),
    "loki level secrets": ("skipped", "one-shot script"),
}


def test_doctor_through_the_service_passes_on_the_stack(stack, inserts):
    """`docker compose run --rm ybbench doctor` with the service's own
    defaults (the stack's YSQL nodes, Prometheus, Loki and Grafana): nothing
    fails; Grafana is reached with the password the secrets volume holds,
    which appears in no output and no file doctor wrote."""
    out = f"results/doctor-{new_testid('dr')}.json"
    p = ybbench_service(stack, "doctor", "--out", out, timeout=900)
    assert "Traceback" not in p.stdout + p.stderr, p.stderr[-3000:]
    assert (stack.root / out).is_file(), (p.returncode, p.stderr[-3000:])  # e.g. the password file unreadable
    doc = json.loads((stack.root / out).read_text())
    statuses = {c["name"]: c for c in doc["checks"]}
    not_ok = {n: (c["status"], c["found"]) for n, c in statuses.items() if c["status"] != "ok"}
    assert p.returncode == 0 and doc["ok"], json.dumps(not_ok, indent=1)
    # Free space is this host's: node-exporter reads / through /host, so a mount's host path is its own.
    off = room.disagreements(doc["checks"])
    assert room.disk_checks(doc["checks"]) and not off, off
    not_ok = {n: v for n, v in not_ok.items() if not n.startswith("room disk ")}
    assert set(not_ok) <= set(SKIPPED_HERE), json.dumps(not_ok, indent=1)
    for name, (status, found) in not_ok.items():
        assert status == SKIPPED_HERE[name][0] and SKIPPED_HERE[name][1] in found, (name, status, found)
    provisioned = {json.loads(f.read_text())["uid"] for f in (REPO / "grafana" / "dashboards").glob("*.json")}
    for name in ("grafana health", "grafana login", "grafana datasource ybbench-prometheus",
                 "grafana datasource ybbench-loki", "grafana datasource ybbench-history",
                 "grafana plugin prometheus", "grafana plugin loki", "grafana plugin grafana-postgresql-datasource",
                 *(f"grafana dashboard {uid}" for uid in provisioned)):
        assert statuses[name]["status"] == "ok", statuses.get(name)
    assert doc["settings"]["grafana"] == "http://grafana:3000"
    password = stack("exec", "-T", "grafana", "cat", "/run/secrets/ybbench/grafana_admin_password").stdout.strip()
    assert len(password) >= 16 and password not in p.stdout + p.stderr + (stack.root / out).read_text()
    assert (stack.root / out).stat().st_uid == USER_UID


def history_db(stack, query: str, user: str = "ybbench_history", check: bool = True):
    """psql inside history-db, on its Unix socket (local connections are trusted, as upstream's image has them)."""
    return stack("exec", "-T", "history-db", "psql", "-U", user, "-d", "ybbench_history", "-XAtc", query,
                 check=check)


def test_a_run_through_the_service_lands_in_the_history_db_and_grafana_reads_it(stack, service_runs):
    """`up` started history-db (healthy: the default services' test); the
    service's run is in it with its summary's figures, recorded by `ybbench
    run` with no flag (YBBENCH_HISTORY, password from the entrypoint's
    PGPASSFILE); `ybbench history import` through the service finds it
    there; Grafana's
    History datasource is healthy (it connects as the reader), and the
    reader may read but not write."""
    tid = service_runs["run"].name
    summary = json.loads((service_runs["run"] / "summary.json").read_text())
    got = history_db(stack, f"SELECT op, count, ops_per_s FROM ybbench_history_ops WHERE testid = '{tid}'").stdout
    op, count, ops = got.strip().split("|")
    assert (op, int(count)) == ("insert", summary["ops"]["insert"]["count"]), got
    assert float(ops) == pytest.approx(summary["ops"]["insert"]["per_second"], rel=1e-9)
    assert "not in the history" not in service_runs["run_out"].stdout + service_runs["run_out"].stderr
    # `ybbench history` through the service reads the same store: importing the run's folder finds it there
    # (its analysis, Otava in the image: the next test).
    p = ybbench_service(stack, "history", "import", f"results/{tid}")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert ("history import: 0 runs added, 1 already there: "
            "postgresql://ybbench_history@history-db:5432/ybbench_history") in p.stdout, p.stdout[-3000:]
    grafana = stack.address("grafana")
    password = stack("exec", "-T", "grafana", "cat", "/run/secrets/ybbench/grafana_admin_password").stdout.strip()
    req = urllib.request.Request(f"http://{grafana}:3000/api/datasources/uid/ybbench-history/health", headers={
        "Authorization": "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()})
    with urllib.request.urlopen(req, timeout=30) as r:
        assert json.load(r) == {"status": "OK", "message": "Database Connection OK"}
    assert history_db(stack, f"SELECT count(*) FROM ybbench_history_runs WHERE testid = '{tid}'",
                      user="ybbench_grafana").stdout.strip() == "1"
    denied = history_db(stack, "DELETE FROM ybbench_history_runs", user="ybbench_grafana", check=False)
    assert denied.returncode != 0 and "permission denied" in denied.stderr, denied.stderr


# A planted series for `ybbench history`: twelve sql-selects runs, select's ops/s 10% lower from the
# seventh on, the same small wobble of mean zero on either side (each side's mean is its level: the
# change is -10%), p99 wobbling around one level; a commit label counting up.
PLANTED_RUNS, PLANTED_STEP = 12, 6
WOBBLE = (0.015, -0.01, 0.005, -0.015, 0.01, -0.005)


def plant_series(folder: Path, rid: str) -> list[float]:
    """Run folders as `ybbench run` writes them, owned by the checkout's owner; select's ops/s of each."""
    ops = [(1000.0 if i < PLANTED_STEP else 900.0) * (1 + WOBBLE[i % 6]) for i in range(PLANTED_RUNS)]
    for i, o in enumerate(ops):
        tid = f"{rid}-{i:02d}"
        params = results_files.params(tid, workload="sql-selects", knobs={"VUS": "4"},
                                      started=1_800_000_000 + 60 * i, finished=1_800_000_010 + 60 * i)
        params["labels"] = {"plant": rid, "commit": f"c{i:02d}"}
        write_json(folder / tid / "params.json", params)
        p99 = 4.0 * (1 + WOBBLE[(i + 3) % 6])
        lat = {"avg": p99 / 3, "p50": p99 / 4, "p90": p99 / 2, "p95": p99 / 1.5, "p99": p99, "max": p99 * 2}
        write_json(folder / tid / "summary.json", results_files.summary(
            tid, {"select": results_files.op(int(o * 10), o, latency_ms=lat)}, workload="sql-selects",
            duration_s=10.0))
    for path in [folder, *folder.rglob("*")]:
        os.lchown(path, USER_UID, USER_UID)
    return ops


def test_history_through_the_service_finds_a_planted_slowdown_with_otava_in_the_image(stack, service_runs):
    """`ybbench history` through the service, with the Otava of its image
    (/opt/otava, as the real image has it): twelve planted runs imported
    into history-db give one change point, select's ops/s at the seventh
    run, with the planted means and -10%, the commit label named as what
    differs; the gate exits 1 naming the op; the change point is in the
    store's table, where Grafana's reader finds it for the History
    dashboard's annotations."""
    rid = new_testid("plant")
    ops = plant_series(service_runs["results"] / rid, rid)
    p = ybbench_service(stack, "history", "--results", f"results/{rid}", "import")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert f"history import: {PLANTED_RUNS} runs added, 0 already there: postgresql://" in p.stdout, p.stdout
    select = f"label:plant={rid}"
    p = ybbench_service(stack, "history", "--results", f"results/{rid}", "--select", select,
                        "--fail-on", "regression")
    assert "Traceback" not in p.stdout + p.stderr, p.stderr[-3000:]
    assert p.returncode == 1, p.stdout[-3000:] + p.stderr[-3000:]  # e.g. "Apache Otava is not installed at ..."
    first_after = f"{rid}-{PLANTED_STEP:02d}"
    assert f"regression: sql-selects select ops/s -10.0% from run {first_after} " in p.stderr, p.stderr
    assert "commit c05 -> c06" in p.stdout, p.stdout
    doc = json.loads((service_runs["results"] / rid / "history" / "history.json").read_text())
    (s,) = doc["series"]
    assert [r["testid"] for r in s["runs"]] == [f"{rid}-{i:02d}" for i in range(PLANTED_RUNS)]
    (c,) = s["change_points"]
    before, after = ops[:PLANTED_STEP], ops[PLANTED_STEP:]
    assert (c["metric"], c["index"], c["first_after"], c["regression"]) == (
        "select_ops_per_s", PLANTED_STEP, first_after, True)
    # Otava prints its means to 6 decimals.
    assert c["mean_before"] == pytest.approx(sum(before) / len(before), abs=1e-6) == 1000.0
    assert c["mean_after"] == pytest.approx(sum(after) / len(after), abs=1e-6) == 900.0
    assert c["change_percent"] == pytest.approx(-10.0, abs=1e-9) and c["pvalue"] <= 0.001
    assert c["differs"] == {"labels": {"commit": {"before": "c05", "after": "c06"}}}
    # The store's change points, read as Grafana's History datasource reads them.
    rows = history_db(stack, "SELECT metric, testid, regression, round(change_percent::numeric, 6), "
                      "time_unix_s = (SELECT started_unix_s FROM ybbench_history_runs r WHERE r.testid = c.testid) "
                      f"FROM ybbench_history_change_points c WHERE series = 'select:{select}'",
                      user="ybbench_grafana").stdout
    assert rows.splitlines() == [f"select_ops_per_s|{first_after}|1|-10.000000|t"], rows


def test_down_then_up_keeps_data_passwords_and_history(stack, inserts, prom, service_runs):
    testid, run = inserts
    before = secrets_listing(stack)
    recorded = history_db(stack, "SELECT testid FROM ybbench_history_runs ORDER BY testid").stdout
    assert service_runs["run"].name in recorded.split()
    stack("down", timeout=300)
    stack("up", "-d", "--wait", "--wait-timeout", "300", timeout=900)
    assert secrets_listing(stack) == before
    # The history store's volume too: every run recorded before is there.
    assert history_db(stack, "SELECT testid FROM ybbench_history_runs ORDER BY testid").stdout == recorded
    in_table = stack.ysql(f"SELECT count(*) FROM postgresqlkeyvalue WHERE k LIKE '{testid}:%'")
    assert int(in_table) == run.counts["insert"]
    prom_after = PromApi(f"http://{stack.address('prometheus')}:9090")
    history = eventually(
        lambda: prom_after.value(f'max(last_over_time(k6_iterations_total{{testid="{testid}",op="insert"}}[1h]))'),
        "the earlier run's series after the restart")
    assert history == run.counts["insert"]


def test_a_tserver_stopped_under_load(stack):
    testid = new_testid("stop")
    proc = stack.popen(*stack.k6_args("k6", "bench"), env=stack.k6_env(testid, {"VUS": 6, "DURATION": "16s"}))
    prom = PromApi(f"http://{stack.address('prometheus')}:9090")
    eventually(lambda: (prom.value(f'sum(k6_iterations_total{{testid="{testid}"}})') or 0) > 0,
               "k6 to be inserting", timeout=60)
    stack("stop", "yb-tserver-2")
    stopped_at = time.time()
    output, _ = proc.communicate(timeout=180)
    stack("start", "yb-tserver-2")
    # k6 ran to its end and printed its summary; the errors of the VUs on
    # the stopped tserver are counted by SQLSTATE class and fail the
    # threshold (exit 99), the others kept inserting.
    run = K6Run(proc.returncode, output)
    assert run.code == 99, output[-4000:]  # any error fails the ybbench_errors count==0 threshold
    errors, classes = run.errors
    assert errors > 0 and classes, output[-3000:]
    assert run.counts["insert"] > 100
    assert float(re.search(r" ran ([0-9.]+) s", output)[1]) >= 15  # the whole 16 s

    def scraped_again():
        t = [t for t in prom.targets() if t["labels"]["instance"] == "yb-tserver-2:9000"][0]
        scraped = datetime.fromisoformat(t["lastScrape"][:19]).replace(tzinfo=timezone.utc).timestamp()
        assert t["health"] == "up" and scraped > stopped_at, t
        return True

    eventually(scraped_again, "yb-tserver-2 scraped again after its restart", timeout=90)
    # ... and Prometheus saw it down while this test had it stopped: `up` over this test's own
    # window only, not an earlier test's stop of the same tserver.
    own = max(1, int(time.time() - stopped_at))
    assert prom.value(f'min_over_time(up{{instance="yb-tserver-2:9000"}}[{own}s])') == 0
