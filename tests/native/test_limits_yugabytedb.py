"""Why this number on a YugabyteDB cluster: the rules that read
YugabyteDB's own saturation counters and the nodes' CPU, on a 4-node
cluster replayed from the real 2.23.1 captures (bench/replayed_cluster.py)
with a fault planted on one node each, scraped by a real Prometheus running
the project's prometheus.yml. A real k6 run (against the test PostgreSQL)
gives the window; each finding must name its planted node and no other.
"""

from __future__ import annotations

import json
import uuid

import pytest

from bench.replayed_cluster import ReplayedCluster, capture_node_exporter

from ..support.stack import Prometheus, wait_until
from ..support.ybbench_cli import ybbench_run

BLOCK = 213  # 127.213.0.x: the nodes' loopback addresses, as test_monitoring_scale picks its own
NODES = [f"127.{BLOCK}.0.{i}" for i in range(1, 5)]
# Each node's plant, as growth a second of series matched by name and labels.
PLANTS = {
    NODES[0]: {r"leader_memory_pressure_rejections\{": 3.0},
    NODES[1]: {r"rpcs_queue_overflow\{": 5.0},
    # 0.2 s of RocksDB write stall a second: 20% of the window, over the 1% rule.
    NODES[2]: {r"rocksdb_stall_micros\{": 200_000.0 / 2},  # the tserver page has it on two tablets
    # Both CPUs busy in user mode: the hot node, against three idle replays.
    NODES[3]: {r'node_cpu_seconds_total\{cpu="[01]",mode="user"\}': 0.97},
}


@pytest.fixture(scope="module")
def planted(binaries, tmp_path_factory):
    root = tmp_path_factory.mktemp("limits-yb")
    node_capture = capture_node_exporter(root)
    cluster = ReplayedCluster(len(NODES), 3, BLOCK, root, node_capture, planted=PLANTS)
    prom = Prometheus(root / "prometheus", cluster.targets_args(), remote_write=True)
    wait_until(lambda: prom.all_targets_up(cluster.target_count + 1), "every replayed target up", timeout=90)
    yield prom
    prom.stop()
    cluster.stop()


@pytest.fixture(scope="module")
def doc(planted, postgres, tmp_path_factory):
    results = tmp_path_factory.mktemp("limits-yb-runs")
    done = ybbench_run("sql-inserts", postgres, results, testid=f"t{uuid.uuid4().hex[:8]}", prometheus=planted.url,
                       knobs={"VUS": 2, "DURATION": "20s", "KEY_PREFIX": f"yb{uuid.uuid4().hex[:6]}"})
    assert done.code == 0, done.output
    return json.loads((done.folder / "limits.json").read_text())


def finding(doc: dict, resource: str) -> dict:
    return next(f for f in doc["resources"] if f["resource"] == resource)


def _nodes(f: dict) -> set[str]:
    return {n.split(":")[0] for n in f["figures"]["nodes"]}


def test_queue_overflow_is_named_on_its_node_and_is_the_verdict(doc):
    f = finding(doc, "yb-rpc-queue")
    assert f["status"] == "saturated" and _nodes(f) == {NODES[1]}
    # The server refusing work comes before its CPU in the verdict's order (analysis/limits.py ORDER).
    assert doc["verdict"]["limit"] == "yb-rpc-queue", doc["verdict"]
    assert NODES[1] in doc["verdict"]["text"]


def test_memory_pressure_rejections_are_named_on_their_node(doc):
    f = finding(doc, "yb-memory-pressure")
    assert f["status"] == "saturated" and _nodes(f) == {NODES[0]}


def test_write_stalls_are_named_on_their_node(doc):
    stalls = [f for f in doc["resources"] if f["resource"] == "yb-write-stall"]
    rejected, stalled = stalls  # majority_sst_files_rejections (not planted), then RocksDB's stall time
    assert rejected["status"] == "ok"
    assert stalled["status"] == "saturated" and _nodes(stalled) == {NODES[2]}


def test_the_hot_node_is_named_and_the_others_are_not(doc):
    cpu = {f["figures"]["node"].split(":")[0]: f for f in doc["resources"] if f["resource"] == "server-cpu"}
    assert cpu[NODES[3]]["status"] == "saturated"
    assert cpu[NODES[3]]["figures"]["share"] == pytest.approx(0.97, abs=0.05)  # the plant: 0.97 of each core
    assert all(cpu[n]["status"] == "ok" for n in NODES[:3])
    skew = finding(doc, "imbalance")
    assert skew["status"] == "saturated" and skew["figures"]["node"].split(":")[0] == NODES[3]


def test_nothing_unplanted_is_named(doc):
    named = {f["resource"] for f in doc["resources"] if f["status"] == "saturated"}
    assert named == {"yb-rpc-queue", "yb-memory-pressure", "yb-write-stall", "server-cpu", "imbalance"}
    assert finding(doc, "disk")["status"] == "ok"
    assert finding(doc, "client")["status"] == "ok"
