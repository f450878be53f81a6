"""`ybbench compare BASE OTHER [OTHER...]`: did the change make it faster?

A side is a group of runs: a run id, run ids separated by commas, or an
`ybbench ab` id alone (its base's and other's runs, analysis/compare_groups.py).
Per operation present in every run of both, each OTHER against BASE:
- each run's throughput, the mean ops/s over its measured window (its
  warm-up seconds, params.json warmup_s, left out): when every run compared
  has the op in its per-second.json (written by the run itself:
  core/per_second.py), from its count in each whole second (Prometheus
  not needed); else with --prometheus, from k6's counter
  k6_iterations_total{testid, op} read at every whole second inside the
  run's window, differenced (seconds before k6's first push count 0 ops);
  without either, summary.json's ops/s;
- each run's p99 over the same seconds from its per-second histograms
  (else the run's latency figure below);
- latency p50, p95, p99: with --prometheus from k6's native histogram over
  the run's window (core/latency.py); without, summary.json's;
- the ratio OTHER/BASE, its interval and the verdict from the runs' values,
  the run the unit (core/run_stats.py): Welch's t with two or more runs a
  side; with one run on a side, the run-to-run spread of earlier runs of
  the same series in the history store, or no verdict.
What differs between the runs (workload, knobs, k6 exit code) is listed;
different workloads are refused unless --allow-different-workloads.
Output: a table on stdout; compare.json and compare.html in a new folder
(--out, default <results>/compare-<time>), written whole or not at all.
This module computes compare.json (analyse) and writes the folder (write);
compare.html and the charts are drawn in between, by report/compare_page.py
(cli.py calls the three).
Ids that name series (sweeps, designs, scale fits) go to compare_series.py;
two `ybbench reproduce` ids are compared phase by phase, each phase as a run.
"""

from __future__ import annotations

import base64
import math
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from ybbench.analysis import compare_gate, compare_groups, limits
from ybbench.core import formats, history_store, latency, run_folder, run_stats
from ybbench.core import per_second as run_series
from ybbench.core.catalog import TESTID
from ybbench.core.errors import UserError
from ybbench.core.files import staged_dir, write_file
from ybbench.core.prom import Prom, k6_range, labelled_series, prom_queries, window_step
from ybbench.core.services import check_ready

NO_SERIES = ("no verdict: a per-second series is needed (per-second.json, written by runs on a k6 with our Go "
             "module; or --prometheus, and runs made with --prometheus)")


def counter(testid: str, op: str) -> str:
    return f'sum(k6_iterations_total{{testid="{testid}", op="{op}"}})'


def push_interval(prom: Prom, testid: str, op: str, start: float, end: float) -> float | None:
    """The spacing of k6's pushes of the op's counter (median), or None with fewer than 2."""
    span = max(1, math.ceil(end - start) + 2)
    got = prom.instant(f'k6_iterations_total{{testid="{testid}", op="{op}"}}[{span}s]', end + 1)
    spacing = [float(b[0]) - float(a[0]) for s in got for a, b in zip(s["values"], s["values"][1:])]
    return statistics.median(spacing) if spacing else None


def per_second(prom: Prom, testid: str, op: str, start: float, end: float) -> dict | None:
    """The op's ops/s in each whole-second step inside [start, end]: the
    counter at t0 = ceil(start), t0 + s, ... up to floor(end), differenced
    and divided by s (s = 1, or k6's push interval rounded when it pushed
    less often: per-second differences of a 5 s push would be 0, 0, 0, 0
    and 5 s of ops). None when Prometheus has no sample of it."""
    spacing = push_interval(prom, testid, op, start, end)
    if spacing is None:
        return None
    step = max(1, round(spacing))
    t0 = math.ceil(start)
    steps = (math.floor(end) - t0) // step
    if steps < 1:
        return {"step_s": step, "t": [], "v": [], "t0": t0, "t1": t0, "ops": 0.0, "query": counter(testid, op)}
    t1 = t0 + steps * step
    got = prom.range(counter(testid, op), t0, t1, step)
    at = {round(float(t)): float(v) for t, v in got[0]["values"]} if got else {}
    values, last = [], 0.0
    for i in range(steps + 1):
        # Before k6's first push there is no sample: the counter is 0 then.
        last = at.get(t0 + i * step, last if at and t0 + i * step > min(at) else 0.0)
        values.append(last)
    rates = [(b - a) / step for a, b in zip(values, values[1:])]
    return {"step_s": step, "t": [t0 + (i + 1) * step for i in range(steps)], "v": rates, "t0": t0, "t1": t1,
            "ops": values[-1] - values[0], "query": counter(testid, op)}


def differences(base: run_folder.Run, other: run_folder.Run) -> dict:
    out = {}
    for key in ("workload", "k6_exit_code"):
        if base.params.get(key) != other.params.get(key):
            out[key] = {"base": base.params.get(key), "other": other.params.get(key)}
    kb, ko = base.shown_knobs, other.shown_knobs
    knobs = {k: {"base": kb.get(k), "other": ko.get(k)} for k in sorted(set(kb) | set(ko)) if kb.get(k) != ko.get(k)}
    if knobs:
        out["knobs"] = knobs
    return out


def _latency(run: run_folder.Run, op: str, prom: Prom | None) -> dict:
    if prom:
        start, end = run.window
        got = latency.from_prometheus(prom.url, run.testid, op, start, end)
        if got:
            return {p: got[p] for p in ("p50", "p95", "p99")} | {
                "source": "Prometheus: histogram_quantile of k6_iteration_duration_seconds over the run's window"}
    lat = run.summary["ops"][op].get("latency_ms") or {}
    return {p: lat.get(p) for p in ("p50", "p95", "p99")} | {"source": f"summary.json of {run.testid}"}


def warmup_of(run: run_folder.Run) -> float:
    """The seconds at the run's start left out of its measured window (params.json warmup_s; 0 without)."""
    return float(run.params.get("warmup_s") or 0)


def _measured(s: dict, cut: float) -> dict:
    """The per-second series without the seconds that start before `cut` (the warm-up)."""
    keep = [i for i, t in enumerate(s["t"]) if t - s["step_s"] >= cut]
    t, v = [s["t"][i] for i in keep], [s["v"][i] for i in keep]
    return {**s, "t": t, "v": v, "t0": t[0] - s["step_s"] if t else s["t1"], "ops": sum(v) * s["step_s"]}


def _throughput(run: run_folder.Run, op: str, prom: Prom | None, own: dict | None = None) -> dict:
    """own: the run's per-second.json, when every run compared has the op in theirs."""
    o = run.summary["ops"][op]
    out = {"summary": {"count": o.get("count"), "per_second": o.get("per_second"),
                       "duration_s": run.summary.get("duration_s")}}
    warm = warmup_of(run)
    left_out = f"; its first {warm:g} s (warm-up) left out" if warm else ""
    if own is not None:
        s = run_series.throughput(own, op)
        if warm:
            s = _measured(s, run.window[0] + warm)
        out["series"] = {k: s[k] for k in ("step_s", "t", "v", "t0", "t1", "ops")} | {
            "file": f"{run.testid}/{run_series.FILE}"}
        out["mean_ops_per_s"] = sum(s["v"]) / len(s["v"]) if s["v"] else None
        out["resolution_s"] = 1
        out["source"] = (f"{run_series.FILE} of {run.testid}: the op's count in each whole second from {s['t0']} to "
                         f"{s['t1']} (its first and last seconds, partial, left out{left_out}), written by the run")
        return out
    if prom:
        start, end = run.window
        series = per_second(prom, run.testid, op, start + warm, end)
        if series:
            out["series"] = series
            out["resolution_s"] = series["step_s"]
            out["mean_ops_per_s"] = sum(series["v"]) / len(series["v"]) if series["v"] else None
            out["source"] = (f"Prometheus: {series['query']} at every {series['step_s']} s from "
                             f"{series['t0']} to {series['t1']} (whole seconds inside the run's window{left_out}), "
                             "differenced")
            return out
        out["missing"] = f"Prometheus has no k6_iterations_total for testid {run.testid}, op {op}"
    out["mean_ops_per_s"] = o.get("per_second")
    out["resolution_s"] = None
    out["source"] = f"summary.json of {run.testid} (count / k6's test duration{'; warm-up not left out' if warm else ''})"
    return out


def _run_p99(run: run_folder.Run, op: str, own: dict | None, latency_ms: dict) -> tuple[float | None, str]:
    """The run's p99 over its measured window: from its per-second
    histograms (the seconds its throughput series holds), else the
    latency figure read for the run (Prometheus or summary.json)."""
    if own is not None and own["ops"].get(op):
        s = run_series.throughput(own, op)
        cut = run.window[0] + warmup_of(run) if warmup_of(run) else -math.inf
        first = max(s["t0"], math.ceil(cut)) if cut > -math.inf else s["t0"]
        got = run_series.quantile(own, run_series.buckets_of(own, op, first, s["t1"]), 0.99)
        if got is not None:
            return got, f"{run_series.FILE}: the histograms of seconds {first} to {s['t1']}, summed"
    return latency_ms.get("p99"), latency_ms.get("source", "")


def over_time(run: run_folder.Run, prom: Prom, rate_chart=None) -> dict:
    """The run's p99 per op (k6's native histogram) and CPU busy per node
    (node_exporter), over its window, as `ybbench report` computes them;
    CPU points whose rate window reaches outside the run are marked partial.
    rate_chart: the report's (report/seed_charts.py rate_chart), handed down
    by cli.py, the layer above both; without it, the p99 alone."""
    start, end = run.window
    step = window_step(start, end)
    out = {}
    rng = k6_range(prom, run.testid, start, end, step)
    if rng:
        q = prom_queries(run.testid, rng)["latency_p99_ms"]
        data = labelled_series(prom.range(q, start, end, step), "op")
        if data:
            out["p99_ms"] = {"query": q, "step": step, "data": data}
    if rate_chart is None:
        return out
    cpu, _ = rate_chart("cpu_cores_busy", {"testid": run.testid, "window": {"start": start, "end": end}}, prom, step)
    if cpu["data"]:
        out["cpu_cores_busy"] = {"query": cpu["queries"][""], "step": step, "data": cpu["data"],
                                 "curve": cpu["curve"]}
    return out


def _check_pair(base: run_folder.Run, o: run_folder.Run, allow_different: bool) -> None:
    if base.params.get("workload") != o.params.get("workload") and not allow_different:
        raise UserError(f"runs {base.testid} ({base.params.get('workload')}) and {o.testid} "
                        f"({o.params.get('workload')}) ran different workloads; --allow-different-workloads "
                        "if that is meant")
    if not set(base.summary["ops"]) & set(o.summary["ops"]):
        raise UserError(f"runs {base.testid} (ops: {', '.join(sorted(base.summary['ops']))}) and {o.testid} "
                        f"(ops: {', '.join(sorted(o.summary['ops']))}) have no operation in common")


def compare_runs(results: Path, base_id: str | compare_groups.Group, other_ids: list, prometheus: str | None,
                 alpha: float, allow_different: bool, where: dict[str, Path] | None = None,
                 history: compare_groups.History | None = None, rate_chart=None) -> dict:
    """Each other group of runs against the base group, per op in all of
    their runs. A plain id is a group of one. where: the folder that holds a
    run, when not `results` (a reproduce's phases); history: the store whose
    earlier runs give a side of one run its run-to-run spread; rate_chart:
    over_time's, with --prometheus."""
    history = history or compare_groups.History(None)
    if not 0 < alpha < 1:
        raise UserError(f"--alpha {alpha}: between 0 and 1")
    sides = [g if isinstance(g, compare_groups.Group) else compare_groups.Group(g, [g], results)
             for g in [base_id, *other_ids]]
    runs: dict[str, run_folder.Run] = {}
    for g in sides:
        for t in g.runs:
            runs[t] = run_folder.load((where or {}).get(t, g.where), t)
    for r in runs.values():
        if not isinstance(r.summary.get("ops"), dict) or not r.summary["ops"]:
            raise UserError(f"run {r.testid}: summary.json has no ops")
        r.window  # noqa: B018 - a run without start/finish is an error here, before any output
    base_g, other_gs = sides[0], sides[1:]
    first = runs[base_g.runs[0]]
    for g in sides:
        for t in g.runs:
            if t != first.testid:
                _check_pair(first, runs[t], allow_different)
    prom = None
    if prometheus:
        check_ready("Prometheus", prometheus, "/-/ready")
        prom = Prom(prometheus)
    own = {t: run_series.load(r.folder) for t, r in runs.items()}

    def ops_of(g: compare_groups.Group) -> set[str]:
        return set.intersection(*(set(runs[t].summary["ops"]) for t in g.runs))

    compared = {g.label: ops_of(base_g) & ops_of(g) for g in other_gs}
    for g in other_gs:
        if not compared[g.label]:
            raise UserError(f"{base_g.label} and {g.label} have no operation in every run of both")
    wanted = set().union(*compared.values())
    doc = {"base": base_g.label, "others": [g.label for g in other_gs], "groups": {g.label: g.runs for g in sides},
           "prometheus": prometheus, "alpha": alpha, "method": STATISTICS, "history": history.shown, "runs": {},
           "comparisons": []}
    for t, r in runs.items():
        start, end = r.window
        doc["runs"][t] = {"workload": r.params.get("workload"), "window": {"start": start, "end": end},
                          "warmup_s": warmup_of(r), "k6_exit_code": r.params.get("k6_exit_code"),
                          "knobs": r.shown_knobs, "ops": {}, "limited_by": limits.verdict_of(r.folder)}
        for op in sorted(wanted & set(r.summary["ops"])):
            # Every run's own 1 s series, or none of them: one resolution for all.
            mine = own[t] if all(own[x] and own[x]["ops"].get(op) for x in runs if op in runs[x].summary["ops"]) \
                else None
            lat = _latency(r, op, prom)
            p99, p99_source = _run_p99(r, op, mine, lat)
            doc["runs"][t]["ops"][op] = {"throughput": _throughput(r, op, prom, mine), "latency_ms": lat,
                                         "p99_ms": p99, "p99_source": p99_source}
        if prom:
            doc["runs"][t]["over_time"] = over_time(r, prom, rate_chart)
    for g in other_gs:
        ops = {}
        for op in sorted(compared[g.label]):
            ops[op] = _op_stat(doc, runs, base_g, g, op, alpha, history)
        doc["comparisons"].append({"base": base_g.label, "other": g.label, "base_runs": base_g.runs,
                                   "other_runs": g.runs, "differences": differences(first, runs[g.runs[0]]),
                                   "ops": ops, "warnings": limit_warnings(doc["runs"], base_g, g)})
    return doc


def limit_warnings(figures: dict, base_g, g) -> list[str]:
    """A side whose runs the client limited measures the client, not the
    database (analysis/limits.py); and a side whose runs were limited by
    different resources, or not analysed, is said."""
    out = []
    for side in (base_g, g):
        limited = {t: (figures[t].get("limited_by") or {}).get("limit") for t in side.runs}
        client = sorted(t for t, lim in limited.items() if lim == "client")
        if client:
            out.append(f"{side.label}: {', '.join(client)} limited by the client: this comparison measures the "
                       "client, not the database")
        if len(set(limited.values())) > 1:
            out.append(f"{side.label}: its runs had different limits (" + ", ".join(
                f"{t} {lim or 'not analysed'}" for t, lim in sorted(limited.items())) + ")")
    return out


STATISTICS = ("the run is the unit: one value per run (mean ops/s over its measured window; p99 over it), "
              "compared on the log scale (core/run_stats.py): with two or more runs a side, " + run_stats.WELCH +
              "; with one run on a side, " + run_stats.POOLED + "; no verdict without " +
              f"{run_stats.MIN_POOLED_DF} degrees of freedom of run-to-run spread")


def _op_stat(doc: dict, runs: dict, base_g, g, op: str, alpha: float, history: compare_groups.History) -> dict:
    fig = doc["runs"]
    tb = [fig[t]["ops"][op]["throughput"] for t in base_g.runs]
    to = [fig[t]["ops"][op]["throughput"] for t in g.runs]
    vb, vo = [x["mean_ops_per_s"] for x in tb], [x["mean_ops_per_s"] for x in to]
    single = len(vb) < 2 or len(vo) < 2
    keys = {compare_groups.series_key(runs[t]) for t in [*base_g.runs, *g.runs]}
    exclude = set(base_g.runs) | set(g.runs)

    def spread(field: str):
        if not single:
            return None, None
        return history.spread(keys, exclude, op, field)

    hist, why = spread("ops_per_s")
    stat = run_stats.compare(vb, vo, alpha, hist)
    if why and stat["verdict"].startswith("no verdict"):
        stat["history_note"] = why
    stat["values"] = {"base": vb, "other": vo}
    stat["base_ops_per_s"], stat["other_ops_per_s"] = _gmean(vb), _gmean(vo)

    def res(side):
        r = {x["resolution_s"] for x in side}
        return r.pop() if len(r) == 1 else None

    stat["resolution_s"] = {"base": res(tb), "other": res(to)}
    lb = [fig[t]["ops"][op]["latency_ms"] for t in base_g.runs]
    lo = [fig[t]["ops"][op]["latency_ms"] for t in g.runs]
    stat["latency_ms"] = {p: {"base": _mean([x[p] for x in lb]), "other": _mean([x[p] for x in lo])}
                          for p in ("p50", "p95", "p99")}
    qb = [fig[t]["ops"][op]["p99_ms"] for t in base_g.runs]
    qo = [fig[t]["ops"][op]["p99_ms"] for t in g.runs]
    hist99, why99 = spread("p99_ms")
    q = run_stats.compare(qb, qo, alpha, hist99, kind="latency")
    if why99 and q["verdict"].startswith("no verdict"):
        q["history_note"] = why99
    stat["p99"] = q | {"q": 0.99, "base_ms": _gmean(qb), "other_ms": _gmean(qo), "values": {"base": qb, "other": qo}}
    return stat


def _gmean(values: list) -> float | None:
    good = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in good) / len(good)) if good and len(good) == len(values) else None


def _mean(values: list) -> float | None:
    return sum(values) / len(values) if values and all(v is not None for v in values) else None


REPRODUCE = "reproduce.json"


def ab_values(results: Path, ab_id: str, alpha: float) -> dict[str, tuple[list[float], list[float]]]:
    """An ab's runs so far, as its stopping rule reads them (experiments/ab_rule.py):
    op -> (the base's per-run values, the other's)."""
    sides = compare_groups.groups(results, ab_id, [])
    doc = compare_runs(results, sides[0], sides[1:], None, alpha, False)
    return {op: (stat["values"]["base"], stat["values"]["other"])
            for op, stat in doc["comparisons"][0]["ops"].items()}


def phases_of(results: Path, rid: str) -> dict[str, str] | None:
    """A reproduce's phase runs by phase name (its reproduce.json), or None
    when results/<rid> is not a reproduce."""
    path = results / rid / REPRODUCE
    if not (TESTID.match(rid) and path.is_file()):
        return None
    doc = run_folder.read_json(path, f"reproduce {rid}")
    phases = doc.get("phases") if isinstance(doc, dict) else None
    if not isinstance(phases, list) or not phases:
        raise UserError(f"reproduce {rid}: {path} has no finished phase")
    return {ph["name"]: ph["testid"] for ph in phases}


def compare_reproduces(results: Path, base: str, others: list[str], phases: dict[str, dict | None],
                       prometheus: str | None, alpha: float, allow_different: bool,
                       history: compare_groups.History | None = None, rate_chart=None) -> dict:
    """Two (or more) `ybbench reproduce` runs: each phase against the base's
    phase of the same name, as runs are compared; compare.json's `phases`
    holds one run comparison per phase. phases: each id's phases_of, read once."""
    if any(p is None for p in phases.values()):
        kinds = ", ".join(f"{r} ({'a reproduce' if p else 'not a reproduce'})" for r, p in phases.items())
        raise UserError(f"compare a reproduce with reproduces, phase by phase: {kinds}")
    for o in others:
        if not set(phases[base]) & set(phases[o]):
            raise UserError(f"reproduces {base} (phases: {', '.join(phases[base])}) and {o} (phases: "
                            f"{', '.join(phases[o])}) have no phase in common")
    doc = {"kind": "reproduce", "base": base, "others": others, "phases": {}}
    for name, base_run in phases[base].items():
        with_it = [o for o in others if name in phases[o]]
        if with_it:
            where = {base_run: results / base, **{phases[o][name]: results / o for o in with_it}}
            doc["phases"][name] = compare_runs(results, base_run, [phases[o][name] for o in with_it], prometheus,
                                               alpha, allow_different, where, history, rate_chart)
    return doc


def _f(v, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, fmt)


def spread_text(s: dict) -> str:
    """What the interval rests on: the runs a side, their spread, the history's runs."""
    sp, n = s["spread"], s["runs"]
    parts = [f"{n['base']} + {n['other']} runs"]
    for side in ("base", "other"):
        if sp.get(side) is not None:
            parts.append(f"{side} runs {100 * sp[side]:.1f}% apart (sd)")
    if sp.get("history_runs"):
        parts.append(f"{len(sp['history_runs'])} earlier runs of the series in the history store "
                     f"({', '.join(sp['history_runs'][:6])}{', ...' if len(sp['history_runs']) > 6 else ''})")
    if sp.get("pooled") is not None:
        parts.append(f"pooled spread {100 * sp['pooled']:.1f}%")
    if s.get("df") is not None:
        parts.append(f"df {s['df']:.1f}")
    if s.get("pvalue") is not None:
        parts.append(f"p {s['pvalue']:.2g}")
    det = s.get("detectable")
    if det and det.get("change") is not None:
        need = det["runs_a_side_for"].get("0.05")
        parts.append(f"a change of {100 * det['change']:.1f}% or more is found {round(10 * det['power'])} times in 10 "
                     f"by runs this far apart; 5% needs {need if need else 'over 1000'} runs a side")
    return ", ".join(parts)


def _limits_of(doc: dict, runs: list[str]) -> str:
    """A side's limits, each with its count of runs (limits.json's verdicts)."""
    seen: dict[str, int] = {}
    for t in runs:
        lim = (doc["runs"][t].get("limited_by") or {}).get("limit", "not analysed")
        seen[lim] = seen.get(lim, 0) + 1
    return ", ".join(f"{lim} x{n}" for lim, n in seen.items())


def table(doc: dict) -> str:
    w = max([28, *(len(x) + 2 for c in doc["comparisons"] for x in (c["base"], c["other"]))])
    head = (f"{'op':<10}{'base':<{w}}{'other':<{w}}{'runs':<8}{'base ops/s':>12}{'other ops/s':>12}  "
            f"{'ratio [low, high]':<26}{'p99 ms base/other':<20}verdict")
    lines = [f"ybbench compare (alpha {doc['alpha']:g}; the run is the unit: Welch's t on the log of each run's "
             "value with two or more runs a side; one run a side only with the history's run-to-run spread; "
             "compare.json has the method)", head]
    for c in doc["comparisons"]:
        for op, s in c["ops"].items():
            ci = f"{_f(s['ratio'], '.3f')} [{_f(s['low'], '.3f')}, {_f(s['high'], '.3f')}]"
            p99 = s["latency_ms"]["p99"]
            n = f"{s['runs']['base']}+{s['runs']['other']}"
            lines.append(f"{op:<10}{c['base']:<{w}}{c['other']:<{w}}{n:<8}{_f(s['base_ops_per_s'], '.1f'):>12}"
                         f"{_f(s['other_ops_per_s'], '.1f'):>12}  {ci:<26}"
                         f"{_f(p99['base'], '.2f') + '/' + _f(p99['other'], '.2f'):<20}{s['verdict']}")
            lines.append(f"{'':<10}ops/s: {spread_text(s)}")
            q = s.get("p99")
            if q and q.get("ratio") is not None:
                lines.append(f"{'':<10}p99 per run: {_f(q['base_ms'], '.3f')} -> {_f(q['other_ms'], '.3f')} ms, "
                             f"ratio {_f(q['ratio'], '.3f')} [{_f(q['low'], '.3f')}, {_f(q['high'], '.3f')}]: "
                             f"{q['verdict']} ({spread_text(q)})")
        lines.append("  limited by: " + "; ".join(
            f"{label}: {_limits_of(doc, runs)}" for label, runs in ((c["base"], c["base_runs"]),
                                                                    (c["other"], c["other_runs"]))))
        for w in c.get("warnings", []):
            lines.append(f"  warning: {w}")
        if c["differences"]:
            lines.append(f"  {c['other']} differs from {c['base']} in: " + "; ".join(
                f"{k} {v['base']} -> {v['other']}" if k != "knobs" else
                "knobs " + ", ".join(f"{n} {d['base']} -> {d['other']}" for n, d in v.items())
                for k, v in c["differences"].items()))
    return "\n".join(lines)


def overlay_charts(doc: dict) -> list[dict]:
    """Per op: ops/s and p99 of every run overlaid at their starts; CPU
    busy per node of every run. Each: id, title, source, the lines' data
    (compare.json's charts), and how report/compare_page.py draws it:
    ylabel, each line's run start (starts), step_plot."""
    charts = []
    runs = doc["runs"]

    def chart(cid: str, title: str, source: str, lines: list[tuple[str, dict, float]], ylabel: str,
              step_plot: bool = False) -> dict:
        return {"id": cid, "title": title, "source": source, "lines": {t: s for t, s, _ in lines},
                "ylabel": ylabel, "starts": {t: start for t, _, start in lines}, "step_plot": step_plot}

    for op in sorted({op for c in doc["comparisons"] for op in c["ops"]}):
        lines = [(tid, r["ops"][op]["throughput"]["series"], r["window"]["start"]) for tid, r in runs.items()
                 if op in r["ops"] and "series" in r["ops"][op]["throughput"]]
        if lines:
            title = f"{op}: ops/s per {lines[0][1]['step_s']} s, runs overlaid at their start"
            source = (f"each run's {run_series.FILE}, the op's count per second" if "file" in lines[0][1] else
                      f"Prometheus {doc['prometheus']}: " + counter("<testid>", op) + ", differenced")
            charts.append(chart(f"{op}-ops", title, source, lines, "ops/s", True))
        lines = [(tid, r["over_time"]["p99_ms"]["data"][op], r["window"]["start"]) for tid, r in runs.items()
                 if op in r.get("over_time", {}).get("p99_ms", {}).get("data", {})]
        if lines:
            title = f"{op}: p99 latency, ms, runs overlaid at their start"
            source = f"Prometheus {doc['prometheus']}: " + "; ".join(runs[t]["over_time"]["p99_ms"]["query"]
                                                                   for t, _, _ in lines)
            charts.append(chart(f"{op}-p99", title, source, lines, "ms"))
    lines = [(f"{tid} {node}", s, r["window"]["start"]) for tid, r in runs.items()
             for node, s in r.get("over_time", {}).get("cpu_cores_busy", {}).get("data", {}).items()]
    if lines:
        title = "CPU busy per node, cores, runs overlaid at their start (points inside each run)"
        source = f"Prometheus {doc['prometheus']}: " + "; ".join(dict.fromkeys(
            r["over_time"]["cpu_cores_busy"]["query"] for r in runs.values() if "cpu_cores_busy" in r.get("over_time", {})))
        charts.append(chart("cpu-cores-busy", title, source, lines, "cores"))
    return charts


# What compare.json keeps of each chart (the rest says how to draw it).
CHART_KEYS = ("id", "title", "source", "lines")


@dataclass
class Comparison:
    """What `ybbench compare` found, before its page is drawn: compare.json's
    document, the table for stdout, and for runs each section's comparison
    ("" alone; "phase NAME" each phase of reproduces) with its overlay
    charts; series (sweeps, designs, scale fits) have no sections."""
    folder: Path
    doc: dict
    text: str
    png_dir: Path | None = None
    rules: list = field(default_factory=list)
    series: bool = False
    parts: dict[str, dict] = field(default_factory=dict)
    charts: dict[str, list[dict]] = field(default_factory=dict)


def analyse(base: str, others: list[str], results: str, prometheus: str | None, out: str | None, alpha: float,
            allow_different: bool, png_dir: str | None = None, fail_on: list[str] = (),
            history: str | None = None, rate_chart=None) -> Comparison:
    """compare.json's document, its table and its charts' data; nothing
    written yet (write does, once report/compare_page.py has drawn the page).
    history: the store (default: the results folder's, as `ybbench run`
    keeps it); rate_chart: over_time's."""
    rules = compare_gate.parse(list(fail_on))
    results_dir = Path(results)
    folder = Path(out) if out else results_dir / time.strftime("compare-%Y%m%dT%H%M%S", time.gmtime())
    if folder.exists():
        raise UserError(f"--out {folder}: exists; compare writes a new folder")
    if png_dir and Path(png_dir).exists() and not Path(png_dir).is_dir():
        raise UserError(f"--png {png_dir}: exists and is not a folder")
    # Series (sweeps, designs, scale fits): compare_series.py, given this module's per_second.
    from ybbench.analysis import compare_series

    pngs = Path(png_dir) if png_dir else None
    history = compare_groups.History(history_store.location(results_dir, history))
    if others and compare_series.any_series(results_dir, [base, *others]):
        if rules:
            raise UserError("--fail-on: gates runs (and reproduces) against runs; sweeps, designs and scale fits "
                            "have no gate yet")
        doc = compare_series.compare(results_dir, base, others, prometheus, alpha, allow_different, per_second)
        return Comparison(folder, doc, compare_series.table(doc), pngs, series=True)
    phases = {i: phases_of(results_dir, i) for i in [base, *others]} if others else {}
    if any(p is not None for p in phases.values()):
        doc = compare_reproduces(results_dir, base, others, phases, prometheus, alpha, allow_different, history,
                                 rate_chart)
        parts = {f"phase {name}": d for name, d in doc["phases"].items()}
    else:
        sides = compare_groups.groups(results_dir, base, others)
        doc = compare_runs(results_dir, sides[0], sides[1:], prometheus, alpha, allow_different, history=history,
                           rate_chart=rate_chart)
        parts = {"": doc}
    if rules:
        doc["gate"] = compare_gate.evaluate(doc, rules)
    text = "\n".join(f"{title}\n{table(d)}" if title else table(d) for title, d in parts.items())
    charts = {}
    for title, d in parts.items():
        charts[title] = overlay_charts(d)
        d["charts"] = [{k: c[k] for k in CHART_KEYS} for c in charts[title]]
    return Comparison(folder, doc, text, pngs, rules, False, parts, charts)


def write(c: Comparison, page: str, pngs: dict[str, str]) -> int:
    """compare.json and compare.html (page) in the new folder, whole or not
    at all; with --png each chart (pngs: file name -> base64 PNG); the
    table. Exit 0; with --fail-on, compare_gate.exit_code (1: a rule failed,
    2: one cannot be judged)."""
    with staged_dir(c.folder) as stage:
        formats.write(stage / "compare.json", "compare", {"format_version": formats.version("compare"), **c.doc})
        write_file(stage / "compare.html", page)
    for name, b64 in pngs.items() if c.png_dir else ():
        write_file(c.png_dir / name, base64.b64decode(b64))
    print(c.text)
    print(f"compare: {c.folder}")
    if c.rules:
        print(f"gate {', '.join(c.doc['gate']['rules'])}:" + "".join(f"\n  {m}" for m in c.doc["gate"]["messages"]))
        return compare_gate.exit_code(c.doc["gate"])
    return 0
