"""What each YugabyteDB panel of the dashboards must show of the stand-in,
worked out here from the rates written in known_rates.py: by (dashboard
file, panel title, legend format), the counters its query must read and,
per legend as Grafana renders it, the range its value must lie in."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .captures import capture_names, capture_series_per_tserver
from .known_rates import counts_statements, per_instance

# A median of rates over samples that carry their own timestamps: float and
# extrapolation noise only. Every two counters of a panel differ by more.
TOL = 0.02
# Numerator and denominator over the same samples: their extrapolation cancels.
RATIO_TOL = 1e-3
# The least span between the first and last samples a 1m rate holds at 5 s
# scrapes (55 s when none is late): room for scrapes 15 s apart.
RATE_SPAN_MIN_S = 30.0


@dataclass(frozen=True)
class Statements:
    """What the test PostgreSQL says (pg_stat_statements, read by the test)
    of the statements it ran, which the stand-in adds to YSQL's statement
    counters (count += calls, sum += total_exec_time in µs: yb_standin.py):
    every call's time lies between the least min_exec_time and the greatest
    max_exec_time of the rows; exec_us is the time its calls took between a
    read before the panels' windows and one after them, in µs."""
    min_us: float
    max_us: float
    exec_us: float


def _mediant(cap_sum: float, cap_count: float, series: int, st: Statements) -> tuple[float, float]:
    """Bounds of (cap_sum + n x PG's time) / (cap_count + n x PG's calls), per
    second over a rate window, n = series of a statement kind's sum (and of its
    count) that the stand-in adds PG's statements to: a mediant of the
    capture's own ratio and PG's mean time of a call, so between them; and no
    more than the capture's ratio plus all PG's time in the windows spread
    over the capture's count alone, over the shortest span a window holds."""
    own = cap_sum / cap_count
    lo = min(own * (1 - RATIO_TOL), st.min_us)
    hi = max(own * (1 + RATIO_TOL), st.max_us)
    return lo, min(hi, own * (1 + RATIO_TOL) + series * st.exec_us / (cap_count * RATE_SPAN_MIN_S))

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


def _statement_series(names: dict[str, str], instance: str | None = None) -> int:
    """How many series of a statement kind's sum carry PG's statements (on
    one instance, or all): as many as of its count, or the mediant is none."""
    n = {kind: sum(v for i, v in capture_series_per_tserver(name, "ysql.txt").items() if instance in (None, i))
         for kind, name in names.items()}
    assert n["sum"] == n["count"], (names, n)
    return n["sum"]


def _ysql_latency_by_method(st: Statements) -> tuple[set[str], Want]:
    methods = ysql_methods()
    want = {m: _mediant(_ysql_total(n["sum"]), _ysql_total(n["count"]), _statement_series(n), st)
            if counts_statements(n["count"]) else exact(_ysql_total(n["sum"]) / _ysql_total(n["count"]), RATIO_TOL)
            for m, n in methods.items() if {"count", "sum"} <= set(n)}
    return {name for n in methods.values() for name in n.values()}, want


def ysql_advance_per_node() -> dict[str, float]:
    """Every statement type's count summed per node: the stand-in's advance."""
    out: dict[str, float] = {}
    for m in ysql_methods().values():
        for i, v in per_instance(m["count"], ("ysql.txt",)).items() if "count" in m else ():
            out[i] = out.get(i, 0.0) + v
    return out


def _ysql_per_node() -> tuple[set[str], Want]:
    """Ops/s: at least the advance (statements add to it)."""
    names = {n for m in ysql_methods().values() for kind, n in m.items() if kind == "count"}
    return names, {i: at_least(v) for i, v in ysql_advance_per_node().items()}


def _ysql_latency_per_node(st: Statements) -> tuple[set[str], Want]:
    """Every statement type's sum over every one's count, per node: the
    capture's own ratio, PG's statements mixed in (_mediant; PG's time may
    land on every kind's series, so the most series of any kind)."""
    methods = ysql_methods()
    sums: dict[str, float] = {}
    for m in methods.values():
        for i, v in per_instance(m["sum"], ("ysql.txt",)).items() if "sum" in m else ():
            sums[i] = sums.get(i, 0.0) + v
    want = {i: _mediant(sums[i], count, max(_statement_series(n, i) for n in methods.values()
                                           if counts_statements(n["count"])), st)
            for i, count in ysql_advance_per_node().items()}
    return {n for m in methods.values() for n in m.values()}, want


def _ysql_stat() -> tuple[set[str], Want]:
    names, _ = _ysql_per_node()
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


def expectations(st: Statements) -> dict[tuple[str, str, str], tuple[set[str], Want]]:
    """(board, panel, legend format) -> (the counters it reads, legend -> (low, high)),
    given what the test PostgreSQL says of its statements over the windows read."""
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
        ("overview.json", "Average YSQL latency by statement type", "{{service_method}}"): _ysql_latency_by_method(st),
        ("overview.json", "YSQL ops/s per node", i): _ysql_per_node(),
        ("overview.json", "YSQL latency per node", i): _ysql_latency_per_node(st),
        ("overview.json", "YSQL ops/s (cluster, selected runs)", "YSQL"): _ysql_stat(),
        ("overview.json", "TServer Read/Write RPCs per node", f"{i} {{{{service_method}}}}"): _tserver(False),
        ("overview.json", "TServer Read/Write latency per node", f"{i} {{{{service_method}}}}"): _tserver(True),
    }


def legend(fmt: str, labels: dict[str, str]) -> str:
    """A series' name as Grafana renders a legend format."""
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), fmt).strip()
