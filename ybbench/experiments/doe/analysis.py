"""`ybbench doe DESIGN.yaml`: print the design (sign table, aliases,
resolution) and, when the file carries results, the effects, the
allocation of variation, the confidence intervals and the file's claims
checked against them; with --out, write results.json and the charts into a
folder that appears whole or not at all."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ybbench.core import charts, formats
from ybbench.core.errors import UserError
from ybbench.core.files import staged_dir
from ybbench.experiments.doe import claims
from ybbench.experiments.doe.effects import Effects, analyse
from ybbench.experiments.doe.file import DesignFile, load
from ybbench.experiments.doe.plan import describe

ALIAS_ORDER = 3  # aliases printed up to three-factor interactions; results.json has them all


def _num(x: float) -> float | None:
    """JSON has no NaN or infinity."""
    x = float(x)
    return x if math.isfinite(x) else None


def _chain_text(column, max_order: int | None = ALIAS_ORDER, ellipsis: bool = True) -> str:
    shown = column.aliases(max_order)
    more = len(column.chain) - 1 - len(shown)
    return " = ".join([column.name] + [str(a) for a in shown]) + (" = ..." if more and ellipsis else "")


def design_text(df: DesignFile) -> list[str]:
    d = df.design
    lines = [f"design: {df.name}" + (f" ({df.description})" if df.description else "")]
    if df.source:
        lines.append(f"source: {df.source}")
    kind = f"2^({d.k}-{d.p}) fractional factorial" if d.p else f"2^{d.k} full factorial"
    r = df.y.shape[1] if df.y is not None else None
    lines.append(f"{kind}: {d.runs} runs" + (f", {r} replication(s) each" if r else ", no results yet"))
    lines.append("factors (level 1 = -1, level 2 = +1):")
    for f in df.factors:
        gen = next((f" ({g})" for g in d.generators if g.factor == f.letter), "")
        unit = f" [{f.unit}]" if f.unit else ""
        lines.append(f"  {f.letter}  {f.name}{unit}: -1 = {f.levels[0]}, +1 = {f.levels[1]}{gen}")
    if df.run is not None:
        lines += describe(df.run, df.factors)
    if d.p:
        lines.append(f"generators: {', '.join(map(str, d.generators))}")
        lines.append(f"defining relation: {d.defining_text()}")
        res = d.resolution
        what = {3: "main effects are aliased with two-factor interactions",
                4: "main effects are clear of two-factor interactions, which are aliased with each other",
                }.get(res, "main effects and two-factor interactions are clear of each other")
        lines.append(f"resolution: {d.resolution_text()} (shortest word of the defining relation has "
                     f"{res} letters: {what})")
        # Short chains in full; long ones up to three-factor interactions,
        # since higher-order interactions are rarely large (effect sparsity).
        order = None if 2 ** d.p <= 8 else ALIAS_ORDER
        lines.append("aliases (each column estimates the sum of its chain):" if order is None else
                     f"aliases (up to {ALIAS_ORDER}-factor interactions; all in results.json):")
        for c in d.columns():
            lines.append(f"  {_chain_text(c, order)}")
    else:
        lines.append("resolution: full factorial (no aliasing)")
    lines.append("sign table (runs in the design's order; results matched by factor levels):")
    head = "  run " + " ".join(f"{x:>2}" for x in d.factors)
    if df.y is not None:
        head += f"  {'source run':>10}  {df.response}" + (" (mean; values)" if r > 1 else "")
    lines.append(head)
    for i, row in enumerate(d.matrix):
        line = f"  {i + 1:>3} " + " ".join(f"{'+' if s > 0 else '-':>2}" for s in row)
        if df.y is not None:
            ys = df.y[i]
            line += f"  {df.run_ids[i] or '':>10}  {ys.mean():g}" + (f" ({', '.join(f'{v:g}' for v in ys)})"
                                                                    if r > 1 else "")
        lines.append(line)
    return lines


def effects_text(df: DesignFile, eff: Effects, columns) -> list[str]:
    unit = f" {df.unit}" if df.unit else ""
    lines = [f"effects on {df.response}{(' (' + df.unit + ')') if df.unit else ''}: "
             f"mean q0 = {eff.mean:.2f}{unit}; SST = {eff.sst:.6g}"]
    if eff.method == "replications":
        lines.append(f"  error: SSE = {eff.sse:.6g}, s_e = sqrt(SSE/({eff.runs}·{eff.replications - 1})) = "
                     f"{eff.se * math.sqrt(eff.runs * eff.replications):.4g}, s_q = {eff.se:.4g}, "
                     f"t[{1 - eff.alpha / 2:g}; {eff.df:g}] = {eff.t:.4f}, CI = q ± {eff.margin:.4g}")
    else:
        le = eff.lenth
        lines.append(f"  one replication: Lenth's pseudo standard error (Lenth 1989): s0 = 1.5·median|q| = "
                     f"{le['s0']:.4g}, PSE = {le['pse']:.4g} ({le['trimmed']} |q| >= 2.5·s0 left out), "
                     f"d = m/3 = {le['d']:g}")
        lines.append(f"  ME = t[{1 - eff.alpha / 2:g}; {le['d']:g}]·PSE = {le['t']:.4f}·{le['pse']:.4g} = "
                     f"{le['me']:.4g}; SME = {le['t_sme']:.4f}·PSE = {le['sme']:.4g}")
    lines.append(f"  {'effect':<8}{'q':>11}{'share':>9}  {'CI':<24}{'sig':<5}aliases")
    order = sorted(range(len(columns)), key=lambda i: -abs(eff.q[i]))
    ci, sig = eff.ci(), eff.significant()
    for i in order:
        c = columns[i]
        rng = f"[{ci[i][0]:.2f}, {ci[i][1]:.2f}]" if eff.margin is not None else "-"
        lines.append(f"  {c.name:<8}{eff.q[i]:>11.2f}{100 * eff.share[i]:>8.2f}%  {rng:<24}"
                     f"{'yes' if sig[i] else 'no':<5}{_chain_text(c, ALIAS_ORDER, ellipsis=False)}")
    if eff.error_share is not None:
        lines.append(f"  {'error':<8}{'':>11}{100 * eff.error_share:>8.2f}%")
    lines.append("  q: half the change of the response from level -1 to +1; share: 2^(k-p)·r·q²/SST; "
                 f"sig: the {100 * (1 - eff.alpha):g}% CI excludes 0")
    return lines


def claims_text(verdicts) -> list[str]:
    if not verdicts:
        return []
    lines = ["the study's claims, checked against these numbers:"]
    for v in verdicts:
        where = f" [{v.claim.where}]" if v.claim.where else ""
        lines.append(f"  {'HOLDS' if v.holds else 'CONTRADICTED'}: {v.claim.says}{where}")
        lines.append(f"    {v.detail}")
        for c in v.caveats:
            lines.append(f"    note: {c}")
    return lines


def _json(df: DesignFile, eff: Effects | None, columns, verdicts, plots: dict, alpha: float) -> dict:
    d = df.design
    out = {
        "design": {
            "name": df.name, "file": str(df.path), "k": d.k, "p": d.p, "runs": d.runs,
            "factors": [{"letter": f.letter, "name": f.name, "levels": list(f.levels), "unit": f.unit}
                        for f in df.factors],
            "generators": [str(g) for g in d.generators],
            "defining_relation": ["I"] + [str(a) for a in d.defining[1:]],
            "resolution": d.resolution,
            "aliases": {c.name: [str(a) for a in c.chain[1:]] for c in columns},
            "sign_table": d.matrix.tolist(),
        },
        "alpha": alpha,
    }
    if df.y is None:
        return out
    out["runs"] = [{"run": i + 1, "source_run": df.run_ids[i], "source": df.run_sources[i],
                    "levels": {f.letter: f.level(s) for f, s in zip(df.factors, d.matrix[i])},
                    "y": df.y[i].tolist(), "mean": float(df.y[i].mean())} for i in range(d.runs)]
    ci, sig, std = eff.ci(), eff.significant(), eff.standardized
    out["analysis"] = {
        "response": df.response, "unit": df.unit, "replications": eff.replications, "method": eff.method,
        "mean": eff.mean, "sst": eff.sst, "sse": eff.sse if eff.replications > 1 else None,
        "error_share": eff.error_share, "se": _num(eff.se) if eff.se is not None else None,
        "df": eff.df, "t": eff.t, "margin": _num(eff.margin) if eff.margin is not None else None,
        "lenth": eff.lenth,
        "effects": [{"name": c.name, "aliases": [str(a) for a in c.chain[1:]], "signs": c.signs.tolist(),
                     "q": float(eff.q[i]), "ss": float(eff.ss[i]), "share": float(eff.share[i]),
                     "ci": [_num(ci[i][0]), _num(ci[i][1])], "significant": bool(sig[i]),
                     "standardized": _num(std[i])} for i, c in enumerate(columns)],
    }
    out["claims"] = [{"says": v.claim.says, "where": v.claim.where, "kind": v.claim.kind, "effects": v.claim.words,
                      "holds": v.holds, "detail": v.detail, "caveats": v.caveats} for v in verdicts]
    out["charts"] = plots
    return out


def _charts(folder: Path, df: DesignFile, eff: Effects, columns) -> dict:
    plots = {}
    labels = [_chain_text(c, 2, ellipsis=False) for c in columns]
    if eff.se:
        ref = [(f"t[{1 - eff.alpha / 2:g}; {eff.df:g}]", eff.t)]
        if eff.lenth:
            ref.append(("SME/PSE", eff.lenth["t_sme"]))
        scale = "s_q" if eff.method == "replications" else "Lenth's PSE"
        plots["pareto.png"] = charts.pareto(
            folder / "pareto.png", labels, [float(x) for x in eff.standardized], ref,
            f"|standardized effect| = |q| / {scale}  (blue: q > 0, red: q < 0)",
            f"{df.name}: standardized effects on {df.response} (alpha = {eff.alpha:g})")
    else:  # no spread to standardize by (identical replications, or PSE = 0)
        plots["pareto.png"] = charts.pareto(
            folder / "pareto.png", labels, [float(x) for x in eff.q], [], "|q|  (blue: q > 0, red: q < 0)",
            f"{df.name}: effects on {df.response} (not standardized: no error estimate)")
    ylabel = df.response + (f" ({df.unit})" if df.unit else "")
    for pair in df.interactions:
        a, b = df.factor(pair[0]), df.factor(pair[1])
        ia, ib = df.design.factors.index(a.letter), df.design.factors.index(b.letter)
        ybar = df.y.mean(axis=1)
        means = [[float(ybar[(df.design.matrix[:, ia] == sa) & (df.design.matrix[:, ib] == sb)].mean())
                  for sb in (-1, 1)] for sa in (-1, 1)]
        col, sign = df.design.find(pair)
        chain = [str(x) for x in df.design.chain(pair) if len(x.word) <= ALIAS_ORDER]
        title = f"{a.name} ({a.letter}) × {b.name} ({b.letter})\ncontrast: {' = '.join(chain)}"
        name = f"interaction-{a.letter}-{b.letter}.png"
        plots[name] = charts.interaction(folder / name, f"{a.name} ({a.letter})", a.levels,
                                         f"{b.name} ({b.letter})", b.levels, means, ylabel, title)
        plots[name]["contrast"] = {"column": col.name, "sign": sign}
    return plots


def check_args(out: str | None, alpha: float) -> None:
    if not 0 < alpha < 1:
        raise UserError(f"--alpha {alpha:g}: expected a number between 0 and 1, e.g. 0.05")
    if out is not None and Path(out).exists():
        raise UserError(f"--out {out}: exists; give a new folder (results are never overwritten)")


def command(path: str, out: str | None, alpha: float) -> int:
    check_args(out, alpha)
    return report(load(Path(path)), out, alpha)


def report(df: DesignFile, out: str | None, alpha: float) -> int:
    """Print the design and, with y, its analysis; write --out."""
    columns = df.design.columns()
    lines = design_text(df)
    eff, verdicts = None, []
    if df.y is not None:
        eff = analyse(np.column_stack([c.signs for c in columns]), df.y, alpha)
        verdicts = claims.check(df, eff, columns)
        lines += [""] + effects_text(df, eff, columns)
        if verdicts:
            lines += [""] + claims_text(verdicts)
    if df.ignored_columns:
        lines.append(f"CSV columns not used: {', '.join(df.ignored_columns)}")
    if df.notes:
        lines += ["", "notes (from the design file):"] + ["  " + x for x in df.notes.rstrip().splitlines()]
    if out is not None:
        try:
            with staged_dir(Path(out)) as stage:
                plots = _charts(stage, df, eff, columns) if eff is not None else {}
                formats.write(stage / "results.json", "doe-results", {"format_version": formats.version("doe-results"),
                                                                      **_json(df, eff, columns, verdicts, plots, alpha)})
        except OSError as e:
            raise UserError(f"--out {out}: cannot write: {e.strerror or e}") from None
        lines.append(f"\nwritten: {out}/ (results.json" + (", pareto.png, interaction-*.png)" if eff else ")"))
    print("\n".join(lines))
    return 0
