"""compare.html and the charts of `ybbench compare`, drawn from what
analysis/compare.py found (its Comparison): for runs (and reproduces, one
section per phase) the table (compare_html.py) and each op's ops/s and p99
and each node's CPU busy, every run overlaid at its start; for series
(analysis/compare_series.py) the table and one chart per comparison: both
sweeps' ops/s per step, the designs' changes of effect with intervals, or
both USL fits. Each chart is a base64 PNG, inline and for --png."""

from __future__ import annotations

import html

import numpy as np

from ybbench.analysis import compare_series
from ybbench.analysis.compare import Comparison
from ybbench.core import usl
from ybbench.report import compare_html
from ybbench.report.charts import over_time_png, png


def _overlay(title: str, ylabel: str, lines: list[tuple[str, dict, float]], step_plot: bool = False) -> str:
    """Lines (label, {t, v[, partial]}, the run's start), each against seconds since its run's start;
    points marked partial (their window reaches outside the run) left out."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    for label, s, start in lines:
        keep = [i for i in range(len(s["t"])) if not (s.get("partial") or [False] * len(s["t"]))[i]]
        x, y = [s["t"][i] - start for i in keep], [s["v"][i] for i in keep]
        if step_plot:
            ax.step(x, y, where="pre", marker=".", label=label)
        else:
            ax.plot(x, y, marker=".", label=label)
    return over_time_png(fig, ax, "seconds since the run started (each run its own start)", ylabel, title)


def overlay_png(c: dict) -> str:
    """One of analysis/compare.py's overlay_charts, drawn."""
    lines = [(label, s, c["starts"][label]) for label, s in c["lines"].items()]
    return _overlay(c["title"], c["ylabel"], lines, c["step_plot"])


def section(doc: dict, charts: list[dict], title: str = "") -> str:
    """One run comparison's table and overlay charts (a reproduce has one per phase); each chart with its png."""
    e = html.escape
    figs = [f'<figure><img alt="{e(c["title"])}" src="data:image/png;base64,{c["png"]}"><figcaption>{e(c["title"])}. '
            f"Source: {e(c['source'])}.</figcaption></figure>" for c in charts]
    head = f"<h2>{e(title)}</h2>" if title else ""
    return head + compare_html.table(doc) + "".join(figs)


def page(doc: dict, sections: list[str]) -> str:
    e = html.escape
    first = next(iter(doc["phases"].values())) if doc.get("kind") == "reproduce" else doc
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>ybbench compare</title>"
            f"<style>{compare_html.STYLE}</style></head><body>"
            f"<h1>ybbench compare</h1><p>Base {e(doc['base'])}; others {e(', '.join(doc['others']))}. Statistics "
            f"(alpha {first['alpha']:g}): {e(first['method'])}.</p>"
            + compare_html.gate(doc) + "".join(sections) + "</body></html>\n")


def series_chart(c: dict) -> str | None:
    """One comparison of two series (analysis/compare_series.py), drawn."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.4))
    ax = fig.add_subplot()
    if c["kind"] == "sweep":
        key = c["key"]
        for sid, s in c["sides"].items():
            xs = [st[key] for st in s["steps"]]
            ax.plot(xs, [st["ops_per_s"] for st in s["steps"]], marker="o", label=sid)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(key)
        ax.set_ylabel("ops/s (each step's summary.json)")
        ax.set_title("ops/s per step, both sweeps", fontsize=10)
    elif c["kind"] == "design":
        names = [r["name"] for r in c["rows"]]
        ch = [r["change"] for r in c["rows"]]
        err = [0 if r["low"] is None else r["change"] - r["low"] for r in c["rows"]]
        ax.bar(range(len(names)), ch, yerr=err, capsize=4)
        ax.axhline(0, color="grey", linewidth=0.8)
        ax.set_xticks(range(len(names)), names)
        ax.set_ylabel(f"change of q ({c['response']})")
        ax.set_title(f"effects: {c['other']} − {c['base']}, with intervals", fontsize=10)
    else:
        peaks = [x for x in (c["rows"]["n_star"]["base"], c["rows"]["n_star"]["other"]) if x]
        top = max([f["max_nodes"] for f in c["fits"].values()] + [1.2 * x for x in peaks])
        grid = np.linspace(1, min(top, 256), 100)
        for sid, f in c["fits"].items():
            ax.plot(grid, usl.model(grid, f["lambda"]["value"], f["sigma"]["value"], f["kappa"]["value"]), label=sid)
        ax.set_xlabel("nodes (N)")
        ax.set_ylabel("fitted throughput")
        ax.set_title("USL fits, both series", fontsize=10)
    if c["kind"] != "design":
        ax.legend(fontsize=8)
    return png(fig)


def series_page(doc: dict, pngs: list[str]) -> str:
    """pngs: each comparison's chart (series_chart), in order."""
    e = html.escape
    figs = "".join(f'<figure><img alt="{e(c["base"])} against {e(c["other"])}" '
                   f'src="data:image/png;base64,{b64}"></figure>' for c, b64 in zip(doc["comparisons"], pngs))
    return ("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>ybbench compare</title></head><body>"
            f"<h1>ybbench compare: {e(doc['kind'])}s</h1><p>Base {e(doc['base'])}; others "
            f"{e(', '.join(doc['others']))}. Method: {e(doc['method'])}; alpha {doc['alpha']:g}.</p>"
            f"<pre>{e(compare_series.table(doc))}</pre>{figs}</body></html>\n")


def render(c: Comparison) -> tuple[str, dict[str, str]]:
    """compare.html and each chart's --png file name and base64 PNG."""
    if c.series:
        pngs = [series_chart(x) for x in c.doc["comparisons"]]
        return series_page(c.doc, pngs), {f"{c.folder.name}-{x['other']}.png": b64
                                          for x, b64 in zip(c.doc["comparisons"], pngs)}
    body, pngs = [], {}
    for title, d in c.parts.items():
        charts = [{**x, "png": overlay_png(x)} for x in c.charts[title]]
        body.append(section(d, charts, title))
        prefix = f"{c.folder.name}-{title.removeprefix('phase ')}-" if title else f"{c.folder.name}-"
        pngs.update({f"{prefix}{x['id']}.png": x["png"] for x in charts})
    return page(c.doc, body), pngs
