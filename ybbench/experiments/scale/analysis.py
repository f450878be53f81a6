"""`ybbench scale`: throughput against node count, the Universal
Scalability Law fitted to it, the predicted peak and the efficiency per
node count; with --out, results.json and scale.png in a folder that
appears whole or not at all.

The numbers come from a results file (measured elsewhere: a seed's table)
or from running one workload per cluster with `ybbench run`, a campaign
(experiments/campaign.py) without a record file: the runs go straight
into --runs-dir, and there is no resume."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ybbench.core import catalog, charts, formats, run_folder, usl
from ybbench.core.errors import UserError
from ybbench.core.files import staged_dir
from ybbench.experiments import campaign
from ybbench.experiments.scale.file import Cluster, Measurements, Point, load_clusters, load_results

ONE_HOST = "{n} nodes on one host: the fit describes this host, not a cluster"
# Set by `scale` for each cluster; --set may not override them.
SCALE_KNOBS = ("YSQL_NODES", "VUS", "DURATION")


def _check_out(out: str | None) -> None:
    if out is not None and Path(out).exists():
        raise UserError(f"--out {out}: exists; give a new folder (results are never overwritten)")


def _check_distinct(ns: list[float], where: str) -> None:
    distinct = sorted(set(ns))
    if len(distinct) < 3:
        raise UserError(f"{where}: {len(distinct)} distinct node count(s) ({', '.join(f'{n:g}' for n in distinct)}); "
                        "the fit has three parameters (λ, σ, κ) and needs at least 3")


def _fmt(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def analyse(m: Measurements, alpha: float) -> dict:
    """Every number of the report, as results.json holds it."""
    ns = [p.nodes for p in m.points]
    xs = [p.throughput for p in m.points]
    f = usl.fit(ns, xs, alpha)
    x_one, x_one_from = usl.x1(ns, xs, f)
    peak_n, peak_x, peak_note = f.peak()
    table = []
    for n in sorted(set(ns)):
        vals = [x for nn, x in zip(ns, xs) if nn == n]
        mean = sum(vals) / len(vals)
        table.append({"nodes": n, "measured": vals, "measured_mean": mean, "fitted": float(f.predict(n)),
                      "linear": n * x_one, "efficiency": usl.efficiency(n, mean, x_one)})
    return {
        "name": m.name, "description": m.description, "source": m.source, "notes": m.notes,
        "quantity": m.quantity, "unit": m.unit, "alpha": alpha,
        "points": [{"nodes": p.nodes, "throughput": p.throughput, "replication": p.replication,
                    "source": p.source} for p in m.points],
        "fit": {
            "model": "X(N) = λN / (1 + σ(N−1) + κN(N−1))",
            "method": "non-linear least squares (scipy.optimize.curve_fit, trf, σ, κ >= 0, λ > 0), unweighted",
            "points": f.points, "dof": f.dof, "t": f.t, "sse": f.sse, "residual_se": f.residual_se, "r2": f.r2,
            **{k: {"value": p.value, "se": p.se, "ci": list(p.ci) if p.ci else None}
               for k, p in f.params().items()},
        },
        "x1": {"value": x_one, "from": x_one_from},
        "peak": {"nodes": peak_n, "throughput": peak_x, "note": peak_note,
                 "beyond_measured": peak_n is not None and peak_n > max(ns)},
        "table": table,
    }


def report_text(res: dict, one_host: str | None) -> list[str]:
    unit = res["unit"]
    fit = res["fit"]
    lines = [f"scale: {res['name']}" + (f" ({res['description']})" if res["description"] else "")]
    if res["source"]:
        lines.append(f"source: {res['source']}")
    if one_host:
        lines.append(f"NOTE: {one_host}")
    pct = f"{100 * (1 - res['alpha']):g}%"
    lines.append(f"fit: {fit['model']}, least squares over {fit['points']} points, "
                 f"{len(res['table'])} node counts ({fit['dof']} degrees of freedom)")
    if fit["t"] is None:
        lines.append(f"  no degrees of freedom left ({fit['points']} points, 3 parameters): "
                     "no standard errors or intervals")
    else:
        lines.append(f"  {pct} intervals: estimate ± t[{1 - res['alpha'] / 2:g}; {fit['dof']}]·SE = "
                     f"± {fit['t']:.4f}·SE (from the fit's covariance; a bound of 0 is not imposed on them)")
    for key, sym, u in (("lambda", "λ", f" {unit}"), ("sigma", "σ", ""), ("kappa", "κ", "")):
        p = fit[key]
        ci = f"[{_fmt(p['ci'][0])}, {_fmt(p['ci'][1])}]" if p["ci"] else "-"
        lines.append(f"  {sym} = {_fmt(p['value'], 5)}{u}   SE {_fmt(p['se'], 3)}   {pct} CI {ci}")
    lines.append(f"  R² = {fit['r2']:.4f}, residual SE = {_fmt(fit['residual_se'])} {unit}")
    pk = res["peak"]
    if pk["nodes"] is None:
        lines.append(f"predicted peak: none ({pk['note']})")
    else:
        beyond = f" (beyond the largest N measured, {max(p['nodes'] for p in res['points']):g}: an extrapolation)" \
            if pk["beyond_measured"] else ""
        lines.append(f"predicted peak: N* = sqrt((1 − σ)/κ) = {pk['nodes']:.4g} nodes, "
                     f"X(N*) = {pk['throughput']:.5g} {unit}{beyond}")
    lines.append(f"X(1) = {res['x1']['value']:.5g} {unit} ({res['x1']['from']})")
    lines.append(f"  {'N':>6} {'measured':>12} {'fitted':>12} {'linear N·X(1)':>14} {'efficiency':>11}")
    for row in res["table"]:
        lines.append(f"  {row['nodes']:>6g} {row['measured_mean']:>12.5g} {row['fitted']:>12.5g} "
                     f"{row['linear']:>14.5g} {row['efficiency']:>11.3f}")
    lines.append(f"  measured: {res['quantity']} ({unit}), the mean where a node count has several; "
                 "efficiency: X(N) / (N·X(1))")
    return lines


def _chart(folder: Path, res: dict) -> dict:
    ns = [p["nodes"] for p in res["points"]]
    top = max(ns)
    if res["peak"]["nodes"] is not None and res["peak"]["nodes"] <= 2 * top:
        top = max(top, res["peak"]["nodes"] * 1.2)  # show the peak when it is near the data
    grid = [float(x) for x in np.linspace(min(1.0, min(ns)), top, 120)]
    f = res["fit"]
    fitted = [float(x) for x in usl.model(grid, f["lambda"]["value"], f["sigma"]["value"], f["kappa"]["value"])]
    x_one = res["x1"]["value"]
    pk = res["peak"]
    peak = (pk["nodes"], pk["throughput"]) if pk["nodes"] is not None and pk["nodes"] <= top else None
    where = res["source"] or res["name"]
    footnote = (f"measured: {where}. fitted: USL by least squares, σ = {f['sigma']['value']:.3g}, "
                f"κ = {f['kappa']['value']:.3g}, λ = {f['lambda']['value']:.4g}. "
                f"linear: N·X(1), X(1) {res['x1']['from']}." + (f" {res['one_host']}." if res.get("one_host") else ""))
    return charts.scaling(folder / "scale.png", (ns, [p["throughput"] for p in res["points"]]), (grid, fitted),
                          (grid, [n * x_one for n in grid]), peak, "nodes (N)",
                          f"{res['quantity']} ({res['unit']})", f"{res['name']}: throughput against nodes",
                          footnote)


def _finish(res: dict, out: str | None) -> int:
    lines = report_text(res, res.get("one_host"))
    if res["notes"]:
        lines += ["", "notes (from the file):"] + ["  " + x for x in res["notes"].rstrip().splitlines()]
    if out is not None:
        try:
            with staged_dir(Path(out)) as stage:
                res["charts"] = {"scale.png": _chart(stage, res)}
                formats.write(stage / "results.json", "scale-results",
                              {"format_version": formats.version("scale-results"), **res})
        except OSError as e:
            raise UserError(f"--out {out}: cannot write: {e.strerror or e}") from None
        lines.append(f"\nwritten: {out}/ (results.json, scale.png)")
    print("\n".join(lines))
    return 0


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise UserError(f"--alpha {alpha:g}: expected a number between 0 and 1, e.g. 0.05")


def from_results(path: str, out: str | None, alpha: float) -> int:
    _check_alpha(alpha)
    _check_out(out)
    m = load_results(Path(path))
    _check_distinct([p.nodes for p in m.points], path)
    res = analyse(m, alpha)
    res.update(kind="results file", file=str(path), one_host=None)
    return _finish(res, out)


def one_host_note(clusters: list[Cluster]) -> str | None:
    """Several nodes served from one host measure that host, not a cluster."""
    hosts = set().union(*(c.hosts() for c in clusters))
    if len(hosts) == 1:
        return ONE_HOST.format(n=max(c.nodes for c in clusters))
    return None


@dataclass(kw_only=True)
class Runs(campaign.Campaign):
    """One run of the workload per cluster, straight into --runs-dir (a
    campaign without a record file: no series folder, no resume)."""

    KIND, ID_FROM = "scale", "--testid + cluster name"

    workload: str
    clusters: list[Cluster]
    vus_per_node: int
    duration: str
    settings: dict[str, str]  # --set, every run

    def children(self) -> list[campaign.Child]:
        out = []
        for c in self.clusters:
            t, vus = f"{self.id}-{c.name}", self.vus_per_node * c.nodes
            out.append(campaign.Child(
                t, self.workload, f"cluster {c.name} ({', '.join(c.ysql_nodes)})",
                f"cluster {c.name}: {self.workload}, {self.duration}", c,
                before=f"cluster {c.name}: {c.nodes} node(s), {vus} VUs, {self.duration}, run {t}"))
        return out

    def knobs(self, child: campaign.Child) -> dict[str, str]:
        c: Cluster = child.item
        return {**self.settings, "YSQL_NODES": ",".join(c.ysql_nodes), "VUS": str(self.vus_per_node * c.nodes),
                "DURATION": self.duration}

    def record(self, child: campaign.Child, run: run_folder.Run) -> dict:
        """ops/s of a run (the sum over its ops, as YCSB's overall
        throughput) and its errors, from its summary.json."""
        c: Cluster = child.item
        x = sum(op["per_second"] for op in run.summary["ops"].values())
        return {"cluster": c.name, "nodes": c.nodes, "ysql_nodes": c.ysql_nodes, "testid": run.testid,
                "folder": str(run.folder), "throughput": x, "errors": int(run.summary.get("errors", 0)),
                "k6_exit_code": run.params.get("k6_exit_code")}

    def ran_line(self, child: campaign.Child, rec: dict, seconds: float) -> str | None:
        if rec["errors"]:
            return (f"WARNING: run {child.testid} had {rec['errors']} errors; its throughput counts only the "
                    "statements that ran")
        return None


def from_runs(workload: str, clusters_file: str, *, vus_per_node: int, duration: str, settings: list[str],
              runs_dir: Path, prometheus: str | None, testid: str | None, quiet: bool, out: str | None,
              alpha: float) -> int:
    # Everything that can be checked is checked before the first run.
    _check_alpha(alpha)
    _check_out(out)
    if workload not in catalog.workloads():
        raise UserError(f"unknown workload {workload!r}; known: {', '.join(catalog.workloads())}")
    if vus_per_node < 1:
        raise UserError(f"--vus-per-node {vus_per_node}: expected a whole number >= 1")
    knobs = catalog.parse_settings(settings)
    fixed = [k for k in SCALE_KNOBS if k in knobs]
    if fixed:
        raise UserError(f"--set {', '.join(fixed)}: set by `scale` per cluster (ysql_nodes, --vus-per-node, "
                        "--duration)")
    name, clusters = load_clusters(Path(clusters_file))
    _check_distinct([float(c.nodes) for c in clusters], clusters_file)
    p = Runs(id=testid or f"scale-{workload}-{time.strftime('%Y%m%dT%H%M%S')}", results=runs_dir,
             prometheus=prometheus, quiet=quiet, workload=workload, clusters=clusters, vus_per_node=vus_per_node,
             duration=duration, settings=knobs)
    p.prepare()
    one_host = one_host_note(clusters)
    if one_host:
        print(f"NOTE: {one_host}", flush=True)

    p.run_all({}, say=lambda s: print(s, flush=True))
    runs = [p.records[c.testid] for c in p.children()]
    points = [Point(float(r["nodes"]), r["throughput"], "", str(p.runs[r["testid"]].folder / run_folder.SUMMARY))
              for r in runs]
    m = Measurements(name=f"{name}: {workload}", description=f"{vus_per_node} VUs per node, {duration} per run",
                     source=f"ybbench run {workload} per cluster of {clusters_file} (results in {runs_dir})",
                     quantity=f"{workload} throughput", unit="ops/s", points=points)
    res = analyse(m, alpha)
    res.update(kind="runs", file=str(clusters_file), workload=workload, runs=runs, one_host=one_host,
               knobs=knobs, vus_per_node=vus_per_node, duration=duration)
    if not math.isfinite(res["fit"]["sse"]):
        raise UserError("the fit failed on these runs")
    return _finish(res, out)
