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


def line_chart(title: str, ylabel: str, series: dict[str, dict], start: float) -> str:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    for name, s in sorted(series.items()):
        ax.plot([t - start for t in s["t"]], s["v"], label=name or "(none)")
    ax.set_xlabel("seconds since the run started")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return png(fig)


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
