"""The tests' own walls (docs/testing.md): test files live in unit/, native/
or compose/ by what they need, their helpers in support/, and no test file
imports another test file (what two test files share is a support module)."""

from __future__ import annotations

import ast
from pathlib import Path

from ..support.stack import REPO

GROUPS = ("unit", "native", "compose")


def test_imports(root: Path) -> list[str]:
    """Imports of a test_*.py module by any module under `root`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([node.module or ""] + [a.name for a in node.names] if isinstance(node, ast.ImportFrom)
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            found += [f"{path.relative_to(root)}: {n}" for n in names if n.split(".")[-1].startswith("test_")]
    return found


test_imports.__test__ = False  # a helper, not a test


def test_no_test_file_imports_another(tmp_path):
    assert test_imports(REPO / "tests") == []
    (tmp_path / "test_a.py").write_text("from .test_b import helper\n")
    assert test_imports(tmp_path) == ["test_a.py: test_b"]


def test_every_test_file_is_in_a_group_and_every_helper_in_support():
    tests = REPO / "tests"
    assert not list(tests.glob("test_*.py")), "a test file outside unit/, native/ and compose/"
    assert sorted(p.name for p in tests.glob("*.py")) == ["__init__.py", "conftest.py"]
    for group in GROUPS:
        stray = [p.name for p in (tests / group).glob("*.py") if not p.name.startswith("test_") and
                 p.name != "__init__.py"]
        assert stray == [], f"helpers in tests/{group}/ belong in tests/support/: {stray}"
        assert len(list((tests / group).glob("test_*.py"))) >= 3, group
