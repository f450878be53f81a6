"""The package's walls (pyproject.toml [tool.importlinter]): each layer
imports only those below it (cli > local > report > experiments > analysis >
run > core), the campaigns don't import each other, dashboards stand alone,
there are no cycles, and no module takes another's private names. Each
check is also run on a copy of the package with the fault it claims to
catch planted in it."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.stack import REPO

LINT = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")


def lint(root: Path) -> subprocess.CompletedProcess:
    """import-linter on the package under `root`, with the contracts in its pyproject.toml."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([LINT, "--no-cache", "--config", str(root / "pyproject.toml")], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def planted(tmp_path: Path, module: str, line: str) -> Path:
    """A copy of the package and its contracts, with `line` added to `module` (a path under ybbench/)."""
    root = tmp_path / "copy"
    shutil.copytree(REPO / "ybbench", root / "ybbench", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    target = root / "ybbench" / module
    target.write_text(target.read_text() + f"\n{line}\n")
    return root


def private_imports(package: Path) -> list[str]:
    """`from ybbench.x import _name` anywhere in the package (relative ones too)."""
    found = []
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("ybbench")):
                found += [f"{path.relative_to(package.parent)}: {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_the_package_keeps_its_layers():
    r = lint(REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Contracts: 4 kept, 0 broken." in r.stdout, r.stdout


@pytest.mark.parametrize(("module", "line", "broken"), [
    # core reaching up to the report (the lowest layer importing the highest)
    ("core/errors.py", "from ybbench.report import page", "cli > local > report > experiments > analysis"),
    # an analysis reaching up to the campaigns it serves
    ("analysis/compare_gate.py", "from ybbench.experiments import campaign", "cli > local > report > experiments"),
    # one campaign importing another's
    ("experiments/sweep/saturation.py", "from ybbench.experiments.doe import effects", "reproduce > sweep"),
    # the dashboards reaching into the runner
    ("dashboards/common.py", "from ybbench.run import k6_process", "dashboards stand alone"),
    # a cycle inside one layer: core.errors <-> core.files
    ("core/errors.py", "from ybbench.core import files", "no cycles"),
])
def test_a_planted_upward_import_breaks_its_contract(tmp_path, module, line, broken):
    r = lint(planted(tmp_path, module, line))
    assert r.returncode != 0, r.stdout
    verdicts = [line for line in r.stdout.splitlines() if line.startswith(broken)]
    assert verdicts and verdicts[0].endswith(" BROKEN"), r.stdout


def test_no_module_imports_another_modules_private_names(tmp_path):
    assert private_imports(REPO / "ybbench") == []
    root = planted(tmp_path, "experiments/reproduce/runs.py", "from ybbench.experiments.sweep.runs import _planted")
    assert private_imports(root / "ybbench") == ["ybbench/experiments/reproduce/runs.py: _planted"]
