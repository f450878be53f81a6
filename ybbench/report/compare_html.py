"""compare.html's table of two (or more) runs: one row per op and other run,
every number with the resolution of the series it rests on, the verdicts
marked (class verdict-<word>, coloured by STYLE)."""

from __future__ import annotations

import html
import math

from ybbench.analysis.compare import spread_text

STYLE = ("table.compare{border-collapse:collapse;font:13px sans-serif;margin:0.5em 0}"
         "table.compare th,table.compare td{border:1px solid #ccc;padding:3px 6px;text-align:right}"
         "table.compare td.text,table.compare th.text{text-align:left}"
         ".verdict-faster{background:#d9f2d9}.verdict-slower{background:#f8d0d0}"
         ".verdict-same{background:#eee}.verdict-none{background:#fcefc7}"
         ".gate-fail{color:#a00;font-weight:bold}.gate-pass{color:#070}")


def verdict_class(verdict: str) -> str:
    """faster, slower (p99: higher is slower, lower faster), same, none."""
    if verdict in ("faster", "lower"):
        return "verdict-faster"
    if verdict in ("slower", "higher"):
        return "verdict-slower"
    return "verdict-same" if verdict == "no significant difference" else "verdict-none"


def _f(v, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def resolution(s: dict) -> str:
    """The resolution of the series the ratio rests on: "1 s", "5 s", "none" (no series: no interval)."""
    r = s.get("resolution_s") or {}
    b, o = r.get("base"), r.get("other")
    if b is None and o is None:
        return "none"
    return f"{b} s" if b == o else f"{b or '-'} s / {o or '-'} s"


def rests_on(s: dict) -> str:
    """The run-to-run spread behind the interval, in words (a format 1 file: one run's seconds)."""
    if "spread" not in s:
        return "the seconds of one run a side (format 1)"
    return spread_text(s)


def table(doc: dict) -> str:
    e = html.escape
    pct = f"{100 * (1 - doc['alpha']):g}%"
    head = ["op", "base", "other", "runs base+other", "series resolution", "base ops/s", "other ops/s",
            "ratio other/base", f"{pct} interval", "verdict", "what the interval rests on", "p50 ms base/other",
            "p95 ms base/other", "p99 ms base/other", "p99 ratio (runs)", "p99 verdict"]
    text = {0, 1, 2, 3, 4, 9, 10, 15}
    rows = []
    for c in doc["comparisons"]:
        for op, s in c["ops"].items():
            res = resolution(s)
            lat = s["latency_ms"]
            q = s.get("p99") or {}
            n = s.get("runs") or {"base": 1, "other": 1}
            cells = [
                (op, ""), (c["base"], ""), (c["other"], ""), (f"{n['base']} + {n['other']}", ""), (res, ""),
                (_f(s["base_ops_per_s"], ".1f"), ""),
                (_f(s["other_ops_per_s"], ".1f"), ""), (_f(s["ratio"], ".3f"), ""),
                (f"[{_f(s['low'], '.3f')}, {_f(s['high'], '.3f')}]", ""),
                (s["verdict"], verdict_class(s["verdict"])),
                (rests_on(s), ""),
                *((f"{_f(lat[p]['base'], '.3f')} / {_f(lat[p]['other'], '.3f')}", "") for p in ("p50", "p95", "p99")),
                (f"{_f(q.get('ratio'), '.3f')} [{_f(q.get('low'), '.3f')}, {_f(q.get('high'), '.3f')}]" if q else "-", ""),
                (q.get("verdict", "-"), verdict_class(q["verdict"]) if q else ""),
            ]
            tds = "".join(f'<td class="{" ".join(x for x in (cls, "text" if i in text else "") if x)}">{e(v)}</td>'
                          for i, (v, cls) in enumerate(cells))
            rows.append(f"<tr>{tds}</tr>")
    ths = "".join(f'<th class="text">{e(h)}</th>' if i in text else f"<th>{e(h)}</th>" for i, h in enumerate(head))
    notes = []
    for c in doc["comparisons"]:
        notes += [f'<p class="warning"><b>Warning:</b> {e(w)}</p>' for w in c.get("warnings", [])]
        if c["differences"]:
            notes.append(f"<p>{e(c['other'])} differs from {e(c['base'])} in: " + e("; ".join(
                f"{k} {v['base']} -> {v['other']}" if k != "knobs" else
                "knobs " + ", ".join(f"{n} {d['base']} -> {d['other']}" for n, d in v.items())
                for k, v in c["differences"].items())) + "</p>")
    caption = ("<caption>ops/s: each run's mean over its measured window at the resolution shown (1 s: the runs' "
               "own per-second.json; 5 s: k6's default push to Prometheus; none: count over k6's duration), a "
               "side's the geometric mean of its runs'; the interval and verdict count runs (one run a side: "
               "only with the history's run-to-run spread); latency p50/p95/p99 over each whole run</caption>")
    return f'<table class="compare">{caption}<thead><tr>{ths}</tr></thead><tbody>{"".join(rows)}</tbody></table>' + "".join(notes)


def gate(doc: dict) -> str:
    """The --fail-on gate's outcome, each rule's finding on a line."""
    g = doc.get("gate")
    if not g:
        return ""
    cls = "gate-fail" if g["failed"] else "gate-pass" if not g["undecided"] else "verdict-none"
    items = "".join(f"<li>{html.escape(m)}</li>" for m in g["messages"])
    return f'<div class="{cls}"><p>Gate {html.escape(", ".join(g["rules"]))}:</p><ul>{items}</ul></div>'
