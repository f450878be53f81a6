"""Design files for the `ybbench doe` tests, and running the command as a
user would."""

from __future__ import annotations

import copy
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SEED_002 = REPO / "experiments" / "seed-002-esle.yaml"

# Jain, "The Art of Computer Systems Performance Analysis", Example 18.1
# (memory-cache study, 2^2 design, r = 3), here as a 2^(3-1) with C = AB:
# C's column is Jain's AB column. Levels written out by hand, one row per run.
JAIN_ROWS = [
    # A (memory), B (cache), C = AB, the three replications
    ("4M", "1K", "c2", [15, 18, 12]),
    ("16M", "1K", "c1", [45, 48, 51]),
    ("4M", "2K", "c1", [25, 28, 19]),
    ("16M", "2K", "c2", [75, 75, 81]),
]


def jain(r: int = 3, rows=None) -> dict:
    """The design file; r = 1 keeps each run's first value."""
    rows = JAIN_ROWS if rows is None else rows
    return {
        "name": "jain-18-1",
        "factors": {
            "A": {"name": "memory size", "levels": ["4M", "16M"]},
            "B": {"name": "cache size", "levels": ["1K", "2K"]},
            "C": {"name": "third factor", "levels": ["c1", "c2"]},
        },
        "generators": ["C = AB"],
        "response": {"name": "performance", "unit": "MIPS"},
        "results": {"rows": [{"A": a, "B": b, "C": c, "y": ys[:r]} for a, b, c, ys in rows]},
    }


def write(path: Path, doc: dict) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def seed_doc() -> dict:
    return yaml.safe_load(SEED_002.read_text())


def edited_seed(path: Path, edit) -> Path:
    """The seed file with `edit(doc)` applied, written to `path`."""
    doc = copy.deepcopy(seed_doc())
    edit(doc)
    return write(path, doc)


@dataclass
class Done:
    code: int
    stdout: str
    stderr: str


def ybbench_doe(*args: str) -> Done:
    p = subprocess.run([sys.executable, "-m", "ybbench", "doe", *map(str, args)], cwd=REPO,
                       capture_output=True, text=True, timeout=300)
    return Done(p.returncode, p.stdout, p.stderr)


def drop(*path):
    """An edit of a design file: delete the key at path."""
    def edit(d):
        for key in path[:-1]:
            d = d[key]
        del d[path[-1]]
    return edit
