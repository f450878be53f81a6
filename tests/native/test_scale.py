"""`ybbench scale` end to end, as a user runs it (`python3 -m ybbench`):
from a results file (seed 003's and a synthetic one), and running a
workload per cluster on the native stack. The numbers are read back from
results.json and checked against the inputs and plain arithmetic."""

from __future__ import annotations

import functools
import json
import math
import uuid
from pathlib import Path

import pytest
import yaml

from ..support import ybbench_cli
from ..support.stack import BIN, REPO

SEED_003 = REPO / "experiments" / "seed-003-scaling.yaml"
# The seed's analytic query table: nodes -> runtime in seconds.
SEED_003_RUNTIMES = {1: 59, 2: 32, 3: 23, 4: 15, 8: 9.6, 12: 7.4, 16: 4.4}


ybbench = functools.partial(ybbench_cli.ybbench, timeout=600)  # scale's runs take a while


def usl_by_hand(n, lam, sigma, kappa):
    return lam * n / (1 + sigma * (n - 1) + kappa * n * (n - 1))


def png_ok(path: Path) -> None:
    from matplotlib.image import imread

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, path
    img = imread(path)
    assert img.shape[0] > 300 and img.shape[1] > 400 and img.std() > 0.05, path


def check_chart(res: dict, out: Path) -> None:
    """The chart plots the measured points, the fitted curve (USL at the
    fitted parameters, by hand) and N·X(1)."""
    png_ok(out / "scale.png")
    assert sorted(p.name for p in out.iterdir()) == ["results.json", "scale.png"]
    c = res["charts"]["scale.png"]
    assert c["measured"]["nodes"] == [p["nodes"] for p in res["points"]]
    assert c["measured"]["throughput"] == [p["throughput"] for p in res["points"]]
    f = res["fit"]
    lam, s, k = f["lambda"]["value"], f["sigma"]["value"], f["kappa"]["value"]
    assert c["fitted"]["throughput"] == pytest.approx([usl_by_hand(n, lam, s, k) for n in c["fitted"]["nodes"]])
    x1 = res["x1"]["value"]
    assert c["linear"]["throughput"] == pytest.approx([n * x1 for n in c["linear"]["nodes"]])
    assert max(c["fitted"]["nodes"]) >= max(p["nodes"] for p in res["points"])
    assert "measured:" in c["footnote"] and res["name"] in c["title"]


def test_seed_003_analytic_series(tmp_path):
    out = tmp_path / "out"
    r = ybbench("scale", "--throughput", SEED_003, "--out", out)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "results.json").read_text())
    # every number is 1 / the seed's runtime
    assert {p["nodes"]: p["throughput"] for p in res["points"]} == pytest.approx(
        {n: 1 / t for n, t in SEED_003_RUNTIMES.items()}, rel=1e-8)
    assert all("Analytic queries table" in p["source"] for p in res["points"])
    assert res["x1"] == {"value": pytest.approx(1 / 59, rel=1e-8), "from": "measured at N = 1"}
    for row in res["table"]:
        n = row["nodes"]
        assert row["efficiency"] == pytest.approx((1 / SEED_003_RUNTIMES[n]) / (n / 59), rel=1e-8)
    # the 16-node point is super-linear against 12: the USL (σ, κ >= 0) fits a line
    assert res["fit"]["sigma"]["value"] == 0 and res["fit"]["kappa"]["value"] == 0
    assert res["peak"]["nodes"] is None
    check_chart(res, out)
    assert "predicted peak: none (σ = κ = 0: linear scaling, no peak)" in r.stdout
    assert "efficiency" in r.stdout and "16 nodes: 59/4.4" in r.stdout  # the file's notes


def test_results_yaml_end_to_end(tmp_path):
    """A synthetic series with known σ and κ, two replications per N and
    no N = 1: the table, X(1) = λ and the peak, checked by hand."""
    lam, sigma, kappa = 500.0, 0.03, 0.004
    rows = []
    for n in (2, 4, 8, 16, 24, 32):
        for rep, wobble in ((1, 1.02), (2, 0.98)):
            rows.append({"nodes": n, "throughput": usl_by_hand(n, lam, sigma, kappa) * wobble, "replication": rep,
                         "source": f"synthetic, N = {n}"})
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump({"name": "synthetic", "throughput": {"name": "ops", "unit": "ops/s"},
                                    "rows": rows}))
    out = tmp_path / "out"
    r = ybbench("scale", "--throughput", path, "--out", out)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "results.json").read_text())
    f = res["fit"]
    # ±2% around the exact curve at every N: the fit is the exact curve
    assert f["lambda"]["value"] == pytest.approx(lam, rel=1e-4)
    assert f["sigma"]["value"] == pytest.approx(sigma, rel=1e-3)
    assert f["kappa"]["value"] == pytest.approx(kappa, rel=1e-3)
    for key in ("lambda", "sigma", "kappa"):
        lo, hi = f[key]["ci"]
        assert lo < f[key]["value"] < hi
    assert f["points"] == 12 and f["dof"] == 9
    assert res["x1"]["from"] == "λ from the fit (N = 1 was not measured)"
    x1 = f["lambda"]["value"]
    n_star = math.sqrt((1 - f["sigma"]["value"]) / f["kappa"]["value"])
    assert res["peak"]["nodes"] == pytest.approx(n_star)
    assert res["peak"]["throughput"] == pytest.approx(usl_by_hand(n_star, x1, f["sigma"]["value"],
                                                                  f["kappa"]["value"]))
    assert n_star == pytest.approx(math.sqrt(0.97 / 0.004), rel=1e-3)
    for row in res["table"]:
        n = row["nodes"]
        mean = usl_by_hand(n, lam, sigma, kappa)  # (1.02 + 0.98) / 2 = 1
        assert row["measured_mean"] == pytest.approx(mean)
        assert row["linear"] == pytest.approx(n * x1)
        assert row["efficiency"] == pytest.approx(mean / (n * x1))
    check_chart(res, out)
    assert res["charts"]["scale.png"]["peak"]["nodes"] == pytest.approx(n_star)
    assert f"N* = sqrt((1 − σ)/κ) = {n_star:.4g} nodes" in r.stdout


def test_results_csv(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text("nodes,throughput\n" + "".join(f"{n},{usl_by_hand(n, 10, 0.1, 0.01):.9g}\n"
                                                   for n in (1, 2, 3, 5, 8)))
    r = ybbench("scale", "--throughput", path)
    assert r.returncode == 0, r.stderr
    assert "σ = 0.1 " in r.stdout and "κ = 0.01 " in r.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.csv"]  # no --out: nothing written


def test_clusters_end_to_end(tmp_path, postgres, binaries):
    """The one PostgreSQL as 1, 2 and 3 "nodes": this machine has one
    database host, so the clusters list its address 1, 2 and 3 times (k6
    spreads VUs over the list, 2 VUs per listed node). The fit then
    describes this host, as the output says."""
    addr = f"127.0.0.1:{postgres.port}"
    clusters = {"name": "one-host", "clusters": [
        {"name": f"n{n}", "nodes": n, "ysql_nodes": [addr] * n} for n in (1, 2, 3)]}
    cfile = tmp_path / "clusters.yaml"
    cfile.write_text(yaml.safe_dump(clusters))
    runs, out, prefix = tmp_path / "runs", tmp_path / "out", f"t{uuid.uuid4().hex[:8]}"
    env = postgres.env()
    env["K6"] = str(BIN / "k6")
    r = ybbench("scale", "sql-inserts", "--clusters", cfile, "--vus-per-node", 2, "--duration", "3s",
                "--set", f"DB_USER={postgres.user}", "--set", f"DB_NAME={postgres.database}", "--testid", prefix,
                "--runs-dir", runs, "--quiet", "--out", out, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 nodes on one host: the fit describes this host, not a cluster" in r.stdout
    res = json.loads((out / "results.json").read_text())
    assert res["kind"] == "runs" and res["one_host"] == "3 nodes on one host: the fit describes this host, not a cluster"
    assert [x["testid"] for x in res["runs"]] == [f"{prefix}-n{n}" for n in (1, 2, 3)]
    for run, n in zip(res["runs"], (1, 2, 3)):
        folder = runs / run["testid"]
        summary = json.loads((folder / "summary.json").read_text())
        params = json.loads((folder / "params.json").read_text())
        ops_s = sum(op["per_second"] for op in summary["ops"].values())
        assert ops_s > 0 and run["throughput"] == pytest.approx(ops_s)
        assert params["knobs"]["YSQL_NODES"] == ",".join([addr] * n)
        assert params["knobs"]["VUS"] == str(2 * n) and params["knobs"]["DURATION"] == "3s"
        assert summary["errors"] == 0 and run["errors"] == 0
    assert [(p["nodes"], p["throughput"]) for p in res["points"]] == [
        (float(n), x["throughput"]) for n, x in zip((1, 2, 3), res["runs"])]
    assert [row["measured_mean"] for row in res["table"]] == [x["throughput"] for x in res["runs"]]
    # three node counts: the curve has no degrees of freedom left, and says so
    assert res["fit"]["dof"] == 0 and "no degrees of freedom left" in r.stdout
    assert res["x1"]["value"] == res["runs"][0]["throughput"]
    check_chart(res, out)
