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
    rows += _nopm_rows(t.get("nopm"), num)
    body = "".join(f"<tr><th>{e(k)}</th><td>{e(v)}</td></tr>" for k, v in rows)
    return f"<h3>TPC-C (summary.json)</h3><table>{body}</table>" + _by_transaction(summary)


def _nopm_rows(n: dict | None, num) -> list[tuple[str, str]]:
    """NOPM, the database's New-Orders a minute (run/tpcc_nopm.py), and whether it agrees with tpmC."""
    if n is None:
        return [("NOPM (database: D_NEXT_O_ID)", "not in this summary (a run before it)")]
    if n["nopm"] is None:
        return [("NOPM (database: D_NEXT_O_ID)", n.get("error", "-"))]
    said = "agrees with tpmC" if n["agrees"] else f"DISAGREES with tpmC: {n['disagreement']}"
    return [("NOPM (database: D_NEXT_O_ID)", f"{num(n['nopm'])} ({n['new_orders']} New-Orders; {said})")]


def _by_transaction(summary: dict) -> str:
    """Per transaction: latency with its retries (ops.<op>.latency_ms) and, in the statements style,
    the final attempt's alone, the failed attempts' and the transactions by their retries."""
    t, e = summary["tpcc"], html.escape
    attempts = t.get("attempts") or {}
    ms = (lambda lat, k: "-" if not lat or lat.get(k) is None else f"{lat[k]:.3f}")  # noqa: E731
    head = ["transaction", "count", "retries", "with retries avg ms", "p99 ms"]
    if attempts:
        head += ["final attempt avg ms", "p99 ms", "failed attempts", "their avg ms", "p99 ms", "transactions by retries"]
    rows = []
    for op, o in summary["ops"].items():
        if op == "idle":
            continue
        cells = [op, str(o["count"]), str(o["retries"]), ms(o["latency_ms"], "avg"), ms(o["latency_ms"], "p99")]
        a = attempts.get(op)
        if attempts and a:
            f = a.get("failed_attempts") or {}
            hist = a.get("retry_histogram") or {}
            cells += [ms(a["latency_ms"], "avg"), ms(a["latency_ms"], "p99"), str(f.get("count", "-")),
                      ms(f.get("latency_ms"), "avg"), ms(f.get("latency_ms"), "p99"),
                      ", ".join(f"{k}: {n}" for k, n in hist.items() if n) or "-"]
        elif attempts:
            cells += ["-"] * 6
        rows.append(cells)
    th = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in rows)
    return (f"<h4>By transaction (with retries: ops.&lt;op&gt;.latency_ms; statements style: tpcc.attempts)</h4>"
            f"<table><tr>{th}</tr>{body}</table>")
