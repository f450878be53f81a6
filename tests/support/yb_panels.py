"""What each YugabyteDB panel of the dashboards must show of the stand-in,
worked out here from the rates written in known_rates.py: by (dashboard
file, panel title, legend format), the counters its query must read and,
per legend as Grafana renders it, the range its value must lie in."""

from __future__ import annotations

import math
import re

from .captures import capture_names
from .known_rates import counts_statements, per_instance

# A median of rates over samples that carry their own timestamps: float and
# extrapolation noise only. Every two counters of a panel differ by more.
TOL = 0.02
# Numerator and denominator over the same samples: their extrapolation cancels.
RATIO_TOL = 1e-3
# A value that the test PostgreSQL's statements add an unknown part to:
# more than 0, nothing more known.
POSITIVE = (0.0, math.inf)

YSQL = "handler_latency_yb_ysqlserver_SQLProcessor_"
TSERVER = "handler_latency_yb_tserver_TabletServerService_"
HIT, MISS = "rocksdb_block_cache_hit", "rocksdb_block_cache_miss"
Want = dict[str, tuple[float, float]]


def exact(v: float, tol: float = TOL) -> tuple[float, float]:
    return v * (1 - tol), v * (1 + tol)


def at_least(v: float) -> tuple[float, float]:
    return v * (1 - TOL), math.inf


def ysql_methods() -> dict[str, dict[str, str]]:
    """YSQL statement types as rpc_latency{service_method} (YugabyteDB's
    docs' renaming: a method's name has no underscore): method -> its
    counters, {"count": name, "sum": name}."""
    out: dict[str, dict[str, str]] = {}
    for name, captures in capture_names().items():
        m = re.fullmatch(rf"{YSQL}([^_]+)_(count|sum)", name)
        if m and "ysql.txt" in captures:
            out.setdefault(m.group(1), {})[m.group(2)] = name
    return out


def _counter(metric: str, suffix: str = "") -> tuple[set[str], Want]:
    return {metric}, {f"{i} {suffix}".strip(): exact(v) for i, v in per_instance(metric).items()}


def _hit_ratio() -> tuple[set[str], Want]:
    h, m = per_instance(HIT), per_instance(MISS)
    return {HIT, MISS}, {i: exact(h[i] / (h[i] + m[i]), RATIO_TOL) for i in h}


def _ysql_total(metric: str) -> float:
    return sum(per_instance(metric, ("ysql.txt",)).values())


def _ysql_ops_by_method() -> tuple[set[str], Want]:
    counts = {m: n["count"] for m, n in ysql_methods().items() if "count" in n}
    return set(counts.values()), {m: (at_least if counts_statements(c) else exact)(_ysql_total(c))
                                  for m, c in counts.items()}


def _ysql_latency_by_method() -> tuple[set[str], Want]:
    methods = ysql_methods()
    want = {m: POSITIVE if counts_statements(n["count"]) else exact(_ysql_total(n["sum"]) / _ysql_total(n["count"]),
                                                                      RATIO_TOL)
            for m, n in methods.items() if {"count", "sum"} <= set(n)}
    return {name for n in methods.values() for name in n.values()}, want


def ysql_advance_per_node() -> dict[str, float]:
    """Every statement type's count summed per node: the stand-in's advance."""
    out: dict[str, float] = {}
    for m in ysql_methods().values():
        for i, v in per_instance(m["count"], ("ysql.txt",)).items() if "count" in m else ():
            out[i] = out.get(i, 0.0) + v
    return out


def _ysql_per_node(latency: bool) -> tuple[set[str], Want]:
    """Ops/s: at least the advance (statements add to it); latency: the
    statements' time is unknown here, positive."""
    names = {n for m in ysql_methods().values() for kind, n in m.items() if latency or kind == "count"}
    return names, {i: POSITIVE if latency else at_least(v) for i, v in ysql_advance_per_node().items()}


def _ysql_stat() -> tuple[set[str], Want]:
    names, _ = _ysql_per_node(latency=False)
    return names, {"YSQL": at_least(sum(ysql_advance_per_node().values()))}


def _tserver(latency: bool) -> tuple[set[str], Want]:
    """The rules take every server's TabletServerService handlers: the
    masters' too (their system catalog's tablet)."""
    reads, want, servers = set(), {}, ("master.txt", "tserver.txt")
    for method in ("Read", "Write"):
        count, total = f"{TSERVER}{method}_count", f"{TSERVER}{method}_sum"
        reads |= {count, total} if latency else {count}
        for i, n in per_instance(count, servers).items():
            want[f"{i} {method}"] = exact(per_instance(total, servers)[i] / n, RATIO_TOL) if latency else exact(n)
    return reads, want


def expectations() -> dict[tuple[str, str, str], tuple[set[str], Want]]:
    """(board, panel, legend format) -> (the counters it reads, legend -> (low, high))."""
    i = "{{exported_instance}}"
    return {
        ("storage.json", "WAL bytes written/s per node", i): _counter("log_bytes_logged"),
        ("storage.json", "Flush and compaction bytes/s per node", f"{i} flush"):
            _counter("rocksdb_flush_write_bytes", "flush"),
        ("storage.json", "Flush and compaction bytes/s per node", f"{i} compaction read"):
            _counter("rocksdb_compact_read_bytes", "compaction read"),
        ("storage.json", "Flush and compaction bytes/s per node", f"{i} compaction write"):
            _counter("rocksdb_compact_write_bytes", "compaction write"),
        ("disk-cache.json", "Block cache hits and misses/s per node", f"{i} hit"): _counter(HIT, "hit"),
        ("disk-cache.json", "Block cache hits and misses/s per node", f"{i} miss"): _counter(MISS, "miss"),
        ("disk-cache.json", "Block cache misses/s by block type", f"{i} data"):
            _counter("rocksdb_block_cache_data_miss", "data"),
        ("disk-cache.json", "Block cache misses/s by block type", f"{i} index"):
            _counter("rocksdb_block_cache_index_miss", "index"),
        ("disk-cache.json", "Block cache misses/s by block type", f"{i} filter"):
            _counter("rocksdb_block_cache_filter_miss", "filter"),
        ("disk-cache.json", "Block cache hit ratio", i): _hit_ratio(),
        ("overview.json", "Total YSQL ops/s by statement type", "{{service_method}}"): _ysql_ops_by_method(),
        ("overview.json", "Average YSQL latency by statement type", "{{service_method}}"): _ysql_latency_by_method(),
        ("overview.json", "YSQL ops/s per node", i): _ysql_per_node(latency=False),
        ("overview.json", "YSQL latency per node", i): _ysql_per_node(latency=True),
        ("overview.json", "YSQL ops/s (cluster, selected runs)", "YSQL"): _ysql_stat(),
        ("overview.json", "TServer Read/Write RPCs per node", f"{i} {{{{service_method}}}}"): _tserver(False),
        ("overview.json", "TServer Read/Write latency per node", f"{i} {{{{service_method}}}}"): _tserver(True),
    }


def legend(fmt: str, labels: dict[str, str]) -> str:
    """A series' name as Grafana renders a legend format."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt).strip()
