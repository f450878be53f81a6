"""`ybbench compare` over real series of the native stack: two sql-inserts
sweeps (1,2 and 1,8 VUs, 10 s steps, with Prometheus), a real `doe --run`
(seed 002's local 2^(3-1), one replication, 2 s runs) against the same
runs' y with planted shifts (`doe FILE --out`), and a real `scale --clusters`
(the one PostgreSQL as 1 to 4 "nodes") against its own points times 1.5
(`scale --throughput --out`). Every expected number comes from the runs'
own summary.json, from PromQL written here, or from arithmetic here. Bad
input (open against closed, a sweep against a run, a sweep without its
sweep.json, different workloads, an unknown id): exit 2, nothing written."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import stats

from ..support.stack import BIN, REPO, free_port
from ..support.ybbench_cli import ybbench

# Quiet (tests/lanes.sh): its two sweeps' ceilings and knees hold only with no neighbour but idle-priority builds.
pytestmark = pytest.mark.quiet

EXAMPLE = REPO / "experiments" / "seed-002-esle-local.yaml"


def read(path: Path) -> dict:
    return json.loads(path.read_text())


def env(pg) -> dict:
    return {**pg.env(), "K6": str(BIN / "k6"), "K6_PROMETHEUS_RW_PUSH_INTERVAL": "1s"}


def pg_set(pg) -> list[str]:
    out = []
    for k, v in {"YSQL_NODES": f"127.0.0.1:{pg.port}", "DB_USER": pg.user, "DB_NAME": pg.database}.items():
        out += ["--set", f"{k}={v}"]
    return out


def sweep(pg, results: Path, sid: str, vus: str, prometheus: str) -> dict:
    cmd = [sys.executable, "-m", "ybbench", "sweep", "sql-inserts", "--vus", vus, "--step-duration", "10s", "--id",
           sid, "--results", str(results), "--prometheus", prometheus, *pg_set(pg), "--set", f"TABLE=cs_{sid}"]
    p = subprocess.run(cmd, cwd=REPO, env=env(pg), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return read(results / sid / "sweep.json")


@pytest.fixture(scope="module")
def sweeps(binaries, postgres, prometheus, tmp_path_factory):
    results = tmp_path_factory.mktemp("results")
    tag = uuid.uuid4().hex[:6]
    a, b = f"swa{tag}", f"swb{tag}"
    return {"results": results, "a": a, "b": b, "docs": {a: sweep(postgres, results, a, "1,2", prometheus.url),
                                                         b: sweep(postgres, results, b, "1,8", prometheus.url)}}


def compare(results: Path, *ids, out: Path | None = None, prometheus: str | None = None, extra=()):
    args = ["compare", *ids, "--results", results, *(["--out", out] if out else []),
            *(["--prometheus", prometheus] if prometheus else []), *extra]
    return ybbench(*args)


def by_hand(results: Path, sid: str) -> dict:
    """Ceiling and knee from each step's own summary.json: (VUs, ops/s, p99)."""
    steps = []
    for d in sorted((results / sid).iterdir()):
        if d.is_dir():
            s = read(d / "summary.json")
            steps.append((int(d.name.rsplit("vus", 1)[1]), sum(o["per_second"] for o in s["ops"].values()),
                          s["ops"]["insert"]["latency_ms"]["p99"], d.name))
    steps.sort()
    top = max(steps, key=lambda x: x[1])
    knee = None
    for x, y in zip(steps, steps[1:]):
        gain = (y[1] / x[1]) ** (1 / math.log2(y[0] / x[0])) - 1
        if gain < 0.10 and y[2] > x[2]:
            knee = x
            break
    return {"ceiling": top, "knee": knee}


def test_two_sweeps_by_ceiling_and_knee_with_an_interval(sweeps, prometheus, tmp_path):
    results, a, b = sweeps["results"], sweeps["a"], sweeps["b"]
    out = tmp_path / "c"
    p = compare(results, a, b, out=out, prometheus=prometheus.url)
    assert p.returncode == 0, p.stderr
    print(p.stdout)
    doc = read(out / "compare.json")
    assert doc["kind"] == "sweep" and doc["base"] == a and doc["others"] == [b]
    (c,) = doc["comparisons"]
    ha, hb = by_hand(results, a), by_hand(results, b)
    for sid, h in ((a, ha), (b, hb)):
        side = c["sides"][sid]
        assert (side["ceiling"]["vus"], side["ceiling"]["ops_per_s"]) == (h["ceiling"][0], h["ceiling"][1])
        assert side["ceiling_step"] == h["ceiling"][3]
        assert (side["knee"] and side["knee"]["vus"]) == (h["knee"] and h["knee"][0])
    cr = c["ceiling_ratio"]
    assert cr["ratio"] == pytest.approx(hb["ceiling"][1] / ha["ceiling"][1], rel=1e-12)
    # The interval: the ceiling steps' per-second series, each against PromQL written here.
    means = {}
    for sid, h in ((a, ha), (b, hb)):
        tid = h["ceiling"][3]
        params = read(results / sid / tid / "params.json")
        t0, t1 = math.ceil(params["started_unix_s"]), math.floor(params["finished_unix_s"])

        def at(t):
            got = prometheus.api("query", query=f'sum(k6_iterations_total{{testid="{tid}"}})', time=str(t))["result"]
            return float(got[0]["value"][1]) if got else 0.0

        means[sid] = (at(t1) - at(t0)) / (t1 - t0)
        series = cr["series"][sid]
        assert series["testid"] == tid and len(series["v"]) == t1 - t0
        assert series["mean_ops_per_s"] == pytest.approx(means[sid], rel=1e-9)
    assert cr["series_ratio"] == pytest.approx(means[b] / means[a], rel=1e-9)
    # One ceiling step a side and no earlier runs of their series: no verdict, whatever the seconds say; the
    # seconds' bootstrap is kept beside it, marked.
    assert cr["low"] is cr["high"] is None and cr["verdict"].startswith("no verdict: one run per side")
    assert cr["between_runs"]["ratio"] == pytest.approx(cr["series_ratio"], rel=1e-9)
    assert cr["bootstrap"]["seconds"]["base"] >= 9 and cr["bootstrap"]["resamples"] == 10000
    assert cr["bootstrap"]["low"] <= cr["series_ratio"] <= cr["bootstrap"]["high"]
    assert "it gives no verdict" in cr["bootstrap"]["note"] and "moving-block bootstrap" in doc["method"]
    # The table.
    assert f"ceiling ratio {b}/{a}: {cr['ratio']:.3f}" in p.stdout
    assert "no verdict: one run per side" in p.stdout
    knee = lambda h: "-" if h["knee"] is None else str(h["knee"][0])  # noqa: E731
    assert f"knee: {knee(ha)} VUs against {knee(hb)} VUs" in p.stdout
    page = (out / "compare.html").read_text()
    assert cr["verdict"] in page and page.count("data:image/png;base64,") == 1


def test_two_sweeps_without_prometheus_have_no_interval(sweeps, tmp_path):
    p = compare(sweeps["results"], sweeps["a"], sweeps["b"], out=tmp_path / "c")
    assert p.returncode == 0, p.stderr
    (c,) = read(tmp_path / "c" / "compare.json")["comparisons"]
    assert c["ceiling_ratio"]["low"] is None and "no interval: the ceiling steps' per-second series are needed" \
        in c["ceiling_ratio"]["verdict"]
    assert "no interval" in p.stdout


def refused(results: Path, tmp_path: Path, *ids, words, prometheus=None):
    before = sorted(results.iterdir())
    out = tmp_path / "out"
    p = compare(results, *ids, out=out, prometheus=prometheus)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "Traceback" not in p.stderr and p.stdout == ""
    for w in words:
        assert w in p.stderr, p.stderr
    assert not out.exists() and sorted(results.iterdir()) == before


def edited_copy(results: Path, sid: str, name: str, edit) -> str:
    shutil.copytree(results / sid, results / name)
    doc = read(results / name / "sweep.json")
    edit(doc)
    (results / name / "sweep.json").write_text(json.dumps(doc))
    return name


def test_sweeps_bad_input(sweeps, tmp_path):
    results, a = sweeps["results"], sweeps["a"]
    made = []
    try:
        made.append(edited_copy(results, a, f"{a}-open", lambda d: d["params"].update(mode="open")))
        refused(results, tmp_path, a, made[-1], words=[f"sweep {a} is closed-model", f"{made[-1]} is open-model"])
        made.append(edited_copy(results, a, f"{a}-sel", lambda d: d["params"].update(workload="sql-selects")))
        refused(results, tmp_path, a, made[-1], words=["different workloads", "sql-inserts", "sql-selects",
                                                       "--allow-different-workloads"])
        # A sweep against a run (one of its steps, as a run folder of results/).
        step = read(results / a / "sweep.json")["steps"][0]["testid"]
        shutil.copytree(results / a / step, results / f"{step}-run")
        made.append(f"{step}-run")
        refused(results, tmp_path, a, made[-1], words=[f"{a} is a sweep and {made[-1]} is a run"])
        refused(results, tmp_path, made[-1], a, words=[f"{made[-1]} is a run and {a} is a sweep"])
        # A sweep's folder without its sweep.json.
        shutil.copytree(results / a, results / f"{a}-nojson")
        made.append(f"{a}-nojson")
        (results / made[-1] / "sweep.json").unlink()
        refused(results, tmp_path, a, made[-1], words=[f"{made[-1]}: ", "holds none of sweep.json"])
        refused(results, tmp_path, a, "nosuchsweep", words=["no run or series 'nosuchsweep'"])
        down = f"http://127.0.0.1:{free_port()}"
        refused(results, tmp_path, a, sweeps["b"], words=["Prometheus", down, "not reachable"], prometheus=down)
    finally:
        for m in made:
            shutil.rmtree(results / m)


# --- a real design against planted shifts --------------------------------

SHIFT = {"A": 2000.0, "B": 0.0, "D": -300.0}


def test_a_real_design_against_known_shifts(binaries, postgres, tmp_path):
    results, did = tmp_path / "results", f"d{uuid.uuid4().hex[:8]}"
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["replications"] = 1
    doc["run"].update(duration="2s", knobs={"VUS": 2, "TABLE": f"cs_{did}"})
    doc["run"]["load"]["keys"] = 2000
    design = tmp_path / "design.yaml"
    design.write_text(yaml.safe_dump(doc, sort_keys=False))
    p = subprocess.run([sys.executable, "-m", "ybbench", "doe", str(design), "--run", "--id", did, "--results",
                        str(results), *pg_set(postgres)], cwd=REPO, env=env(postgres), capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    # Each run's y from its own summary.json, its signs from what k6 ran (A: OP_SIZE, B: workload, D = AB).
    rows, y = [], {}
    for t, rec in read(results / did / "doe.json")["runs"].items():
        params, summary = read(results / did / t / "params.json"), read(results / did / t / "summary.json")
        s = {"A": {"1": -1, "100": 1}[params["knobs"]["OP_SIZE"]],
             "B": {"kv-random-read": -1, "kv-load": 1}[params["workload"]]}
        s["D"] = s["A"] * s["B"]
        y[t] = (s, sum(o["per_second"] for o in summary["ops"].values()))
    q = {w: sum(s[w] * v for s, v in y.values()) / 4 for w in "ABD"}
    # The other design: the same runs, each y + sum of the planted shifts times its signs.
    levels = {w: doc["factors"][w]["levels"] for w in "ABD"}
    for s, v in y.values():
        rows.append({w: levels[w][(s[w] + 1) // 2] for w in "ABD"} | {"y": v + sum(SHIFT[w] * s[w] for w in "ABD")})
    analysis = read(results / did / "analysis" / "results.json")["analysis"]
    other = {k: doc[k] for k in ("name", "factors", "generators")} | {
        "response": {"name": analysis["response"], "unit": analysis["unit"]}, "results": {"rows": rows}}
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(other, sort_keys=False))
    r = ybbench("doe", tmp_path / "other.yaml", "--out", results / f"{did}-o")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "c"
    p = ybbench("compare", did, f"{did}-o", "--results", results, "--out", out)
    assert p.returncode == 0, p.stderr
    print(p.stdout)
    (c,) = read(out / "compare.json")["comparisons"]

    def pse(qs):  # Lenth by hand
        a = sorted(abs(x) for x in qs)
        s0 = 1.5 * float(np.median(a))
        return 1.5 * float(np.median([x for x in a if x < 2.5 * s0]))

    qo = {w: q[w] + SHIFT[w] for w in q}
    sb, so, d = pse(q.values()), pse(qo.values()), 3 / 3
    assert c["noise"][did]["se"] == pytest.approx(sb) and c["noise"][f"{did}-o"]["se"] == pytest.approx(so)
    se = math.sqrt(sb ** 2 + so ** 2)
    nu = (sb ** 2 + so ** 2) ** 2 / (sb ** 4 / d + so ** 4 / d)
    t = stats.t.ppf(0.975, nu)
    for row in c["rows"]:
        w = row["name"]
        assert row["base"] == pytest.approx(q[w]) and row["other"] == pytest.approx(qo[w])
        assert row["change"] == pytest.approx(SHIFT[w], abs=1e-6)
        assert (row["low"], row["high"]) == pytest.approx((SHIFT[w] - t * se, SHIFT[w] + t * se), abs=1e-6)
        assert row["significant"] == (abs(SHIFT[w]) > t * se)
    assert sorted(r["name"] for r in c["rows"]) == ["A", "B", "D"]


# --- a real scale series against its own points times 1.5 ------------------

def test_a_real_scale_series_against_its_points_scaled(binaries, postgres, tmp_path):
    addr = f"127.0.0.1:{postgres.port}"
    cfile = tmp_path / "clusters.yaml"
    cfile.write_text(yaml.safe_dump({"name": "one-host", "clusters": [
        {"name": f"n{n}", "nodes": n, "ysql_nodes": [addr] * n} for n in (1, 2, 3, 4)]}))
    results, prefix = tmp_path / "results", f"t{uuid.uuid4().hex[:8]}"
    r = ybbench("scale", "sql-inserts", "--clusters", cfile, "--vus-per-node", 1, "--duration", "2s",
                "--set", f"DB_USER={postgres.user}", "--set", f"DB_NAME={postgres.database}", "--set",
                f"TABLE=cs_{prefix}", "--testid", prefix, "--runs-dir", tmp_path / "runs", "--quiet",
                "--out", results / "real", env=env(postgres))
    assert r.returncode == 0, r.stdout + r.stderr
    real = read(results / "real" / "results.json")
    # The points, from each run's summary.json, times 1.5: λ times 1.5, σ and κ the same.
    pts = []
    for run in real["runs"]:
        s = read(tmp_path / "runs" / run["testid"] / "summary.json")
        pts.append({"nodes": run["nodes"], "throughput": 1.5 * sum(o["per_second"] for o in s["ops"].values())})
    (tmp_path / "x15.yaml").write_text(yaml.safe_dump({"name": "x1.5", "throughput": {"name": "ops", "unit": "ops/s"},
                                                       "rows": pts}))
    assert ybbench("scale", "--throughput", tmp_path / "x15.yaml", "--out", results / "x15").returncode == 0
    out = tmp_path / "c"
    p = ybbench("compare", "real", "x15", "--results", results, "--out", out)
    assert p.returncode == 0, p.stderr
    print(p.stdout)
    (c,) = read(out / "compare.json")["comparisons"]
    f = real["fit"]
    lam, se = f["lambda"]["value"], f["lambda"]["se"]
    row = c["rows"]["lambda"]
    assert row["base"] == pytest.approx(lam, rel=1e-6) and row["change"] == pytest.approx(0.5 * lam, rel=1e-4)
    assert f["dof"] == 1
    if se is not None and se > 0:
        vb, vo = se ** 2, (1.5 * se) ** 2
        nu = (vb + vo) ** 2 / (vb ** 2 / 1 + vo ** 2 / 1)
        half = stats.t.ppf(0.975, nu) * math.sqrt(vb + vo)
        assert (row["low"], row["high"]) == pytest.approx((0.5 * lam - half, 0.5 * lam + half), rel=1e-3)
    for key in ("sigma", "kappa"):
        rr = c["rows"][key]
        assert rr["change"] == pytest.approx(0, abs=1e-6 + 1e-4 * abs(rr["base"]))
        assert rr["significant"] in (False, None)
    ns = c["rows"]["n_star"]
    assert (ns["ratio"] is None and real["peak"]["nodes"] is None) or ns["ratio"] == pytest.approx(1, rel=1e-4)
