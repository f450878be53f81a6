"""`ybbench doctor` on the native stack (PostgreSQL for YSQL, the YugabyteDB
captures served as its four endpoints, node_exporter, postgres_exporter,
Prometheus, Loki with PostgreSQL's log followed through the project's
Promtail pipeline, the tests' k6): every check passes; each planted fault
is reported failing under its check's exact name while the other checks
still pass; PostgreSQL gives "not a YugabyteDB cluster" skips; bad input
and services down give a failing check or an error, never a traceback."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ybbench.core.files import write_json
from ybbench.core.logs import push
from ybbench.doctor.loki import levels
from ybbench.doctor.prometheus import Prom
from ybbench.doctor.queries import Lookup

from ..support import results_files, room
from ..support.grafana_standin import Standin
from ..support.history_db import new_store_database
from ..support.promtail import Follower
from ..support.stack import BIN, CAPTURES, REPO, CaptureServer, Loki, Process, Prometheus, free_port, wait_until
from ..support.ybbench_cli import USERS_K6, ybbench, ybbench_run

# Loki and Promtail; alone: its room checks hold the machine's free memory and disk, which the compose tests move.
pytestmark = [pytest.mark.late, pytest.mark.alone]

NOT_YB = "not a YugabyteDB cluster"


# doctor checks the k6 the compose stack's users run (v2), and reads the series it pushes.
def doctor(pg, tmp: Path, *args: str, k6: Path = Path(USERS_K6["K6"]), password: str | None = None,
           settings: dict | None = None, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    out = tmp / f"doctor-{uuid.uuid4().hex[:6]}.json"
    knobs = {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database, **(settings or {})}
    cmd = [sys.executable, "-m", "ybbench", "doctor", "--out", str(out), *args]
    for k, v in knobs.items():
        cmd += ["--set", f"{k}={v}"]
    given = env or {}
    env = dict(pg.env(password), K6=str(k6))
    for var in ("YBBENCH_PROMETHEUS", "YBBENCH_LOKI", "YBBENCH_HISTORY"):  # this machine's, not the test's
        env.pop(var, None)
    env.update(given)
    p = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    return p, json.loads(out.read_text()) if out.exists() else None


def by_status(doc: dict, status: str) -> dict[str, dict]:
    return {c["name"]: c for c in doc["checks"] if c["status"] == status}


def assert_fails_exactly(p, doc, names: set[str]) -> dict[str, dict]:
    assert "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert p.returncode == 1, p.stdout + p.stderr
    failed = by_status(doc, "fail")
    assert set(failed) == names, json.dumps(failed, indent=1)
    return failed


def pg_fail(pg, table: str) -> None:
    """A statement that fails (no such table): PostgreSQL logs its ERROR line."""
    subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(pg.port), "-U", pg.user, "-d", pg.database,
                    "-c", f"SELECT * FROM {table}"], env=pg.env(), capture_output=True)


@pytest.fixture(scope="module")
def loki(binaries, tmp_path_factory):
    """A Loki of this module's own: the session's holds other tests' lines
    (test_dashboards pushes YugabyteDB stand-in lines with no level), which
    doctor rightly reports, so a healthy stack here is one only this module
    writes to."""
    server = Loki(tmp_path_factory.mktemp("doctor-loki"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shipped(postgres, loki, tmp_path_factory):
    """PostgreSQL's log followed into Loki as service "postgres"; proven live:
    a failing statement's line arrives before any test starts."""
    follower = Follower(postgres.log_dir / "postgres.log", loki.url, {"service": "postgres"},
                        tmp_path_factory.mktemp("shipper") / "promtail.log")
    marker = f"doctor_warmup_{uuid.uuid4().hex[:8]}"

    def arrived():
        pg_fail(postgres, marker)
        return loki.lines(f'{{service="postgres"}} |= "{marker}"')
    wait_until(arrived, "PostgreSQL's log in Loki", timeout=90, interval=2)
    yield follower
    follower.stop()


@pytest.fixture(scope="module")
def k6_run(postgres, prometheus, tmp_path_factory):
    """A short run written to Prometheus: k6's series exist for the k6 panels' and the report's queries."""
    r = ybbench_run("sql-inserts", postgres, tmp_path_factory.mktemp("doctor-run"), testid=f"d{uuid.uuid4().hex[:8]}",
                    prometheus=prometheus.url, knobs={"VUS": 2, "DURATION": "3s"}, extra_env=USERS_K6)
    assert r.code == 0, r.output


@pytest.fixture
def stack(postgres, prometheus, loki, captures, shipped, k6_run):
    return {"pg": postgres, "captures": captures,
            "args": ["--prometheus", prometheus.url, "--loki", loki.url, "--loki-deadline", "60"]}


def doctor_tables(pg) -> str:
    return pg.query("SELECT count(*) FROM pg_class WHERE relname LIKE 'ybbench_doctor_%'")


def test_every_check_passes_on_a_healthy_stack(stack, tmp_path):
    pg = stack["pg"]
    p, doc = doctor(pg, tmp_path, *stack["args"])
    assert "Traceback" not in p.stdout + p.stderr
    assert p.returncode == 0, p.stdout + p.stderr
    assert by_status(doc, "fail") == {}
    ok = by_status(doc, "ok")
    node = f"ysql 127.0.0.1:{pg.port}"
    version = pg.query("SHOW server_version")
    assert version in ok[f"{node} version"]["found"] and "PostgreSQL" in ok[f"{node} version"]["found"]
    assert "create, insert, select, drop" in ok[f"{node} statements"]["found"]
    # Every job of prometheus.yml, YugabyteDB per export type: the fixture's 7 targets.
    for job in ("prometheus", "node", "postgres", *(f"yugabytedb {e}" for e in
                                                    ("master_export", "tserver_export", "cql_export", "ysql_export"))):
        assert f"prometheus targets {job}" in ok, job
    # Every board that reads Prometheus (History reads the history store: its datasource health is checked).
    boards = {f"queries dashboard {json.loads(b.read_text())['uid']}" for b in (REPO / "grafana" / "dashboards").glob("*.json")
              if '"type": "prometheus"' in b.read_text()}
    assert "queries dashboard ybbench-overview" in boards and "queries dashboard ybbench-history" not in boards
    assert boards | {"queries report"} <= set(ok), sorted(set(boards) - set(ok))
    assert not [c for c in doc["checks"] if c["name"] == "queries dashboard ybbench-history"]
    for module in ("k6/x/sql", "k6/x/sql/driver/postgres", "k6/x/sql/driver/pgx", "k6/x/ybbench"):
        assert f"k6 module {module}" in ok
    assert "on postgres after" in ok["loki ysql error line"]["found"]
    assert {"prometheus clock", "prometheus remote write receiver", "prometheus native histograms",
            "prometheus k6 latency is a native histogram", "loki level postgres"} <= set(ok)
    # The table of its own is gone (the catalog says so, not doctor).
    assert doctor_tables(pg) == "0"
    # On PostgreSQL, the YugabyteDB-only YSQL check is skipped, saying why.
    assert NOT_YB in by_status(doc, "skipped")["ysql nodes cover the cluster"]["found"]
    assert "ok," in p.stdout and str(tmp_path) in p.stdout


def test_k6_without_pgx_fails_its_module_checks(stack, tmp_path):
    p, doc = doctor(stack["pg"], tmp_path, *stack["args"], k6=BIN / "k6-official")
    failed = assert_fails_exactly(p, doc, {"k6 module k6/x/sql/driver/pgx", "k6 module k6/x/ybbench"})
    assert "not in this build" in failed["k6 module k6/x/sql/driver/pgx"]["found"]


def test_a_wrong_password_fails_the_connection_without_a_traceback(stack, tmp_path):
    p, doc = doctor(stack["pg"], tmp_path, *stack["args"], password="wrong-" + uuid.uuid4().hex[:6])
    node = f"ysql 127.0.0.1:{stack['pg'].port}"
    failed = assert_fails_exactly(p, doc, {f"{node} connect"})
    assert "password authentication failed" in failed[f"{node} connect"]["found"]
    assert "PGPASSWORD" in failed[f"{node} connect"]["todo"]


def test_prometheus_down_is_a_failing_check(stack, tmp_path):
    down = f"http://127.0.0.1:{free_port()}"
    p, doc = doctor(stack["pg"], tmp_path, "--prometheus", down, "--loki", stack["args"][3])
    failed = assert_fails_exactly(p, doc, {"prometheus reachable"})
    assert "not reachable" in failed["prometheus reachable"]["found"]
    assert by_status(doc, "skipped")["queries report"]["found"] == "Prometheus not reachable or not given"


@pytest.mark.parametrize("args,message", [
    (["--set", "YSQL_NODES=nocolon"], "YSQL_NODES 'nocolon': expected host:port"),
    (["--grafana", "http://127.0.0.1:1", "--grafana-password-file", "/nonexistent/pw"],
     "--grafana-password-file /nonexistent/pw: cannot read it"),
    (["--set", "NOT_A_KNOB=1"], "--set NOT_A_KNOB: unknown knob"),
    (["--compose-env", "/nonexistent/.env"], "--compose-env /nonexistent/.env: not a file"),
])
def test_bad_input_exits_2_naming_it(postgres, tmp_path, args, message):
    p = subprocess.run([sys.executable, "-m", "ybbench", "doctor", "--out", str(tmp_path / "d.json"), *args],
                       cwd=REPO, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stdout + p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "d.json").exists()


def test_the_password_file_comes_from_its_variable_when_not_given(tmp_path):
    """The compose service names its copy of Grafana's password in
    YBBENCH_GRAFANA_PASSWORD_FILE (compose/ybbench/entrypoint.sh)."""
    named = tmp_path / "not-there"
    p = subprocess.run([sys.executable, "-m", "ybbench", "doctor", "--out", str(tmp_path / "d.json"), "--grafana",
                        "http://127.0.0.1:1"], cwd=REPO, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "YBBENCH_GRAFANA_PASSWORD_FILE": str(named)})
    assert p.returncode == 2 and f"--grafana-password-file {named}: cannot read it" in p.stderr, p.stderr


def test_ysql_errors_not_reaching_the_log_fail_the_error_line_check(stack, tmp_path):
    """As YSQL logging to files the shipper does not read: the session's ERROR
    lines never reach the followed log (log_min_messages=fatal for doctor's
    sessions only)."""
    p, doc = doctor(stack["pg"], tmp_path, *stack["args"][:4], "--loki-deadline", "10",
                    env={"PGOPTIONS": "-c log_min_messages=fatal"})
    failed = assert_fails_exactly(p, doc, {"loki ysql error line"})
    assert "--logtostderr" in failed["loki ysql error line"]["todo"]


def _prometheus_with(tmp: Path, captures: dict, node_exporter: str, postgres_exporter: str, *,
                     tservers: list[str] | None = None, yugabytedb: bool = True, down: tuple[str, ...] = (),
                     config: Path = REPO / "prometheus" / "prometheus.yml", remote_write: bool = True) -> Prometheus:
    """Another Prometheus of the project's config (or `config`) over these
    targets, each scraped fine at least once, but those in `down` (nothing
    listens there)."""
    args = ["--node-exporters", node_exporter, "--postgres-exporters", postgres_exporter]
    if yugabytedb:
        args += ["--masters", captures["master"], "--tservers", ",".join(tservers or [captures["tserver"]]),
                 "--ysql", captures["ysql"], "--ycql", captures["ycql"]]
    prom = Prometheus(tmp, args, config=config, remote_write=remote_write)

    def scraped():
        active = prom.api("targets", state="active")["activeTargets"]
        # A target's health is set before its scrape's samples are committed
        # (the whole-suite run saw node series absent from a target shown up):
        # `up` is committed with them, so every target's `up` answering means
        # its first scrape can be queried. A first scrape can also fail on a
        # busy machine (a whole-suite run saw a capture server's and the
        # postgres exporter's series absent, their targets up by the time
        # doctor looked), so each target but those in `down` must have an
        # `up` of 1, committed with that scrape's samples.
        dead = [t for t in active if urllib.parse.urlsplit(t["scrapeUrl"]).netloc in down]
        return len(active) == (3 + 3 + len(tservers or [1]) if yugabytedb else 3) and \
            all(t["health"] != "unknown" for t in dead) and \
            len(prom.query("up")) == len(active) and len(prom.query("up == 1")) == len(active) - len(dead)
    wait_until(scraped, "every target scraped once", timeout=90)
    return prom


@pytest.fixture
def other_prometheus(captures, node_exporter, postgres_exporter, tmp_path):
    started = []

    def start(nodes: str = node_exporter, **kw) -> Prometheus:
        started.append(_prometheus_with(tmp_path / f"prom{len(started)}", captures, nodes, postgres_exporter, **kw))
        return started[-1]
    yield start
    for prom in started:
        prom.stop()


def test_a_tserver_target_down_fails_its_target_check(stack, other_prometheus, tmp_path):
    dead = f"127.0.0.1:{free_port()}"
    prom = other_prometheus(tservers=[stack["captures"]["tserver"], dead], down=(dead,))
    p, doc = doctor(stack["pg"], tmp_path, "--prometheus", prom.url, *stack["args"][2:])
    failed = assert_fails_exactly(p, doc, {"prometheus targets yugabytedb tserver_export"})
    assert f"1 of 2 up; down: {dead}" in failed["prometheus targets yugabytedb tserver_export"]["found"]


RENAMED = "rocksdb_current_version_num_sst_files"


def test_a_renamed_metric_is_named_by_every_reader_that_reads_it(stack, other_prometheus, tmp_path):
    """The tserver serves the metric under another name (a new version's
    rename): the dashboards and the report that read it fail, naming it."""
    capture = tmp_path / "tserver.txt"
    capture.write_text((CAPTURES / "tserver.txt").read_text().replace(RENAMED, RENAMED + "_v2"))
    server = CaptureServer(capture)
    try:
        prom = other_prometheus(tservers=[server.address])
        p, doc = doctor(stack["pg"], tmp_path, "--prometheus", prom.url, *stack["args"][2:])
    finally:
        server.stop()
    # Who reads it, from the dashboards' files and the report's code as text.
    readers = {f"queries dashboard {json.loads(b.read_text())['uid']}"
               for b in (REPO / "grafana" / "dashboards").glob("*.json") if RENAMED in b.read_text()}
    if RENAMED in (REPO / "ybbench" / "report" / "seed_charts.py").read_text():
        readers.add("queries report")
    assert len(readers) >= 2, readers
    failed = assert_fails_exactly(p, doc, readers)
    for name in readers:
        assert f"absent: {RENAMED} " in failed[name]["found"], failed[name]


def test_a_series_first_scraped_a_moment_ago_is_present(other_prometheus):
    """Doctor right after a Prometheus's first scrape: each target's series,
    whose only sample is a millisecond old, is present. (Looked up with an
    `end` of now in whole seconds, a sample in the last half second fell
    outside it: the full suite's fresh Prometheus then had node_exporter's
    series 'absent', its target up.) Each target is scraped at its own
    offset, so the seven first samples fall at seven points of their second."""
    prom = other_prometheus()
    firsts = {s["metric"]["instance"]: float(s["values"][0][0]) for s in prom.query("up[5m]")}
    assert len(firsts) == 7, firsts
    for instance, first in firsts.items():
        lookup = Lookup(Prom(prom.url))
        lookup.now = first + 0.001
        assert lookup.is_present("up", f'{{__name__="up", instance="{instance}"}}'), (instance, first)


def test_postgresql_alone_skips_the_yugabytedb_checks(stack, other_prometheus, tmp_path):
    prom = other_prometheus(yugabytedb=False)
    p, doc = doctor(stack["pg"], tmp_path, "--prometheus", prom.url, *stack["args"][2:])
    assert p.returncode == 0, p.stdout + p.stderr
    skipped = by_status(doc, "skipped")
    for e in ("master_export", "tserver_export", "cql_export", "ysql_export"):
        assert NOT_YB in skipped[f"prometheus targets yugabytedb {e}"]["found"]
    assert NOT_YB in skipped["ysql nodes cover the cluster"]["found"]
    # What reads YugabyteDB's series passes on the rest, naming the part not checked.
    ok = by_status(doc, "ok")
    for reader in ("queries dashboard ybbench-storage", "queries dashboard ybbench-disk-cache", "queries report"):
        assert f"yugabytedb series not checked: {NOT_YB}" in ok[reader]["found"], ok[reader]


class SkewedClock:
    """A Prometheus whose clock is ahead: every request forwarded to the
    real one, and time() answered `ahead` seconds later than it says. (A
    Go program's clock cannot be shifted from outside here: it reads the
    vDSO, which libfaketime does not reach, and time namespaces leave
    CLOCK_REALTIME alone.)"""

    def __init__(self, upstream: str, ahead: float):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                with urllib.request.urlopen(upstream + self.path, timeout=30) as r:
                    body, ctype = r.read(), r.headers["Content-Type"]
                query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query).get("query", [""])[0]
                if query == "time()":
                    doc = json.loads(body)
                    t, v = doc["data"]["result"]
                    doc["data"]["result"] = [t + ahead, str(float(v) + ahead)]
                    body = json.dumps(doc).encode()
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        outer.ahead = ahead

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def test_a_skewed_clock_fails_the_clock_check(stack, prometheus, tmp_path):
    proxy = SkewedClock(prometheus.url, 5.0)
    try:
        p, doc = doctor(stack["pg"], tmp_path, "--prometheus", proxy.url, *stack["args"][2:])
    finally:
        proxy.stop()
    failed = assert_fails_exactly(p, doc, {"prometheus clock"})
    # The planted 5 s, give or take the request's own time (4.999 was seen; a busy host can hold a
    # request for a few hundred ms): 0.5 s still tells 5 s from a sign or unit slip.
    skew = re.search(r"Prometheus ([+-][0-9.]+) s", failed["prometheus clock"]["found"])
    assert skew and abs(float(skew.group(1)) - 5.0) < 0.5, failed["prometheus clock"]["found"]


# --- ybbench run --doctor, and the report -------------------------------------------

def test_run_doctor_keeps_the_verdict_with_the_run_and_the_report_shows_it(stack, tmp_path):
    pg, results, testid = stack["pg"], tmp_path / "results", f"rd{uuid.uuid4().hex[:8]}"
    r = ybbench_run("sql-inserts", pg, results, testid=testid, knobs={"VUS": 1, "DURATION": "2s"},
                    extra_args=["--doctor", *stack["args"][:4]])  # run has no --loki-deadline (doctor's 60 s)
    assert r.code == 0 and "Traceback" not in r.output, r.output
    assert {"doctor.json", "params.json", "summary.json"} <= {p.name for p in r.folder.iterdir()}
    doc = json.loads((r.folder / "doctor.json").read_text())
    statuses = [c["status"] for c in doc["checks"]]
    assert doc["ok"] and "fail" not in statuses and statuses.count("ok") > 20
    # This host's disk may be short of doctor's 10 GiB (CI's has been): the warnings statvfs calls for.
    off = room.disagreements(doc["checks"])
    assert not off, off
    natural = [{k: c[k] for k in ("name", "status", "found", "todo")} for c in doc["checks"] if c["status"] == "warn"]
    assert all(c["name"].startswith("room disk ") for c in natural), natural
    assert doc["settings"]["ysql_nodes"] == [f"127.0.0.1:{pg.port}"] and doc["settings"]["loki"] == stack["args"][3]
    # A warning planted in the kept verdict: the report shows it with what to do.
    assert doc["checks"][-1]["status"] == "ok", doc["checks"][-1]
    doc["checks"][-1].update(status="warn", found="planted-found", todo="planted-todo")
    doc["counts"].update(ok=doc["counts"]["ok"] - 1, warn=len(natural) + 1)
    (r.folder / "doctor.json").write_text(json.dumps(doc))
    p = ybbench("report", testid, "--results", results, env=pg.env())
    assert p.returncode == 0, p.stdout + p.stderr
    page = (r.folder / "report.html").read_text()
    shown = f"{statuses.count('ok') - 1} ok, {len(natural) + 1} warn, 0 fail, {statuses.count('skipped')} skipped"
    assert "Doctor before the run (doctor.json)" in page and shown in page, page[page.find("Doctor"):][:500]
    assert "planted-found" in page and "planted-todo" in page and doc["checks"][-1]["name"] in page
    kept = json.loads((r.folder / "report.json").read_text())["runs"][0]["doctor"]
    assert kept["checks"] == [*natural, {"name": doc["checks"][-1]["name"], "status": "warn", "found": "planted-found",
                                         "todo": "planted-todo"}]


def test_run_doctor_refuses_the_run_when_a_check_fails(stack, tmp_path):
    """YSQL_NODES naming a closed port: doctor's connect check fails, k6
    never runs the workload (a k6 wrapper logs each call), no folder."""
    pg, results, testid = stack["pg"], tmp_path / "results", f"rf{uuid.uuid4().hex[:8]}"
    calls = tmp_path / "k6-calls.log"
    wrapper = tmp_path / "k6"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec {BIN / "k6"} "$@"\n')
    wrapper.chmod(0o755)
    closed = free_port()
    r = ybbench_run("sql-inserts", pg, results, testid=testid, knobs={"VUS": 1, "DURATION": "2s",
                    "YSQL_NODES": f"127.0.0.1:{closed}"}, extra_args=["--doctor", *stack["args"][:4]],
                    extra_env={"K6": str(wrapper)})
    assert r.code == 1 and "Traceback" not in r.output, r.output
    assert f"doctor failed: ysql 127.0.0.1:{closed} connect:" in r.output, r.output
    assert "leave out --doctor" in r.output
    assert not results.exists() or list(results.iterdir()) == [], list(results.iterdir())
    assert "sql-inserts.js" not in calls.read_text()  # doctor's own k6 probes ran, the workload did not


# --- Grafana (the stand-in: real Grafana cannot run here) ------------------------------

def test_grafana_checks_pass_and_a_datasource_with_a_wrong_url_fails(stack, prometheus, loki, tmp_path):
    """The Grafana stand-in (tests/compose/images/grafana) with the
    repository's provisioning: every check passes; the Prometheus
    datasource's URL pointing where nothing listens fails its health check
    (the stand-in queries the URL, as Grafana does), the rest still pass."""
    boards = {json.loads(b.read_text())["uid"] for b in (REPO / "grafana" / "dashboards").glob("*.json")}
    closed = f"http://127.0.0.1:{free_port()}"
    history = new_store_database(stack["pg"], tmp_path)  # the History datasource's store and read-only user
    docs = {}
    for case, prom_url in (("healthy", prometheus.url), ("wrong-url", closed)):
        grafana = Standin(tmp_path / case)
        grafana.point_datasources({"ybbench-prometheus": prom_url, "ybbench-loki": loki.url})
        grafana.point_history("127.0.0.1", stack["pg"].port, history["db"], history["reader"], history["password"])
        try:
            grafana.serve()
            docs[case] = doctor(stack["pg"], tmp_path, *stack["args"], "--grafana", f"http://127.0.0.1:{grafana.port}",
                                "--grafana-password-file", str(grafana.password_file))
        finally:
            grafana.kill()
    p, doc = docs["healthy"]
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    ok = by_status(doc, "ok")
    assert {"grafana health", "grafana login", "grafana datasource ybbench-prometheus",
            "grafana datasource ybbench-loki", "grafana datasource ybbench-history",
            "grafana plugin prometheus", "grafana plugin loki", "grafana plugin grafana-postgresql-datasource",
            *(f"grafana dashboard {uid}" for uid in boards)} <= set(ok)
    assert ok["grafana datasource ybbench-loki"]["found"] == "Successfully queried the Loki API."
    assert ok["grafana datasource ybbench-history"]["found"] == "Database Connection OK"
    p, doc = docs["wrong-url"]
    failed = assert_fails_exactly(p, doc, {"grafana datasource ybbench-prometheus"})
    assert closed in failed["grafana datasource ybbench-prometheus"]["found"]
    assert closed in failed["grafana datasource ybbench-prometheus"]["todo"]  # the URL to fix, named
    assert "grafana datasource ybbench-loki" in by_status(doc, "ok")


# --- Loki: a shipper that drops the level --------------------------------------------

LEVEL_STAGE = "      - labels:\n          level:\n"


def test_a_promtail_that_drops_the_level_label_fails_the_level_checks(stack, tmp_path):
    """The project's Promtail config without its `labels: level` stage ships
    PostgreSQL's lines to a Loki of their own: doctor names the service
    whose lines carry no level, and the failing statement's line arrives
    without level=error; the other checks pass."""
    config = tmp_path / "promtail-no-level.yml"
    text = (REPO / "compose" / "promtail" / "promtail.yml").read_text()
    assert text.count(LEVEL_STAGE) == 1
    config.write_text(text.replace(LEVEL_STAGE, ""))
    pg = stack["pg"]
    (tmp_path / "loki").mkdir()
    loki = Loki(tmp_path / "loki")
    follower = Follower(pg.log_dir / "postgres.log", loki.url, {"service": "postgres"}, tmp_path / "promtail.log",
                        config=config)
    try:
        marker = f"doctor_nolevel_{uuid.uuid4().hex[:8]}"

        def arrived():
            pg_fail(pg, marker)
            return loki.lines(f'{{service="postgres"}} |= "{marker}"')
        wait_until(arrived, "PostgreSQL's log in the no-level Loki", timeout=90, interval=2)
        p, doc = doctor(pg, tmp_path, *stack["args"][:2], "--loki", loki.url, "--loki-deadline", "15")
    finally:
        follower.stop()
        loki.stop()
    failed = assert_fails_exactly(p, doc, {"loki level postgres", "loki ysql error line"})
    assert failed["loki level postgres"]["found"] == "its lines carry no level label"
    assert "without level=error: postgres level=none" in failed["loki ysql error line"]["found"]


def test_services_without_severity_by_design_are_skipped_not_failed(tmp_path):
    """The compose `ybbench` and `secrets` services print no severity on any
    stack: skipped, saying why; a server's lines without a level still fail."""
    (tmp_path / "loki").mkdir()
    loki = Loki(tmp_path / "loki")
    try:
        now = time.time_ns()
        for service in ("ybbench", "secrets", "yb-tserver-1"):
            push(loki.url, {"service": service}, [(now, f"a line of {service} with no severity")])
        wait_until(lambda: len(loki.lines('{service=~".+"}')) == 3, "the three lines in Loki", timeout=60)
        got = {c.name: c for c in levels(loki.url)}
    finally:
        loki.stop()
    assert got["loki level ybbench"].status == "skipped" and "ybbench CLI" in got["loki level ybbench"].found
    assert got["loki level secrets"].status == "skipped"
    assert got["loki level yb-tserver-1"].status == "fail"


# --- Prometheus without k6's native histograms ---------------------------------------

def test_k6_trends_without_native_histograms_fail_the_histogram_check(stack, other_prometheus, tmp_path):
    """A Prometheus holding k6's trends as classic float series (k6 writing
    without K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM, as into a Prometheus
    that takes no native histograms; Prometheus 3.x always takes them, so
    this is the fault a user can have with 3.x): the histogram check fails,
    and so does every reader of k6's latency histogram, naming it."""
    prom = other_prometheus()
    r = ybbench_run("sql-inserts", stack["pg"], tmp_path / "results", testid=f"c{uuid.uuid4().hex[:8]}",
                    prometheus=prom.url, knobs={"VUS": 1, "DURATION": "3s"},
                    extra_env={"K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM": "false"})
    # What k6 wrote, from Prometheus itself: classic p99 series, no native histogram.
    assert prom.query("k6_iteration_duration_p99") and not prom.query("k6_iteration_duration_seconds"), r.output
    p, doc = doctor(stack["pg"], tmp_path, "--prometheus", prom.url, *stack["args"][2:])
    latency = "k6_iteration_duration_seconds"
    readers = {f"queries dashboard {json.loads(b.read_text())['uid']}"
               for b in (REPO / "grafana" / "dashboards").glob("*.json") if re.search(latency + r"\b", b.read_text())}
    # The report's PromQL (core/prom.py's prom_queries, which report/page.py runs).
    if re.search(latency + r"\b", (REPO / "ybbench" / "core" / "prom.py").read_text()):
        readers.add("queries report")
    assert readers, "no reader of k6's latency histogram: the test's premise is gone"
    failed = assert_fails_exactly(p, doc, {"prometheus k6 latency is a native histogram", *readers})
    assert "classic series (" in failed["prometheus k6 latency is a native histogram"]["found"]
    assert "k6_iteration_duration_p99" in failed["prometheus k6 latency is a native histogram"]["found"]
    for name in readers:
        assert f"absent: {latency} " in failed[name]["found"], failed[name]


# --- room to run ------------------------------------------------------------------

GIB = 2**30
ROUNDING = 0.05 + 1e-9  # doctor shows GiB to 0.1


def _mount_of(path: Path) -> Path:
    path = path.resolve()
    while not os.path.ismount(path):
        path = path.parent
    return path


def _mem_available_gib() -> float:
    return int(re.search(r"^MemAvailable:\s+(\d+) kB$", Path("/proc/meminfo").read_text(), re.M)[1]) * 1024 / GIB


class Readings:
    """The OS' free space under `path` and MemAvailable, read every 20 ms
    in a thread until stop(): the range each moved over meanwhile (others
    write to this disk and use this memory while the test runs)."""

    def __init__(self, path: Path):
        self.disk, self.memory = [], []
        self.path, self.done = path, threading.Event()
        self.read()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def read(self):
        self.disk.append(room.free_gib(self.path))
        self.memory.append(_mem_available_gib())

    def loop(self):
        while not self.done.wait(0.02):
            self.read()

    def stop(self):
        self.done.set()
        self.thread.join()
        self.read()


def _shown_gib(check: dict, unit: str) -> float:
    return float(re.fullmatch(rf"([0-9.]+) GiB {unit}(?: \(also mounted at .+\))?", check["found"])[1])


def test_room_reads_the_free_space_the_os_reports_and_warns_on_limits_beyond_memory(stack, prometheus, tmp_path):
    """Free space under the test's data directory and MemAvailable as the OS
    says them (statvfs, /proc/meminfo: what node_exporter reads), read from
    before the scrape doctor reads until doctor is done, are the figures
    doctor shows, to its rounding; a copy of compose/.env whose tservers
    ask for twice this host's memory each makes the memory check warn, with
    the limits summed as written here (3 masters, 3 tservers)."""
    mem_total = int(re.search(r"^MemTotal:\s+(\d+) kB$", Path("/proc/meminfo").read_text(), re.M)[1]) * 1024
    planted_mib = 2 * mem_total // 2**20
    env = tmp_path / "compose.env"
    env.write_text(re.sub(r"^YB_TSERVER_MEM_LIMIT=.*$", f"YB_TSERVER_MEM_LIMIT={planted_mib}m",
                          (REPO / "compose" / ".env").read_text(), flags=re.M))
    master = re.search(r"^YB_MASTER_MEM_LIMIT=(\d+)g$", env.read_text(), re.M)
    assert master, "compose/.env's master limit is no longer in g: update this test's arithmetic"
    limits_gib = (3 * int(master[1]) * 2**30 + 3 * planted_mib * 2**20) / 2**30
    readings = Readings(tmp_path)
    try:
        # The scrape doctor reads is this one or a later one: node_exporter
        # read the OS after the readings began (a scrape's timestamp is its start).
        began = time.time()
        wait_until(lambda: float(prometheus.query('min(timestamp(up{job="node"}))')[0]["value"][1]) > began,
                   "a node scrape after the readings began", timeout=60)
        p, doc = doctor(stack["pg"], tmp_path, *stack["args"], "--compose-env", str(env))
    finally:
        readings.stop()
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    mount = _mount_of(tmp_path)
    disk = [c for c in doc["checks"] if c["name"].startswith("room disk ") and c["name"].endswith(f" {mount}")]
    assert len(disk) == 1, [c["name"] for c in doc["checks"] if c["name"].startswith("room")]
    # Only the rounding widens the OS' range (0.06 GiB wide over a run here):
    # a GB-for-GiB slip is 7.4% off, 0.22 GiB at 3 GiB free.
    shown, lo, hi = _shown_gib(disk[0], "free"), min(readings.disk), max(readings.disk)
    assert lo - ROUNDING <= shown <= hi + ROUNDING, (shown, lo, hi)
    memory = [c for c in doc["checks"] if c["name"].startswith("room memory ")]
    assert [c["status"] for c in memory] == ["warn"], memory
    # node_exporter reads the same /proc/meminfo: a GB-for-GiB slip is 1.1 GiB off at 15 GiB available.
    shown, lo, hi = _shown_gib(memory[0], "available"), min(readings.memory), max(readings.memory)
    assert lo - ROUNDING <= shown <= hi + ROUNDING, (shown, lo, hi)
    assert memory[0]["expected"].startswith(f"{limits_gib:.1f} GiB available"), (memory[0], limits_gib)
    assert "YB_*_MEM_LIMIT" in memory[0]["todo"]


FILLED_TO = 1.5  # GiB free: under doctor's documented 2 GiB minimum, and not a rounding edge of its 0.1 GiB


def test_a_filesystem_under_the_minimum_fails_its_disk_check(stack, other_prometheus, tmp_path):
    """A real ext4 (a sparse image on a loop device) filled to 1.5 GiB free,
    which a real node_exporter reports to a real Prometheus: doctor fails
    that mount's room disk check, alone, showing the free space statvfs
    says. The filesystem is mounted in a mount namespace of its own, which
    only this node_exporter is in: the other test sessions on this host
    would otherwise see it and rightly fail their own room checks. Bound
    at a second path too, it is still one filesystem: one check."""
    img, mnt, port = tmp_path / "small.img", tmp_path / "small", free_port()
    bound = tmp_path / "small-bound"  # the same filesystem mounted twice: one check, naming both
    mnt.mkdir()
    bound.mkdir()
    subprocess.run(["truncate", "-s", "3G", str(img)], check=True)
    subprocess.run(["mkfs.ext4", "-q", str(img)], check=True)
    # Filled with fallocate: blocks allocated, the sparse image barely grows.
    script = (f'mount -o loop {img} {mnt} && mount --bind {mnt} {bound} && avail=$(stat -f -c "%a * %S" {mnt}) && '
              f'fallocate -l $(( $avail - {int(FILLED_TO * GIB)} )) {mnt}/fill && '
              f'exec {BIN / "node_exporter"} --web.listen-address=127.0.0.1:{port}')
    # A PID namespace too: node_exporter reads /proc/1/mountinfo, here its own.
    ne = Process("node_exporter-small", ["unshare", "--mount", "--pid", "--fork", "--mount-proc", "--kill-child",
                                         "sh", "-c", script], tmp_path)
    try:
        wait_until(lambda: ne.serves(f"http://127.0.0.1:{port}/metrics"), "node_exporter in its namespace")
        inside = f"/proc/{Path(f'/proc/{ne.proc.pid}/task/{ne.proc.pid}/children').read_text().split()[0]}/root{mnt}"
        before = room.free_gib(inside)
        assert before < 2, before  # the premise: under the 2 GiB minimum
        prom = other_prometheus(nodes=f"127.0.0.1:{port}")
        p, doc = doctor(stack["pg"], tmp_path, "--prometheus", prom.url, *stack["args"][2:])
        after = room.free_gib(inside)
        instance = next(t["labels"]["instance"] for t in prom.api("targets", state="active")["activeTargets"]
                        if t["labels"]["job"] == "node")
    finally:
        # unshare ignores SIGTERM while its child runs; killed, its child
        # (--kill-child) and with it the namespace go, unmounting the image.
        ne.proc.kill()
        ne.proc.wait()
        wait_until(lambda: not subprocess.run(["losetup", "-j", str(img)], capture_output=True, text=True).stdout,
                   "the loop device released", timeout=30)
    name = f"room disk {instance} {mnt}"
    failed = assert_fails_exactly(p, doc, {name})
    shown = _shown_gib(failed[name], "free")
    assert min(before, after) - ROUNDING <= shown <= max(before, after) + ROUNDING, (shown, before, after)
    assert failed[name]["expected"] == "at least 10 GiB free" and "free space" in failed[name]["todo"]
    assert failed[name]["found"].endswith(f" GiB free (also mounted at {bound})"), failed[name]


# --- failure branches of Prometheus and k6 -----------------------------------------

def _remote_write_status(prom_url: str) -> int:
    """What Prometheus answers a remote write (an empty one: the receiver
    refuses it as malformed, a Prometheus without one as not found)."""
    req = urllib.request.Request(f"{prom_url}/api/v1/write", data=b"", method="POST",
                                 headers={"Content-Type": "application/x-protobuf", "Content-Encoding": "snappy"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def test_a_prometheus_without_the_remote_write_receiver_fails_its_check(stack, prometheus, other_prometheus, tmp_path):
    prom = other_prometheus(remote_write=False)
    # From Prometheus itself: this one has no write endpoint, the stack's has.
    assert (_remote_write_status(prom.url), _remote_write_status(prometheus.url)) == (404, 400)
    p, doc = doctor(stack["pg"], tmp_path, "--prometheus", prom.url, *stack["args"][2:])
    failed = assert_fails_exactly(p, doc, {"prometheus remote write receiver"})
    assert failed["prometheus remote write receiver"]["found"] == "off: k6's samples would be refused"
    assert "--web.enable-remote-write-receiver" in failed["prometheus remote write receiver"]["todo"]


def test_a_scrape_interval_other_than_the_projects_warns(stack, other_prometheus, tmp_path):
    """The project's prometheus.yml with 10s for its 5s: doctor warns on the
    interval, showing the one Prometheus scrapes at, and fails nothing."""
    text = (REPO / "prometheus" / "prometheus.yml").read_text()
    assert text.count("\n  scrape_interval: 5s\n") == 1 and text.count("scrape_interval") == 1
    config = tmp_path / "prometheus-10s.yml"
    config.write_text(text.replace("\n  scrape_interval: 5s\n", "\n  scrape_interval: 10s\n"))
    prom = other_prometheus(config=config)

    # The interval Prometheus scrapes at, from its samples: two scrapes 10 s apart.
    def two_scrapes():
        values = prom.query('up{job="prometheus"}[1m]')[0]["values"]
        return values if len(values) >= 2 else None
    samples = wait_until(two_scrapes, "two scrapes of Prometheus itself", timeout=60)
    assert round(samples[1][0] - samples[0][0], 1) == 10.0, samples
    p, doc = doctor(stack["pg"], tmp_path, "--prometheus", prom.url, *stack["args"][2:])
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    assert by_status(doc, "fail") == {}
    # Room warns with this host's disk and memory, whatever the Prometheus.
    warned = {n: c for n, c in by_status(doc, "warn").items() if not n.startswith("room ")}
    assert set(warned) == {"prometheus scrape interval"}, warned
    assert warned["prometheus scrape interval"]["found"] == "10s"
    assert warned["prometheus scrape interval"]["expected"].startswith("5s, as prometheus/prometheus.yml")


def test_a_k6_older_than_the_oldest_supported_fails_the_version_check(stack, tmp_path):
    """k6 v1.0.0 (native/k6-v1.0: k6-v1.1's extensions on k6 v1.0.0), a
    release older than the oldest doctor accepts (v1.1.0,
    docs/docker-stack.md): the version check fails quoting what the binary
    says; k6-v1.1 passes it. Both lack pgx and our Go helpers, failing those."""
    said = subprocess.run([BIN / "k6-v1.0", "version"], capture_output=True, text=True, timeout=60).stdout
    assert " v1.0.0 " in said.splitlines()[0], said
    lacking = {"k6 module k6/x/sql/driver/pgx", "k6 module k6/x/ybbench"}
    p, doc = doctor(stack["pg"], tmp_path, *stack["args"], k6=BIN / "k6-v1.0")
    failed = assert_fails_exactly(p, doc, {"k6 version", *lacking})
    version = failed["k6 version"]
    assert (version["expected"], version["found"]) == ("v1.1.0 or newer", said.splitlines()[0])
    p, doc = doctor(stack["pg"], tmp_path, *stack["args"], k6=BIN / "k6-v1.1")
    assert_fails_exactly(p, doc, lacking)
    assert by_status(doc, "ok")["k6 version"]["found"].startswith("k6-v1.1 v1.1.0 ")


# --- The History dashboard's SQL on the history store --------------------------------

HOUR, DAY = 3600, 86400
# The runs history_store() records, and the rows each History query answers over
# them, counted here: 3 sql-selects runs (op select), 2 sql-inserts runs (ops insert
# and commit, commit without latency: no p99), and the one change point planted.
HISTORY_ROWS = {
    "variable workload": 2,  # sql-inserts, sql-selects
    "ops/s per run, by series and operation": 3 * 1 + 2 * 2,  # a point per run and op
    "p99 per run, by series and operation": 3 * 1 + 2 * 1,  # commit has no p99
    "Runs": 3 + 2,
    "Change points": 1,
    "annotation change points": 1,
}
LATENCY = {"avg": 2.0, "p50": 1.5, "p90": 3.0, "p95": 3.5, "p99": 4.0, "max": 9.0}


def write_run(results: Path, testid: str, workload: str, ops: dict[str, bool], started: float) -> None:
    """A finished run's folder as `ybbench run` writes it; ops: name -> whether its latency was measured."""
    write_json(results / testid / "params.json", results_files.params(
        testid, workload=workload, knobs={"VUS": "2"}, started=started, finished=started + 10))
    write_json(results / testid / "summary.json", results_files.summary(
        testid, {op: results_files.op(1000, 100.0, latency_ms=LATENCY if timed else None) for op, timed in ops.items()},
        workload=workload, duration_s=10.0))


def history_store(pg, tmp: Path, runs: bool = True) -> dict:
    """A new database of the test PostgreSQL made a history store by `ybbench
    history import` (of HISTORY_ROWS' runs and change point, or of nothing): {db, url}.
    The oldest run is 40 days old, outside the dashboard's default 30 days:
    doctor reads every run up to now."""
    db = f"hist_{uuid.uuid4().hex[:8]}"
    pg.psql("postgres", f"CREATE DATABASE {db}")
    url = f"postgresql://{pg.user}@127.0.0.1:{pg.port}/{db}"
    results = tmp / db
    results.mkdir()
    now = time.time()
    if runs:
        for i, started in enumerate((now - 40 * DAY, now - 2 * HOUR, now - HOUR)):
            write_run(results, f"{db}-s{i}", "sql-selects", {"select": True}, started)
        for i, started in enumerate((now - 3 * HOUR, now - HOUR / 2)):
            write_run(results, f"{db}-i{i}", "sql-inserts", {"insert": True, "commit": False}, started)
    p = ybbench("history", "--results", results, "--history", url, "import", env=pg.env())
    assert p.returncode == 0 and f"{5 if runs else 0} runs added" in p.stdout, p.stdout + p.stderr
    if runs:
        pg.psql(db, "INSERT INTO ybbench_history_change_points (series, workload, metric, op, field, testid, "
                "time_unix_s, change_percent, pvalue, mean_before, mean_after, regression, order_by, analysed_unix_s) "
                f"VALUES ('s', 'sql-selects', 'select_ops_per_s', 'select', 'ops_per_s', '{db}-s1', {now - 2 * HOUR}, "
                f"-40.0, 0.001, 1000, 600, 1, 'time', {now})")
    return {"db": db, "url": url}


def history_checks(doc: dict) -> dict[str, dict]:
    return {c["name"]: c for c in doc["checks"] if c["name"].startswith("history ")}


def test_history_queries_answer_with_the_rows_the_store_holds(postgres, binaries, tmp_path):
    """A PostgreSQL store named in YBBENCH_HISTORY (as the compose ybbench
    service names it), runs recorded by `ybbench history import` and a change
    point: the store's check counts them, each query of the History
    dashboard answers with the rows counted in HISTORY_ROWS, nothing fails."""
    store = history_store(postgres, tmp_path)
    p, doc = doctor(postgres, tmp_path, env={"YBBENCH_HISTORY": store["url"]})
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    got = history_checks(doc)
    assert got["history store"]["status"] == "ok", got["history store"]
    assert got["history store"]["found"].startswith(f"5 runs, 1 change points in {store['url']} "), got["history store"]
    assert set(got) - {"history store"} == {f"history query {where}" for where in HISTORY_ROWS}, sorted(got)
    for where, rows in HISTORY_ROWS.items():
        c = got[f"history query {where}"]
        assert (c["status"], c["found"]) == ("ok", f"{rows} rows"), c


def test_an_empty_history_store_warns_with_the_fix(postgres, binaries, tmp_path):
    """A store with no run yet: every History query answers nothing, a
    warning saying how to record runs; doctor still passes."""
    store = history_store(postgres, tmp_path, runs=False)
    p, doc = doctor(postgres, tmp_path, "--history", store["url"])
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
    got = history_checks(doc)
    assert got.pop("history store")["found"].startswith("0 runs, 0 change points")
    assert set(got) == {f"history query {where}" for where in HISTORY_ROWS}, sorted(got)
    for c in got.values():
        assert (c["status"], c["found"]) == ("warn", "0 rows: no run recorded in the store yet"), c
        assert "ybbench run WORKLOAD --history URL" in c["todo"], c


def test_a_column_renamed_in_the_store_fails_the_panels_that_read_it(postgres, binaries, tmp_path):
    """The ops' p99_ms renamed in the store: the two queries that read it
    (the p99 panel, and Runs' ops column) fail, named, with PostgreSQL's
    error; the other queries still answer their rows."""
    store = history_store(postgres, tmp_path)
    postgres.psql(store["db"], "ALTER TABLE ybbench_history_ops RENAME COLUMN p99_ms TO p99")
    p, doc = doctor(postgres, tmp_path, "--history", store["url"])
    broken = {"p99 per run, by series and operation", "Runs"}
    failed = assert_fails_exactly(p, doc, {f"history query {where}" for where in broken})
    for c in failed.values():
        assert c["found"] == "PostgreSQL: column o.p99_ms does not exist", c
        assert "regenerate the dashboards" in c["todo"], c
    got = history_checks(doc)
    for where in set(HISTORY_ROWS) - broken:
        assert got[f"history query {where}"]["found"] == f"{HISTORY_ROWS[where]} rows", got[f"history query {where}"]


def test_an_sqlite_history_store_is_skipped_saying_why(postgres, binaries, tmp_path):
    """Grafana's History reads PostgreSQL only: an SQLite store, given or
    the default, is one skipped check, and doctor creates no file."""
    sqlite = tmp_path / "history.sqlite"
    for args, shown in ((["--history", str(sqlite)], str(sqlite)), ([], str(REPO / "results" / "history.sqlite"))):
        p, doc = doctor(postgres, tmp_path, *args)
        assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, p.stdout + p.stderr
        got = history_checks(doc)
        assert list(got) == ["history store"] and got["history store"]["status"] == "skipped", got
        assert got["history store"]["found"].startswith(f"the store is SQLite ({shown}): "), got
        assert "reads a PostgreSQL store only" in got["history store"]["found"]
    assert not sqlite.exists()


def test_a_history_store_that_does_not_answer_fails_its_check(postgres, binaries, tmp_path):
    db = f"nosuch_{uuid.uuid4().hex[:8]}"
    p, doc = doctor(postgres, tmp_path, "--history", f"postgresql://{postgres.user}@127.0.0.1:{postgres.port}/{db}")
    failed = assert_fails_exactly(p, doc, {"history store"})
    assert f'database "{db}" does not exist' in failed["history store"]["found"], failed
    assert "PGPASSFILE" in failed["history store"]["todo"]
