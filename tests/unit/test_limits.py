"""The limits analysis on run folders made here, with k6's CPU samples
planted (usage.json): the client's rule against arithmetic written in the
test, the cgroup quota read from a cgroup tree, the verdict's order, and
compare's warning when a side was client-bound."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ybbench.analysis import compare, limits
from ybbench.core import formats
from ybbench.core.files import write_json
from ybbench.run import usage

from ..support import results_files

START = 1000.0


def _usage(cores_per_s: float, capacity: float, seconds: int = 20) -> dict:
    """k6 using cores_per_s of CPU every second of the run, `capacity` cores allowed."""
    return {"format_version": formats.version("usage"), "host": {"cpus": 2, "boot_time_unix_s": None},
            "processes": [{"name": "k6", "cores": {"affinity": 2, "cgroup_quota": capacity if capacity < 2 else None,
                                                   "gomaxprocs": None, "capacity": capacity},
                           "samples": [[START + i, round(cores_per_s * i, 3)] for i in range(seconds + 1)]}],
            "sessions": {"nodes": ["127.0.0.1:5433"], "samples": [], "not_visible": None}}


def run_folder(results: Path, testid: str, cores_per_s: float, capacity: float, ops_per_s: float = 1000.0) -> Path:
    folder = results / testid
    folder.mkdir(parents=True)
    write_json(folder / "params.json", results_files.params(testid, knobs={"VUS": "4"}, started=START,
                                                           finished=START + 20))
    write_json(folder / "summary.json", results_files.summary(
        testid, {"insert": results_files.op(int(ops_per_s * 20), ops_per_s,
                                            latency_ms={"avg": 4.0, "p50": 4.0, "p90": 4.0, "p95": 4.0, "p99": 4.0,
                                                        "max": 4.0})}, duration_s=20.0))
    write_json(folder / usage.FILE, _usage(cores_per_s, capacity))
    return folder


def test_k6_at_its_quota_is_the_client_and_the_figures_are_the_planted_ones(tmp_path):
    doc = limits.record(run_folder(tmp_path, "r1", 0.297, 0.3))
    assert doc["verdict"]["limit"] == "client"
    client = doc["resources"][0]["figures"]
    assert client["cores_used"] == pytest.approx(0.297)  # what was planted: 0.297 CPU-seconds a second
    assert client["share"] == pytest.approx(0.99)
    assert client["bound"] == "cgroup CPU quota"
    # No Prometheus: the server side is said to be unseen, never assumed idle.
    assert {f["resource"] for f in doc["resources"] if f["status"] == "not-visible"} == {
        "server-cpu", "disk", "yugabytedb"}
    assert json.loads((tmp_path / "r1" / limits.FILE).read_text()) == doc


def test_k6_under_its_quota_is_not_the_client_and_unseen_server_means_could_not_tell(tmp_path):
    # 0.25 of 0.3 is 83%: under the 90% rule.
    doc = limits.record(run_folder(tmp_path, "r1", 0.25, 0.3))
    assert doc["resources"][0]["status"] == "ok"
    assert doc["verdict"]["limit"] == "unknown"
    assert "not seen: disk, server-cpu, yugabytedb" in doc["verdict"]["text"]


def test_littles_law_is_the_summarys_arithmetic(tmp_path):
    doc = limits.analyse(run_folder(tmp_path, "r1", 0.1, 2))
    # 1000 ops/s x 4 ms = 4 busy VUs, of the summary's 1 VU: the law does not hold.
    assert doc["little"]["busy_vus"] == pytest.approx(4.0)
    assert doc["little"]["holds"] is False


def test_the_cgroup_quota_is_the_tightest_on_the_way_up(tmp_path):
    # cgroup v1: a quota of 1.5 cores on /a and 0.7 on /a/b; the process is in /a/b/c, which has none.
    v1 = tmp_path / "v1"
    for path, quota in (("cpu,cpuacct/a", "150000"), ("cpu,cpuacct/a/b", "70000"), ("cpu,cpuacct/a/b/c", "-1")):
        (v1 / path).mkdir(parents=True)
        (v1 / path / "cpu.cfs_quota_us").write_text(quota)
        (v1 / path / "cpu.cfs_period_us").write_text("100000")
    assert usage.cgroup_quota("4:cpu,cpuacct:/a/b/c\n3:memory:/a\n", v1) == pytest.approx(0.7)
    assert usage.cgroup_quota("4:cpu,cpuacct:/a\n", v1) == pytest.approx(1.5)
    # cgroup v2 (one hierarchy, cpu.max): 0.5 cores on /x, none ("max") below it.
    v2 = tmp_path / "v2"
    (v2 / "x" / "y").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory\n")
    (v2 / "x" / "cpu.max").write_text("50000 100000\n")
    (v2 / "x" / "y" / "cpu.max").write_text("max 100000\n")
    assert usage.cgroup_quota("0::/x/y\n", v2) == pytest.approx(0.5)
    assert usage.cgroup_quota("0::/\n", v2) is None


def test_verdict_order_the_client_before_the_server(tmp_path):
    found = [{"resource": "server-cpu", "status": "saturated", "text": "n1 used 2.00 of 2 cores (100%)",
              "figures": {"node": "n1", "share": 1.0, "shared_with_client": False}},
             {"resource": "client", "status": "saturated", "text": "k6 used 1.9 of its 2 cores", "figures": {}}]
    assert limits.verdict(found, None, None)["limit"] == "client"
    assert limits.verdict(found[:1], None, None)["limit"] == "server-cpu"


def test_a_shared_host_is_named_for_the_side_that_used_more_of_it():
    def host(k6: float, rest: float) -> list[dict]:
        return [{"resource": "server-cpu", "status": "saturated", "text": "h", "figures": {
            "node": "h", "share": 1.0, "shared_with_client": True, "client_cores": k6, "rest_cores": rest}}]
    assert limits.verdict(host(1.3, 0.7), None, None)["limit"] == "client"
    assert limits.verdict(host(0.1, 1.9), None, None)["limit"] == "server-cpu"


def test_compare_warns_when_a_side_was_client_bound(tmp_path):
    for i in (1, 2):
        limits.record(run_folder(tmp_path, f"a{i}", 0.30, 0.3))  # at its quota: client-bound
        limits.record(run_folder(tmp_path, f"b{i}", 0.05, 0.3, ops_per_s=1100.0))
    from ybbench.analysis.compare_groups import Group
    doc = compare.compare_runs(tmp_path, Group("A", ["a1", "a2"], tmp_path), [Group("B", ["b1", "b2"], tmp_path)],
                               None, 0.05, False)
    warnings = doc["comparisons"][0]["warnings"]
    assert warnings == ["A: a1, a2 limited by the client: this comparison measures the client, not the database"]
    assert doc["runs"]["a1"]["limited_by"]["limit"] == "client"
    assert doc["runs"]["b1"]["limited_by"]["limit"] == "unknown"
    assert "warning: A: a1, a2 limited by the client" in compare.table(doc)
    assert "limited by: A: client x2; B: unknown x2" in compare.table(doc)


class _Prom:
    """Prometheus as the analysis queries it, answering from planted instant values: the YugabyteDB
    job is up and exports only the counters named; each counter's increase is 0."""

    def __init__(self, exported: set[str]):
        self.exported = exported

    def instant(self, promql: str, t: float) -> list[dict]:
        if promql.startswith('count(up{job="yugabytedb"})'):
            return [{"metric": {}, "value": [t, "3"]}]
        if promql.startswith("count by (__name__)"):
            return [{"metric": {"__name__": n}, "value": [t, "3"]} for n in sorted(self.exported)]
        if any(f"({n}[" in promql for n in self.exported):
            return [{"metric": {"instance": "n1:9000"}, "value": [t, "0"]}]
        return []

    def range(self, promql: str, start: float, end: float, step: float) -> list[dict]:
        return []


def test_a_counter_the_server_does_not_export_is_not_seen_rather_than_zero():
    from ybbench.analysis import limits_server as srv

    # This YugabyteDB exports the RPC queue counters only: the rest are "not visible", never "ok".
    found, conflicts = srv.yugabytedb(srv.Window(_Prom({"rpcs_queue_overflow", "rpcs_timed_out_in_queue"}),
                                                 START, START + 20))
    status = {f["resource"]: f["status"] for f in found}
    assert status == {"yb-rpc-queue": "ok", "yb-memory-pressure": "not-visible", "yb-write-stall": "not-visible"}
    assert conflicts is None
    # All of them exported: every signal is read, and the conflicts are a number.
    everything = {n for _, names, _ in srv.YB_SIGNALS for n in names} | {srv.STALLS, srv.CONFLICTS}
    found, conflicts = srv.yugabytedb(srv.Window(_Prom(everything), START, START + 20))
    assert {f["status"] for f in found} == {"ok"} and conflicts == 0
