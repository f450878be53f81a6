"""`ybbench history`: the runs in the history store (core/history_store.py)
as series, each metric's change points from Apache Otava (analysis/otava.py),
and what differed where a change happened. This module computes and writes
history.json; history.html and its charts are report/history_page.py's
(cli.py calls both).

A series is the runs that share workload and knobs (core/history_record.py
series_key), or, with --select, every run matching it (its knobs may then
differ, and a change point says which did). Runs are in the order they
started, or by a label's value (--order-by label:commit).

Metrics, per operation: ops/s (higher is better) and p99 latency (lower is
better), each sent to Otava when every run of the series has it. For each
change point: the runs on either side (Otava's window of the series before
and after it), their means and spread as Otava reports them, the change in
% (from those means), Otava's p-value, and what differs between the last run
before the change and the first after it (knobs, versions, labels). Each
analysed series' change points are also written to the store, in place of
those it had (Grafana's History dashboard draws them).

The gate (--fail-on regression): exit 1 when the newest run of a series
lies after a change point that made a metric worse (ops/s down, p99 up)
and the newest segment (after the metric's last change point) is still
worse than the runs before that change."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ybbench.analysis import otava
from ybbench.core import formats, history_store
from ybbench.core.errors import UserError

KINDS = {"ops_per_s": ("ops/s", 1), "p99_ms": ("p99 ms", -1)}
MIN_RUNS = 3  # fewer, and there is no series to split


def parse_select(given: str | None) -> dict[str, str]:
    """"workload=sql-selects,vus=16,label:commit=abc": keys workload, a knob
    (any case), label:NAME or version:NAME."""
    if not given:
        return {}
    found = {}
    for part in given.split(","):
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--select {given!r}: give KEY=VALUE,... (workload, a knob, label:NAME, version:NAME)")
        found[key.strip()] = value.strip()
    return found


def _value(run: dict, key: str) -> str | None:
    if key == "workload":
        return run["workload"]
    if key.startswith("label:"):
        return run["labels"].get(key[6:])
    if key.startswith("version:"):
        return run["versions"].get(key[8:])
    knobs = {k.upper(): v for k, v in run["knobs"].items()}
    return knobs.get(key.upper())


def series_of(runs: list[dict], select: dict[str, str]) -> list[list[dict]]:
    if select:
        chosen = [r for r in runs if all(_value(r, k) == v for k, v in select.items())]
        return [chosen] if chosen else []
    groups: dict[str, list[dict]] = {}
    for r in runs:
        groups.setdefault(r["series_key"], []).append(r)
    return list(groups.values())


def ordered(runs: list[dict], order_by: str) -> list[dict]:
    if order_by == "time":
        return sorted(runs, key=lambda r: (r["started_unix_s"], r["testid"]))
    if not order_by.startswith("label:"):
        raise UserError(f"--order-by {order_by!r}: time or label:NAME")
    name = order_by[6:]
    missing = [r["testid"] for r in runs if name not in r["labels"]]
    if missing:
        raise UserError(f"--order-by {order_by}: runs without that label: {', '.join(missing[:5])}")
    return sorted(runs, key=lambda r: (r["labels"][name], r["started_unix_s"]))


def metrics_of(runs: list[dict]) -> list[dict]:
    """Each op's ops/s and p99 that every run has, as Otava metrics."""
    ops = sorted(set.intersection(*(set(r["ops"]) for r in runs)))
    found = []
    for op in ops:
        for field, (unit, direction) in KINDS.items():
            values = [r["ops"][op][field] for r in runs]
            if all(v is not None for v in values):
                found.append({"name": f"{op}_{field}", "op": op, "field": field, "unit": unit,
                              "direction": direction, "values": values})
    return found


def differences(before: dict, after: dict) -> dict:
    out = {}
    for part in ("knobs", "versions", "labels"):
        keys = sorted(set(before[part]) | set(after[part]))
        diff = {k: {"before": before[part].get(k), "after": after[part].get(k)}
                for k in keys if before[part].get(k) != after[part].get(k)}
        if diff:
            out[part] = diff
    # What limited each run (the store's cpu column, from its limits.json): what moved with the change.
    limit = [(r.get("cpu") or {}).get("limited_by") for r in (before, after)]
    if limit[0] != limit[1]:
        out["limit"] = {"limited_by": {"before": limit[0], "after": limit[1]}}
    return out


def analyze_series(runs: list[dict], magnitude: float = 0.0) -> dict:
    metrics = metrics_of(runs)
    ids = [r["testid"] for r in runs]
    found = otava.analyze(ids, [otava.Metric(m["name"], m["direction"]) for m in metrics],
                          {m["name"]: m["values"] for m in metrics}, magnitude) if metrics else []
    by_name = {m["name"]: m for m in metrics}
    changes = []
    for cp in found:
        m = by_name[cp.metric]
        cuts = [0] + [c.index for c in found if c.metric == cp.metric] + [len(runs)]
        k = cuts.index(cp.index)
        pct = (cp.mean_after / cp.mean_before - 1) * 100 if cp.mean_before else None
        worse = pct is not None and pct * m["direction"] < 0
        changes.append({
            "metric": cp.metric, "op": m["op"], "field": m["field"], "index": cp.index,
            "first_after": ids[cp.index], "last_before": ids[cp.index - 1],
            "runs_before": ids[cuts[k - 1]:cp.index], "runs_after": ids[cp.index:cuts[k + 1]],
            "mean_before": cp.mean_before, "stddev_before": cp.stddev_before,
            "mean_after": cp.mean_after, "stddev_after": cp.stddev_after,
            "change_percent": pct, "pvalue": cp.pvalue, "regression": worse,
            "differs": differences(runs[cp.index - 1], runs[cp.index]),
        })
    first = runs[0]
    return {
        "workload": first["workload"],
        "knobs": {k: v for k, v in first["knobs"].items() if all(r["knobs"].get(k) == v for r in runs)},
        "runs": [{"testid": r["testid"], "started_unix_s": r["started_unix_s"], "knobs": r["knobs"],
                  "labels": r["labels"], "versions": r["versions"]} for r in runs],
        "metrics": [{k: m[k] for k in ("name", "op", "field", "unit", "direction", "values")} for m in metrics],
        "change_points": changes,
    }


def regressions(series: dict) -> list[dict]:
    """The change points that made a metric worse and that its newest runs
    have not come back from: the last segment's mean (Otava's, after the
    metric's last change point) is still nearer the worse level than the
    one before (past the midpoint of the change). Not "still below the
    old mean": a series back at its old level lands under it about half
    the time by noise alone, and the gate would keep failing after the fix."""
    direction = {m["name"]: m["direction"] for m in series["metrics"]}
    by_metric: dict[str, list[dict]] = {}
    for c in series["change_points"]:
        by_metric.setdefault(c["metric"], []).append(c)
    found = []
    for name, cps in by_metric.items():
        newest = cps[-1]["mean_after"]
        found += [c for c in cps if c["regression"]
                  and (newest - (c["mean_before"] + c["mean_after"]) / 2) * direction[name] < 0]
    return found


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:+.1f}%"


def _differs_text(d: dict) -> str:
    return "; ".join(f"{k} {v['before']} -> {v['after']}" for part in d.values() for k, v in part.items()) or "nothing"


def print_table(doc: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    for s in doc["series"]:
        title = f"{s['workload']} ({len(s['runs'])} runs): {', '.join(f'{k}={v}' for k, v in sorted(s['knobs'].items())) or 'knobs differ'}"
        t = Table(title=title, title_justify="left")
        for col in ("metric", "at run", "runs before/after", "mean before (sd)", "mean after (sd)", "change",
                    "p-value", "what differs"):
            t.add_column(col)
        for c in s["change_points"]:
            t.add_row(c["metric"], f"{c['index'] + 1}: {c['first_after']}", f"{len(c['runs_before'])}/{len(c['runs_after'])}",
                      f"{c['mean_before']:.4g} ({c['stddev_before']:.2g})", f"{c['mean_after']:.4g} ({c['stddev_after']:.2g})",
                      _pct(c["change_percent"]) + (" worse" if c["regression"] else ""), f"{c['pvalue']:.2g}",
                      _differs_text(c["differs"]))
        if not s["change_points"]:
            t.add_row("(none)", "", "", "", "", "", "", "")
        console.print(t)


def series_name(group: list[dict], select: dict[str, str]) -> str:
    """The store's name for an analysed series (its change points' rows):
    the runs' series_key, or the selection that made it."""
    if select:
        return "select:" + ",".join(f"{k}={v}" for k, v in sorted(select.items()))
    return group[0]["series_key"]


def change_point_rows(series: dict, order_by: str, now: float) -> list[dict]:
    """The series' change points as the store keeps them (for Grafana's
    History dashboard: each at the start of the first run after it)."""
    started = {r["testid"]: r["started_unix_s"] for r in series["runs"]}
    return [{"workload": series["workload"], "metric": c["metric"], "op": c["op"], "field": c["field"],
             "testid": c["first_after"], "time_unix_s": started[c["first_after"]],
             "change_percent": c["change_percent"], "pvalue": c["pvalue"], "mean_before": c["mean_before"],
             "mean_after": c["mean_after"], "regression": int(c["regression"]), "order_by": order_by,
             "analysed_unix_s": now} for c in series["change_points"]]


def build(where: str, select: dict[str, str], order_by: str, magnitude: float = 0.0) -> dict:
    now = time.time()
    analyzed = []
    with history_store.Store(where) as store:
        runs = store.runs()
        for group in series_of(runs, select):
            group = ordered(group, order_by)
            if len(group) >= MIN_RUNS:
                series = analyze_series(group, magnitude)
                analyzed.append(series)
                # Replaced whole: a series re-analysed keeps only what Otava finds now.
                store.replace_change_points(series_name(group, select), change_point_rows(series, order_by, now))
    return {
        "format_version": formats.version("history"),
        "store": history_store.shown(where),
        "select": select,
        "order_by": order_by,
        "generated_unix_s": now,
        "otava": {"version": otava.VERSION, "p_value": otava.P_VALUE, "window": otava.WINDOW,
                  "min_change": magnitude},
        "series": analyzed,
    }


def parse_min_change(text: str | None) -> float:
    """--min-change N% (or N): the smallest change kept, as Otava's -M
    fraction; 0 (Otava's default) when not given."""
    if text is None:
        return 0.0
    try:
        pct = float(text.strip().removesuffix("%"))
    except ValueError:
        raise UserError(f"--min-change {text!r}: a percentage, e.g. 10%") from None
    if not 0 <= pct < 100:
        raise UserError(f"--min-change {text!r}: from 0% to under 100%")
    return pct / 100


def analyse(results: str, history: str | None, select: str | None, order_by: str, fail_on: str | None,
            min_change: str | None = None) -> dict | None:
    """history.json's document (the store's change points replaced as it
    goes); None when --fail-on has no series to judge yet (said: the gate
    passes)."""
    if fail_on not in (None, "regression"):
        raise UserError(f"--fail-on {fail_on!r}: regression")
    magnitude = parse_min_change(min_change)
    where = history_store.location(Path(results), history)
    doc = build(where, parse_select(select), order_by, magnitude)
    if not doc["series"] and fail_on:
        # Nothing to judge yet (a CI job's first runs): the gate passes, saying so.
        print(f"history: no series of {MIN_RUNS} runs or more yet in {history_store.shown(where)}: no regression")
        return None
    if not doc["series"]:
        raise UserError(f"history {history_store.shown(where)}: no series of {MIN_RUNS} runs or more"
                        + (f" matching --select {select}" if select else ""))
    return doc


def folder_of(results: str, out: str | None) -> Path:
    """Where history.json and history.html go: --out, else <results>/history."""
    return Path(out) if out else Path(results) / "history"


def write(doc: dict, folder: Path) -> None:
    formats.write(folder / "history.json", "history", doc)


def finish(doc: dict, folder: Path, fail_on: str | None) -> int:
    """The table, where the page is, and the gate: exit 1 with --fail-on
    regression when a series has one, else 0."""
    print_table(doc)
    print(f"history: {folder / 'history.html'}")
    if fail_on == "regression":
        bad = [(s, c) for s in doc["series"] for c in regressions(s)]
        for s, c in bad:
            print(f"regression: {s['workload']} {c['op']} {KINDS[c['field']][0]} {_pct(c['change_percent'])} "
                  f"from run {c['first_after']} (p {c['pvalue']:.2g}; {_differs_text(c['differs'])})", file=sys.stderr)
        return 1 if bad else 0
    return 0


def import_command(results: str, history: str | None, folders: list[str]) -> int:
    from ybbench.core import history_record

    where = history_store.location(Path(results), history)
    added = kept = 0
    with history_store.Store(where) as store:
        for root in folders or [results]:
            for folder in history_record.run_folders(Path(root)):
                if store.record(history_record.figures(folder)):
                    added += 1
                else:
                    kept += 1
    print(f"history import: {added} runs added, {kept} already there: {history_store.shown(where)}")
    return 0
