"""`ybbench compare --fail-on p99:+N%` on made-up compare documents: the
gate (analysis/compare_gate.py) as `ybbench compare` runs it (analyse sets
doc["gate"] = compare_gate.evaluate(doc, rules), write checks compare.json
against its schema and returns compare_gate.exit_code).

Each document's p99 block is written here from planted runs' p99 values,
with the documented statistic worked out here (Welch's t on the log of each
run's value, docs/reports.md "Comparing runs"); each expected exit code
comes from the documented rule (docs/reports.md, "A gate for CI"): p99:+N%
fails when the p99 is higher with significance (the interval lies above 1:
verdict "higher") and by more than N% (ratio >= 1 + N/100); a comparison
with no interval cannot be judged (exit 2).

Planted faults these tests catch (each planted in a copy of
compare_gate.py's p99 test and run against this file; none left in):
- the direction flipped (verdict "lower" and ratio <= 1 - N/100): p99 up
  20% passes and p99 down 20% fails, so `code == 1` in
  test_p99_up_by_20_percent_fails_naming_the_op_and_metric and `code == 0`
  in test_p99_down_by_20_percent_passes fail (4 tests fail in all);
- only the ratio's comparison flipped (ratio <= 1 + N/100): the 20% rise
  passes (`code == 1` fails) and the significant 7% rise fails (4 fail);
- N ignored (any significant rise fails), or the interval's high end held
  to 1 + N/100: the 7% rise whose interval reaches past +10% exits 1, not 0
  (test_the_documented_rule_at_the_edges[straddles +10%, ratio under]);
- significance ignored (the ratio alone): the 21% rise whose interval
  reaches below 1 exits 1, not 0 ([20% but reaches 1]);
- the interval's low end held to 1 + N/100 in place of the ratio: the 20%
  rise whose interval starts at +5% exits 0, not 1 ([straddles +10%, ratio
  over]);
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ybbench.analysis import compare, compare_gate

ALPHA = 0.05
BASE_P99 = [4.00, 4.12, 3.94]  # ms, three base runs' p99
OPS = [1000.0, 1010.0, 990.0]  # ops/s, the same on both sides: only p99 moves


def welch(base: list[float], other: list[float]) -> dict:
    """Welch's t on the log of each run's value, written out: ratio exp(d),
    d = mean log other - mean log base; SE^2 = s_b^2/n_b + s_o^2/n_o; df
    Welch-Satterthwaite; interval exp(d +- t(1 - alpha/2, df) SE)."""
    lb, lo = np.log(base), np.log(other)
    d = float(lo.mean() - lb.mean())
    vb, vo = float(lb.var(ddof=1)) / len(lb), float(lo.var(ddof=1)) / len(lo)
    df = (vb + vo) ** 2 / (vb ** 2 / (len(lb) - 1) + vo ** 2 / (len(lo) - 1))
    half = float(stats.t.ppf(1 - ALPHA / 2, df)) * math.sqrt(vb + vo)
    return {"ratio": math.exp(d), "low": math.exp(d - half), "high": math.exp(d + half), "df": df}


def verdict(w: dict, up: str, down: str) -> str:
    """The documented verdict: up or down when the interval excludes 1."""
    return up if w["low"] > 1 else down if w["high"] < 1 else "no significant difference"


def geomean(values: list[float]) -> float:
    return math.exp(float(np.log(values).mean()))


def op_block(other_p99: list[float] | None) -> dict:
    """One op of a comparison, as compare.json holds it (format 2, three
    runs a side); other_p99 None: one run a side and no history, no interval."""
    t = welch(OPS, [1002.0, 1008.0, 991.0])
    s = {"ratio": t["ratio"], "low": t["low"], "high": t["high"], "verdict": verdict(t, "faster", "slower"),
         "base_ops_per_s": geomean(OPS), "other_ops_per_s": geomean([1002.0, 1008.0, 991.0]), "alpha": ALPHA,
         "method": "Welch", "latency_ms": {}, "runs": {"base": 3, "other": 3}, "df": t["df"]}
    if other_p99 is None:
        s["p99"] = {"q": 0.99, "ratio": 1.25, "low": None, "high": None, "base_ms": 4.0, "other_ms": 5.0,
                    "alpha": ALPHA, "method": "pooled", "runs": {"base": 1, "other": 1},
                    "verdict": "no verdict: one run per side cannot separate a change from run-to-run variation"}
        return s
    w = welch(BASE_P99, other_p99)
    s["p99"] = {"q": 0.99, "ratio": w["ratio"], "low": w["low"], "high": w["high"],
                "verdict": verdict(w, "higher", "lower"), "base_ms": geomean(BASE_P99),
                "other_ms": geomean(other_p99), "alpha": ALPHA, "method": "Welch", "runs": {"base": 3, "other": 3},
                "values": {"base": BASE_P99, "other": other_p99}, "df": w["df"]}
    return s


def document(ops: dict[str, list[float] | None]) -> dict:
    """A compare.json of runs b1..b3 against o1..o3 (format 2), op -> the other side's p99 values."""
    return {"base": "b1,b2,b3", "others": ["o1,o2,o3"], "groups": {"b1,b2,b3": ["b1", "b2", "b3"],
                                                                    "o1,o2,o3": ["o1", "o2", "o3"]},
            "prometheus": None, "alpha": ALPHA, "method": compare.STATISTICS, "runs": {},
            "comparisons": [{"base": "b1,b2,b3", "other": "o1,o2,o3", "base_runs": ["b1", "b2", "b3"],
                             "other_runs": ["o1", "o2", "o3"], "differences": {},
                             "ops": {op: op_block(p99) for op, p99 in ops.items()}}]}


def gate(doc: dict, rules: list[str], tmp_path, capsys) -> tuple[int, dict, str]:
    """What `ybbench compare --fail-on RULE...` does once the comparison is
    made: the gate into the document, compare.json written (checked against
    its schema: tests/conftest.py sets YBBENCH_CHECK_WRITES=1), its exit code."""
    parsed = compare_gate.parse(rules)
    doc["gate"] = compare_gate.evaluate(doc, parsed)
    found = compare.Comparison(tmp_path / "cmp", doc, "the table", None, parsed)
    code = compare.write(found, "<html></html>", {})
    assert (tmp_path / "cmp" / "compare.json").is_file()
    return code, doc["gate"], capsys.readouterr().out


def up(factor: float) -> list[float]:
    """The other side's p99: each base run's times factor, with its own wobble (not the base's exact spread)."""
    wobble = [1.0, 1.01, 0.99]
    return [round(b * factor * w, 3) for b, w in zip(BASE_P99, wobble)]


def test_p99_up_by_20_percent_fails_naming_the_op_and_metric(tmp_path, capsys):
    other = up(1.2)
    w = welch(BASE_P99, other)
    # The planted rise, by the arithmetic above: 20% (to the wobble's rounding), its interval wholly above +10%.
    assert w["ratio"] == pytest.approx(1.2, abs=0.01) and 1.1 < w["low"] <= w["high"], w
    code, g, out = gate(document({"select": other}), ["p99:+10%"], tmp_path, capsys)
    assert code == 1, out
    (failed,) = g["failed"]
    assert g["undecided"] == []
    said = (f"select: o1,o2,o3 against b1,b2,b3: p99 {100 * (w['ratio'] - 1):.1f}% higher, more than 10%: "
            f"p99 {geomean(BASE_P99):.3f} -> {geomean(other):.3f} ms, ratio {w['ratio']:.3f} "
            f"[{w['low']:.3f}, {w['high']:.3f}] (3 + 3 runs)")
    assert failed == said
    assert f"{100 * (w['ratio'] - 1):.1f}" in ("19.9", "20.0", "20.1")
    assert f"gate p99:+10%:\n  FAILED {said}" in out


def test_p99_down_by_20_percent_passes(tmp_path, capsys):
    other = up(0.8)
    w = welch(BASE_P99, other)
    assert w["ratio"] == pytest.approx(0.8, abs=0.01) and w["low"] <= w["high"] < 0.9, w
    code, g, out = gate(document({"select": other}), ["p99:+10%"], tmp_path, capsys)
    assert code == 0, out
    assert g["failed"] == [] == g["undecided"]
    (said,) = g["messages"]
    assert said.startswith("select: o1,o2,o3 against b1,b2,b3: p99:+10% passes: ") and said.endswith(", lower")


# The documented rule at its edges, each case's interval from the planted runs by welch() above; the rule tests
# the interval against 1 (significance) and the ratio itself against 1 + N/100, so an interval that straddles
# +10% goes by its ratio:
#   rises ~20.5%, interval [~1.05, ~1.39]: above 1, straddling +10%, ratio >= 1.1 -> fails (1);
#   rises ~7%, interval [~1.02, ~1.13]: above 1, straddling +10%, ratio < 1.1 -> passes (0);
#   rises ~21%, interval [~0.70, ~2.09]: reaches below 1, not significant whatever the ratio -> passes (0);
#   one run a side, no history: no interval -> cannot be judged (2).
EDGES = [
    ("straddles +10%, ratio over", [4.60, 5.20, 4.75], lambda w: 1 < w["low"] < 1.1 <= w["ratio"] < w["high"], 1),
    ("straddles +10%, ratio under", [4.30, 4.40, 4.22], lambda w: 1 < w["low"] <= w["ratio"] < 1.1 < w["high"], 0),
    ("20% but reaches 1", [4.0, 6.2, 4.6], lambda w: w["low"] < 1 and w["ratio"] > 1.2, 0),
    ("no interval", None, None, 2),
]


@pytest.mark.parametrize("case, other, shape, code", EDGES, ids=[e[0] for e in EDGES])
def test_the_documented_rule_at_the_edges(case, other, shape, code, tmp_path, capsys):
    if shape is not None:
        w = welch(BASE_P99, other)
        assert shape(w), w  # the planted runs make the interval this case is about
    got, g, out = gate(document({"select": other}), ["p99:+10%"], tmp_path, capsys)
    assert got == code, out
    assert len(g["failed"]) == (code == 1) and len(g["undecided"]) == (code == 2)
    if code == 2:
        assert "select: o1,o2,o3 against b1,b2,b3: p99:+10% cannot be judged: no verdict: one run" in g["undecided"][0]


def test_only_the_op_whose_p99_rose_is_named(tmp_path, capsys):
    """Two ops: select's p99 up 20%, update's down 20%; the gate names select alone, and the ops/s rule
    (nothing slower) passes both."""
    code, g, out = gate(document({"update": up(0.8), "select": up(1.2)}), ["slower:5%", "p99:+10%"], tmp_path,
                        capsys)
    assert code == 1, out
    (failed,) = g["failed"]
    assert failed.startswith("select: o1,o2,o3 against b1,b2,b3: p99 ") and "update" not in failed
    assert sorted(m.split(":")[0] for m in g["messages"] if "passes" in m) == ["select", "update", "update"]
