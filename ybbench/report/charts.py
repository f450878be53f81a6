"""Drawing the report's figures: matplotlib on the Agg canvas (no display),
each figure returned as base64 PNG for an inline <img> and for --png."""

from __future__ import annotations

import base64
import io


def png(fig) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode()


def over_time_png(fig, ax, xlabel: str, ylabel: str, title: str) -> str:
    """A chart of values over time finished as every one is (its labels,
    the y axis from 0, the legend) and drawn: png()."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return png(fig)


def line_chart(title: str, ylabel: str, series: dict[str, dict], start: float, end: float,
               whole_run: dict[str, dict | None] | None = None,
               whole_label: str = "whole run (bracketing scrapes)") -> str:
    """Lines over the run, x in seconds since its start, the run's end
    marked. A series with "partial" flags draws its points whose window
    reaches back before the run dashed with hollow markers; whole_run's
    figure of a line is drawn as a dotted level over its bracketing
    interval."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    partial_shown = False
    for name, s in sorted(series.items()):
        x = [t - start for t in s["t"]]
        flags = s.get("partial") or [False] * len(x)
        inside = [i for i, f in enumerate(flags) if not f]
        (line,) = ax.plot([x[i] for i in inside], [s["v"][i] for i in inside], marker=".", label=name or "(none)")
        if any(flags):
            # Partial points and the segment joining them to the first inside point.
            idx = [i for i, f in enumerate(flags) if f] + inside[:1]
            ax.plot([x[i] for i in idx], [s["v"][i] for i in idx], linestyle="--", marker="o", fillstyle="none",
                    color=line.get_color(), alpha=0.6,
                    label=None if partial_shown else "partial: window reaches before the run")
            partial_shown = True
        fig_ = (whole_run or {}).get(name)
        if fig_:
            ax.hlines(fig_["value"], fig_["t0"] - start, fig_["t1"] - start, colors=line.get_color(),
                      linestyles=":", linewidth=1.5)
    if whole_run and any(whole_run.values()):
        ax.plot([], [], linestyle=":", color="grey", label=whole_label)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.axvline(end - start, color="grey", linewidth=0.8)
    return over_time_png(fig, ax, "seconds since the run started (grey lines: start and end)", ylabel, title)


def bar_chart(title: str, ylabel: str, groups: list[str], bars: dict[str, list[float | None]]) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(bars))
    for i, (name, vals) in enumerate(bars.items()):
        ax.bar([g + i * width for g in range(len(groups))], [v or 0 for v in vals], width, label=name)
    ax.set_xticks([g + 0.4 - width / 2 for g in range(len(groups))], groups)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if len(bars) > 1:
        ax.legend(fontsize=8)
    return png(fig)
