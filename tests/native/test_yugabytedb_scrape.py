"""The project's scrape and relabel rules against real YugabyteDB 2.23.1
captures (tests/data), scraped by the real test Prometheus: the
series and labels YugabyteDB's docs and dashboard 12620 rely on exist."""

from __future__ import annotations

import json
import re

import pytest

from ..support import shared
from ..compose.images.yugabytedb.yb_standin import ADVANCE_PER_S  # the fixtures' setting
from ..support.known_rates import known_rate
from ..support.stack import SHARED, wait_until

DASHBOARD_12620 = SHARED / "fixtures" / "grafana-12620" / "YugabyteDB.json"


@pytest.fixture(scope="module")
def scraped(prometheus):
    """Wait for two scrapes of every endpoint, so irate() has two points."""
    def twice():
        r = prometheus.query('count_over_time(up{job="yugabytedb"}[1m])')
        return len(r) == 4 and all(float(s["value"][1]) >= 2 for s in r)
    wait_until(twice, "two scrapes of each YugabyteDB endpoint", timeout=60)
    return prometheus


@pytest.mark.parametrize("export_type", ["master_export", "tserver_export", "ysql_export", "cql_export"])
def test_each_endpoint_is_up_with_the_dashboard_labels(scraped, export_type):
    up = scraped.query(f'up{{node_prefix="native", export_type="{export_type}"}}')
    assert len(up) == 1 and up[0]["value"][1] == "1", up


def test_ysql_insert_statements_become_rpc_latency(scraped):
    r = scraped.query('rpc_latency_count{saved_name="handler_latency_yb_ysqlserver_SQLProcessor_InsertStmt_count",'
                      ' export_type="ysql_export"}')
    assert len(r) == 1, r
    labels = r[0]["metric"]
    assert labels["server_type"] == "yb_ysqlserver"
    assert labels["service_type"] == "SQLProcessor"
    assert labels["service_method"] == "InsertStmt"
    assert labels["node_prefix"] == "native"
    assert labels["exported_instance"] == "pve-deb-work:9000"
    # The original name is gone: dashboards query rpc_latency only.
    assert not scraped.query("handler_latency_yb_ysqlserver_SQLProcessor_InsertStmt_count")


@pytest.mark.parametrize("method", ["Write", "Read"])
def test_tserver_write_and_read_handlers(scraped, method):
    base = f'server_type="yb_tserver", service_type="TabletServerService", service_method="{method}",' \
           f' export_type="tserver_export", node_prefix="native"'
    count = scraped.query(f"rpc_latency_count{{{base}}}")
    total = scraped.query(f"rpc_latency_sum{{{base}}}")
    assert len(count) == 1 and len(total) == 1
    assert count[0]["metric"]["saved_name"] == f"handler_latency_yb_tserver_TabletServerService_{method}_count"
    quantiles = {s["metric"]["quantile"] for s in scraped.query(f"rpc_latency{{{base}}}")}
    assert {"p50", "p95", "p99", "mean", "max", "min"} <= quantiles
    if method == "Write":  # the capture saw 30,245 writes; the stand-in's counters only grow
        assert float(count[0]["value"][1]) >= 30245


def test_counters_move_by_the_known_amount_and_gauges_stand_still(scraped):
    """The captures served as a live server's counters: each grows by
    ADVANCE_PER_S x its metric's rate a second (known_rates.py), and each
    sample carries the time of its value, so the slope between two samples
    is exactly that (0.1% for float rounding); gauges keep their values."""
    wait_until(lambda: len(scraped.query('count_over_time(up{job="yugabytedb"}[30s]) >= 4')) == 4,
               "four scrapes of each YugabyteDB endpoint", timeout=60)
    for metric, name in (('rpc_latency_count{service_method="Write", export_type="tserver_export"}',
                          "handler_latency_yb_tserver_TabletServerService_Write_count"),
                         ('rocksdb_block_cache_hit{export_type="tserver_export"}', "rocksdb_block_cache_hit"),
                         ('rocksdb_block_cache_miss{export_type="tserver_export"}', "rocksdb_block_cache_miss"),
                         ('cpu_utime{export_type="master_export"}', "cpu_utime")):
        raw = scraped.query(f"{metric}[30s]")
        assert raw, metric
        for r in raw:  # the slope between the first and last raw samples
            (t0, v0), (t1, v1) = [(float(t), float(v)) for t, v in (r["values"][0], r["values"][-1])]
            want = ADVANCE_PER_S * known_rate(name)
            assert (v1 - v0) / (t1 - t0) == pytest.approx(want, rel=0.001), (metric, r["values"])
    sizes = scraped.query('deriv(rocksdb_current_version_sst_files_size{export_type="tserver_export"}[30s])')
    assert sizes and all(float(r["value"][1]) == 0 for r in sizes)


def test_storage_series_the_seeds_chart(scraped):
    sst = scraped.query('sum by (exported_instance) (rocksdb_current_version_sst_files_size{export_type="tserver_export"})')
    assert len(sst) == 1 and float(sst[0]["value"][1]) > 0
    assert scraped.query('log_bytes_logged{export_type="tserver_export"}')
    assert scraped.query('rocksdb_block_cache_hit{export_type="tserver_export"}')


def _dashboard_queries() -> list[tuple[str, str]]:
    board = json.loads(DASHBOARD_12620.read_text())
    out = []

    def walk(panels):
        for p in panels:
            for t in p.get("targets", []):
                if t.get("expr"):
                    out.append((p.get("title", "?"), t["expr"]))
            walk(p.get("panels", []))

    walk(board["panels"])
    return out


def _fill(expr: str) -> str:
    """Grafana's variables, as the dashboard would set them here."""
    expr = expr.replace("$dbcluster", "native").replace("${dbcluster}", "native")
    expr = re.sub(r"\$\{?(master_node|tserver_node)\}?", ".*", expr)
    for var in ("$__rate_interval", "$__interval", "$interval"):
        expr = expr.replace(var, "1m")
    return expr


DASHBOARD_WHAT = "YugabyteDB's dashboard 12620 (not in the repository)"


@shared.mark(DASHBOARD_12620, DASHBOARD_WHAT)
def test_dashboard_12620_works_unmodified(scraped):
    """YugabyteDB's own dashboard, on our relabeling: as many of its queries
    return data as with the docs' config (about 178 of 453 on these
    captures; most of the rest are YEDIS, which the captures lack)."""
    shared.need(DASHBOARD_12620, DASHBOARD_WHAT)
    queries = _dashboard_queries()
    assert len(queries) > 400
    with_data, errors = [], []
    for title, expr in queries:
        try:
            if scraped.query(_fill(expr)):
                with_data.append(title)
        except AssertionError as e:
            errors.append((title, expr, e))
    assert not errors, errors[:3]
    print(f"dashboard 12620: {len(with_data)} of {len(queries)} queries return data")
    assert len(with_data) >= 170, f"only {len(with_data)} of {len(queries)} dashboard queries return data"
    # The seed's charts: YSQL ops/s and latency panels are among them.
    ysql = [t for t in with_data if "YSQL" in t or "SQL" in t]
    assert ysql, "no YSQL panel of dashboard 12620 returns data"
