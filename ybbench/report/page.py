"""`ybbench report`: one self-contained HTML page for one or more runs.

From each run's folder (results/<testid>/): the k6 summary table
(summary.json) and the parameters (params.json). With --prometheus, charts
over each run's window [params.started, params.finished]: ops/s by op,
latency avg and p99 by op (k6's native histogram) and CPU per node
(node_exporter), and the seeds' storage, disk and cache figures
(seed_charts.py: SSTable size, disk IOPS, iostat -mx, block cache), where
those series exist; a tpcc run adds its TPC-C figures and tpmC over the
run (tpcc.py). Without it, bar charts of what summary.json holds.
Every figure names its source and window; the numbers of every chart go to
a JSON file next to the HTML (report.json); --png writes each chart as a
PNG file. The page links to k6's own HTML report (k6-report.html) when the
run has one.
"""

from __future__ import annotations

import base64
import html
import os
import time
from pathlib import Path

from ybbench.analysis import history_link, limits
from ybbench.core import formats, run_folder
from ybbench.core.errors import UserError
from ybbench.core.files import write_file
from ybbench.core.prom import Prom, k6_range, labelled_series, prom_queries, window_step
from ybbench.core.services import check_ready
from ybbench.experiments.reproduce import expected
from ybbench.report import run_rates, seed_charts, tpcc
from ybbench.report.charts import bar_chart as _bar_chart
from ybbench.report.charts import line_chart as _line_chart
from ybbench.run.k6_process import K6_REPORT

# Seed charts this version does not draw.
NOT_YET: tuple[str, ...] = ()


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def load_run(results_dir: Path, testid: str) -> dict:
    run = run_folder.load(results_dir, testid)
    summary = dict(run.summary)
    summary.pop("k6", None)  # k6's raw metrics: not shown
    params = dict(run.params, knobs=run.shown_knobs)
    started, finished = run.window
    return {"testid": testid, "folder": run.folder, "params": params, "summary": summary,
            "window": {"start": started, "end": finished}, "doctor": doctor_verdict(run.doctor()),
            "limits": limits.load(run.folder)}


def doctor_verdict(doc: dict | None) -> dict | None:
    """What the report keeps of run --doctor's doctor.json: the counts and
    each check that failed or warned, with what to do."""
    if doc is None:
        return None
    return {"ok": doc["ok"], "counts": doc["counts"],
            "checks": [{k: c[k] for k in ("name", "status", "found", "todo")}
                       for c in doc["checks"] if c["status"] in ("fail", "warn")]}


def _limits_html(doc: dict | None) -> str:
    """The page's first section: what limited the run, and each resource (limits.json)."""
    e = html.escape
    if doc is None:
        return ("<h3>What limited this run</h3><p>Not analysed: the run has no limits.json "
                "(`ybbench limits TESTID` writes it).</p>")
    rows = "".join(f"<tr><td>{e(f['status'])}</td><td>{e(f['resource'])}</td><td>{e(f['text'])}</td></tr>"
                   for f in doc["resources"])
    return (f'<h3>What limited this run (limits.json)</h3><p class="verdict"><b>{e(doc["verdict"]["text"])}</b></p>'
            f"<table><tr><th>status</th><th>resource</th><th>use against capacity, over the measured window</th>"
            f"</tr>{rows}</table><p>How to read it: docs/why-this-number.md.</p>")


def _doctor_html(d: dict | None) -> str:
    if d is None:
        return ""
    e, n = html.escape, d["counts"]
    out = [f"<h3>Doctor before the run (doctor.json)</h3><p>{'Passed' if d['ok'] else 'Failed'}: {n['ok']} ok, "
           f"{n['warn']} warn, {n['fail']} fail, {n['skipped']} skipped.</p>"]
    if d["checks"]:
        out.append("<table><tr><th>status</th><th>check</th><th>found</th><th>what to do</th></tr>" + "".join(
            f"<tr><td>{e(c['status'])}</td><td>{e(c['name'])}</td><td>{e(c['found'])}</td><td>{e(c['todo'])}</td>"
            "</tr>" for c in d["checks"]) + "</table>")
    return "".join(out)


def summary_charts(run: dict) -> list[dict]:
    """Charts of summary.json alone: ops/s and latency percentiles per op."""
    ops = run["summary"].get("ops", {})
    names = sorted(ops)
    source = f"k6 summary (results/{run['testid']}/summary.json)"
    charts = [{
        "id": "summary_ops_per_second", "title": f"{run['testid']}: ops/s per op (whole run)",
        "source": source, "data": {op: ops[op]["per_second"] for op in names},
    }]
    charts[0]["png"] = _bar_chart(charts[0]["title"], "ops/s", names,
                                  {"ops/s": [ops[op]["per_second"] for op in names]})
    pct = ("p50", "p95", "p99", "avg")
    lat = {op: {p: (ops[op].get("latency_ms") or {}).get(p) for p in pct} for op in names}
    if any(v is not None for d in lat.values() for v in d.values()):
        c = {"id": "summary_latency_ms", "title": f"{run['testid']}: latency per op, ms (whole run)",
             "source": source, "data": lat}
        c["png"] = _bar_chart(c["title"], "ms", names, {p: [lat[op][p] for op in names] for p in pct})
        charts.append(c)
    return charts


def prometheus_charts(run: dict, prom: Prom) -> tuple[list[dict], list[str]]:
    """Charts over the run's window from Prometheus; and what had no series."""
    start, end = run["window"]["start"], run["window"]["end"]
    step = window_step(start, end)
    charts, missing = [], []
    specs = {
        "ops_per_second": ("ops/s by op (k6)", "ops/s"),
        "latency_avg_ms": ("latency avg by op, ms (k6's native histogram)", "ms"),
        "latency_p99_ms": ("latency p99 by op, ms (k6's native histogram)", "ms"),
    }
    # k6's series exist only from the run's start: a window that reaches
    # before it holds less than its length of k6's counts, and rate()
    # divides by the whole length, so those ops/s points read low: partial.
    k6_rng = k6_range(prom, run["testid"], start, end, step)
    ops = run["summary"].get("ops", {})
    for key, promql in (prom_queries(run["testid"], k6_rng) if k6_rng else {}).items():
        title, ylabel = specs[key]
        series = labelled_series(prom.range(promql, start, end, step), "op")
        if not series:
            # k6 pushed (k6_rng is set), but no window of 3 pushes fits in the run.
            missing.append(f"{title}: no point for {promql}: the run ({end - start:.1f} s) is shorter than k6's "
                           f"pushes can resolve (a {k6_rng} window); the whole-run figures are the k6 summary's")
            continue
        c = {"id": key, "title": f"{run['testid']}: {title}",
             "source": f"Prometheus {prom.url}, query_range step {step:g}s: {promql}",
             "query": promql, "step": step, "data": series}
        whole = None
        if key == "ops_per_second":
            for s in series.values():
                run_rates.mark_partial(s, start, float(k6_rng[:-1]))
            # The whole run's figure is k6's own count over the run (summary.json).
            whole = {op: {"value": ops[op]["per_second"], "t0": start, "t1": end} for op in series if op in ops}
            c["whole_run"] = whole
            # As for the scraped rates: too few points whose window lies inside the run, no curve.
            inside = max(s["partial"].count(False) for s in series.values())
            c["curve"] = inside >= seed_charts.MIN_INSIDE_POINTS
            if not c["curve"]:
                c["note"] = (f"The run ({end - start:.1f} s) is shorter than k6's pushes can resolve: a point needs "
                             f"a {k6_rng} window of k6's pushes inside the run, and {inside} point(s) had one, so "
                             "no curve is drawn; the whole-run figure below is k6's own count over the run.")
        if c.get("curve", True):
            c["png"] = _line_chart(c["title"], ylabel, series, start, end, whole, "whole run (k6 summary)")
        charts.append(c)
    if k6_rng:
        tpmc_chart, tpmc_missing = tpcc.chart(run, prom, k6_rng, step)
        charts += [tpmc_chart] if tpmc_chart else []
        missing += [tpmc_missing] if tpmc_missing else []
    else:
        missing.append("k6's ops/s and latency over time: k6 pushed fewer than 2 samples of "
                       f'k6_iterations_total{{testid="{run["testid"]}"}} to this Prometheus; needs the run made '
                       "with --prometheus")
    seed, seed_missing = seed_charts.line_charts(run, prom, step)
    return charts + seed, missing + seed_missing


def _fmt(v, d=3) -> str:
    return "-" if v is None else (f"{v:.{d}f}" if isinstance(v, float) else str(v))


def _table_html(t: dict, w: dict) -> str:
    e = html.escape
    cols = list(t["formulas"])
    head = "".join(f"<th>{e(c)}</th>" for c in ["host device", *cols])
    body = "".join("<tr>" + "".join(f"<td>{e(x)}</td>" for x in [name, *(_fmt(r[c], 2) for c in cols)]) + "</tr>"
                   for name, r in t["rows"].items())
    formulas = "; ".join(f"{c} = {f}" for c, f in t["formulas"].items())
    spans = "; ".join(f"{name}: t0 {_stamp(r['t0'])}, t1 {_stamp(r['t1'])}" for name, r in t["rows"].items())
    return (f"<figure><table><tr>{head}</tr>{body}</table><figcaption>{e(t['title'])}. Source: {e(t['source'])}. "
            f"Window: {_stamp(w['start'])} to {_stamp(w['end'])} ({e(spans)}). Formulas: {e(formulas)}."
            "</figcaption></figure>")


def _figures_text(c: dict, w: dict) -> str:
    """The whole-run (and in-run) figure of every line of a rate chart."""
    marks = (" Dashed points with hollow markers are partial: their rate window reaches back before the run."
             if any(isinstance(s, dict) and any(s.get("partial", [])) for s in c["data"].values()) else "")
    if "figures" not in c:
        whole = c.get("whole_run") or {}
        return (" Whole run (k6 summary): " + "; ".join(f"{op} {f['value']:.4g}" for op, f in whole.items()) + "."
                if whole else "") + marks
    parts = []
    for name, f in c["figures"].items():
        whole, inside = f["whole_run"], f["in_run"]
        if whole is None:
            parts.append(f"{name or 'all'}: no whole-run figure (no scrape before the start or after the end)")
            continue
        text = (f"{name or 'all'}: {whole['value']:.4g} over {whole['interval_s']:.1f} s "
                f"({whole['t0'] - w['start']:+.1f} s to {whole['t1'] - w['end']:+.1f} s around the run)")
        if inside and f["scrapes_inside"] >= 2:
            text += f", {inside['value']:.4g} between the {f['scrapes_inside']} scrapes inside it"
        parts.append(text)
    return (f" Whole run, from the last scrape at or before its start to the first after its end: "
            f"{'; '.join(parts)}.{marks}")


def compared_runs(results: Path) -> dict[Path, set[str]]:
    """The `ybbench compare` pages in results/ (its default place), each with
    the run ids its compare.json names as base or other (a reproduce's, per
    phase too); one that cannot be read is left out. Read once per report."""
    found = {}
    for doc_path in sorted(results.glob("*/compare.json")):
        try:
            doc = run_folder.read_json(doc_path, "compare")
        except UserError:
            continue
        # A reproduce's compare holds one run comparison per phase.
        docs = [doc, *(doc.get("phases") or {}).values()] if isinstance(doc, dict) else []
        found[doc_path.parent / "compare.html"] = {
            t for d in docs if isinstance(d, dict) for t in [d.get("base"), *(d.get("others") or [])]}
    return found


def _run_html(run: dict, charts: list[dict], missing: list[str], tables: list[dict] = (),
              k6_report: str | None = None, compares: list[str] = (), history: str | None = None) -> str:
    s, p, w = run["summary"], run["params"], run["window"]
    e = html.escape
    rows = []
    for op, o in sorted(s.get("ops", {}).items()):
        lat = o.get("latency_ms") or {}
        rows.append("<tr>" + "".join(f"<td>{e(_fmt(x))}</td>" for x in (
            op, o.get("count"), o.get("per_second"), lat.get("p50"), lat.get("p95"), lat.get("p99"),
            lat.get("avg"), lat.get("max"), o.get("errors"))) + "</tr>")
    classes = ", ".join(f"{c}: {n}" for c, n in sorted(s.get("errors_by_class", {}).items())) or "none"
    knobs = "".join(f"<tr><td>{e(k)}</td><td>{e(str(v))}</td></tr>" for k, v in sorted(p.get("knobs", {}).items()))
    out = [
        f'<section id="run-{e(run["testid"])}"><h2>{e(run["testid"])} ({e(str(p.get("workload")))})</h2>',
        f"<p>Window: {_stamp(w['start'])} to {_stamp(w['end'])} ({w['end'] - w['start']:.1f} s, "
        f"params.json started/finished); k6 exit code {e(str(p.get('k6_exit_code')))}.</p>",
        _limits_html(run.get("limits")),
        "<h3>k6 summary (summary.json)</h3><table><tr><th>op</th><th>ops</th><th>ops/s</th><th>p50 ms</th>"
        "<th>p95 ms</th><th>p99 ms</th><th>avg ms</th><th>max ms</th><th>errors</th></tr>",
        *rows, "</table>",
        f"<p>Errors: {e(str(s.get('errors')))} (by SQLSTATE class: {e(classes)}); rows written: "
        f"{e(str(s.get('rows_written')))}; keys missing: {e(str(s.get('keys_missing')))}; dropped iterations: "
        f"{e(str(s.get('dropped_iterations')))}; thresholds failed: "
        f"{e(', '.join(s.get('thresholds_failed', [])) or 'none')}.</p>",
        tpcc.section_html(s),
        f"<h3>Parameters (params.json)</h3><table><tr><th>knob</th><th>value</th></tr>{knobs}</table>",
        _doctor_html(run.get("doctor")),
    ]
    if k6_report:
        out.append(f'<p>k6\'s own HTML report (its web dashboard\'s export): <a href="{e(k6_report)}">'
                   f"{e(k6_report)}</a>.</p>")
    if compares:
        out.append("<p>Compared with other runs (ybbench compare): " + ", ".join(
            f'<a href="{e(c)}">{e(c)}</a>' for c in compares) + ".</p>")
    if history:
        out.append(f'<p>Its series over time, with change points (ybbench history): <a href="{e(history)}">'
                   f"{e(history)}</a>.</p>")
    for c in charts:
        body = (f'<img alt="{e(c["title"])}" src="data:image/png;base64,{c["png"]}">' if "png" in c
                else f'<p class="note">{e(c.get("note", "no curve"))}</p>')
        out.append(f"<figure>{body}<figcaption>{e(c['title'])}. Source: {e(c['source'])}. Window: "
                   f"{_stamp(w['start'])} to {_stamp(w['end'])}.{e(_figures_text(c, w))}</figcaption></figure>")
    out += [_table_html(t, w) for t in tables]
    if missing:
        out.append("<h3>Missing</h3><ul>" + "".join(f"<li>{e(m)}</li>" for m in missing) + "</ul>")
    out.append("</section>")
    return "\n".join(out)


CSS = ("body{font-family:sans-serif;max-width:60em;margin:1em auto}table{border-collapse:collapse}"
       "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}figure{margin:1em 0}"
       "figcaption{font-size:small;color:#444}.note{background:#fff3cd;padding:4px}")


def report(testids: list[str], results: Path, prometheus: str | None, out: Path | None,
           png_dir: Path | None = None) -> Path:
    # A reproduce id stands for its phase runs, with its expected-vs-observed table (experiments/reproduce/expected.py).
    runs, expected_html, expected_doc = expected.for_report(results, testids, load_run)
    prom = None
    if prometheus:
        check_ready("Prometheus", prometheus, "/-/ready")
        prom = Prom(prometheus)
    out = out or results / testids[0] / "report.html"
    if out.suffix != ".html":
        raise UserError(f"--out {out}: expected a .html file")
    if png_dir and png_dir.exists() and not png_dir.is_dir():
        raise UserError(f"--png {png_dir}: exists and is not a folder")
    data = {"format_version": formats.version("report"), "runs": [], "prometheus": prometheus,
            "not_in_this_version": list(NOT_YET)}
    data["expected"] = expected_doc
    sections, pngs = [], {}
    compared = compared_runs(results)
    for run in runs:
        charts, tables = summary_charts(run), []
        if prom:
            pc, missing = prometheus_charts(run, prom)
            tables, table_missing = seed_charts.iostat_table(run, prom)
            charts, missing = charts + pc, missing + table_missing
        else:
            missing = ["Prometheus charts (ops/s, latency avg and p99 over time, CPU per node, SSTable size and "
                       "files, disk IOPS, iostat -mx, block cache hits and misses): no --prometheus given, so "
                       "only the k6 summary is charted"]
        k6_page = run["folder"] / K6_REPORT
        k6_link = os.path.relpath(k6_page, out.parent) if k6_page.is_file() else None
        compares = [os.path.relpath(c, out.parent) for c, ids in compared.items() if run["testid"] in ids]
        in_history = history_link.page_of(results, run["testid"])
        history = os.path.relpath(in_history, out.parent) if in_history else None
        sections.append(_run_html(run, charts, missing, tables, k6_link, compares, history))
        pngs.update({f"{run['testid']}-{c['id']}.png": c["png"] for c in charts if "png" in c})
        data["runs"].append({"testid": run["testid"], "window": run["window"], "missing": missing,
                             "summary": run["summary"], "params": run["params"], "k6_report": k6_link,
                             "compares": compares, **({"doctor": run["doctor"]} if run.get("doctor") else {}),
                             **({"limits": run["limits"]["verdict"]} if run.get("limits") else {}),
                             "charts": [{k: v for k, v in c.items() if k != "png"} for c in charts],
                             "tables": tables})
    page = ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>ybbench report: "
            f"{html.escape(', '.join(testids))}</title><style>{CSS}</style></head><body>"
            f"<h1>ybbench report</h1><p>Runs: {html.escape(', '.join(testids))}. Generated {_stamp(time.time())}. "
            f"Prometheus: {html.escape(prometheus or 'not used')}.</p>"
            + expected_html + "\n".join(sections)
            + ("<h2>Not in this version</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in NOT_YET)
               + "</ul>" if NOT_YET else "")
            + "</body></html>\n")
    for name, b64 in pngs.items() if png_dir else ():
        write_file(png_dir / name, base64.b64decode(b64))
    formats.write(out.with_suffix(".json"), "report", data)
    write_file(out, page)
    return out


def command(testids: list[str], results: str, prometheus: str | None, out: str | None,
            png: str | None = None) -> int:
    path = report(testids, Path(results), prometheus, Path(out) if out else None, Path(png) if png else None)
    print(path)
    return 0
