"""history.html: each series' metrics over its runs (matplotlib, inline PNG
as the report's: report/charts.py), Otava's change points as red lines
before the first run after each, and each segment's mean as a dashed level;
drawn from analysis/history.py's history.json document."""

from __future__ import annotations

import base64
import html
import time
from pathlib import Path

from ybbench.core.files import write_file
from ybbench.report.charts import over_time_png
from ybbench.report.page import CSS


def segment_means(values: list[float], cuts: list[int]) -> list[tuple[int, int, float]]:
    """(first, end, mean) of each run of values between change points."""
    edges = [0, *sorted(cuts), len(values)]
    return [(a, b, sum(values[a:b]) / (b - a)) for a, b in zip(edges, edges[1:]) if b > a]


def chart(series: dict, metric: dict) -> str:
    from matplotlib.figure import Figure

    cuts = [c["index"] for c in series["change_points"] if c["metric"] == metric["name"]]
    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    x = list(range(1, len(metric["values"]) + 1))
    ax.plot(x, metric["values"], marker="o", label=metric["name"])
    for i, (a, b, mean) in enumerate(segment_means(metric["values"], cuts)):
        ax.hlines(mean, a + 0.6, b + 0.4, colors="grey", linestyles="--", label="segment mean" if i == 0 else None)
    for i, cut in enumerate(cuts):
        ax.axvline(cut + 0.5, color="#c44e52", label="change point (Otava)" if i == 0 else None)
    return over_time_png(fig, ax, "run, in the series' order", metric["unit"],
                         f"{series['workload']}: {metric['op']} {metric['unit']}")


def charts(doc: dict) -> dict[str, str]:
    """Each chart's name (series number and metric) and base64 PNG."""
    return {f"s{n}-{m['name']}": chart(s, m) for n, s in enumerate(doc["series"], start=1) for m in s["metrics"]}


def _cp_rows(s: dict) -> str:
    e = html.escape
    rows = []
    for c in s["change_points"]:
        differs = "; ".join(f"{part} {k}: {v['before']} &rarr; {v['after']}"
                            for part, d in c["differs"].items() for k, v in d.items()) or "nothing"
        pct = "n/a" if c["change_percent"] is None else f"{c['change_percent']:+.1f}%"
        rows.append(f"<tr><td>{e(c['metric'])}</td><td>{c['index'] + 1}: {e(c['first_after'])}</td>"
                    f"<td>{len(c['runs_before'])} / {len(c['runs_after'])}</td>"
                    f"<td>{c['mean_before']:.4g} &plusmn; {c['stddev_before']:.2g}</td>"
                    f"<td>{c['mean_after']:.4g} &plusmn; {c['stddev_after']:.2g}</td>"
                    f"<td>{pct}{' <b>worse</b>' if c['regression'] else ''}</td><td>{c['pvalue']:.2g}</td>"
                    f"<td style='text-align:left'>{e(differs) if differs == 'nothing' else differs}</td></tr>")
    return "".join(rows) or "<tr><td colspan=8>no change point</td></tr>"


def page(doc: dict, pngs: dict[str, str]) -> str:
    e = html.escape
    o = doc["otava"]
    floor = f", changes under {o['min_change'] * 100:g}% passed over (--min-change)" if o.get("min_change") else ""
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>ybbench history</title><style>{CSS}</style>"
             f"</head><body><h1>ybbench history</h1><p>Store: {e(doc['store'])}. Ordered by {e(doc['order_by'])}. "
             f"Generated {time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime(doc['generated_unix_s']))}.</p>"
             f"<p>Change points: Apache Otava {e(o['version'])} (E-Divisive means, then a t-test: p-value at most "
             f"{o['p_value']:g}, window {o['window']} runs"
             f"{floor}). Means and spreads are Otava's, over the runs between "
             "change points; the change in % is from those means.</p>"]
    for n, s in enumerate(doc["series"], start=1):
        knobs = ", ".join(f"{k}={v}" for k, v in sorted(s["knobs"].items()))
        parts.append(f"<h2>{n}. {e(s['workload'])}: {len(s['runs'])} runs</h2><p>Shared knobs: {e(knobs)}</p>"
                     "<table><tr><th>metric</th><th>first run after</th><th>runs before / after</th>"
                     "<th>mean before</th><th>mean after</th><th>change</th><th>p-value</th><th>what differs</th></tr>"
                     f"{_cp_rows(s)}</table>")
        for m in s["metrics"]:
            parts.append(f"<figure><img src='data:image/png;base64,{pngs[f's{n}-' + m['name']]}' "
                         f"alt='{e(m['name'])}'><figcaption>{e(m['name'])} over the series' runs</figcaption></figure>")
        parts.append("<details><summary>Runs</summary><ol>" + "".join(
            f"<li>{e(r['testid'])} {e(json_compact(r['labels']))}</li>" for r in s["runs"]) + "</ol></details>")
    parts.append("</body></html>")
    return "".join(parts)


def json_compact(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(d.items()))


def write(folder: Path, doc: dict, pngs: dict[str, str], png_dir: str | None) -> None:
    """history.html in the folder; with --png each chart as DIR/history-<chart>.png."""
    write_file(folder / "history.html", page(doc, pngs))
    for name, b64 in pngs.items() if png_dir else ():
        write_file(Path(png_dir) / f"history-{name}.png", base64.b64decode(b64))
