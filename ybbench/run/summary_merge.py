"""One summary.json from the generators' own (k6-scripts/lib/summary.js).

What adds up is added: counts, errors (and by SQLSTATE class), retries,
rows written, keys missing, dropped iterations, tpcc's New-Orders (those after a warm-up
too), failed attempts and retry histograms. ops/s is the total count
over one window, the longest generator's k6 run duration (the generators
start together), never a sum of rates over different windows. Max latency
is the largest max. Percentiles and the mean are not mergeable from
per-process numbers: they come from Prometheus' native histograms summed
over the generators (ybbench/core/latency.py), or are null, and
`latency_source` says which.
"""

from __future__ import annotations

from ybbench.core import formats

NO_LATENCY = ("none: percentiles cannot be merged from per-generator summaries; "
              "run with --prometheus to have them from the summed native histograms")
PROMETHEUS = "prometheus: native histograms of every generator, summed over the run"
SUMMED = ("retries", "errors", "keys_missing")


def _max(values: list) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def merge(parts: list[dict], names: list[str]) -> dict:
    """The merged digest; latency_ms is None until fill_latency() sets it."""
    first = parts[0]
    duration = max(p["duration_s"] for p in parts)
    ops: dict[str, dict] = {}
    for p in parts:
        for op, o in p["ops"].items():
            m = ops.setdefault(op, {"count": 0, **{k: 0 for k in SUMMED}, "max_ms": []})
            m["count"] += o["count"]
            for k in SUMMED:
                m[k] += o[k]
            m["max_ms"].append((o.get("latency_ms") or {}).get("max"))
    merged_ops = {}
    for op, m in ops.items():
        merged_ops[op] = {
            "count": m["count"],
            "per_second": m["count"] / duration if duration else 0.0,
            "latency_ms": None,
            **{k: m[k] for k in SUMMED},
            # k6's exact max of each generator: the largest is the run's.
            "latency_max_ms": _max(m["max_ms"]),
        }
    by_class: dict[str, int] = {}
    for p in parts:
        for c, n in p["errors_by_class"].items():
            by_class[c] = by_class.get(c, 0) + n
    return {
        "format_version": formats.version("summary"),
        "workload": first["workload"],
        "testid": first["testid"],
        "scenario": first["scenario"],  # the whole test's options, the same in every segment
        "duration_s": duration,
        "ops": merged_ops,
        "errors": sum(p["errors"] for p in parts),
        "errors_by_class": by_class,
        "rows_written": sum(p["rows_written"] for p in parts),
        "keys_missing": sum(p["keys_missing"] for p in parts),
        "dropped_iterations": sum(p["dropped_iterations"] for p in parts),
        "thresholds_failed": sorted({t for p in parts for t in p["thresholds_failed"]}),
        "written": _written(parts),
        **({"tpcc": _tpcc(parts, duration)} if "tpcc" in first else {}),
        "latency_source": NO_LATENCY,
        "rate_window": "ops/s = merged count / duration_s, the longest generator's k6 run duration",
        "generators": [{"name": n, "summary": f"generators/{n}/summary.json"} for n in names],
    }


def _written(parts: list[dict]) -> dict | None:
    """The load's table and key scheme: every generator's setup() says the
    same, but for where a tpcc run's districts stood, which each read at its
    own start: the earliest (the smallest O_ID) is where the run began."""
    w = parts[0].get("written")
    if w and "next_o_id_at_start" in w:
        w = {**w, "next_o_id_at_start": [min(x) for x in zip(*(p["written"]["next_o_id_at_start"] for p in parts))]}
    return w


# tpcc.js's (lib/tpcc_terminals.js): the most New-Orders a minute a warehouse's 10 terminals make.
MAX_TPMC_PER_WAREHOUSE = 12.86


def efficiency(tpmc: float | None, warehouses: int) -> float | None:
    """Spec mode's efficiency: tpmC over the most the warehouses' terminals can make."""
    return tpmc / (MAX_TPMC_PER_WAREHOUSE * warehouses) if tpmc is not None else None


def _tpcc(parts: list[dict], duration: float) -> dict:
    """tpcc's figures over all generators: New-Orders and rollbacks summed,
    tpmC from the sum over the longest generator's duration."""
    new_orders = {k: sum(p["tpcc"]["new_orders"][k] for p in parts) for k in ("committed", "rolled_back", "failed")}
    rollbacks: dict[str, int] = {}
    for p in parts:
        for op, n in p["tpcc"]["rollbacks"].items():
            rollbacks[op] = rollbacks.get(op, 0) + n
    first = parts[0]["tpcc"]
    tpmc = new_orders["committed"] / (duration / 60) if duration else None
    merged = {**first, "new_orders": new_orders, "rollbacks": rollbacks, "tpmc": tpmc}
    spec = first["mode"] == "spec"
    if "measured" in first:
        merged["measured"] = _measured([p["tpcc"]["measured"] for p in parts], spec and first["warehouses"])
    if "attempts" in first:
        merged["attempts"] = _attempts([p["tpcc"]["attempts"] for p in parts])
    if spec:
        # Efficiency from the merged tpmC; the wait as a mean over every generator's transactions.
        merged["efficiency"] = efficiency(tpmc, first["warehouses"])
        counts = [sum(o["count"] for o in p["ops"].values()) for p in parts]
        waited = [p["tpcc"]["terminal_wait_ms"] for p in parts]
        merged["terminal_wait_ms"] = (sum(n * w for n, w in zip(counts, waited) if n) / sum(counts)
                                      if sum(counts) else None)
    return merged


def _measured(parts: list[dict], spec_warehouses: int | bool) -> dict:
    """After the warm-up: New-Orders summed over the longest generator's seconds after it."""
    committed, seconds = sum(m["new_orders_committed"] for m in parts), max(m["seconds"] for m in parts)
    tpmc = committed / (seconds / 60) if seconds else None
    return {**parts[0], "seconds": seconds, "new_orders_committed": committed, "tpmc": tpmc,
            "efficiency": efficiency(tpmc, spec_warehouses) if spec_warehouses else None}


def _attempts(parts: list[dict]) -> dict:
    """The statements style's attempts: retries, failed attempts and the retry histogram summed; their
    latencies are not mergeable from per-process numbers (null, as the ops' are without Prometheus)."""
    out = {}
    for op in parts[0]:
        got = [p[op] for p in parts]
        failed = [g.get("failed_attempts", {}).get("count", 0) for g in got]
        histogram: dict[str, int] = {}
        for g in got:
            for bucket, n in g.get("retry_histogram", {}).items():
                histogram[bucket] = histogram.get(bucket, 0) + n
        out[op] = {"latency_ms": None, "retries": sum(g["retries"] for g in got),
                   "failed_attempts_ms": sum(g["failed_attempts_ms"] for g in got),
                   **({"failed_attempts": {"count": sum(failed), "latency_ms": None}}
                      if "failed_attempts" in got[0] else {}),
                   **({"retry_histogram": histogram} if "retry_histogram" in got[0] else {})}
    return out


def fill_latency(merged: dict, per_op: dict[str, dict | None]) -> None:
    """Percentiles and mean per op from Prometheus (latency.from_prometheus),
    with the generators' largest max; an op Prometheus lacks stays null."""
    for op, lat in per_op.items():
        if lat is not None:
            merged["ops"][op]["latency_ms"] = {**lat, "max": merged["ops"][op]["latency_max_ms"]}
    if per_op and all(lat is not None for lat in per_op.values()):
        merged["latency_source"] = PROMETHEUS


def text(d: dict) -> str:
    """The merged numbers as the workloads print theirs."""
    fmt = lambda x, n=3: "-" if x is None else f"{x:.{n}f}"  # noqa: E731
    lines = [f"ybbench {d['workload']}  testid={d['testid']}  {len(d['generators'])} generators merged  "
             f"ran {d['duration_s']:.1f} s",
             f"  {'op':<8}{'ops':>10}{'ops/s':>11}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}{'avg ms':>9}"
             f"{'max ms':>9}{'retries':>9}"]
    for op, o in d["ops"].items():
        lat = o["latency_ms"] or {}
        lines.append(f"  {op:<8}{o['count']:>10}{o['per_second']:>11.1f}{fmt(lat.get('p50')):>9}"
                     f"{fmt(lat.get('p95')):>9}{fmt(lat.get('p99')):>9}{fmt(lat.get('avg')):>9}"
                     f"{fmt(o['latency_max_ms'], 1):>9}{o['retries']:>9}")
    classes = " ".join(f"{c}={n}" for c, n in d["errors_by_class"].items())
    lines.append(f"  errors {d['errors']}{f' (SQLSTATE class {classes})' if classes else ''}  rows written "
                 f"{d['rows_written']}  keys missing {d['keys_missing']}  dropped iterations {d['dropped_iterations']}")
    lines.append(f"  latency: {d['latency_source']}")
    return "\n".join(lines) + "\n"
