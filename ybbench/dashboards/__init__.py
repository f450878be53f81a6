"""Grafana dashboards as code (grafana-foundation-sdk). `python -m
ybbench.dashboards` writes them to grafana/dashboards/, which compose
provisions; the tests regenerate them and compare."""

from __future__ import annotations

from pathlib import Path

from . import compare_runs, disk_cache, history, k6_client, logs, overview, postgres, storage
from .common import to_json

OUT = Path(__file__).resolve().parents[2] / "grafana" / "dashboards"

# file name -> builder; one JSON file per dashboard.
BOARDS = {
    "overview.json": overview.build,
    "storage.json": storage.build,
    "disk-cache.json": disk_cache.build,
    "k6-client.json": k6_client.build,
    "postgres.json": postgres.build,
    "logs.json": logs.build,
    "compare-runs.json": compare_runs.build,
    "history.json": history.build,
}


def render() -> dict[str, str]:
    """Every dashboard's JSON text, by file name."""
    return {name: to_json(build()) for name, build in BOARDS.items()}


def write(out: Path = OUT) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in render().items():
        path = out / name
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(path)  # a provisioning Grafana never reads half a file
        written.append(path)
    return written
