"""The tests' own walls (docs/testing.md): test files live in unit/, native/
or compose/ by what they need, their helpers in support/, no test file
imports another test file (what two test files share is a support module),
and a test skips for want of a tool only through tests/support/shared.py,
whose skips YBBENCH_REQUIRE_TOOLS=1 makes failures."""

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


# The skips test files make themselves, none for want of a tool (those go through shared.need_tool).
OWN_SKIPS = [
    "native/test_bench_pinning.py: test_the_server_and_the_clients_run_on_cores_of_their_own",  # one core
    "native/test_end_to_end.py: test_per_op_latency_of_a_mixed_run_comes_from_prometheus",  # one driver is enough
]


def own_skips(root: Path) -> list[str]:
    """Where a test_*.py module under `root` skips by itself (pytest.skip,
    importorskip, a skip or skipif mark): "file: the def it is in", or
    "file: <module>" outside any."""
    found = []

    def walk(node: ast.AST, path: Path, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Attribute) and child.attr in ("skip", "skipif", "importorskip"):
                found.append(f"{path.relative_to(root)}: {where}")
            top = where == "<module>" and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            walk(child, path, child.name if top else where)

    for path in sorted(root.rglob("test_*.py")):
        walk(ast.parse(path.read_text()), path, "<module>")
    return found


own_skips.__test__ = False  # a helper, not a test


def test_a_missing_tool_skips_only_through_need_tool(tmp_path):
    # A skip of a test file's own stays a skip under YBBENCH_REQUIRE_TOOLS=1: CI would pass without the tool
    # (the Otava tests did, with a module-level pytest.skip and a skipif).
    assert own_skips(REPO / "tests") == OWN_SKIPS
    (tmp_path / "test_a.py").write_text("import pytest\nif not tool():\n    pytest.skip('no tool', allow_module_level=True)\n")
    (tmp_path / "test_b.py").write_text("import pytest\n@pytest.mark.skipif(not tool(), reason='no tool')\n"
                                        "def test_b():\n    pass\n")
    assert own_skips(tmp_path) == ["test_a.py: <module>", "test_b.py: test_b"]
