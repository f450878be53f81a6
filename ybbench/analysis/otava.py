"""Apache Otava's change points (E-Divisive means, then its t-test), from its
own program: Otava pins older numpy and scipy than ybbench, so it lives in a
venv of its own (native/install-deps.sh: $YBBENCH_CACHE/otava-venv; the
ybbench image: /opt/otava, named by YBBENCH_OTAVA). We write the series as
a CSV with an Otava config naming its metrics and their directions, run
`otava analyze --output json` and read its change points back. Nothing of
E-Divisive is computed here.

Otava's defaults are kept: p-value 0.001 (its -P), window 50 points; its
-M (the smallest change kept, as a fraction) is 0 unless `history
--min-change` sets it."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ybbench.core.errors import UserError

VERSION = "0.8.0"  # native/otava-requirements.txt
P_VALUE = 0.001  # otava analyze's default (-P)
WINDOW = 50  # otava analyze's default (--window)
TEST = "ybbench"
T0 = 946684800  # 2000-01-01: Otava's time column; run i is T0 + i s, so Otava keeps our order
SINCE = "1999-12-31T00:00:00+00:00"


def program() -> Path:
    given = os.environ.get("YBBENCH_OTAVA")
    if given:
        return Path(given)
    cache = Path(os.environ.get("YBBENCH_CACHE", Path.home() / ".cache" / "ybbench"))
    return cache / "otava-venv" / "bin" / "otava"


@dataclass(frozen=True)
class Metric:
    name: str  # the CSV column and Otava's metric name
    direction: int  # 1: higher is better (ops/s); -1: lower is better (latency)


@dataclass(frozen=True)
class ChangePoint:
    metric: str
    index: int  # the first run after the change, 0-based in the series
    mean_before: float
    stddev_before: float
    mean_after: float
    stddev_after: float
    pvalue: float
    forward_change_percent: float  # Otava's own, rounded to a whole percent


def write_input(folder: Path, runs: list[str], metrics: list[Metric], values: dict[str, list[float]]) -> Path:
    """The CSV (time, run, one column per metric) and Otava's config for
    it, in `folder`; returns the config."""
    data = folder / "series.csv"
    with open(data, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["time", "run", *(m.name for m in metrics)])
        for i, run in enumerate(runs):
            w.writerow([datetime.fromtimestamp(T0 + i, timezone.utc).isoformat(), run, *(repr(float(values[m.name][i])) for m in metrics)])
    config = folder / "otava.yaml"
    test = {"type": "csv", "file": str(data), "time_column": "time", "attributes": ["run"],
            "metrics": {m.name: {"column": m.name, "direction": m.direction} for m in metrics}}
    config.write_text(json.dumps({"tests": {TEST: test}}, indent=2))  # JSON is YAML
    return config


def command_line(config: Path, magnitude: float = 0.0) -> list[str]:
    # --since: Otava's default is the last 365 days of the time column.
    return [str(program()), "analyze", "--config-file", str(config), TEST, "--output", "json",
            "--since", SINCE, *(["-M", repr(magnitude)] if magnitude else [])]


def run_otava(config: Path, magnitude: float = 0.0) -> str:
    exe = program()
    if not exe.exists():
        raise UserError(f"Apache Otava is not installed at {exe}: run `make deps` (native/install-deps.sh), "
                        "or name its `otava` program in YBBENCH_OTAVA")
    # Its own HOME: Otava reads ~/.otava/conf.yaml when there is one.
    env = {**os.environ, "HOME": str(config.parent)}
    env.pop("OTAVA_CONFIG", None)
    p = subprocess.run(command_line(config, magnitude), capture_output=True, text=True, env=env, timeout=600)
    # Otava logs a bad input as ERROR and may still exit 0, printing no report.
    errors = [ln for ln in p.stderr.splitlines() if ln.startswith("ERROR")]
    if p.returncode != 0 or errors:
        raise UserError(f"otava analyze failed (exit {p.returncode}): {(chr(10).join(errors) or p.stderr.strip())[-500:]}")
    return p.stdout


def parse(stdout: str) -> list[ChangePoint]:
    """Otava's JSON report: {test: [{time, attributes, changes: [...]}]}."""
    line = next((ln for ln in stdout.splitlines() if ln.startswith("{")), None)
    if line is None:
        raise UserError(f"otava analyze printed no JSON report: {stdout.strip()[-300:]!r}")
    groups = json.loads(line)[TEST]
    found = [ChangePoint(c["metric"], int(c["index"]), float(c["mean_before"]), float(c["stddev_before"]),
                         float(c["mean_after"]), float(c["stddev_after"]), float(c["pvalue"]),
                         float(c["forward_change_percent"]))
             for g in groups for c in g["changes"]]
    return sorted(found, key=lambda c: (c.index, c.metric))


def analyze(runs: list[str], metrics: list[Metric], values: dict[str, list[float]],
            magnitude: float = 0.0) -> list[ChangePoint]:
    """Otava's change points of each metric over the runs, in their order;
    magnitude: Otava drops changes smaller than it (|after / before - 1|)."""
    with tempfile.TemporaryDirectory(prefix="ybbench-otava-") as tmp:
        return parse(run_otava(write_input(Path(tmp), runs, metrics, values), magnitude))
