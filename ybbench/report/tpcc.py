"""The run report's TPC-C section, for tpcc runs: the run's TPC-C figures
(summary.json's tpcc) and tpmC over the run from Prometheus, drawn with
the same PromQL as the k6 client dashboard's tpmC panel. Latency by
transaction is the report's latency by op (each transaction is an op)."""

from __future__ import annotations

import html

from ybbench.dashboards.k6_client import tpmc
from ybbench.report import run_rates
from ybbench.report.charts import line_chart
from ybbench.run.summary_merge import MAX_TPMC_PER_WAREHOUSE


def promql(testid: str, rng: str) -> str:
    """The chart's query (doctor checks its series: cli.report_exprs)."""
    return tpmc(f'{{testid="{testid}"}}', rng)


def chart(run: dict, prom, k6_rng: str, step: float) -> tuple[dict | None, str | None]:
    """tpmC over the run's window (or what is missing); its whole-run figure
    is summary.json's tpmC."""
    t = run["summary"].get("tpcc")
    if not t:
        return None, None
    start, end = run["window"]["start"], run["window"]["end"]
    query = promql(run["testid"], k6_rng)
    got = prom.range(query, start, end, step)
    pts = [(float(x), float(v)) for s in got for x, v in s["values"]]
    if not pts:
        return None, f"tpmC over the run: no point for {query}"
    series = {"tpmC": {"t": [p[0] for p in pts], "v": [p[1] for p in pts]}}
    run_rates.mark_partial(series["tpmC"], start, float(k6_rng[:-1]))
    whole = {"tpmC": {"value": t["tpmc"], "t0": start, "t1": end}}
    title = f"{run['testid']}: tpmC, New-Orders committed per minute (k6)"
    if t["mode"] == "spec":
        ceiling = MAX_TPMC_PER_WAREHOUSE * t["warehouses"]
        series[f"12.86 x {t['warehouses']} warehouses"] = {"t": [start, end], "v": [ceiling, ceiling]}
    c = {"id": "tpcc_tpmc", "title": title, "query": query, "step": step, "data": series, "whole_run": whole,
         "source": f"Prometheus {prom.url}, query_range step {step:g}s: {query}"}
    c["png"] = line_chart(title, "New-Orders / min", series, start, end, whole, "whole run (k6 summary)")
    return c, None


def section_html(summary: dict) -> str:
    """summary.json's TPC-C figures as a table; '' for other workloads."""
    t = summary.get("tpcc")
    if not t:
        return ""
    e = html.escape
    pct = (lambda x: "-" if x is None else f"{100 * x:.2f}%")  # noqa: E731
    num = (lambda x, d=1: "-" if x is None else f"{x:.{d}f}")  # noqa: E731
    no = t["new_orders"]
    rows = [("mode", t["mode"] + (" (10 terminals a warehouse, keying and think times)" if t["mode"] == "spec"
                                  else " (no keying or think time: capacity, no efficiency)")),
            ("tpmC", num(t["tpmc"])),
            ("efficiency (tpmC / 12.86 per warehouse)", pct(t["efficiency"])),
            ("warehouses", str(t["warehouses"]))]
    if t["mode"] == "spec":
        rows += [("terminals", str(t["terminals"])),
                 ("mean start after a terminal's due time, ms", num(t["terminal_wait_ms"], 2))]
    rows += [("New-Orders committed / rolled back / failed", f"{no['committed']} / {no['rolled_back']} / {no['failed']}"),
             ("rolled back by transaction", ", ".join(f"{k} {v}" for k, v in t["rollbacks"].items()))]
    body = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows)
    return f"<h3>TPC-C (summary.json)</h3><table>{body}</table>"
