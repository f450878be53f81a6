"""Bad design files and arguments stop `ybbench doe` before any analysis,
with a message naming the problem, exit code 2, and no output folder (not
even a hidden half-written one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ybbench.cli import main

from ..support.doe_cases import drop, edited_seed, jain, write, ybbench_doe


def rows(d):
    return d["results"]["rows"]


def set_row(i, **kw):
    return lambda d: rows(d)[i].update(kw)


# (edit of the seed file, the message the error must contain)
SEED_CASES = {
    "unknown top-level key": (lambda d: d.update(generator=["E = BC"]), "unknown key 'generator'"),
    "no factors": (drop("factors"), ": missing factors"),
    "factor named by a word": (lambda d: d["factors"].update(Size={"levels": [1, 2]}),
                               "factor 'Size': a factor is one capital letter A-Z"),
    "lower-case factor": (lambda d: d["factors"].update(g={"levels": [1, 2]}), "factor 'g': a factor is one"),
    "unknown factor key": (lambda d: d["factors"]["A"].update(level=[1, 2]), "factors.A: unknown key 'level'"),
    "three levels": (lambda d: d["factors"]["C"].update(levels=[3, 5, 7]),
                     "factors.C.levels: expected a list of two levels"),
    "equal levels": (lambda d: d["factors"]["C"].update(levels=[3, "3"]), "the two levels are the same"),
    "a level that is a list": (lambda d: d["factors"]["C"].update(levels=[[3], 5]), "a level is a number or text"),
    "two factors with one name": (lambda d: d["factors"]["B"].update(name="Operation size"),
                                  "'Operation size' is also the name of A"),
    "generator syntax": (lambda d: d.update(generators=["E == BC", "F = -AB"]),
                         "generator 'E == BC': expected FACTOR = [-]PRODUCT"),
    "generator with a plus": (lambda d: d.update(generators=["E = B + C", "F = -AB"]),
                              "generator 'E = B + C': expected FACTOR = [-]PRODUCT"),
    "generator not text": (lambda d: d.update(generators=[{"E": "BC"}]), "expected text such as 'E = BC'"),
    "generators not a list": (lambda d: d.update(generators="E = BC"), "generators: expected a list"),
    "generator names an unknown factor": (lambda d: d.update(generators=["E = BG", "F = -AB"]),
                                          "generator 'E = BG': G is not a factor"),
    "generator names itself": (lambda d: d.update(generators=["E = BCE", "F = -AB"]),
                               "generator 'E = BCE': E is defined by itself"),
    "generator copies a factor": (lambda d: d.update(generators=["E = B", "F = -AB"]),
                                  "generator 'E = B': E would be a copy of B"),
    "generator repeats a letter": (lambda d: d.update(generators=["E = BB", "F = -AB"]), "a letter repeats in BB"),
    "generator over a generated factor": (lambda d: d.update(generators=["E = BC", "F = AE"]),
                                          "generator 'F = AE': E is itself generated"),
    "factor generated twice": (lambda d: d.update(generators=["E = BC", "E = AB"]), "E generated more than once"),
    "two generators alike": (lambda d: d.update(generators=["E = BC", "F = BC"]),
                             "I = EF makes two main effects one column"),
    "duplicated row": (lambda d: rows(d).append(dict(rows(d)[3])),
                       "results.rows[16] (run 4): repeats the levels of results.rows[3] (run 4)"),
    "missing rows": (lambda d: d["results"].update(rows=rows(d)[:-2]),
                     "results: no results for 2 of the 16 runs: sign table run 15: A=100 rows p/ Operation, "
                     "B=Write-Only, C=5, D=Read Committed, E=True, F=n1-standard-2"),
    "level not a level": (set_row(2, C=4), "results.rows[2] (run 3): C = 4 is not a level of C (Nr. of TServers): "
                                           "'3' or '5'"),
    "level misspelt": (set_row(0, D="snapshot"), "D = 'snapshot' is not a level of D (Consistency level)"),
    "a row that is not a run": (set_row(0, E=False),
                                "results.rows[0] (run 1): not a run of this design: E = BC gives E = 'True' when "
                                "B = 'Read-Only', C = '3', not False"),
    "a row without a factor": (drop("results", "rows", 5, "F"), "results.rows[5] (run 6): no level for F"),
    "a row with an unknown key": (set_row(1, throughput=5), "results.rows[1] (run 2): unknown key 'throughput'"),
    "a row without y": (drop("results", "rows", 1, "y"), "results.rows[1] (run 2): missing y"),
    "replication counts differ": (set_row(4, y=[2846, 2850]),
                                  "results.rows[4] (run 5): 2 replication(s) of A=1 row p/ Operation"),
    "replications says otherwise": (lambda d: d.update(replications=2), "replications: says 2"),
    "replications not a count": (lambda d: d.update(replications=0), "replications: expected a whole number >= 1"),
    "y not a number": (set_row(6, y="fast"), "results.rows[6] (run 7).y: 'fast' is not a number"),
    "y empty": (set_row(6, y=None), "results.rows[6] (run 7).y: None is not a number"),
    "y not finite": (set_row(6, y=float("nan")), "results.rows[6] (run 7).y: nan is not a finite number"),
    "y a boolean": (set_row(6, y=[True]), "results.rows[6] (run 7).y: True is not a number"),
    "y an empty list": (set_row(6, y=[]), "results.rows[6] (run 7).y: no values"),
    "results with rows and csv": (lambda d: d["results"].update(csv="x.csv"),
                                  "results: give either rows (in this file) or csv"),
    "results without rows": (lambda d: d.update(results={}), "results: give either rows"),
    "csv that is not there": (lambda d: d.update(results={"csv": "nothere.csv"}), "cannot read"),
    "claim about an unknown factor": (lambda d: d["claims"][0].update(largest=["C", "G"]),
                                      "effect 'G': not a product of the factors A, B, C, D, E, F"),
    "claim with two kinds": (lambda d: d["claims"][0].update(smallest="F"), "claims[0]: give exactly one of"),
    "claims without results": (drop("results"), "claims: need results"),
    "interaction of one factor": (lambda d: d.update(interactions=["AA"]), "'AA' is not a pair"),
    "run not a mapping": (lambda d: d.update(run="kv-load"), "run: expected a mapping"),
}


def assert_nothing_written(folder: Path, out: Path) -> None:
    assert not out.exists()
    assert not [p for p in folder.iterdir() if p.name.startswith(".")], list(folder.iterdir())


@pytest.mark.parametrize("case", SEED_CASES)
def test_a_bad_design_file_is_named(tmp_path, capsys, case):
    edit, message = SEED_CASES[case]
    path = edited_seed(tmp_path / "design.yaml", edit)
    code = main(["doe", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"ybbench: error: {path}") or err.startswith(f"ybbench: error: {path.name}")
    assert message in err
    assert_nothing_written(tmp_path, tmp_path / "out")


def csv_design(tmp_path: Path, text: str) -> Path:
    (tmp_path / "r.csv").write_text(text)
    doc = jain(3)
    doc["results"] = {"csv": "r.csv"}
    return write(tmp_path / "design.yaml", doc)


CSV_CASES = {
    "no column for a factor": ("A,B,y\n4M,1K,1\n", "r.csv: no column for factor C (third factor)"),
    "no response column": ("A,B,C,mips\n4M,1K,c2,1\n", "r.csv: no response column 'y'"),
    "a short line": ("A,B,C,y\n4M,1K,c2\n", "r.csv line 2: expected 4 cells"),
    "a response that is not a number": ("A,B,C,y\n4M,1K,c2,n/a\n", "r.csv line 2: y: 'n/a' is not a number"),
    "a line repeated without replication": ("A,B,C,y\n4M,1K,c2,1\n4M,1K,c2,2\n",
                                            "r.csv line 3: repeats the levels of line 2 (A=4M, B=1K, C=c2); "
                                            "add a replication column"),
    "a replication repeated": ("replication,A,B,C,y\n1,4M,1K,c2,1\n1,4M,1K,c2,2\n",
                               "r.csv line 3: repeats the levels of line 2"),
    "a level not in the design": ("A,B,C,y\n4M,1K,c1,1\n", "r.csv line 2: not a run of this design: C = AB gives "
                                                            "C = 'c2'"),
    "missing runs": ("A,B,C,y\n4M,1K,c2,1\n", "results: no results for 3 of the 4 runs"),
    "no rows": ("A,B,C,y\n", "r.csv: no rows"),
}


@pytest.mark.parametrize("case", CSV_CASES)
def test_a_bad_results_csv_is_named(tmp_path, capsys, case):
    text, message = CSV_CASES[case]
    path = csv_design(tmp_path, text)
    code = main(["doe", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and message in err, err
    assert_nothing_written(tmp_path, tmp_path / "out")


@pytest.mark.parametrize("text,message", [
    ("factors: [A, B\n", "not valid YAML"),
    ("- A\n- B\n", "expected a mapping, got list"),
    ("", "expected a mapping, got NoneType"),
])
def test_not_a_design_file(tmp_path, capsys, text, message):
    (tmp_path / "design.yaml").write_text(text)
    assert main(["doe", str(tmp_path / "design.yaml"), "--out", str(tmp_path / "out")]) == 2
    assert message in capsys.readouterr().err
    assert_nothing_written(tmp_path, tmp_path / "out")


def test_cli_refuses_bad_arguments_as_a_user_sees_it(tmp_path):
    """Through `python3 -m ybbench doe`, as a user runs it."""
    good = write(tmp_path / "design.yaml", jain(2))
    r = ybbench_doe(tmp_path / "missing.yaml", "--out", tmp_path / "out")
    assert r.code == 2 and f"ybbench: error: {tmp_path / 'missing.yaml'}: cannot read" in r.stderr
    r = ybbench_doe(good, "--alpha", "1.5", "--out", tmp_path / "out")
    assert r.code == 2 and "--alpha 1.5: expected a number between 0 and 1" in r.stderr
    r = ybbench_doe(good, "--alpha", "five")
    assert r.code == 2 and "argument --alpha: invalid float value: 'five'" in r.stderr
    bad = edited_seed(tmp_path / "bad.yaml", set_row(0, E=False))
    r = ybbench_doe(bad, "--out", tmp_path / "out")
    assert r.code == 2 and "not a run of this design: E = BC" in r.stderr and r.stdout == ""
    assert_nothing_written(tmp_path, tmp_path / "out")
    # an existing folder is never written into
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("keep")
    r = ybbench_doe(good, "--out", tmp_path / "out")
    assert r.code == 2 and f"--out {tmp_path / 'out'}: exists" in r.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["mine.txt"]


def test_too_many_factors(tmp_path, capsys):
    letters = "ABCDEFGHIJKLMNOPQRSTU"  # 21
    doc = {"factors": {x: {"levels": [0, 1]} for x in letters}}
    path = write(tmp_path / "design.yaml", doc)
    assert main(["doe", str(path)]) == 2
    assert "21 factors, 2097152 runs: this command handles up to 20 factors and 4096 runs" in capsys.readouterr().err
