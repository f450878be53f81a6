"""Session fixtures: the native stack, started once for all tests."""

from __future__ import annotations

import os
import uuid

import pytest

from .compose.images.yugabytedb.yb_standin import ADVANCE_PER_S, statements_from
from .support.exporters import start_postgres_exporter
from .support.stack import (BIN, CAPTURES, REPO, CaptureServer, Loki, Postgres, Process, Prometheus, built,
                            free_port, wait_until)

# Every k6 the tests start, directly or through ybbench, sends no usage
# report (k6 posts one to Grafana after each run otherwise) and never asks
# Grafana's build service for a binary (ybbench/run/k6_process.py K6_QUIET_ENV).
os.environ["K6_NO_USAGE_REPORT"] = "true"
os.environ["K6_AUTO_EXTENSION_RESOLUTION"] = "false"
# Every results file ybbench writes in the tests (and every summary.json its
# k6 scripts write) is checked against its schema as it is written
# (ybbench/core/formats.py): a command that writes one that does not match fails.
os.environ["YBBENCH_CHECK_WRITES"] = "1"

# The binaries of native/build.sh's core, which nearly every test needs (its
# late ones are built on demand by the tests that use them).
NEEDED = ("k6", "k6-official", "k6-v2", "prometheus", "promtool", "node_exporter")


def pytest_collection_modifyitems(items):
    """The order `make test` counts on: the tests marked quiet, the unit
    tests, the native ones, the tests marked late, those marked alone, then
    the compose tests (tests/lanes.sh runs the compose tests, then the unit
    tests, in pytests of their own, beside the others once the quiet tests
    are done). While the first three
    groups run, make builds native/build.sh's late group (Loki, Promtail,
    Compose, the older k6s) in the background, on idle CPU only; the late
    tests and the compose tests need those; the alone tests need a machine
    on which nothing else runs."""
    def rank(item):
        part = item.path.relative_to(REPO / "tests").parts[0]
        if part == "compose":
            return 4
        if item.get_closest_marker("alone"):
            return 3
        if item.get_closest_marker("quiet"):
            return -1
        return 2 if item.get_closest_marker("late") else {"unit": 0}.get(part, 1)
    items.sort(key=rank)  # stable: each module's tests stay together, in their order


def _signal(variable: str) -> None:
    """Creates the file tests/lanes.sh names in this variable, if it does."""
    path = os.environ.get(variable)
    if path and not os.path.exists(path):
        open(path, "a").close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """The first test not marked quiet tells tests/lanes.sh that the quiet
    ones are done (the compose tests may start beside the rest). A late
    test starts once no build of ours runs beside it, an alone test once
    lane 2's tests are done too (tests/lanes.sh names the file it writes
    at their end), before its fixtures start anything."""
    if not item.get_closest_marker("quiet"):
        _signal("YBBENCH_QUIET_DONE")
    if item.get_closest_marker("late") or item.get_closest_marker("alone"):
        built("late")
    done = os.environ.get("YBBENCH_LANE2_DONE")
    if item.get_closest_marker("alone") and done:
        wait_until(lambda: os.path.exists(done), "lane 2's tests beside this one to end (tests/lanes.sh)",
                   timeout=3600, interval=1)


def pytest_sessionfinish(session):
    _signal("YBBENCH_QUIET_DONE")  # a session of quiet tests only, or one that stopped early


@pytest.fixture(scope="session")
def binaries():
    """The core Go binaries, built once into the cache by native/build.sh
    (YBBENCH_NO_BUILD=1: use the cached ones as they are, e.g. while
    another build of the same cache is under way)."""
    built("core")
    missing = [b for b in NEEDED if not (BIN / b).exists()]
    assert not missing, f"native/build.sh did not build {missing} into {BIN}"
    return BIN


@pytest.fixture(scope="session")
def compose_binaries(binaries):
    """The binaries the compose tests need beyond the core: the stand-in
    images carry Loki and Promtail, and `docker compose` is the Compose CLI
    plugin built here (not the older k6s, which tests/lanes.sh builds after
    these, while the compose tests run)."""
    built("loki", "promtail", "compose")
    missing = [b for b in ("loki", "promtail", "docker-compose") if not (BIN / b).exists()]
    assert not missing, f"native/build.sh did not build {missing} into {BIN}"
    return BIN


@pytest.fixture(scope="session")
def postgres():
    pg = Postgres.start()
    yield pg
    pg.stop()


@pytest.fixture(scope="session")
def node_exporter(binaries, tmp_path_factory):
    port = free_port()
    proc = Process("node_exporter", [str(binaries / "node_exporter"), f"--web.listen-address=127.0.0.1:{port}"],
                   tmp_path_factory.mktemp("node_exporter"))
    yield f"127.0.0.1:{port}"
    proc.stop()


@pytest.fixture(scope="session")
def postgres_exporter(postgres, tmp_path_factory):
    proc, address = start_postgres_exporter(postgres, tmp_path_factory.mktemp("postgres_exporter"))
    yield address
    proc.stop()


@pytest.fixture(scope="session")
def captures(postgres):
    """The four YugabyteDB endpoints, served from the real captures, their
    counters moving as a live server's do: each by ADVANCE_PER_S per second,
    and YSQL's statement counters by the statements the test PostgreSQL
    executes (yb_standin.py)."""
    statements = statements_from(["psql", "-h", "127.0.0.1", "-p", str(postgres.port), "-U", postgres.user,
                                  "-d", postgres.database], postgres.env())
    servers = {kind: CaptureServer(CAPTURES / f"{kind}.txt", advance=ADVANCE_PER_S,
                                   statements=statements if kind == "ysql" else None)
               for kind in ("master", "tserver", "ysql", "ycql")}
    yield {kind: s.address for kind, s in servers.items()}
    for s in servers.values():
        s.stop()


@pytest.fixture(scope="session")
def prometheus(binaries, node_exporter, postgres_exporter, captures, tmp_path_factory):
    prom = Prometheus(
        tmp_path_factory.mktemp("prometheus"),
        ["--masters", captures["master"], "--tservers", captures["tserver"], "--ysql", captures["ysql"],
         "--ycql", captures["ycql"], "--node-exporters", node_exporter, "--postgres-exporters", postgres_exporter],
    )
    # prometheus, node, postgres, and the four YugabyteDB endpoints.
    wait_until(lambda: prom.all_targets_up(7), "every scrape target to be up", timeout=60)
    yield prom
    prom.stop()


@pytest.fixture
def testid():
    return f"t{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="session")
def loki(binaries, tmp_path_factory):
    server = Loki(tmp_path_factory.mktemp("loki"))
    yield server
    server.stop()
