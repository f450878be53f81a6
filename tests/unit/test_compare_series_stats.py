"""`ybbench compare` of two designs and of two scale fits, on series
folders the real commands write (`ybbench doe FILE --out`, `ybbench scale
--results FILE --out`) from numbers planted here: a 2^3 with known effects
against the same design with known shifts (Lenth's PSE worked out by hand),
Jain's replicated 2^(3-1) against a shifted copy, and two USL series with
known λ, σ, κ. Every expected number is arithmetic written in this file;
scipy gives only the t quantiles. Bad input: exit 2, the difference named,
nothing written."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from ..support.doe_cases import jain, write, ybbench_doe
from ..support.ybbench_cli import ybbench

# --- designs ---------------------------------------------------------------

# A full 2^3, one replication: the effects q planted (q0 = 50), each run's y
# = q0 + sum of q_j times the run's sign of column j.
BASE_Q = {"A": 12.0, "B": -6.0, "C": 3.0, "AB": 1.5, "AC": -0.5, "BC": 0.25, "ABC": 0.1}
# The other design: A +20, C -4, AC -1.5, the rest unchanged.
SHIFT = {"A": 20.0, "C": -4.0, "AC": -1.5}
LEVELS = {"A": ["a-", "a+"], "B": ["b-", "b+"], "C": ["c-", "c+"]}


def sign(word: str, run: dict[str, int]) -> int:
    return math.prod(run[x] for x in word)


def design_doc(q: dict[str, float], name="textbook-2-3", factors=None, response="ops") -> dict:
    rows = []
    for a, b, c in itertools.product((-1, 1), repeat=3):
        run = {"A": a, "B": b, "C": c}
        y = 50.0 + sum(v * sign(w, run) for w, v in q.items())
        rows.append({x: LEVELS[x][(s + 1) // 2] for x, s in run.items()} | {"y": y})
    return {"name": name,
            "factors": factors or {x: {"name": f"factor {x}", "levels": LEVELS[x]} for x in "ABC"},
            "response": {"name": response, "unit": "ops/s"}, "results": {"rows": rows}}


def doe_out(tmp_path: Path, results: Path, sid: str, doc: dict) -> Path:
    out = results / sid
    done = ybbench_doe(write(tmp_path / f"{sid}.yaml", doc), "--out", out)
    assert done.code == 0, done.stderr
    return out


def lenth_by_hand(q: list[float]) -> float:
    a = sorted(abs(x) for x in q)
    s0 = 1.5 * float(np.median(a))
    return 1.5 * float(np.median([x for x in a if x < 2.5 * s0]))


def compare(results: Path, *ids, out: Path, extra=()):
    return ybbench("compare", *ids, "--results", results, "--out", out, *extra)


@pytest.fixture
def results(tmp_path):
    r = tmp_path / "results"
    r.mkdir()
    return r


def test_two_designs_lenth_by_hand(tmp_path, results):
    other_q = {w: v + SHIFT.get(w, 0.0) for w, v in BASE_Q.items()}
    doe_out(tmp_path, results, "dA", design_doc(BASE_Q))
    doe_out(tmp_path, results, "dB", design_doc(other_q))
    p = compare(results, "dA", "dB", out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "c" / "compare.json").read_text())
    (c,) = doc["comparisons"]
    # Lenth by hand. Base |q| 0.1 0.25 0.5 1.5 3 6 12: s0 = 1.5 * 1.5 = 2.25, kept < 5.625: 0.1 0.25 0.5 1.5 3,
    # PSE = 1.5 * 0.5 = 0.75. Other |q| 0.1 0.25 1 1.5 2 6 32: s0 = 2.25, kept 0.1 0.25 1 1.5 2, PSE = 1.5.
    assert lenth_by_hand(list(BASE_Q.values())) == 0.75 and lenth_by_hand(list(other_q.values())) == 1.5
    s_b, s_o, d = 0.75, 1.5, 7 / 3
    assert c["noise"]["dA"]["se"] == pytest.approx(s_b) and c["noise"]["dB"]["se"] == pytest.approx(s_o)
    assert c["noise"]["dA"]["method"] == "lenth" and c["noise"]["dA"]["df"] == pytest.approx(d)
    se = math.sqrt(s_b ** 2 + s_o ** 2)
    nu = (s_b ** 2 + s_o ** 2) ** 2 / (s_b ** 4 / d + s_o ** 4 / d)
    t = stats.t.ppf(0.975, nu)
    t_all = stats.t.ppf((1 + 0.95 ** (1 / 7)) / 2, nu)
    rows = {r["name"]: r for r in c["rows"]}
    assert set(rows) == set(BASE_Q)
    for w, q in BASE_Q.items():
        r, delta = rows[w], SHIFT.get(w, 0.0)
        assert r["base"] == pytest.approx(q) and r["other"] == pytest.approx(q + delta)
        assert r["change"] == pytest.approx(delta, abs=1e-9)
        assert r["se"] == pytest.approx(se) and r["df"] == pytest.approx(nu)
        assert r["low"] == pytest.approx(delta - t * se, abs=1e-9) and r["high"] == pytest.approx(delta + t * se)
        assert r["significant"] == (abs(delta) > t * se) and r["significant_all"] == (abs(delta) > t_all * se)
    # t(0.975; 3.43) * 1.677 = 4.98: A's +20 is a change, C's -4 is not; AC's -1.5 neither.
    assert rows["A"]["significant"] and not rows["C"]["significant"] and not rows["AC"]["significant"]
    assert "Welch–Satterthwaite" in doc["method"] and "Lenth's PSE" in doc["method"]
    line = next(x for x in p.stdout.splitlines() if x.split()[:1] == ["A"])
    assert f"[{delta_fmt(20 - t * se)}, {delta_fmt(20 + t * se)}]" in line and line.split()[-2:] == ["yes", "yes"]
    page = (tmp_path / "c" / "compare.html").read_text()
    assert "Lenth" in page and "Welch" in page and page.count("data:image/png;base64,") == 1


def delta_fmt(x: float) -> str:
    return format(x, ".4g")


def test_two_replicated_designs_by_hand(tmp_path, results):
    """Jain's Example 18.1 (r = 3) against the same runs with A's effect
    raised by 4: y + 4 * sign(A), the spread within each run unchanged."""
    doe_out(tmp_path, results, "j1", jain(3))
    shifted = [(a, b, c, [y + (4 if a == "16M" else -4) for y in ys]) for a, b, c, ys in
               [("4M", "1K", "c2", [15, 18, 12]), ("16M", "1K", "c1", [45, 48, 51]),
                ("4M", "2K", "c1", [25, 28, 19]), ("16M", "2K", "c2", [75, 75, 81])]]
    doe_out(tmp_path, results, "j2", jain(3, shifted))
    p = compare(results, "j1", "j2", out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    (c,) = json.loads((tmp_path / "c" / "compare.json").read_text())["comparisons"]
    # SSE = 102 (Jain), s_e^2 = 102 / (4 * 2), s_q = s_e / sqrt(12); df 8 each, so nu = 16.
    s_q = math.sqrt(102 / 8 / 12)
    assert c["noise"]["j1"]["method"] == "replications" and c["noise"]["j1"]["se"] == pytest.approx(s_q)
    rows = {r["name"]: r for r in c["rows"]}
    se, t = s_q * math.sqrt(2), stats.t.ppf(0.975, 16)
    # Run means 15, 48, 24, 77 (A-B-, A+B-, A-B+, A+B+): q_A = (-15 + 48 - 24 + 77)/4 = 21.5,
    # q_B = (-15 - 48 + 24 + 77)/4 = 9.5, q_C = q_AB = (15 - 48 - 24 + 77)/4 = 5.
    for w, q, delta in (("A", 21.5, 4), ("B", 9.5, 0), ("C", 5, 0)):
        assert rows[w]["base"] == pytest.approx(q) and rows[w]["change"] == pytest.approx(delta, abs=1e-9)
        assert rows[w]["df"] == pytest.approx(16)
        assert (rows[w]["low"], rows[w]["high"]) == pytest.approx((delta - t * se, delta + t * se))
    # t(0.975; 16) * s_q * sqrt(2) = 2.120 * 1.458 = 3.09: A's 4 is a change, B's and C's 0 are not.
    assert t * se == pytest.approx(3.09, abs=0.01)
    assert rows["A"]["significant"] and not rows["B"]["significant"] and not rows["C"]["significant"]


def test_unequal_designs_are_refused(tmp_path, results):
    doe_out(tmp_path, results, "dA", design_doc(BASE_Q))
    levels = {x: {"name": f"factor {x}", "levels": LEVELS[x]} for x in "ABC"}
    other_levels = dict(levels, B={"name": "factor B", "levels": ["b-", "b++"]})
    renamed = dict(levels, C={"name": "isolation", "levels": LEVELS["C"]})
    cases = {
        "dLev": (design_doc(BASE_Q, factors=other_levels),
                 ["differ in their factors", "factor B (factor B) has levels b-, b+ in dA but b-, b++ in dLev"]),
        "dName": (design_doc(BASE_Q, factors=renamed), ["factor C is 'factor C' in dA but 'isolation' in dName"]),
        "dResp": (design_doc(BASE_Q, response="p99"), ["measured different responses", "ops", "p99"]),
    }
    for sid, (doc, words) in cases.items():
        if sid == "dLev":
            doc["results"]["rows"] = [dict(r, B="b++" if r["B"] == "b+" else r["B"]) for r in doc["results"]["rows"]]
        doe_out(tmp_path, results, sid, doc)
    two = {"name": "two", "factors": {x: levels[x] for x in "AB"}, "response": {"name": "ops", "unit": "ops/s"},
           "results": {"rows": [{"A": a, "B": b, "y": 1.0 + i} for i, (a, b) in
                                enumerate(itertools.product(LEVELS["A"], LEVELS["B"]))]}}
    doe_out(tmp_path, results, "dTwo", two)
    cases["dTwo"] = (None, ["factor C (factor C) is in dA only, not in dTwo"])
    for sid, (_, words) in cases.items():
        refused(tmp_path, results, "dA", sid, words=words)


def refused(tmp_path, results, *ids, words, extra=()):
    before = sorted(results.iterdir())
    out = tmp_path / "out"
    p = compare(results, *ids, out=out, extra=extra)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and p.stdout == ""
    for w in words:
        assert w in p.stderr, p.stderr
    assert not out.exists() and sorted(results.iterdir()) == before
    assert not [x for x in tmp_path.iterdir() if x.name.startswith(".")]
    return p


# --- scale fits --------------------------------------------------------------

def usl_by_hand(n, lam, sigma, kappa):
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


NODES = (1, 2, 4, 8, 12, 16, 24, 32)
WOBBLE = (1.04, 0.97, 1.01, 0.98)  # replication r's factor at node count i: WOBBLE[(i + r) % 4]


def scale_out(tmp_path: Path, results: Path, sid: str, lam, sigma, kappa, unit="ops/s") -> dict:
    rows = [{"nodes": n, "throughput": usl_by_hand(n, lam, sigma, kappa) * WOBBLE[(i + r) % 4], "replication": r + 1}
            for i, n in enumerate(NODES) for r in range(2)]
    path = tmp_path / f"{sid}.yaml"
    path.write_text(yaml.safe_dump({"name": sid, "throughput": {"name": "ops", "unit": unit}, "rows": rows}))
    p = ybbench("scale", "--throughput", path, "--out", results / sid)
    assert p.returncode == 0, p.stderr
    return json.loads((results / sid / "results.json").read_text())


def covariance_by_hand(res: dict) -> np.ndarray:
    """s^2 (J'J)^-1 at the fitted parameters, J the USL's derivatives written out."""
    f = res["fit"]
    lam, s, k = (f[x]["value"] for x in ("lambda", "sigma", "kappa"))
    n = np.array([p["nodes"] for p in res["points"]])
    x = np.array([p["throughput"] for p in res["points"]])
    den = 1 + s * (n - 1) + k * n * (n - 1)
    jac = np.column_stack([n / den, -lam * n * (n - 1) / den ** 2, -lam * n * n * (n - 1) / den ** 2])
    resid = x - lam * n / den
    return float(resid @ resid) / (len(n) - 3) * np.linalg.inv(jac.T @ jac)


def test_two_scale_fits_by_hand(tmp_path, results):
    rb = scale_out(tmp_path, results, "sA", 500.0, 0.03, 0.004)
    ro = scale_out(tmp_path, results, "sB", 520.0, 0.06, 0.001)
    # The fits recover what was planted (the wobble averages out per node count only roughly).
    assert rb["fit"]["sigma"]["value"] == pytest.approx(0.03, abs=0.01)
    assert ro["fit"]["kappa"]["value"] == pytest.approx(0.001, abs=0.0005)
    p = compare(results, "sA", "sB", out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    doc = json.loads((tmp_path / "c" / "compare.json").read_text())
    (c,) = doc["comparisons"]
    dof = len(NODES) * 2 - 3
    for key in ("lambda", "sigma", "kappa"):
        b, o = rb["fit"][key], ro["fit"][key]
        vb, vo = b["se"] ** 2, o["se"] ** 2
        nu = (vb + vo) ** 2 / (vb ** 2 / dof + vo ** 2 / dof)
        t = stats.t.ppf(0.975, nu)
        half = t * math.sqrt(vb + vo)
        r = c["rows"][key]
        assert (r["base"], r["other"]) == pytest.approx((b["value"], o["value"]), rel=1e-6)
        assert r["df"] == pytest.approx(nu, rel=1e-6)
        assert (r["low"], r["high"]) == pytest.approx((o["value"] - b["value"] - half, o["value"] - b["value"] + half),
                                                      rel=1e-5)
        assert r["significant"] == (not r["low"] <= 0 <= r["high"])
    assert c["rows"]["kappa"]["significant"] and c["rows"]["kappa"]["high"] < 0  # 0.004 -> 0.001
    # N*: by its log, the delta method with the covariance worked out here.
    logs = []
    for res in (rb, ro):
        cov = covariance_by_hand(res)
        se = [res["fit"][x]["se"] for x in ("lambda", "sigma", "kappa")]
        assert np.sqrt(np.diag(cov)) == pytest.approx(se, rel=1e-3)  # the same covariance as the fit's SEs
        s, k = res["fit"]["sigma"]["value"], res["fit"]["kappa"]["value"]
        g = np.array([0, -1 / (2 * (1 - s)), -1 / (2 * k)])
        logs.append((0.5 * math.log((1 - s) / k), float(g @ cov @ g)))
    (lb, vb), (lo, vo) = logs
    nu = (vb + vo) ** 2 / (vb ** 2 / dof + vo ** 2 / dof)
    half = stats.t.ppf(0.975, nu) * math.sqrt(vb + vo)
    ns = c["rows"]["n_star"]
    assert ns["base"] == pytest.approx(rb["peak"]["nodes"], rel=1e-6) and ns["other"] == pytest.approx(
        ro["peak"]["nodes"], rel=1e-6)
    assert ns["ratio"] == pytest.approx(math.exp(lo - lb), rel=1e-6)
    assert (ns["low"], ns["high"]) == pytest.approx((math.exp(lo - lb - half), math.exp(lo - lb + half)), rel=1e-3)
    assert "delta method" in doc["method"] and "Welch–Satterthwaite" in doc["method"]
    assert "N*" in p.stdout and "κ" in p.stdout


def test_scale_fit_without_degrees_of_freedom_says_so(tmp_path, results):
    for sid, lam in (("s3a", 100.0), ("s3b", 150.0)):
        path = tmp_path / f"{sid}.csv"
        path.write_text("nodes,throughput\n" + "".join(f"{n},{usl_by_hand(n, lam, 0.1, 0.01):.9g}\n" for n in (1, 2, 4)))
        assert ybbench("scale", "--throughput", path, "--out", results / sid).returncode == 0
    p = compare(results, "s3a", "s3b", out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    (c,) = json.loads((tmp_path / "c" / "compare.json").read_text())["comparisons"]
    assert c["rows"]["lambda"]["low"] is None and "no standard error" in c["rows"]["lambda"]["why"]
    assert c["rows"]["lambda"]["change"] == pytest.approx(50, rel=1e-4)
    assert c["rows"]["n_star"]["ratio"] == pytest.approx(1, rel=1e-4) and c["rows"]["n_star"]["low"] is None


def test_mixed_kinds_unknown_ids_and_missing_json(tmp_path, results):
    doe_out(tmp_path, results, "dA", design_doc(BASE_Q))
    scale_out(tmp_path, results, "sA", 500.0, 0.03, 0.004)
    refused(tmp_path, results, "dA", "sA", words=["dA is a design and sA is a scale fit"])
    refused(tmp_path, results, "sA", "nosuch", words=["no run or series 'nosuch'"])
    (results / "bare").mkdir()
    refused(tmp_path, results, "sA", "bare", words=["holds none of sweep.json", "results.json", "summary.json"])
    (results / "bad").mkdir()
    (results / "bad" / "results.json").write_text("{}")
    refused(tmp_path, results, "sA", "bad", words=["series bad", "neither a design's analysis", "nor a scale fit"])
    # A design folder of `doe --run` whose analysis is missing.
    (results / "unfinished").mkdir()
    (results / "unfinished" / "doe.json").write_text(json.dumps({
        "format_version": 1, "design_id": "unfinished", "file": "d.yaml", "params": {}, "shuffle": 1, "order": [],
        "prometheus": None, "loki": None, "load": None, "runs": {}, "status": "running"}))
    refused(tmp_path, results, "dA", "unfinished", words=["design unfinished", "no analysis",
                                                           "--resume unfinished"])
