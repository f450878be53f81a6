"""The rates the YugabyteDB stand-in's counters grow at, written here and
not imported from the stand-in (tests/compose/images/yugabytedb/
yb_standin.py), so that a stand-in serving one counter at another's rate
fails the tests; and which of those counters ybbench reads: every capture
counter that a dashboard query, a recording rule or the report selects, as
the Prometheus that scrapes the captures resolves it (prometheus.yml renames
handler_latency_* to rpc_latency and keeps the name in saved_name)."""

from __future__ import annotations

import json
import re
import zlib

import yaml

from ybbench.core.prom import prom_queries
from ybbench.report import seed_charts

from ..compose.images.yugabytedb.yb_standin import ADVANCE_PER_S  # the fixtures' setting, not a rate
from .captures import capture_names, capture_series_per_tserver
from .dashboards import fill, promql_queries
from .stack import REPO

_YSQL = "handler_latency_yb_ysqlserver_SQLProcessor_"
_TSERVER = "handler_latency_yb_tserver_TabletServerService_"

# Per second (times ADVANCE_PER_S) for each series: the counters ybbench
# reads, each at a rate no other of them has (test_dashboards.py checks
# that these are exactly the counters read, and that the stand-in serves
# them so).
KNOWN_RATES = {
    f"{_YSQL}CatalogCacheMisses_count": 1, f"{_YSQL}CatalogCacheTableMisses_count": 2,
    "rocksdb_block_cache_hit": 3, "rocksdb_block_cache_miss": 4, "rocksdb_block_cache_data_miss": 5,
    "rocksdb_block_cache_index_miss": 6, "rocksdb_block_cache_filter_miss": 7,
    "log_bytes_logged": 8, "rocksdb_flush_write_bytes": 9, "rocksdb_compact_read_bytes": 10,
    "rocksdb_compact_write_bytes": 11,
    f"{_TSERVER}Read_count": 12, f"{_TSERVER}Read_sum": 13, f"{_TSERVER}Write_count": 14, f"{_TSERVER}Write_sum": 15,
    f"{_YSQL}SelectStmt_count": 16, f"{_YSQL}InsertStmt_count": 17, f"{_YSQL}UpdateStmt_count": 18,
    f"{_YSQL}DeleteStmt_count": 19, f"{_YSQL}BeginStmt_count": 20, f"{_YSQL}CommitStmt_count": 21,
    f"{_YSQL}RollbackStmt_count": 22, f"{_YSQL}OtherStmts_count": 23, f"{_YSQL}Transactions_count": 24,
    f"{_YSQL}SingleShardTransactions_count": 25, f"{_YSQL}AggregatePushdowns_count": 26,
    f"{_YSQL}SelectStmt_sum": 27, f"{_YSQL}InsertStmt_sum": 28, f"{_YSQL}UpdateStmt_sum": 29,
    f"{_YSQL}DeleteStmt_sum": 30, f"{_YSQL}BeginStmt_sum": 31, f"{_YSQL}CommitStmt_sum": 32,
    f"{_YSQL}RollbackStmt_sum": 33, f"{_YSQL}OtherStmts_sum": 34, f"{_YSQL}Transactions_sum": 35,
    f"{_YSQL}SingleShardTransactions_sum": 36, f"{_YSQL}AggregatePushdowns_sum": 37,
}


def known_rate(metric: str) -> int:
    """A series of `metric` grows by this times ADVANCE_PER_S a second:
    KNOWN_RATES', 1 + crc32(name) % 9 for the counters ybbench does not read."""
    return KNOWN_RATES.get(metric) or 1 + zlib.crc32(metric.encode()) % 9


def per_instance(metric: str, captures: tuple[str, ...] = ("tserver.txt",)) -> dict[str, float]:
    """What `sum by (exported_instance) (rate(metric[...]))` reads of the
    stand-in's captures (the tserver's unless told): n series x
    ADVANCE_PER_S x rate, per exported_instance."""
    out: dict[str, float] = {}
    for capture in captures:
        for i, n in capture_series_per_tserver(metric, capture).items():
            out[i] = out.get(i, 0.0) + n * ADVANCE_PER_S * known_rate(metric)
    return out


def counts_statements(metric: str) -> bool:
    """YSQL's statement counters (SelectStmt, ..., OtherStmts) also count the
    statements the test PostgreSQL executes: they grow at least at their rate."""
    return bool(re.fullmatch(rf"{_YSQL}\w+Stmts?_(count|sum)", metric))


RULES = {rule["record"]: rule["expr"]
         for path in sorted((REPO / "prometheus" / "rules").glob("*.yml"))
         for group in yaml.safe_load(path.read_text())["groups"] for rule in group["rules"] if "record" in rule}

# Grafana's variables as wide as they go: every series a panel can select.
ANY = {"testid": ".*", "cluster": ".*", "device": ".*", "database": ".*", "__rate_interval": "20s",
       "base": "any", "other": "any", "shift": "0"}


def selectors(prom, expr: str) -> list[str]:
    """Every series selector of expr, as Prometheus parses it
    (/api/v1/parse_query); a recording rule's name stands for its rule's."""
    out: list[str] = []

    def walk(node):
        if isinstance(node, list):
            for n in node:
                walk(n)
        elif isinstance(node, dict):
            if "matchers" in node and node["name"] in RULES:
                out.extend(selectors(prom, RULES[node["name"]]))
            elif "matchers" in node:
                out.append("{" + ", ".join(f"{m['name']}{m['type']}{json.dumps(m['value'])}"
                                           for m in node["matchers"]) + "}")
            else:
                for n in node.values():
                    walk(n)

    walk(prom.api("parse_query", query=expr))
    return out


def counters_read(prom, expr: str) -> set[str]:
    """The capture counters expr reads that move (changed within the last
    minute), by their YugabyteDB names."""
    names = set()
    for sel in selectors(prom, expr):
        got = prom.query(f"group by (saved_name) ({sel} and (changes({sel}[1m]) > 0))")
        names |= {s["metric"]["saved_name"] for s in got if s["metric"].get("saved_name")}
    unknown = names - set(capture_names())
    assert not unknown, f"{expr} reads {unknown}, which no capture serves"
    return names


def report_exprs() -> list[str]:
    """The report's PromQL (ybbench/core/prom.py's k6 charts, seed_charts.py's
    figures), and a selector of each capture metric its code names elsewhere."""
    exprs = list(prom_queries("any", "20s").values())
    exprs += [spec.promql(suffix, "20s") for spec in seed_charts.specs() for suffix in spec.queries]
    code = " ".join(p.read_text() for p in sorted((REPO / "ybbench" / "report").glob("*.py")))
    named = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", code)) & set(capture_names())
    return exprs + [f'{{saved_name="{n}"}}' for n in sorted(named)]


def read_by_ybbench(prom) -> dict[str, set[str]]:
    """Every moving capture counter that ybbench's dashboards, recording
    rules or report read, with where."""
    where: dict[str, set[str]] = {}
    reads = [(str(q), fill(q.expr, ANY)) for q in promql_queries()]
    reads += [(f"rule {record}", expr) for record, expr in RULES.items()]
    reads += [("report", expr) for expr in report_exprs()]
    for what, expr in reads:
        for name in counters_read(prom, expr):
            where.setdefault(name, set()).add(what)
    return where
