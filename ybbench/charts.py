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
