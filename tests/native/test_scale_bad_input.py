"""Bad inputs stop `ybbench scale` before anything runs (or, for a node
that does not answer, at `ybbench run`'s own check), with a message naming
the problem, exit code 2, and no output folder, not even a hidden
half-written one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ybbench.cli import main

from ..support.stack import BIN, REPO, free_port

GOOD_ROWS = [{"nodes": n, "throughput": 100.0 * n} for n in (1, 2, 4)]


def clusters(*entries) -> dict:
    return {"clusters": list(entries) or [{"name": f"n{n}", "nodes": n, "ysql_nodes": ["127.0.0.1:5433"] * n}
                                          for n in (1, 2, 3)]}


def assert_nothing_written(folder: Path, out: Path) -> None:
    assert not out.exists()
    assert not [p for p in folder.iterdir() if p.name.startswith(".") or p.name == "runs"], list(folder.iterdir())


# (file name, its text, the message the error must contain)
RESULTS_CASES = {
    "not YAML": ("r.yaml", "rows: [", "not valid YAML"),
    "unknown top-level key": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS, "row": []}), "unknown key 'row'"),
    "unknown row key": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS + [{"nodes": 8, "throughput": 1, "ops": 2}]}),
                        "rows[3]: unknown key 'ops'"),
    "row without throughput": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS + [{"nodes": 8}]}),
                               "rows[3]: missing throughput"),
    "zero nodes": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS + [{"nodes": 0, "throughput": 5}]}),
                   "rows[3].nodes: 0 nodes: a node count is positive"),
    "negative nodes": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS + [{"nodes": -2, "throughput": 5}]}),
                       "rows[3].nodes: -2 nodes"),
    "zero throughput": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS + [{"nodes": 8, "throughput": 0}]}),
                        "rows[3].throughput: 0: throughput must be positive"),
    "throughput not a number": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS + [{"nodes": 8, "throughput": "fast"}]}),
                                "rows[3].throughput: 'fast' is not a number"),
    "two distinct N": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS[:2]}),
                       "2 distinct node count(s) (1, 2); the fit has three parameters (λ, σ, κ) and needs at least 3"),
    "repeated N": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS + [{"nodes": 2, "throughput": 190}]}),
                   "rows[3]: repeats 2 nodes of"),
    "rows and csv": ("r.yaml", yaml.safe_dump({"rows": GOOD_ROWS, "csv": "x.csv"}), "give either rows"),
    "empty rows": ("r.yaml", yaml.safe_dump({"rows": []}), "rows: expected a list"),
    "csv without throughput": ("r.csv", "nodes,ops\n1,2\n", "no column throughput"),
    "csv unknown column": ("r.csv", "nodes,throughput,ops\n1,2,3\n", "unknown column 'ops'"),
    "csv negative throughput": ("r.csv", "nodes,throughput\n1,10\n2,-3\n3,30\n",
                                "r.csv line 3: throughput: '-3': throughput must be positive"),
    "csv short line": ("r.csv", "nodes,throughput\n1,10\n2\n", "r.csv line 3: expected 2 cells"),
    "csv no rows": ("r.csv", "nodes,throughput\n", "no rows"),
}


@pytest.mark.parametrize("case", RESULTS_CASES)
def test_a_bad_results_file_is_named(tmp_path, capsys, case):
    name, text, message = RESULTS_CASES[case]
    path = tmp_path / name
    path.write_text(text)
    code = main(["scale", "--throughput", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("ybbench: error: ") and message in err, err
    assert_nothing_written(tmp_path, tmp_path / "out")


def test_the_old_results_file_spelling_says_the_new_one(tmp_path, capsys):
    # --results is a folder everywhere; scale's throughput file is --throughput.
    path = tmp_path / "r.yaml"
    path.write_text("results:\n  - {nodes: 1, throughput: 10}\n")
    assert main(["scale", "--results", str(path), "--out", str(tmp_path / "out")]) == 2
    assert "give throughput measured elsewhere as --throughput FILE" in capsys.readouterr().err
    assert_nothing_written(tmp_path, tmp_path / "out")


def test_a_missing_results_file(tmp_path, capsys):
    assert main(["scale", "--throughput", str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: cannot read: No such file or directory" in capsys.readouterr().err


CLUSTER_CASES = {
    "unknown top-level key": ({**clusters(), "cluster": []}, "unknown key 'cluster'"),
    "no clusters": ({"name": "x"}, "missing clusters"),
    "unknown cluster key": (clusters({"name": "a", "nodes": 1, "ysql_nodes": ["h:1"], "vus": 2}),
                            "clusters[0]: unknown key 'vus'"),
    "cluster without ysql_nodes": (clusters({"name": "a", "nodes": 1}), "clusters[0]: missing ysql_nodes"),
    "zero nodes": (clusters({"name": "a", "nodes": 0, "ysql_nodes": ["h:1"]}),
                   "clusters[0].nodes: 0: a node count is a whole number >= 1"),
    "fractional nodes": (clusters({"name": "a", "nodes": 1.5, "ysql_nodes": ["h:1"]}), "clusters[0].nodes: 1.5"),
    "address without port": (clusters({"name": "a", "nodes": 1, "ysql_nodes": ["h"]}),
                             "clusters[0].ysql_nodes: 'h' is not host:port"),
    "port out of range": (clusters({"name": "a", "nodes": 1, "ysql_nodes": "h:1,h:70000"}),
                          "'h:70000' is not host:port"),
    "a name used twice": (clusters(*[{"name": "a", "nodes": n, "ysql_nodes": ["h:1"]} for n in (1, 2)]),
                          "clusters[1].name: 'a' is used twice"),
    "a name that cannot be a run id": (clusters({"name": "a b", "nodes": 1, "ysql_nodes": ["h:1"]}),
                                       "clusters[0].name: 'a b'"),
    "two distinct N": (clusters(*[{"name": f"c{i}", "nodes": n, "ysql_nodes": ["h:1"]}
                                  for i, n in enumerate((1, 2, 2))]),
                       "2 distinct node count(s) (1, 2)"),
}


@pytest.mark.parametrize("case", CLUSTER_CASES)
def test_a_bad_cluster_file_is_named(tmp_path, capsys, case):
    doc, message = CLUSTER_CASES[case]
    path = tmp_path / "clusters.yaml"
    path.write_text(yaml.safe_dump(doc))
    code = main(["scale", "sql-inserts", "--clusters", str(path), "--runs-dir", str(tmp_path / "runs"),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"ybbench: error: {path}") and message in err, err
    assert_nothing_written(tmp_path, tmp_path / "out")


ARG_CASES = {
    "neither way in": ([], "give either --throughput FILE"),
    "both ways in": (["sql-inserts", "--throughput", "r.yaml", "--clusters", "c.yaml"], "give either --throughput FILE"),
    "a workload with --results": (["sql-inserts", "--throughput", "r.yaml"], "give either --throughput FILE"),
    "--clusters without a workload": (["--clusters", "c.yaml"], "give either --throughput FILE"),
    "unknown workload": (["sql-nothing", "--clusters", "c.yaml"], "unknown workload 'sql-nothing'"),
    "knob set by scale": (["sql-inserts", "--clusters", "c.yaml", "--set", "VUS=8"],
                          "--set VUS: set by `scale` per cluster"),
    "unknown knob": (["sql-inserts", "--clusters", "c.yaml", "--set", "SPEED=8"], "--set SPEED: unknown knob"),
    "vus per node": (["sql-inserts", "--clusters", "c.yaml", "--vus-per-node", "0"], "--vus-per-node 0"),
    "alpha": (["--throughput", "r.yaml", "--alpha", "1.5"], "--alpha 1.5: expected a number between 0 and 1"),
    "run id too long": (["sql-inserts", "--clusters", "c.yaml", "--testid", "x" * 64], "run id 'xxxx"),
}


@pytest.mark.parametrize("case", ARG_CASES)
def test_bad_arguments(tmp_path, capsys, monkeypatch, case):
    args, message = ARG_CASES[case]
    (tmp_path / "r.yaml").write_text(yaml.safe_dump({"rows": GOOD_ROWS}))
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(clusters()))
    monkeypatch.chdir(tmp_path)
    code = main(["scale", *args, "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert_nothing_written(tmp_path, tmp_path / "out")


def test_out_that_exists_is_left_alone(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(yaml.safe_dump({"rows": GOOD_ROWS}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    assert main(["scale", "--throughput", str(tmp_path / "r.yaml"), "--out", str(out)]) == 2
    assert "exists; give a new folder" in capsys.readouterr().err
    assert [p.name for p in out.iterdir()] == ["mine.txt"]


def test_a_run_id_already_used(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(clusters()))
    (tmp_path / "runs" / "s-n2").mkdir(parents=True)
    code = main(["scale", "sql-inserts", "--clusters", str(tmp_path / "c.yaml"), "--testid", "s",
                 "--runs-dir", str(tmp_path / "runs"), "--out", str(tmp_path / "out")])
    assert code == 2 and "s-n2 exists: a run id is used once" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "runs").iterdir()] == ["s-n2"] and not (tmp_path / "out").exists()


def test_unreachable_nodes_fail_at_ybbench_runs_check(tmp_path, binaries):
    """Nothing listens on the port: the first run's k6 cannot connect, and
    `ybbench run`'s own error (k6's message) stops the command; no run
    folder, no output folder."""
    addr = f"127.0.0.1:{free_port()}"
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(
        {"clusters": [{"name": f"n{n}", "nodes": n, "ysql_nodes": [addr] * n} for n in (1, 2, 3)]}))
    p = subprocess.run([sys.executable, "-m", "ybbench", "scale", "sql-inserts", "--clusters", tmp_path / "c.yaml",
                        "--duration", "2s", "--runs-dir", tmp_path / "runs", "--quiet", "--out", tmp_path / "out"],
                       cwd=REPO, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "K6": str(BIN / "k6"), "PGPASSWORD": "x"})
    # k6's own exit code passes through: 107, a script exception (its setup could not connect).
    assert p.returncode == 107, p.stdout + p.stderr
    assert f"ybbench: error: cluster n1 ({addr}): sql-inserts failed (k6 exit 107)" in p.stderr
    assert "connection refused" in p.stderr
    assert not (tmp_path / "out").exists()
    assert list((tmp_path / "runs").iterdir()) == []
