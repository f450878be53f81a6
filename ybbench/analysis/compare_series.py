"""`ybbench compare BASE OTHER...` over series: two sweeps, two designs,
two scale fits. compare.py dispatches here when an id names a series
folder; each OTHER is set against the BASE (the first id).

The kind of each id comes from the files in results/<id>/:
  sweep.json                  a sweep (experiments/sweep/runs.py)
  doe.json                    a `doe --run` design; its analysis in
                              analysis/results.json (or doe.json's "analysis")
  results.json with "design"  a design's analysis (`doe FILE --out`)
  results.json with "fit"     a scale fit (`scale ... --out`)
  summary.json / params.json  a run (compare.py's own comparison)
Mixed kinds, an unknown id, a folder without its JSON, open- against
closed-model sweeps, designs of other factors, levels, generators or
response: a UserError naming what differs (exit 2, nothing written).

Sweeps: the ceiling (ops/s and the step that reached it) and the knee,
side by side, as each sweep.json states them (experiments/sweep/saturation.py
rules), and the ratio of the ceilings. With --prometheus, the ceiling
steps' per-second series (compare.py's per_second, summed over the step's
ops): their means, compared as one run a side is (core/run_stats.py): an
interval and a verdict only with the run-to-run spread of earlier runs of
the steps' series in the history store, else no verdict; the moving-block
bootstrap over their seconds (core/bootstrap.py) is kept beside it, marked
as blind to run-to-run variation. Either is conditional on the two steps
being the ceilings (choosing the best step of each sweep is not part of
it). Without the series, no interval, and why.
Open-model sweeps are compared by their ceiling rate (an offered rate from
the list, not a measured mean: no interval).

Designs: each effect q_i in both, the change and its interval.

    Derivation. In design X (B: base, O: other) the effect estimate q_i^X
    has standard error s_X, the design's own noise estimate: from its
    replications, s_X = s_e / sqrt(n r) with s_e² = SSE / (n (r − 1)),
    d_X = n (r − 1) degrees of freedom; or, with one replication, Lenth's
    pseudo standard error PSE (experiments/doe/effects.py), d_X = m / 3
    (m contrasts; Lenth 1989's approximation). Every contrast of one
    design has the same s_X (orthogonal ±1 columns), and the two designs'
    runs are independent, so

        Δ_i = q_i^O − q_i^B,   Var(Δ_i) = s_B² + s_O²,

    and, each s_X² taken as σ_X² χ²(d_X) / d_X, (Δ_i − δ_i) / sqrt(s_B² + s_O²)
    is approximately t with the Welch–Satterthwaite degrees of freedom

        ν = (s_B² + s_O²)² / (s_B⁴ / d_B + s_O⁴ / d_O),

    so the (1 − α) interval of the true change δ_i is

        Δ_i ± t(1 − α/2; ν) · sqrt(s_B² + s_O²),

    and the change is significant when it excludes 0. (Two designs with the
    same s and d: ν = 2d and the half width t(1 − α/2; 2d) · s · √2.) Over
    all m effects at once: the Šidák level γ = (1 + (1 − α)^(1/m)) / 2 in
    place of 1 − α/2, as Lenth's SME does ("significant over all").

Scale: λ, σ, κ of both fits, refitted from results.json's points with
core/usl.py (its covariance is not in results.json), and

    Δ = p_O − p_B ± t(1 − α/2; ν) · sqrt(se_B² + se_O²),

ν from the two fits' m − 3 degrees of freedom as above; they differ when
it excludes 0. N* = sqrt((1 − σ)/κ) by its log, the delta method with the
fit's covariance Σ of (λ, σ, κ): g = (0, −1/(2(1 − σ)), −1/(2κ)),
Var(log N*) = gᵀ Σ g; the ratio N*_O / N*_B = exp(ΔlogN* ± t · sqrt(V_B + V_O)).
A fit with no degrees of freedom (3 points), or no peak (κ = 0 or σ ≥ 1),
gives no interval, and says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ybbench.analysis import compare_groups
from ybbench.core import bootstrap, history_store, run_folder, run_stats, usl
from ybbench.core.catalog import TESTID
from ybbench.core.errors import UserError
from ybbench.core.prom import Prom
from ybbench.core.services import check_ready

SWEEP, DOE, RESULTS = "sweep.json", "doe.json", "results.json"
KINDS = {"run": "a run", "sweep": "a sweep", "design": "a design", "scale": "a scale fit"}
DESIGN_METHOD = ("each effect's change Δ = q(other) − q(base), interval Δ ± t(1 − α/2; ν)·sqrt(s_base² + s_other²), "
                 "s each design's own standard error of an effect (its replications' s_q, or Lenth's PSE with "
                 "d = m/3), ν Welch–Satterthwaite from their degrees of freedom; significant over all m effects: "
                 "t at the Šidák level (1 + (1 − α)^(1/m))/2")
SCALE_METHOD = ("λ, σ, κ refitted from each results.json's points (core/usl.py: least squares, "
                "standard errors from its covariance); difference other − base ± t(1 − α/2; ν)·sqrt(se_base² + "
                "se_other²), ν Welch–Satterthwaite from each fit's m − 3 degrees of freedom; N* = sqrt((1 − σ)/κ) "
                "as a ratio, exp(Δ log N* ± t·sqrt(V_base + V_other)), V = Var(log N*) by the delta method with "
                "the fit's covariance")


@dataclass
class Series:
    id: str
    kind: str  # sweep, design, scale
    folder: Path
    doc: dict  # sweep.json, the design's results.json, the scale's results.json
    source: str  # the file it was read from
    record: dict | None = None  # doe.json of a `doe --run` design


def kind_of(results: Path, sid: str) -> str | None:
    """run, sweep, design, scale; None when results/<sid> is missing or holds
    none of their files."""
    folder = results / sid
    if not TESTID.match(sid) or not folder.is_dir():
        return None
    if (folder / SWEEP).is_file():
        return "sweep"
    if (folder / DOE).is_file():
        return "design"
    if (folder / RESULTS).is_file():
        doc = run_folder.read_json(folder / RESULTS, f"series {sid}")
        if isinstance(doc, dict) and "design" in doc:
            return "design"
        if isinstance(doc, dict) and "fit" in doc:
            return "scale"
        raise UserError(f"series {sid}: {folder / RESULTS} is neither a design's analysis (no \"design\") nor a "
                        "scale fit (no \"fit\")")
    if (folder / run_folder.SUMMARY).is_file() or (folder / run_folder.PARAMS).is_file():
        return "run"
    return None


def any_series(results: Path, ids: list[str]) -> bool:
    """True when any id names a series folder: compare.py then hands over."""
    return any(kind_of(results, i) not in (None, "run") for i in ids)


def _missing(results: Path, sid: str) -> UserError:
    folder = results / sid
    if not TESTID.match(sid):
        return UserError(f"id {sid!r}: use 1-64 letters, digits, . _ -")
    if not folder.is_dir():
        return UserError(f"no run or series {sid!r}: {folder} does not exist")
    subs = sorted(d.name for d in folder.iterdir() if d.is_dir() and d.name.startswith(sid + "-"))
    looks = ""
    if any(d.removeprefix(sid + "-").startswith(("vus", "rate")) for d in subs):
        looks = f" (its step folders, e.g. {subs[0]}, look like a sweep's: {SWEEP} is missing)"
    elif any(d.removeprefix(sid + "-").startswith("r") for d in subs):
        looks = f" (its run folders, e.g. {subs[0]}, look like a design's: {DOE} is missing)"
    return UserError(f"{sid}: {folder} holds none of {SWEEP} (a sweep), {DOE} or {RESULTS} (a design), "
                     f"{RESULTS} (a scale fit, `ybbench scale ... --out`) or {run_folder.SUMMARY} (a run){looks}")


def load(results: Path, sid: str) -> Series:
    kind = kind_of(results, sid)
    folder = results / sid
    if kind is None:
        raise _missing(results, sid)
    if kind == "sweep":
        doc = run_folder.read_json(folder / SWEEP, f"sweep {sid}")
        if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list) or "params" not in doc:
            raise UserError(f"sweep {sid}: {folder / SWEEP} has no steps or params")
        return Series(sid, kind, folder, doc, str(folder / SWEEP))
    if kind == "design":
        record = None
        path = folder / RESULTS
        if (folder / DOE).is_file():
            record = run_folder.read_json(folder / DOE, f"design {sid}")
            path = folder / "analysis" / RESULTS
            if not path.is_file() and isinstance(record, dict) and record.get("analysis"):
                path = Path(record["analysis"]) / RESULTS
            if not path.is_file():
                raise UserError(f"design {sid}: {DOE} but no analysis ({folder / 'analysis' / RESULTS} is missing): "
                                f"the design has not finished (`ybbench doe FILE --resume {sid}`)")
        doc = run_folder.read_json(path, f"design {sid}")
        if not isinstance(doc, dict) or "design" not in doc:
            raise UserError(f"design {sid}: {path} is not a design's results.json (no \"design\")")
        if "analysis" not in doc:
            raise UserError(f"design {sid}: {path} has no analysis: the design had no results to analyse")
        return Series(sid, kind, folder, doc, str(path), record)
    if kind == "scale":
        doc = run_folder.read_json(folder / RESULTS, f"scale {sid}")
        if not isinstance(doc.get("points"), list) or not doc["points"]:
            raise UserError(f"scale {sid}: {folder / RESULTS} has no points")
        return Series(sid, kind, folder, doc, str(folder / RESULTS))
    raise AssertionError(kind)


def _t(alpha: float, df: float) -> float:
    from scipy import stats

    return float(stats.t.ppf(1 - alpha / 2, df))


def welch_df(se_b: float, d_b: float, se_o: float, d_o: float) -> float:
    """ν = (s_B² + s_O²)² / (s_B⁴/d_B + s_O⁴/d_O)."""
    vb, vo = se_b ** 2, se_o ** 2
    return (vb + vo) ** 2 / (vb ** 2 / d_b + vo ** 2 / d_o)


def difference(b: float, se_b, d_b, o: float, se_o, d_o, alpha: float, m: int | None = None) -> dict:
    """other − base with its (1 − alpha) interval (module docstring); None
    bounds and the reason when a standard error is missing or both are 0."""
    out = {"base": b, "other": o, "change": o - b}
    why = None
    if se_b is None or se_o is None or not d_b or not d_o:
        why = "no interval: " + " and ".join(n for n, s, d in (("base", se_b, d_b), ("other", se_o, d_o))
                                               if s is None or not d) + " has no standard error (no degrees of freedom)"
    elif se_b == 0 and se_o == 0:
        why = "no interval: neither has any spread (standard errors 0)"
    if why:
        return out | {"se": None, "df": None, "t": None, "low": None, "high": None, "significant": None, "why": why}
    se = math.sqrt(se_b ** 2 + se_o ** 2)
    nu = welch_df(se_b, d_b, se_o, d_o)
    t = _t(alpha, nu)
    out |= {"se": se, "df": nu, "t": t, "low": o - b - t * se, "high": o - b + t * se,
            "significant": abs(o - b) > t * se}
    if m:
        from scipy import stats

        gamma = (1 + (1 - alpha) ** (1 / m)) / 2
        t_all = float(stats.t.ppf(gamma, nu))
        out |= {"t_all": t_all, "significant_all": abs(o - b) > t_all * se}
    return out


# --- sweeps ----------------------------------------------------------------

def _step(s: Series, key: str, n) -> dict:
    for st in s.doc["steps"]:
        if st.get(key) == n:
            return st
    raise UserError(f"sweep {s.id}: {SWEEP} names {key} {n} as its ceiling but has no such step")


def _step_series(s: Series, step: dict, prom: Prom, per_second) -> tuple[list[float] | None, str, dict]:
    """The step's ops/s per second, summed over its ops, or None and why."""
    run = run_folder.read(s.folder / step["folder"])
    start, end = run.window
    parts = {}
    for op in sorted(run.summary.get("ops") or {}):
        got = per_second(prom, run.testid, op, start, end)
        if got is None:
            return None, (f"no interval: Prometheus has no k6_iterations_total for step {run.testid}, op {op} "
                          "(the sweep ran without --prometheus, or another Prometheus)"), {}
        parts[op] = got
    if not parts:
        return None, f"no interval: step {run.testid} has no ops", {}
    grids = {(tuple(p["t"]), p["step_s"]) for p in parts.values()}
    if len(grids) != 1:
        return None, f"no interval: the ops of step {run.testid} were pushed at different times", parts
    total = [sum(vals) for vals in zip(*(p["v"] for p in parts.values()))]
    return total, "", parts


def _history(base: Series, other: Series, out: dict, history: compare_groups.History):
    """The run-to-run spread of the ceiling steps' series from the history store (one op only), or None."""
    steps = [run_folder.read(s.folder / out["sides"][s.id]["ceiling_step"]) for s in (base, other)]
    ops = {op for r in steps for op in r.summary.get("ops", {})}
    if len(ops) != 1:
        return None
    spread, _ = history.spread({compare_groups.series_key(r) for r in steps}, {r.testid for r in steps}, ops.pop(),
                               "ops_per_s")
    return spread


def compare_sweeps(base: Series, other: Series, prom: Prom | None, per_second, alpha: float,
                   history: compare_groups.History | None = None) -> dict:
    mb, mo = base.doc["params"].get("mode"), other.doc["params"].get("mode")
    if mb != mo:
        raise UserError(f"sweep {base.id} is {mb}-model and sweep {other.id} is {mo}-model: an offered-rate sweep "
                        "and a VU sweep measure different things (a rate kept up with, a throughput reached); "
                        "compare sweeps of one model")
    key = "vus" if mb == "closed" else "rate"
    out = {"kind": "sweep", "mode": mb, "key": key, "base": base.id, "other": other.id, "sides": {}}
    for s in (base, other):
        c = s.doc.get("ceiling")
        if not c:
            raise UserError(f"sweep {s.id}: {SWEEP} has no ceiling (no step finished)")
        step = _step(s, key, c[key])
        out["sides"][s.id] = {"workload": s.doc["params"].get("workload"), "ceiling": c, "knee": s.doc.get("knee"),
                              "ceiling_step": step["testid"], "steps": [{key: st[key], "ops_per_s": st["ops_per_s"],
                                                                        "p99_ms": st.get("p99_ms")}
                                                                       for st in s.doc["steps"]],
                              "stopped_early": s.doc.get("stopped_early"), "rules": s.doc.get("rules"),
                              "source": s.source}
    cb, co = out["sides"][base.id]["ceiling"], out["sides"][other.id]["ceiling"]
    if mb == "open":
        out["ceiling_ratio"] = {"ratio": co["rate"] / cb["rate"], "of": "the ceiling rates (offered ops/s)",
                                "low": None, "high": None,
                                "verdict": "no interval: an open-model ceiling is an offered rate of the list, "
                                           "not a measured mean"}
    else:
        ratio = co["ops_per_s"] / cb["ops_per_s"] if cb["ops_per_s"] else None
        cr = {"ratio": ratio, "of": "the ceilings' ops/s (each step's summary.json, as sweep.json has them)"}
        if prom is None:
            cr |= {"low": None, "high": None,
                   "verdict": "no interval: the ceiling steps' per-second series are needed (--prometheus, and "
                              "sweeps made with --prometheus)"}
        else:
            xb, why_b, pb = _step_series(base, _step(base, key, cb[key]), prom, per_second)
            xo, why_o, po = _step_series(other, _step(other, key, co[key]), prom, per_second)
            if xb is None or xo is None:
                cr |= {"low": None, "high": None, "verdict": why_b or why_o}
            else:
                stat = bootstrap.compare(xb, xo, alpha).as_dict()
                runs = run_stats.compare([sum(xb) / len(xb)], [sum(xo) / len(xo)], alpha,
                                         _history(base, other, out, history or compare_groups.History(None)))
                cr |= {"low": runs["low"], "high": runs["high"], "verdict": runs["verdict"],
                       "series_ratio": stat["ratio"], "between_runs": runs,
                       "bootstrap": stat | {"note": "over the seconds of one step a side: it cannot see what changes "
                                                    "from one run to the next, so it gives no verdict"},
                       "series": {base.id: {"testid": out["sides"][base.id]["ceiling_step"], "v": xb,
                                            "mean_ops_per_s": sum(xb) / len(xb) if xb else None,
                                            "ops": {op: {"query": p["query"], "t": p["t"], "v": p["v"],
                                                         "step_s": p["step_s"]} for op, p in pb.items()}},
                                  other.id: {"testid": out["sides"][other.id]["ceiling_step"], "v": xo,
                                             "mean_ops_per_s": sum(xo) / len(xo) if xo else None,
                                             "ops": {op: {"query": p["query"], "t": p["t"], "v": p["v"],
                                                          "step_s": p["step_s"]} for op, p in po.items()}}},
                       "note": "the interval is of the mean per-second ops/s of the two ceiling steps (series_ratio); "
                               "it takes the steps as given, not the choice of the best step of each sweep"}
        out["ceiling_ratio"] = cr
        kb, ko = out["sides"][base.id]["knee"], out["sides"][other.id]["knee"]
        out["knee"] = {"base": kb and kb["vus"], "other": ko and ko["vus"],
                       "same_step": (kb and kb["vus"]) == (ko and ko["vus"])}
    return out


# --- designs ---------------------------------------------------------------

def _factors(s: Series) -> dict:
    return {f["letter"]: (f["name"], tuple(f["levels"])) for f in s.doc["design"]["factors"]}


def check_same_design(base: Series, other: Series) -> None:
    fb, fo = _factors(base), _factors(other)
    diffs = []
    for letter in sorted(set(fb) | set(fo)):
        b, o = fb.get(letter), fo.get(letter)
        if b is None or o is None:
            have, lacks = (base, other) if o is None else (other, base)
            name = (b or o)[0]
            diffs.append(f"factor {letter} ({name}) is in {have.id} only, not in {lacks.id}")
        elif b[0] != o[0]:
            diffs.append(f"factor {letter} is {b[0]!r} in {base.id} but {o[0]!r} in {other.id}")
        elif b[1] != o[1]:
            diffs.append(f"factor {letter} ({b[0]}) has levels {', '.join(map(str, b[1]))} in {base.id} but "
                         f"{', '.join(map(str, o[1]))} in {other.id}")
    if diffs:
        raise UserError(f"designs {base.id} and {other.id} differ in their factors: " + "; ".join(diffs)
                        + ". Effects are compared factor by factor: the factors and levels must be the same")
    gb, go = base.doc["design"]["generators"], other.doc["design"]["generators"]
    if gb != go:
        raise UserError(f"designs {base.id} ({', '.join(gb) or 'full factorial'}) and {other.id} "
                        f"({', '.join(go) or 'full factorial'}) have different generators: their columns alias "
                        "different interactions")
    rb, ro = base.doc["analysis"]["response"], other.doc["analysis"]["response"]
    if rb != ro or base.doc["analysis"].get("unit") != other.doc["analysis"].get("unit"):
        raise UserError(f"designs {base.id} ({rb} {base.doc['analysis'].get('unit') or ''}) and {other.id} ({ro} "
                        f"{other.doc['analysis'].get('unit') or ''}) measured different responses".replace(" )", ")"))


def _noise(s: Series) -> dict:
    a = s.doc["analysis"]
    out = {"method": a["method"], "se": a["se"], "df": a["df"], "replications": a["replications"]}
    if a["method"] == "lenth":
        out["what"] = (f"Lenth's PSE over {len(a['effects'])} contrasts (s0 = {a['lenth']['s0']:.6g}, "
                       f"{a['lenth']['trimmed']} trimmed), d = m/3")
    else:
        out["what"] = f"replications: s_q = s_e/sqrt(n·r), df n(r − 1) = {a['df']:g}"
    return out


def compare_designs(base: Series, other: Series, alpha: float) -> dict:
    check_same_design(base, other)
    nb, no = _noise(base), _noise(other)
    eb = {e["name"]: e for e in base.doc["analysis"]["effects"]}
    eo = {e["name"]: e for e in other.doc["analysis"]["effects"]}
    m = len(eb)
    effects = []
    for name in eb:
        d = difference(eb[name]["q"], nb["se"], nb["df"], eo[name]["q"], no["se"], no["df"], alpha, m)
        effects.append({"name": name, "aliases": eb[name]["aliases"],
                        "significant_in": {"base": eb[name]["significant"], "other": eo[name]["significant"]}, **d})
    return {"kind": "design", "base": base.id, "other": other.id, "response": base.doc["analysis"]["response"],
            "unit": base.doc["analysis"].get("unit"), "effects": m, "noise": {base.id: nb, other.id: no},
            "sources": {base.id: base.source, other.id: other.source},
            "means": {"base": base.doc["analysis"]["mean"], "other": other.doc["analysis"]["mean"]},
            "rows": effects}


# --- scale -----------------------------------------------------------------

def refit(s: Series, alpha: float) -> dict:
    pts = s.doc["points"]
    f = usl.fit([p["nodes"] for p in pts], [p["throughput"] for p in pts], alpha)
    out = {"dof": f.dof, "points": f.points, "max_nodes": max(p["nodes"] for p in pts), "unit": s.doc.get("unit"),
           "source": s.source}
    for k, p in f.params().items():
        out[k] = {"value": p.value, "se": p.se}
        stored = s.doc["fit"][k]["value"]
        if not math.isclose(stored, p.value, rel_tol=1e-6, abs_tol=1e-12):
            out[k]["stored"] = stored
            out.setdefault("notes", []).append(f"{k}: refitted {p.value:.6g}, {RESULTS} has {stored:.6g}")
    n_star, _, note = f.peak()
    out["n_star"] = {"value": n_star, "note": note, "log_var": None}
    if n_star is not None and f.dof > 0 and f.cov is not None and np.all(np.isfinite(f.cov)):
        g = np.array([0.0, -1 / (2 * (1 - f.sigma.value)), -1 / (2 * f.kappa.value)])
        out["n_star"]["log_var"] = float(g @ f.cov @ g)
    return out


def compare_scales(base: Series, other: Series, alpha: float) -> dict:
    fb, fo = refit(base, alpha), refit(other, alpha)
    rows = {}
    for k in ("lambda", "sigma", "kappa"):
        if k == "lambda" and fb["unit"] != fo["unit"]:
            rows[k] = {"base": fb[k]["value"], "other": fo[k]["value"], "change": None, "low": None, "high": None,
                       "significant": None, "why": f"not compared: throughput in {fb['unit']} against {fo['unit']}"}
            continue
        rows[k] = difference(fb[k]["value"], fb[k]["se"], fb["dof"], fo[k]["value"], fo[k]["se"], fo["dof"], alpha)
    nb, no = fb["n_star"], fo["n_star"]
    ns = {"base": nb["value"], "other": no["value"], "ratio": None, "low": None, "high": None, "significant": None}
    if nb["value"] is None or no["value"] is None:
        ns["why"] = "no ratio: " + "; ".join(f"{n} has no peak ({x['note']})" for n, x in (("base", nb), ("other", no))
                                             if x["value"] is None)
    else:
        ns["ratio"] = no["value"] / nb["value"]
        if nb["log_var"] is None or no["log_var"] is None:
            ns["why"] = "no interval: a fit with no degrees of freedom (3 points) or no covariance"
        else:
            sb, so = math.sqrt(nb["log_var"]), math.sqrt(no["log_var"])
            d = difference(math.log(nb["value"]), sb, fb["dof"], math.log(no["value"]), so, fo["dof"], alpha)
            if d["low"] is not None:
                ns |= {"low": math.exp(d["low"]), "high": math.exp(d["high"]), "significant": d["significant"],
                       "log": d}
            else:
                ns["why"] = d["why"]
    rows["n_star"] = ns
    return {"kind": "scale", "base": base.id, "other": other.id, "fits": {base.id: fb, other.id: fo}, "rows": rows}


# --- the comparison and its table (its page: report/compare_page.py) -------

def compare(results: Path, base_id: str, other_ids: list[str], prometheus: str | None, alpha: float,
            allow_different: bool, per_second) -> dict:
    """`per_second` is compare.py's (passed in: compare.py dispatches here)."""
    if not 0 < alpha < 1:
        raise UserError(f"--alpha {alpha}: between 0 and 1")
    ids = [base_id, *other_ids]
    kinds = {i: kind_of(results, i) for i in ids}
    for i in ids:
        if kinds[i] is None:
            raise _missing(results, i)
    base_kind = kinds[base_id]
    for i in other_ids:
        if kinds[i] != base_kind:
            raise UserError(f"{base_id} is {KINDS[base_kind]} and {i} is {KINDS[kinds[i]]}: compare compares runs "
                            "with runs, sweeps with sweeps, designs with designs and scale fits with scale fits")
    series = [load(results, i) for i in ids]
    base, others = series[0], series[1:]
    if base.kind == "sweep" and not allow_different:
        for o in others:
            wb, wo = base.doc["params"].get("workload"), o.doc["params"].get("workload")
            if wb != wo:
                raise UserError(f"sweeps {base.id} ({wb}) and {o.id} ({wo}) ran different workloads; "
                                "--allow-different-workloads if that is meant")
    prom = None
    if prometheus and base.kind == "sweep":
        check_ready("Prometheus", prometheus, "/-/ready")
        prom = Prom(prometheus)
    doc = {"kind": base.kind, "base": base.id, "others": [o.id for o in others], "alpha": alpha,
           "prometheus": prometheus, "comparisons": []}
    if base.kind == "sweep":
        doc |= {"method": "the ceiling steps' means, one run a side (core/run_stats.py): " + run_stats.POOLED
                          + "; beside it, over their seconds: " + bootstrap.METHOD,
                "resamples": bootstrap.B, "random_stream": bootstrap.STREAM,
                "min_blocks": bootstrap.MIN_BLOCKS}
        history = compare_groups.History(history_store.location(results))
        doc["comparisons"] = [compare_sweeps(base, o, prom, per_second, alpha, history) for o in others]
    elif base.kind == "design":
        doc["method"] = DESIGN_METHOD
        doc["comparisons"] = [compare_designs(base, o, alpha) for o in others]
    else:
        doc["method"] = SCALE_METHOD
        doc["comparisons"] = [compare_scales(base, o, alpha) for o in others]
    if prometheus and base.kind != "sweep":
        doc["prometheus_note"] = f"--prometheus is not used for {KINDS[base.kind]}s"
    return doc


def _f(v, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def _ci(low, high, fmt=".4g") -> str:
    return "-" if low is None else f"[{_f(low, fmt)}, {_f(high, fmt)}]"


def _yes(v) -> str:
    return "-" if v is None else "yes" if v else "no"


def table(doc: dict) -> str:
    pct = f"{100 * (1 - doc['alpha']):g}%"
    lines = [f"ybbench compare: {doc['kind']}s (alpha {doc['alpha']:g}; {doc['method']})"]
    for c in doc["comparisons"]:
        lines.append("")
        if c["kind"] == "sweep":
            key = c["key"]
            lines.append(f"{'sweep':<30}{'ceiling ops/s':>14}  {'at ' + key:<9}{'knee':<8}ceiling step")
            for sid, s in c["sides"].items():
                ce, kn = s["ceiling"], s["knee"]
                top = ce.get("ops_per_s") if key == "vus" else ce.get("achieved_per_s")
                lines.append(f"{sid:<30}{_f(top, '.1f'):>14}  {ce[key]!s:<9}"
                             f"{(str(kn[key]) if kn else '-'):<8}{s['ceiling_step']}")
            cr = c["ceiling_ratio"]
            lines.append(f"ceiling ratio {c['other']}/{c['base']}: {_f(cr['ratio'], '.3f')} ({cr['of']})")
            if cr.get("low") is not None:
                lines.append(f"  per-second series of the ceiling steps: {_f(cr['series_ratio'], '.3f')} "
                             f"{_ci(cr['low'], cr['high'], '.3f')} ({pct}, the history's run-to-run spread): "
                             f"{cr['verdict']}")
            else:
                lines.append(f"  {cr['verdict']}")
            if key == "vus":
                k = c["knee"]
                lines.append(f"knee: {_f(k['base'], 'd')} VUs against {_f(k['other'], 'd')} VUs"
                             + (" (the same step)" if k["same_step"] else ""))
        elif c["kind"] == "design":
            unit = f" ({c['unit']})" if c["unit"] else ""
            lines.append(f"designs {c['base']} -> {c['other']}: effects on {c['response']}{unit}")
            for sid, n in c["noise"].items():
                lines.append(f"  {sid}: s = {_f(n['se'], '.4g')}, df {_f(n['df'], '.4g')} ({n['what']})")
            lines.append(f"  {'effect':<8}{'q base':>12}{'q other':>12}{'change':>12}  {pct + ' interval':<26}"
                         f"{'sig':<5}{'sig all':<8}")
            for r in c["rows"]:
                lines.append(f"  {r['name']:<8}{_f(r['base'], '.4g'):>12}{_f(r['other'], '.4g'):>12}"
                             f"{_f(r['change'], '.4g'):>12}  {_ci(r['low'], r['high']):<26}"
                             f"{_yes(r['significant']):<5}{_yes(r.get('significant_all')):<8}"
                             + (r["why"] if r.get("why") else ""))
        else:
            lines.append(f"scale fits {c['base']} -> {c['other']}")
            lines.append(f"  {'param':<8}{'base':>12}{'other':>12}{'change':>12}  {pct + ' interval':<26}differ")
            for k, sym in (("lambda", "λ"), ("sigma", "σ"), ("kappa", "κ")):
                r = c["rows"][k]
                lines.append(f"  {sym:<8}{_f(r['base'], '.5g'):>12}{_f(r['other'], '.5g'):>12}"
                             f"{_f(r['change'], '.4g'):>12}  {_ci(r['low'], r['high']):<26}{_yes(r['significant'])}"
                             + (f"  {r['why']}" if r.get("why") else ""))
            ns = c["rows"]["n_star"]
            lines.append(f"  {'N*':<8}{_f(ns['base'], '.5g'):>12}{_f(ns['other'], '.5g'):>12}"
                         f"{('x' + _f(ns['ratio'], '.4g')) if ns['ratio'] is not None else '-':>12}  {_ci(ns['low'], ns['high']):<26}"
                         f"{_yes(ns['significant'])}" + (f"  {ns['why']}" if ns.get("why") else ""))
            for sid, f in c["fits"].items():
                lines.append(f"  {sid}: {f['points']} points, {f['dof']} degrees of freedom"
                             + (f"; {'; '.join(f['notes'])}" if f.get("notes") else ""))
    if doc.get("prometheus_note"):
        lines.append(doc["prometheus_note"])
    return "\n".join(lines)
