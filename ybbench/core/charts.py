"""PNG charts of a design's analysis, drawn with matplotlib's Agg canvas
(no display, no pyplot state). Each function returns the numbers it plotted
so that results.json can carry them and a reader (or a test) can check the
picture against the analysis."""

from __future__ import annotations

from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure


def _save(fig: Figure, path: Path) -> None:
    FigureCanvasAgg(fig)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def pareto(path: Path, labels: list[str], values: list[float], reference: list[tuple[str, float]],
           xlabel: str, title: str) -> dict:
    """Horizontal bars of |value|, largest on top, with vertical reference
    lines (e.g. the t quantile an effect must pass to be significant)."""
    order = sorted(range(len(values)), key=lambda i: abs(values[i]), reverse=True)
    labels = [labels[i] for i in order]
    values = [values[i] for i in order]
    fig = Figure(figsize=(8, 0.35 * len(values) + 1.6))
    ax = fig.add_subplot()
    ax.barh(range(len(values)), [abs(v) for v in values],
            color=["#c44e52" if v < 0 else "#4c72b0" for v in values])
    ax.set_yticks(range(len(values)), labels)
    ax.invert_yaxis()
    for (name, x), style in zip(reference, ("--", ":")):
        ax.axvline(x, color="black", linestyle=style, linewidth=1, label=f"{name} = {x:.3g}")
    if reference:
        ax.legend(loc="lower right", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.set_title(title, fontsize=10)
    _save(fig, path)
    return {"labels": labels, "values": values, "reference": dict(reference), "xlabel": xlabel}


def interaction(path: Path, x_name: str, x_levels: tuple[str, str], line_name: str,
                line_levels: tuple[str, str], means: list[list[float]], ylabel: str, title: str) -> dict:
    """Mean response at the four combinations of two factors: x levels on
    the axis, one line per level of the other factor. Parallel lines: no
    interaction. means[i][j]: x level i, line level j."""
    fig = Figure(figsize=(5.5, 4))
    ax = fig.add_subplot()
    for j, lv in enumerate(line_levels):
        ax.plot([0, 1], [means[0][j], means[1][j]], marker="o", label=f"{line_name} = {lv}")
    ax.set_xticks([0, 1], list(x_levels))
    ax.set_xlim(-0.3, 1.3)
    ax.set_xlabel(x_name)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    _save(fig, path)
    return {"x": x_name, "x_levels": list(x_levels), "lines": line_name, "line_levels": list(line_levels),
            "means": means}


def scaling(path: Path, measured: tuple[list[float], list[float]], fitted: tuple[list[float], list[float]],
            linear: tuple[list[float], list[float]], peak: tuple[float, float] | None, xlabel: str, ylabel: str,
            title: str, footnote: str) -> dict:
    """Throughput against node count: the measured points, the fitted
    curve and linear scaling from X(1), with the predicted peak marked; the
    footnote says where each series comes from."""
    fig = Figure(figsize=(7.5, 5.2))
    ax = fig.add_subplot()
    ax.plot(*linear, color="grey", linestyle="--", linewidth=1, label="linear: N·X(1)")
    ax.plot(*fitted, color="#4c72b0", linewidth=1.8, label="fitted (USL)")
    ax.plot(*measured, "o", color="#c44e52", label="measured")
    if peak is not None:
        ax.plot([peak[0]], [peak[1]], "^", color="black", label=f"predicted peak N* = {peak[0]:.3g}")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0, top=max(max(measured[1]), max(fitted[1])) * 1.15)
    ax.set_xlim(left=0)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title(title, fontsize=10)
    fig.text(0.01, 0.005, footnote, fontsize=7, wrap=True, va="bottom")
    fig.subplots_adjust(bottom=0.22)
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=110)
    return {"measured": {"nodes": list(measured[0]), "throughput": list(measured[1])},
            "fitted": {"nodes": list(fitted[0]), "throughput": list(fitted[1])},
            "linear": {"nodes": list(linear[0]), "throughput": list(linear[1])},
            "peak": None if peak is None else {"nodes": peak[0], "throughput": peak[1]},
            "xlabel": xlabel, "ylabel": ylabel, "title": title, "footnote": footnote}
