"""Monitoring at scale, small: bench/monitoring_100_nodes.py's code path on
5 nodes (3 masters). The series Prometheus keeps per target are checked
against counts made here from the capture files and the drop rules of
prometheus/prometheus.yml, and the labels against what the dashboards and
rules group by. No timing is asserted."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from bench.monitoring_100_nodes import (
    CONFIG,
    config_without_drop_rules,
    counters,
    kinds_table,
    measure,
    scraping,
    totals_table,
)
from bench.replayed_cluster import YB_ENDPOINTS, capture_node_exporter

from ..support.stack import CAPTURES, wait_until

NODES, MASTERS = 5, 3
EXPORT_TYPES = {"master": "master_export", "tserver": "tserver_export", "ysql": "ysql_export", "ycql": "cql_export"}
# up, scrape_duration_seconds, scrape_samples_scraped, _post_metric_relabeling, scrape_series_added
ADDED_PER_TARGET = 5


def drop_rules(job: str, config_file: Path = CONFIG) -> list[re.Pattern]:
    """The job's `action: drop` rules on __name__, anchored as Prometheus anchors them."""
    config = yaml.safe_load(config_file.read_text())
    (scrape,) = [c for c in config["scrape_configs"] if c["job_name"] == job]
    return [re.compile(f"^(?:{r['regex']})$") for r in scrape.get("metric_relabel_configs", [])
            if r.get("action") == "drop" and r["source_labels"] == ["__name__"]]


def expected(capture: Path, job: str) -> tuple[int, int, int]:
    """(samples scraped, samples kept, series in the head) for one scrape of
    the capture: kept is what no drop rule matches; the head holds each
    distinct series once (real captures repeat some) plus what Prometheus adds."""
    drops = drop_rules(job)
    samples = [line for line in capture.read_text().splitlines() if line and not line.startswith("#")]
    kept = [s for s in samples if not any(d.match(re.match(r"[^{\s]+", s).group(0)) for d in drops)]
    series = {s[: s.rindex("}") + 1] if "{" in s else s.split()[0] for s in kept}
    return len(samples), len(kept), len(series) + ADDED_PER_TARGET


@pytest.fixture(scope="module")
def small_cluster(binaries, tmp_path_factory):
    root = tmp_path_factory.mktemp("monitoring-scale")
    node_capture = capture_node_exporter(root)
    # A block of loopback addresses of its own, away from the bench's default (100).
    with scraping(NODES, MASTERS, random.randint(150, 250), root, node_capture) as (cluster, prom):
        start = counters(prom)
        # Two scrapes of every target, so avg/max over time have something to average.
        scrapes = 'count_over_time(up{job=~"yugabytedb|node"}[1m])'
        wait_until(lambda: min(float(s["value"][1]) for s in prom.query(scrapes)) >= 2, "two scrapes of every target",
                   timeout=30)
        # Rates come from two readings of Prometheus' own counters: the end
        # needs a self-scrape later than the start's.
        wait_until(lambda: counters(prom)["samples"][1] > start["samples"][1], "Prometheus to scrape itself again",
                   timeout=30)
        yield cluster, prom, node_capture, measure(prom, cluster, 15, 0.0, start)


def test_every_target_is_up_with_each_kind_counted(small_cluster):
    _, _, _, m = small_cluster
    assert {k: (s.targets, s.up) for k, s in m.kinds.items()} == {
        "master": (MASTERS, MASTERS), "tserver": (NODES, NODES), "ysql": (NODES, NODES), "ycql": (NODES, NODES),
        "node": (NODES, NODES)}


def test_series_per_target_match_the_captures_after_the_drop_rules(small_cluster):
    _, _, node_capture, m = small_cluster
    captures = {kind: (CAPTURES / name, "yugabytedb") for kind, (name, _) in YB_ENDPOINTS.items()}
    captures["node"] = (node_capture, "node")
    for kind, (capture, job) in captures.items():
        scraped, kept, series = expected(capture, job)
        n = m.kinds[kind].targets
        assert m.kinds[kind].scraped == [scraped] * n, kind
        assert m.kinds[kind].kept == [kept] * n, kind
        assert m.kinds[kind].series == [series] * n, kind
    # The drop rule does drop: a third of a tserver's samples.
    assert m.kinds["tserver"].kept[0] < 0.75 * m.kinds["tserver"].scraped[0]
    assert m.head_series >= sum(sum(k.series) for k in m.kinds.values())


def test_kinds_are_labelled_as_the_dashboards_expect(small_cluster):
    cluster, prom, _, _ = small_cluster
    labels = {(s["metric"].get("export_type"), s["metric"].get("node_prefix"))
              for s in prom.query('count by (export_type, node_prefix) ({job="yugabytedb"})')}
    assert labels == {(e, "native") for e in EXPORT_TYPES.values()}
    assert {s["metric"].get("node_prefix") for s in prom.query('count by (node_prefix) ({job="node"})')} == {"native"}
    # One instance per node and port, as per host; the servers' own
    # exported_instance (what rules and dashboards group by) is the node's.
    for kind, export_type in EXPORT_TYPES.items():
        hosts = cluster.masters if kind == "master" else cluster.hosts
        port = YB_ENDPOINTS[kind][1]
        got = prom.query(f'count by (instance) (up{{export_type="{export_type}"}})')
        assert sorted(s["metric"]["instance"] for s in got) == sorted(f"{h}:{port}" for h in hosts), kind
        server_port = 7000 if kind == "master" else 9000  # YSQL and YCQL report their tserver
        got = prom.query(f'count by (exported_instance) ({{export_type="{export_type}", exported_instance!=""}})')
        assert sorted(s["metric"]["exported_instance"] for s in got) == sorted(f"{h}:{server_port}" for h in hosts)
    # A recording rule that sums per server sees every node apart.
    per_node = wait_until(lambda: prom.query("node:ybbench_sst_files_size_bytes:sum"), "the SST size rule", timeout=30)
    assert len(per_node) == NODES


def test_the_tables_show_the_measurement(small_cluster):
    _, _, _, m = small_cluster
    console = Console(record=True, width=200)
    console.print(kinds_table(m, m))
    console.print(totals_table(m, m, "5s"))
    text = console.export_text()
    assert f"{NODES}/{NODES}" in text and f"{MASTERS}/{MASTERS}" in text
    assert f"{m.head_series:,.0f}" in text


def test_the_no_drop_reference_lacks_only_the_drop_rules(tmp_path):
    variant = yaml.safe_load(config_without_drop_rules(tmp_path / "prometheus.yml").read_text())
    config = yaml.safe_load(CONFIG.read_text())
    assert drop_rules("yugabytedb") and not drop_rules("yugabytedb", tmp_path / "prometheus.yml")
    for job, kept in zip(config["scrape_configs"], variant["scrape_configs"], strict=True):
        rules = job.pop("metric_relabel_configs", [])
        assert kept.pop("metric_relabel_configs", []) == [r for r in rules if r.get("action") != "drop"]
        assert kept == job
    assert {k: v for k, v in variant.items() if k != "scrape_configs"} == \
        {k: v for k, v in config.items() if k != "scrape_configs"}
