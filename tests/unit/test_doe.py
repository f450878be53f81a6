"""`ybbench doe`: the design (sign table, aliases, resolution), the effects,
the allocation of variation and the confidence intervals, checked against
numbers computed here by plain arithmetic on sign tables written out by hand
(and, for Jain's Example 18.1, against the book's printed values)."""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import pytest

from ybbench.experiments.doe.design import Design, parse_generator

from ..support.doe_cases import SEED_002, edited_seed, jain, seed_doc, write, ybbench_doe

# t quantiles from tables (not from the code under test): t[0.975; df], t[0.95; 8].
T975 = {1: 12.706204736, 4: 2.776445105, 5: 2.570581836}
T95_8 = 1.859548038


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def column(signs: dict[str, list[int]], word: str) -> list[int]:
    """The product of the hand-written columns of the word's letters."""
    out = [1] * len(next(iter(signs.values())))
    for letter in word:
        out = [a * b for a, b in zip(out, signs[letter])]
    return out


def hand(signs: dict[str, list[int]], ys: list[list[float]], words: list[str]) -> dict:
    """Jain ch. 18: q, SS, SST, SSE by sums over the runs."""
    n, r = len(ys), len(ys[0])
    ybar = [sum(v) / r for v in ys]
    grand = sum(sum(v) for v in ys) / (n * r)
    q = {w: sum(s * y for s, y in zip(column(signs, w), ybar)) / n for w in words}
    sst = sum((y - grand) ** 2 for v in ys for y in v)
    sse = sum((y - m) ** 2 for v, m in zip(ys, ybar) for y in v)
    return {"mean": grand, "q": q, "ss": {w: n * r * q[w] ** 2 for w in words}, "sst": sst, "sse": sse}


def flat(rows):
    return [x for row in rows for x in row]


def table_row(stdout: str, effect: str) -> list[str]:
    """The fields after the name in the report's effects table."""
    start = stdout.index("  effect ")
    for line in stdout[start:].splitlines()[1:]:
        fields = line.split()
        if fields and fields[0] == effect:
            return fields[1:]
    raise AssertionError(f"no row for {effect} in the effects table")


def analysis(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def effects(res: dict) -> dict:
    return {e["name"]: e for e in res["analysis"]["effects"]}


# Jain Example 18.1 as a 2^(3-1), C = AB; rows in the design's order.
JAIN_SIGNS = {"A": [-1, 1, -1, 1], "B": [-1, -1, 1, 1], "C": [1, -1, -1, 1]}
JAIN_Y = [[15, 18, 12], [45, 48, 51], [25, 28, 19], [75, 75, 81]]


def test_jain_18_1_replicated(tmp_path):
    """r = 3 and 90% intervals, as in the book: q0 = 41, qA = 21.5, qB = 9.5,
    qAB = 5; SSA 5547, SSB 1083, SSAB 300, SSE 102, SST 7032."""
    r = ybbench_doe(write(tmp_path / "d.yaml", jain(3)), "--out", tmp_path / "out", "--alpha", "0.10")
    assert r.code == 0, r.stderr
    res = analysis(tmp_path / "out")
    a, e = res["analysis"], effects(res)
    assert a["method"] == "replications" and a["replications"] == 3
    assert a["mean"] == pytest.approx(41)
    assert {k: v["q"] for k, v in e.items()} == pytest.approx({"A": 21.5, "B": 9.5, "C": 5})
    assert {k: v["ss"] for k, v in e.items()} == pytest.approx({"A": 5547, "B": 1083, "C": 300})
    assert a["sse"] == pytest.approx(102) and a["sst"] == pytest.approx(7032)
    assert e["A"]["share"] == pytest.approx(5547 / 7032) and a["error_share"] == pytest.approx(102 / 7032)
    s_q = math.sqrt(102 / (4 * 2)) / math.sqrt(4 * 3)
    assert a["se"] == pytest.approx(s_q) and a["df"] == 8 and a["t"] == pytest.approx(T95_8)
    for w, q in {"A": 21.5, "B": 9.5, "C": 5}.items():
        assert e[w]["ci"] == pytest.approx([q - T95_8 * s_q, q + T95_8 * s_q])
        assert e[w]["significant"]
    assert table_row(r.stdout, "A") == ["21.50", "78.88%", "[19.58,", "23.42]", "yes", "A", "=", "BC"]


def test_small_design_r2_against_hand_arithmetic(tmp_path):
    ys = [v[:2] for v in JAIN_Y]
    r = ybbench_doe(write(tmp_path / "d.yaml", jain(2)), "--out", tmp_path / "out")
    assert r.code == 0, r.stderr
    res = analysis(tmp_path / "out")
    a, e = res["analysis"], effects(res)
    h = hand(JAIN_SIGNS, ys, ["A", "B", "C"])
    assert a["mean"] == pytest.approx(h["mean"]) and a["sst"] == pytest.approx(h["sst"])
    assert a["sse"] == pytest.approx(h["sse"])
    # shares add up: every effect's and the error's
    assert sum(x["share"] for x in e.values()) + a["error_share"] == pytest.approx(1)
    s_e = math.sqrt(h["sse"] / (4 * (2 - 1)))
    s_q = s_e / math.sqrt(4 * 2)
    for w in "ABC":
        assert e[w]["q"] == pytest.approx(h["q"][w])
        assert e[w]["share"] == pytest.approx(h["ss"][w] / h["sst"])
        assert e[w]["ci"] == pytest.approx([h["q"][w] - T975[4] * s_q, h["q"][w] + T975[4] * s_q])
        assert e[w]["significant"] == (abs(h["q"][w]) > T975[4] * s_q)
    assert a["t"] == pytest.approx(T975[4]) and a["df"] == 4


def test_small_design_r1_uses_lenth(tmp_path):
    """One replication: Lenth's PSE. |q| = 20, 10, 5: s0 = 1.5 * 10, none
    trimmed (all < 2.5 s0), PSE = 15, d = 3/3 = 1."""
    r = ybbench_doe(write(tmp_path / "d.yaml", jain(1)), "--out", tmp_path / "out")
    assert r.code == 0, r.stderr
    res = analysis(tmp_path / "out")
    a, e = res["analysis"], effects(res)
    h = hand(JAIN_SIGNS, [v[:1] for v in JAIN_Y], ["A", "B", "C"])
    assert h["q"] == {"A": 20, "B": 10, "C": 5}
    assert {w: e[w]["q"] for w in "ABC"} == pytest.approx(h["q"])
    assert a["method"] == "lenth" and a["error_share"] is None and a["sse"] is None
    le = a["lenth"]
    assert le["s0"] == pytest.approx(15) and le["pse"] == pytest.approx(15) and le["d"] == pytest.approx(1)
    assert le["me"] == pytest.approx(T975[1] * 15)
    assert e["A"]["ci"] == pytest.approx([20 - T975[1] * 15, 20 + T975[1] * 15])
    assert e["A"]["standardized"] == pytest.approx(20 / 15)
    assert "Lenth 1989" in r.stdout


# Seed 002, Table 5, coded by hand with Table 1's levels (level 1 = -1):
# A op size (1 row, 100 rows), B workload (Read-Only, Write-Only), C tservers
# (3, 5), D consistency (Read Committed, Snapshot), E sharding replication
# (False, True), F VM (n1-standard-2, n2-standard-4). Table 5's run order.
SEED_TABLE5 = [
    # A   B   C   D   E   F   throughput ceiling
    (-1, -1, -1, +1, +1, -1, 3561),
    (-1, -1, -1, -1, +1, -1, 3568),
    (-1, -1, +1, +1, -1, -1, 3479),
    (-1, -1, +1, -1, -1, -1, 3489),
    (-1, +1, -1, +1, -1, +1, 2846),
    (-1, +1, -1, -1, -1, +1, 2789),
    (-1, +1, +1, +1, +1, +1, 2847),
    (-1, +1, +1, -1, +1, +1, 2753),
    (+1, -1, -1, +1, +1, +1, 2985),
    (+1, -1, -1, -1, +1, +1, 2922),
    (+1, -1, +1, +1, -1, +1, 2931),
    (+1, -1, +1, -1, -1, +1, 2953),
    (+1, +1, -1, +1, -1, -1, 2931),
    (+1, +1, -1, -1, -1, -1, 1033),
    (+1, +1, +1, +1, +1, -1, 994),
    (+1, +1, +1, -1, +1, -1, 878),
]
SEED_SIGNS = {x: [row[i] for row in SEED_TABLE5] for i, x in enumerate("ABCDEF")}
SEED_Y = [[row[6]] for row in SEED_TABLE5]


def test_seed_002_table_5(tmp_path):
    r = ybbench_doe(SEED_002, "--out", tmp_path / "out")
    assert r.code == 0, r.stderr
    res = analysis(tmp_path / "out")
    a, e = res["analysis"], effects(res)
    assert len(e) == 15
    h = hand(SEED_SIGNS, SEED_Y, list(e))
    assert a["mean"] == pytest.approx(2684.9375) and a["sst"] == pytest.approx(h["sst"])
    assert a["sst"] == pytest.approx(12084380.9375)
    for w, x in e.items():
        assert x["q"] == pytest.approx(h["q"][w]), w
        assert x["share"] == pytest.approx(h["ss"][w] / h["sst"]), w
    # The numbers the notes and the report quote.
    assert e["B"]["q"] == pytest.approx(-551.0625) and e["A"]["q"] == pytest.approx(-481.5625)
    assert e["F"]["q"] == pytest.approx(193.3125) and e["D"]["q"] == pytest.approx(136.8125)
    assert e["C"]["q"] == pytest.approx(-144.4375) and e["E"]["q"] == pytest.approx(-121.4375)
    assert round(100 * e["B"]["share"], 2) == 40.21 and round(100 * e["A"]["share"], 2) == 30.70
    # The shares of an unreplicated design add up to 1: no error term.
    assert sum(x["share"] for x in e.values()) == pytest.approx(1)
    # Lenth by hand over the 15 |q|.
    qs = [abs(v) for v in h["q"].values()]
    s0 = 1.5 * median(qs)
    pse = 1.5 * median([x for x in qs if x < 2.5 * s0])
    assert a["lenth"]["s0"] == pytest.approx(s0) and a["lenth"]["pse"] == pytest.approx(pse)
    assert a["lenth"]["trimmed"] == 2 and a["lenth"]["d"] == pytest.approx(5)
    assert a["margin"] == pytest.approx(T975[5] * pse)
    assert sorted(w for w, x in e.items() if x["significant"]) == ["A", "B"]
    # The report: the table's lines, and the paper's conclusions it contradicts.
    assert table_row(r.stdout, "B")[:2] == ["-551.06", "40.21%"]
    assert table_row(r.stdout, "A")[:2] == ["-481.56", "30.70%"]
    assert table_row(r.stdout, "F")[:2] == ["193.31", "4.95%"]
    verdict = {c["says"]: c["holds"] for c in res["claims"]}
    assert verdict["the most influential factors are the number of TServers (C) and the consistency level (D)"] \
        is False
    assert verdict["CPU and RAM (F) were the lowest influencing factors"] is False
    assert verdict["throughput is higher with 3 TServers than with 5"] is True
    assert "CONTRADICTED: the most influential factors are the number of TServers (C)" in r.stdout
    # every number has its place in the seed
    assert all(run["source"] == f"Table 5, run {run['source_run']}" for run in res["runs"])


def test_seed_002_labels_do_not_fit_table_3s_f_equals_ab(tmp_path):
    """Table 2 says F = AB, but Table 4/5 label the runs as F = -AB (with
    Table 1's level order); matching by levels notices."""
    path = edited_seed(tmp_path / "d.yaml", lambda d: d.update(generators=["E = BC", "F = AB"]))
    r = ybbench_doe(path)
    assert r.code == 2
    assert "results.rows[0] (run 1): not a run of this design: F = AB gives F = 'n2-standard-4'" in r.stderr


# Paper's Table 3: E = BC, F = AB, first factor slowest.
TABLE_3 = """
- - - - + +
- - - + + +
- - + - - +
- - + + - +
- + - - - -
- + - + - -
- + + - + -
- + + + + -
+ - - - + -
+ - - + + -
+ - + - - -
+ - + + - -
+ + - - - +
+ + - + - +
+ + + - + +
+ + + + + +
"""


def test_sign_table_and_aliases_of_e_bc_f_ab(tmp_path):
    """Resolution III: I = BCE = ABF = ACEF. Through the CLI, without results."""
    path = edited_seed(tmp_path / "d.yaml", lambda d: (d.update(generators=["E = BC", "F = AB"]),
                                                       d.pop("results"), d.pop("claims")))
    r = ybbench_doe(path, "--out", tmp_path / "out")
    assert r.code == 0, r.stderr
    d = analysis(tmp_path / "out")["design"]
    table = [[1 if c == "+" else -1 for c in line.split()] for line in TABLE_3.strip().splitlines()]
    assert d["sign_table"] == table
    assert d["resolution"] == 3 and d["runs"] == 16 and (d["k"], d["p"]) == (6, 2)
    assert set(d["defining_relation"]) == {"I", "BCE", "ABF", "ACEF"}
    # Every chain, multiplied out by hand: w·BCE, w·ABF, w·ACEF.
    chains = {frozenset([name, *aliases]) for name, aliases in d["aliases"].items()}
    assert chains == {frozenset(c.split()) for c in [
        "A BF CEF ABCE", "B AF CE ABCEF", "C BE AEF ABCF", "D ABDF BCDE ACDEF", "E BC ACF ABEF",
        "F AB ACE BCEF", "AC EF ABE BCF", "AD BDF CDEF ABCDE", "AE CF ABC BEF", "BD ADF CDE ABCDEF",
        "CD BDE ADEF ABCDF", "DE BCD ACDF ABDEF", "DF ABD ACDE BCDEF", "ACD DEF ABDE BCDF",
        "ADE CDF ABCD BDEF"]}
    assert "resolution: III" in r.stdout and "defining relation: I = BCE = ABF = ACEF" in r.stdout
    assert "no results yet" in r.stdout
    assert "B = AF = CE = ABCEF" in r.stdout


def test_aliases_of_e_abc_f_bcd_resolution_iv():
    f = list("ABCDEF")
    d = Design(f, [parse_generator("E = ABC", f), parse_generator("F = BCD", f)])
    assert d.resolution == 4 and d.resolution_text() == "IV"
    assert {a.word for a in d.defining[1:]} == {"ABCE", "BCDF", "ADEF"}
    assert all(a.sign == 1 for a in d.defining)
    chains = {c.name: {a.word for a in c.chain} for c in d.columns()}
    # main effects: aliased with three-factor interactions, never two
    assert chains["A"] == {"A", "BCE", "DEF", "ABCDF"}
    assert chains["E"] == {"E", "ABC", "ADF", "BCDEF"}
    assert all(min(len(w) for w in c - {m}) == 3 for m, c in chains.items() if len(m) == 1)
    # two-factor interactions aliased with each other, by hand: w·ABCE, w·BCDF, w·ADEF
    twos = {frozenset(w for w in c if len(w) == 2) for c in chains.values() if any(len(w) == 2 for w in c)}
    assert twos == {frozenset(x.split()) for x in ["AB CE", "AC BE", "AD EF", "AE BC DF", "AF DE", "BD CF",
                                                   "BF CD"]}


def test_signed_generator_and_its_defining_relation():
    f = list("ABCDEF")
    d = Design(f, [parse_generator("E = BC", f), parse_generator("F = -A*B", f)])
    assert [str(a) for a in d.defining] == ["", "BCE", "-ABF", "-ACEF"]
    assert d.defining_text() == "I = BCE = -ABF = -ACEF"
    # column F is minus column AB, run by run
    assert list(d.column("F")) == [-x for x in d.column("AB")]
    f_col = next(c for c in d.columns() if c.name == "F")
    assert [str(a) for a in f_col.chain] == ["F", "-AB", "-ACE", "BCEF"]


def test_rows_are_matched_by_levels_not_order(tmp_path):
    base = ybbench_doe(SEED_002, "--out", tmp_path / "a")
    doc = seed_doc()
    rows = doc["results"]["rows"]
    random.Random(2).shuffle(rows)
    assert [x["run"] for x in rows] != list(range(1, 17))
    shuffled = ybbench_doe(write(tmp_path / "shuffled.yaml", doc), "--out", tmp_path / "b")
    # the same numbers as a CSV, in yet another order, columns by factor name
    with open(tmp_path / "table5.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        names = [doc["factors"][x]["name"] for x in "ABCDEF"]
        w.writerow(names + ["throughput", "latency_p99"])
        for x in reversed(rows):
            w.writerow([x[k] for k in "ABCDEF"] + [x["y"], 1.0])
    doc["results"] = {"csv": "table5.csv", "column": "throughput"}
    from_csv = ybbench_doe(write(tmp_path / "csv.yaml", doc), "--out", tmp_path / "c")
    for r in (base, shuffled, from_csv):
        assert r.code == 0, r.stderr
    want = {w: x["q"] for w, x in effects(analysis(tmp_path / "a")).items()}
    for out in ("b", "c"):
        got = {w: x["q"] for w, x in effects(analysis(tmp_path / out)).items()}
        assert got == pytest.approx(want)
        assert analysis(tmp_path / out)["runs"] == analysis(tmp_path / "a")["runs"] or out == "c"
    assert "CSV columns not used: latency_p99" in from_csv.stdout


def test_replications_from_a_csv(tmp_path):
    """Several lines per run, told apart by a replication column."""
    with open(tmp_path / "r.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["replication", "C", "B", "A", "y"])
        for rep in (1, 2, 3):
            for a, b, c, ys in reversed([("4M", "1K", "c2", JAIN_Y[0]), ("16M", "1K", "c1", JAIN_Y[1]),
                                         ("4M", "2K", "c1", JAIN_Y[2]), ("16M", "2K", "c2", JAIN_Y[3])]):
                w.writerow([rep, c, b, a, ys[rep - 1]])
    doc = jain(3)
    doc["results"] = {"csv": "r.csv"}
    r = ybbench_doe(write(tmp_path / "d.yaml", doc), "--out", tmp_path / "out")
    assert r.code == 0, r.stderr
    e = effects(analysis(tmp_path / "out"))
    assert {k: v["q"] for k, v in e.items()} == pytest.approx({"A": 21.5, "B": 9.5, "C": 5})
    assert analysis(tmp_path / "out")["analysis"]["sse"] == pytest.approx(102)


def png_ok(path: Path) -> None:
    from matplotlib.image import imread

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, path
    img = imread(path)
    assert img.shape[0] > 300 and img.shape[1] > 400 and img.std() > 0.05, path


def test_charts_hold_the_analysis(tmp_path):
    r = ybbench_doe(SEED_002, "--out", tmp_path / "out")
    assert r.code == 0, r.stderr
    res = analysis(tmp_path / "out")
    e, a, charts = effects(res), res["analysis"], res["charts"]
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(["results.json", *charts])
    assert set(charts) == {"pareto.png", "interaction-A-B.png", "interaction-B-C.png"}
    for name in charts:
        png_ok(tmp_path / "out" / name)
    # Pareto: every effect once, |q|/PSE, largest first, the t line
    p = charts["pareto.png"]
    pse = a["lenth"]["pse"]
    assert sorted(abs(v) for v in p["values"]) == pytest.approx(sorted(abs(x["q"]) / pse for x in e.values()))
    assert [abs(v) for v in p["values"]] == sorted((abs(v) for v in p["values"]), reverse=True)
    assert p["labels"][0].startswith("B") and p["values"][0] == pytest.approx(-551.0625 / pse)
    assert p["reference"]["t[0.975; 5]"] == pytest.approx(T975[5])
    # Interaction A x B: the four means from Table 5 by hand; their
    # interaction contrast is q of the column AB belongs to (AB = -F here).
    ab = charts["interaction-A-B.png"]
    cell = lambda sa, sb: sum(row[6] for row in SEED_TABLE5 if row[0] == sa and row[1] == sb) / 4  # noqa: E731
    assert flat(ab["means"]) == pytest.approx([cell(-1, -1), cell(-1, 1), cell(1, -1), cell(1, 1)])
    assert flat(ab["means"]) == pytest.approx([3524.25, 2808.75, 2947.75, 1459.0])
    m = ab["means"]
    q_ab = (m[1][1] - m[1][0] - m[0][1] + m[0][0]) / 4
    assert ab["contrast"] == {"column": "F", "sign": -1}
    assert q_ab == pytest.approx(-e["F"]["q"])
    bc = charts["interaction-B-C.png"]
    m = bc["means"]
    assert bc["contrast"] == {"column": "E", "sign": 1}
    assert (m[1][1] - m[1][0] - m[0][1] + m[0][0]) / 4 == pytest.approx(e["E"]["q"])


def test_full_factorial_and_no_out(tmp_path):
    """No generators: a full 2^k; without --out nothing is written."""
    doc = jain(3)
    del doc["factors"]["C"], doc["generators"]
    for row in doc["results"]["rows"]:
        del row["C"]
    before = set(tmp_path.iterdir())
    r = ybbench_doe(write(tmp_path / "d.yaml", doc))
    assert r.code == 0, r.stderr
    assert "2^2 full factorial: 4 runs, 3 replication(s) each" in r.stdout
    assert table_row(r.stdout, "AB")[:2] == ["5.00", "4.27%"]
    assert set(tmp_path.iterdir()) == before | {tmp_path / "d.yaml"}


def test_levels_compare_as_yaml_reads_them(tmp_path):
    """5 and "5", True and "true" are the same level, in rows as in a CSV."""
    from ybbench.experiments.doe.file import load

    def edit(d):
        for row in d["results"]["rows"]:
            row["C"] = str(row["C"])
            row["E"] = str(row["E"]).lower()
    df = load(edited_seed(tmp_path / "d.yaml", edit))
    assert df.y[:, 0].tolist() == load(SEED_002).y[:, 0].tolist()
