"""`ybbench run --generators 3`: one workload over three local k6 processes
(execution segments), checked against the table (the exact keys each
generator's segment and count call for), the generators' own summaries read
back independently (the merged percentiles within what theirs allow), and
Prometheus."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid

import pytest

from ybbench.run import summary_merge

from ..support.stack import BIN, REPO, pgpass
from ..support.ybbench_cli import ybbench_run

N = 3
SUMMED = ("rows_written", "errors", "keys_missing", "dropped_iterations")


def run_n(workload, pg, tmp_path, *, generators=str(N), prometheus=None, extra_env=None, **knobs):
    testid = f"gen{uuid.uuid4().hex[:8]}"
    return ybbench_run(workload, pg, tmp_path / "results", testid=testid, prometheus=prometheus,
                       knobs={k: str(v) for k, v in knobs.items()}, extra_env=extra_env,
                       extra_args=["--generators", generators])


def parts(r) -> list[dict]:
    """Each generator's own summary.json, as its k6 wrote it."""
    return [json.loads((r.folder / "generators" / f"g{i}" / "summary.json").read_text()) for i in range(1, N + 1)]


def striped(counts: list[int]) -> set[int]:
    """The indexes N generators write: k6 stripes a test's iterations (and
    VUs) over equal execution segments, so generator j (0-based) of N runs
    the test's numbers j, j + N, j + 2N, ...; its first `counts[j]` of them."""
    return {j + N * m for j, c in enumerate(counts) for m in range(c)}


def expected_keys(merged: dict, each: list[dict], knobs: dict) -> set[str]:
    """Every key the run should have written, from the workload's key scheme
    (k6-scripts/lib/keys.js, written out again here) and each generator's
    own count of acknowledged inserts."""
    counts = [p["ops"]["insert"]["count"] - p["ops"]["insert"]["errors"] for p in each]
    w = merged["written"] or {}
    if merged["workload"] == "sql-inserts":  # iteration n writes <prefix>:<n>
        return {f"{w['prefix']}:{n}" for n in striped(counts)}
    if merged["workload"] == "kv-load":  # iteration n writes OP_SIZE keys from n * OP_SIZE, zero-padded
        head, rows = f"{w['prefix']}:", w["rows_per_iteration"]
        digits = w["key_bytes"] - len(head)
        return {head + str(n * rows + r).zfill(digits) for n in striped(counts) for r in range(rows)}
    if merged["workload"] == "sql-secondary-index":  # VU i writes i-1, i-1+VUS, ...: one VU per generator here
        return {f"{merged['testid']}:{n}" for n in striped(counts)}
    if merged["workload"] == "ycsb-load":  # YCSB's hashed key of each record number below RECORD_COUNT
        from ..support.workloads import ycsb_key
        return {ycsb_key(n) for n in range(int(knobs["RECORD_COUNT"]))}
    raise AssertionError(f"no key scheme here for {merged['workload']}")


def assert_merged(r, table: str, key: str, pg) -> dict:
    assert r.code == 0, r.output
    merged, each = r.digest(), parts(r)
    assert all(p["rows_written"] > 0 for p in each), "a generator wrote nothing"
    for k in SUMMED:
        assert merged[k] == sum(p[k] for p in each), k
    for op, o in merged["ops"].items():
        for k in ("count", "errors", "retries", "keys_missing"):
            assert o[k] == sum(p["ops"][op][k] for p in each), (op, k)
        # One window: the merged count over the longest generator's run.
        assert o["per_second"] == pytest.approx(o["count"] / max(p["duration_s"] for p in each))
    assert merged["errors"] == 0, merged["errors_by_class"]
    # The table holds exactly the keys the generators were told to write,
    # worked out here from each one's segment and count (a set compared
    # with a set: DISTINCT on a primary key cannot fail).
    params = json.loads((r.folder / "params.json").read_text())
    held = pg.query(f"SELECT {key} FROM {table}").splitlines()
    expected = expected_keys(merged, each, params["knobs"])
    assert len(held) == len(expected) == merged["rows_written"] > 0
    assert set(held) == expected, (sorted(set(held) - expected)[:5], sorted(expected - set(held))[:5])
    assert params["generators"] == N
    assert params["execution_segments"] == {"g1": "0:1/3", "g2": "1/3:2/3", "g3": "2/3:1"}
    assert "PGPASSWORD" not in json.dumps(params) and pg.password not in r.output
    return merged


QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}


def cdf_bounds(x: float, own: list[dict], counts: list[int]) -> tuple[float, float]:
    """Bounds on the share of all the generators' samples at or below x, from
    each one's percentiles and max: a generator whose p-quantile is <= x has
    at least p of its samples there, one whose p-quantile is above x at most
    p (give or take one sample: k6 interpolates between two)."""
    low = high = 0.0
    for o, n in zip(own, counts):
        points = sorted([(QUANTILES[q], o[q]) for q in QUANTILES] + [(1.0, o["max"])])
        below = max((p for p, v in points if v <= x), default=0.0)
        above = min((p for p, v in points if v > x), default=1.0)
        low += n * max(below - 1 / n, 0.0)
        high += n * min(above + 1 / n, 1.0)
    return low / sum(counts), high / sum(counts)


def test_sql_inserts_over_three_generators_with_prometheus(binaries, postgres, prometheus, tmp_path):
    table = f"gen_ins_{uuid.uuid4().hex[:6]}"
    r = run_n("sql-inserts", postgres, tmp_path, prometheus=prometheus.url, TABLE=table, VUS=6, DURATION="3s")
    merged = assert_merged(r, table, "k", postgres)
    testid = r.folder.name
    # Every key carries the run's one prefix (its testid) and k6's
    # iterationInTest, unique across the segments.
    assert int(postgres.query(f"SELECT count(*) FROM {table} WHERE k LIKE '{testid}:%'")) == merged["rows_written"]

    params = json.loads((r.folder / "params.json").read_text())
    window = f"{int(params['finished_unix_s'] - params['started_unix_s']) + 15}s"
    at = f"{params['finished_unix_s'] + 1:.3f}"

    def scalar(promql: str) -> float:
        result = prometheus.api("query", query=promql, time=at)["result"]
        assert len(result) == 1, (promql, result)
        return float(result[0]["value"][1])

    # One series per process (instance_id), not three processes overwriting one.
    assert scalar(f'count(count by (instance_id) (k6_iterations_total{{testid="{testid}"}}))') == N
    count = merged["ops"]["insert"]["count"]
    assert scalar(f'sum(last_over_time(k6_iterations_total{{testid="{testid}"}}[{window}]))') == count
    lat = merged["ops"]["insert"]["latency_ms"]
    assert merged["latency_source"] == summary_merge.PROMETHEUS and lat["source"] == "prometheus"
    # Against each generator's own k6 summary (k6 keeps every sample: exact
    # percentiles of its own iterations). The run's iterations are the union
    # of theirs: its CDF is their CDFs weighted by their counts, and each
    # generator's known percentiles bound its CDF at any latency (cdf_bounds),
    # so the run's q-quantile Q must have F(Q) >= q and F(just below Q) <= q
    # within those bounds; in particular Q lies between the generators' own
    # q-quantiles. The merged value comes from a native histogram, which
    # places a quantile inside the bucket holding it: one bucket's width
    # (upper over lower bound, read from the histogram Prometheus holds) is
    # its error at most, so Q is within [value / width, value * width].
    own = [p["ops"]["insert"]["latency_ms"] for p in parts(r)]
    counts = [p["ops"]["insert"]["count"] for p in parts(r)]
    hist = prometheus.api("query", query=f'sum(last_over_time(k6_iteration_duration_seconds{{testid="{testid}", '
                                            f'op="insert"}}[{window}]))', time=at)["result"][0]["histogram"][1]
    assert int(hist["count"]) == count == sum(counts)
    width = max(float(hi) / float(lo) for _, lo, hi, _ in hist["buckets"] if float(lo) > 0)
    # k6 starts at 0.27%-wide buckets and halves its resolution to stay under
    # 160 (a run here: 9%, 2^(1/8)); wider than 19% and the bounds say little.
    assert 1 < width <= 2 ** (1 / 4) + 1e-9, width
    for q in ("p50", "p90", "p95", "p99"):
        level, v = QUANTILES[q], lat[q]
        low, high = min(o[q] for o in own), max(o[q] for o in own)
        assert low / width <= v <= high * width, (q, v, [o[q] for o in own], width)
        assert cdf_bounds(v * width, own, counts)[1] >= level, (q, v, own, width)
        assert cdf_bounds(v / width, own, counts)[0] <= level, (q, v, own, width)
    # The mean is exact arithmetic: the generators' means weighted by their counts.
    assert lat["avg"] == pytest.approx(sum(c * o["avg"] for c, o in zip(counts, own)) / sum(counts), rel=1e-6)
    assert lat["max"] == max(o["max"] for o in own)
    # Each process's own CPU, sampled while it ran, and one client line each in the run's limits.
    used = json.loads((r.folder / "usage.json").read_text())
    assert [p["name"] for p in used["processes"]] == [f"g{i}" for i in range(1, N + 1)]
    assert all(len(p["samples"]) >= 2 and p["samples"][-1][1] > p["samples"][0][1] for p in used["processes"])
    limits = json.loads((r.folder / "limits.json").read_text())
    assert [f["figures"].get("process") for f in limits["resources"] if f["resource"] == "client"] == [
        f"g{i}" for i in range(1, N + 1)]


def test_kv_load_over_three_generators_without_prometheus(binaries, postgres, tmp_path):
    table = f"gen_kv_{uuid.uuid4().hex[:6]}"
    r = run_n("kv-load", postgres, tmp_path, TABLE=table, VUS=3, DURATION="2s", OP_SIZE=10)
    merged = assert_merged(r, table, "k", postgres)
    # Percentiles are never averaged: without Prometheus there are none.
    assert merged["ops"]["insert"]["latency_ms"] is None
    assert merged["latency_source"] == summary_merge.NO_LATENCY
    assert merged["ops"]["insert"]["latency_max_ms"] > 0
    # verify reads the generators' logs and the merged count: one key space.
    v = subprocess.run([sys.executable, "-m", "ybbench", "verify", r.folder.name, "--results", str(r.folder.parent)],
                       cwd=REPO, env=postgres.env(), capture_output=True, text=True, timeout=120)
    assert v.returncode == 0, v.stdout + v.stderr
    checked = json.loads((r.folder / "verify.json").read_text())
    assert checked["present"]["count"] == checked["attempted_keys"] == merged["rows_written"]


def test_ycsb_load_over_three_generators_writes_each_record_once(binaries, postgres, tmp_path):
    from ..support.workloads import ycsb_key
    table = f"gen_ycsb_{uuid.uuid4().hex[:6]}"
    r = run_n("ycsb-load", postgres, tmp_path, TABLE=table, RECORD_COUNT=3000, VUS=3, DURATION="60s")
    merged = assert_merged(r, table, "ycsb_key", postgres)
    assert merged["rows_written"] == 3000
    assert set(postgres.query(f"SELECT ycsb_key FROM {table}").splitlines()) == {ycsb_key(n) for n in range(3000)}


def test_secondary_index_over_three_generators_reads_only_its_rows(binaries, postgres, tmp_path):
    # Each VU writes indexes from its exec.vu.idInTest, unique across segments.
    table = f"gen_si_{uuid.uuid4().hex[:6]}"
    r = run_n("sql-secondary-index", postgres, tmp_path, TABLE=table, VUS=3, DURATION="2s")
    merged = assert_merged(r, table, "k", postgres)
    assert merged["keys_missing"] == 0 and merged["ops"]["select"]["count"] > 0


@pytest.mark.parametrize("bad", ["0", "x", "2.5", "-1", "65"])
def test_bad_generator_counts_exit_2_and_write_nothing(postgres, tmp_path, bad):
    r = run_n("sql-inserts", postgres, tmp_path, generators=bad, DURATION="1s")
    assert r.code == 2 and "--generators" in r.output, r.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_fewer_vus_than_generators_exit_2(postgres, tmp_path):
    r = run_n("sql-inserts", postgres, tmp_path, VUS=2, DURATION="1s")
    assert r.code == 2 and "at least one VU" in r.output, r.output
    assert not (tmp_path / "results").exists()


def test_one_failing_generator_fails_the_run_and_stops_the_others(binaries, postgres, tmp_path):
    # k6 for every generator but the middle one, which fails once the others
    # have written a row (polled with psql, at most 60 s: a fixed sleep could
    # end before a busy machine's other k6s start), so "the others ran".
    table = f"gen_fail_{uuid.uuid4().hex[:6]}"
    pgpass_file = pgpass(tmp_path / "pgpass", postgres.port, postgres.database, postgres.user, postgres.password)
    rows_yet = (f"PGPASSFILE={pgpass_file} psql -h 127.0.0.1 -p {postgres.port} -U {postgres.user} -d {postgres.database} "
                f"-tAc 'SELECT 1 FROM {table} LIMIT 1' 2>/dev/null | grep -q 1")
    wrapper = tmp_path / "k6"
    wrapper.write_text('#!/bin/sh\ncase " $* " in *" 1/3:2/3 "*) i=0\n'
                       f'  until {rows_yet} || [ $i -ge 300 ]; do i=$((i + 1)); sleep 0.2; done\n'
                       '  echo \'level=error msg="injected: generator down"\'; exit 107;; esac\n'
                       f'exec {BIN / "k6"} "$@"\n')
    wrapper.chmod(0o755)
    r = run_n("sql-inserts", postgres, tmp_path, extra_env={"K6": str(wrapper)}, TABLE=table, VUS=3, DURATION="60s")
    assert r.code == 107, r.output  # the failing generator's own exit code, passed through
    assert "generator g2 (segment 1/3:2/3) failed (k6 exit 107): injected: generator down" in r.output
    assert "stopped g1, g3" in r.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir()), "a folder was left"
    # The others ran, and were stopped: the table no longer grows.
    rows = int(postgres.query(f"SELECT count(*) FROM {table}"))
    time.sleep(2)
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == rows > 0


def test_live_progress_sums_the_generators_into_one_k6_line():
    from ybbench.core.progress import LiveOps
    from ybbench.run.load_generators import Progress
    p, ops = Progress(["g1", "g2", "g3"]), LiveOps()
    for t, done in ((1.0, 100), (2.0, 300)):
        lines = [p.feed(g, f"running ({t:.1f}s), 2/2 VUs, {done * i} complete and 0 interrupted iterations")
                 for i, g in enumerate(("g1", "g2", "g3"), start=1)]
        assert lines[:2] == ["", ""]  # one summed line once every generator has reported
        assert ops.feed(lines[2])
    assert p.feed("g1", "level=info msg=x") is None
    assert ops.vus == 6 and ops.ops_per_s == pytest.approx((300 - 100) * 6 / 1.0)
