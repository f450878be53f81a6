"""The dashboards' and the report's k6 ops/s and latency with the inner
loop (OPS_PER_ITERATION=N, issue 36): they count the loop's statements,
never k6's own iterations of it (op=loop), which the k6 client dashboard
shows apart, by op tag. One sql-inserts run pushes to the native
Prometheus; each panel's query is evaluated as Grafana sends it, against
the rows the table holds (SELECT count(*)) and k6's own count of its
loops, with arithmetic on k6's pushes for the rate windows' edges."""

from __future__ import annotations

import json
import re
import statistics
import uuid

import pytest

from ybbench.core.prom import prom_queries

from ..support.dashboards import boards, fill, panels
from ..support.ybbench_cli import ybbench, ybbench_run

# Quiet (tests/lanes.sh): every push lands within a quarter of the scrape interval only with no neighbour but
# idle-priority builds.
pytestmark = pytest.mark.quiet

N = 10
K = 4  # pushes per rate window: $__rate_interval = K push intervals
COUNTERS = re.compile(r"k6_iterations_total\{[^}]*\}")
HISTOGRAMS = re.compile(r"k6_iteration_duration_seconds\{[^}]*\}")


@pytest.fixture(scope="module")
def looped(postgres, prometheus, tmp_path_factory):
    """A 20 s sql-inserts run of 2 VUs, N inserts per k6 iteration; k6
    pushes every second (ybbench_run). Returns what the tests read."""
    results = tmp_path_factory.mktemp("loop-panels")
    # The grid below needs pushes a push interval apart; a host busy enough to hold one
    # back by a quarter interval breaks that premise, not the panels: run again (3 tries).
    for _ in range(3):
        got = _looped_run(postgres, prometheus, results)
        if got["regular"]:
            return got
    pytest.fail(f"k6's pushes came irregularly in 3 runs: {got['spacing']}")


def _looped_run(postgres, prometheus, results) -> dict:
    testid, table = f"lp{uuid.uuid4().hex[:8]}", f"lp_{uuid.uuid4().hex[:8]}"
    run = ybbench_run("sql-inserts", postgres, results, testid=testid, prometheus=prometheus.url,
                      knobs={"TABLE": table, "VUS": "2", "DURATION": "20s", "OPS_PER_ITERATION": str(N),
                             "DB_DRIVER": "pgconn"})
    assert run.code == 0, run.output
    rows = int(postgres.query(f"SELECT count(*) FROM {table}"))
    loops = int(run.metric("iterations{op:loop}").get("count", 0))
    assert rows > 20 * N and loops > 20, (rows, loops)

    def pushes(op: str) -> list[tuple[float, float]]:
        (s,) = prometheus.api("query", query=f'k6_iterations_total{{testid="{testid}", op="{op}"}}[10m]')["result"]
        return [(float(t), float(v)) for t, v in s["values"]]

    inserts = pushes("insert")
    # k6's counter for the inserts ends at the rows the table holds (test_inner_loop.py checks
    # it too): the raw pushes below are the database's count, second by second.
    assert inserts[-1][1] == rows
    spacing = [b[0] - a[0] for a, b in zip(inserts, inserts[1:])]
    push = statistics.median(spacing)
    # Every push a push interval after the last, to within a quarter of one, but k6's last
    # (when the run stops): each window of the grid below holds K pushes, whatever their drift.
    regular = all(abs(d - push) < push / 4 for d in spacing[:-1])
    return {"testid": testid, "run": run, "results": results, "rows": rows, "loops": loops, "push": push,
            "inserts": inserts, "loop_pushes": pushes("loop"), "regular": regular,
            "spacing": [round(d, 3) for d in spacing]}


def grid(looped) -> dict:
    """Instants half a push after each push, one push apart, from the first
    push to K + 1 pushes past the last; the rate window K pushes long."""
    push, first, last = looped["push"], looped["inserts"][0][0], looped["inserts"][-1][0]
    return {"start": f"{first + push / 2:.3f}", "end": f"{last + (K + 1) * push:.3f}", "step": f"{push:.3f}",
            "window": f"{round(K * push * 1000)}ms"}


def evaluate(prometheus, expr: str, g: dict) -> dict[str, list[tuple[float, float]]]:
    """The query over the grid, each series by its op label ('' without one)."""
    got = prometheus.api("query_range", query=expr, start=g["start"], end=g["end"], step=g["step"])["result"]
    out = {}
    for s in got:
        op = s["metric"].get("op", "")
        assert op not in out, (expr, s["metric"])
        out[op] = [(float(t), float(v)) for t, v in s["values"] if v != "NaN"]
    return out


def edge_bound(pushes: list[tuple[float, float]]) -> float:
    """How far the rates' sum over the grid may be from the counter's last
    value: twice J, the largest increment between two pushes (the first
    push's from 0 included). With pushes P apart and windows of K = 4:
    - a window that holds 4 pushes reads their 3 increments over 3 P,
      extrapolated half a push to each edge (under Prometheus' 1.1 average
      spacings): its rate x P is their mean; each increment is in 3 such
      windows, so every increment j_i inside the run counts once, less the
      window's first increment, which the ideal window (the counter's
      difference over R) holds and the rate does not: the sum telescopes,
      and only the edges remain;
    - worked out window by window, the start (the windows with 1 to 3 pushes,
      extrapolated by half a spacing or to the counter's zero) and the
      interior's leftover there come to between -6 J and +3 J, the end to
      (5/6 j_L + 1/6 j_L-1) in [0, J]; over K: between -1.5 J and +J;
    - pushes drift (within P/4 here): a window reads its increments over its
      own span, and those spans' drift telescopes too, to at most 6 drifts of
      P/4 over 3 P, half an increment: 0.5 J.
    So -2 J to +1.5 J; k6's last push, when the run stops, a fraction of a
    push after the one before, moves the end by less than its own increment."""
    steps = [pushes[0][1]] + [b[1] - a[1] for a, b in zip(pushes, pushes[1:])]
    return 2 * max(steps)


def targets(board: str, title: str) -> list[dict]:
    (panel,) = [p for p in panels(boards()[board]) if p["title"] == title]
    return panel["targets"]


def unit(board: str, title: str) -> str:
    (panel,) = [p for p in panels(boards()[board]) if p["title"] == title]
    return panel["fieldConfig"]["defaults"]["unit"]


def values(looped, g: dict) -> dict[str, str]:
    return {"testid": looped["testid"], "base": looped["testid"], "other": looped["testid"], "shift": "0",
            "__rate_interval": g["window"], "cluster": ".*"}


OPS_PANELS = [("overview.json", "k6 ops/s by operation"), ("k6-client.json", "k6 ops/s by operation"),
              ("postgres.json", "k6 ops/s by operation"),
              ("compare-runs.json", "ops/s by operation, base and other aligned at start")]
LATENCY_PANELS = [("overview.json", "k6 latency p50 / p95 / p99 by operation"),
                  ("k6-client.json", "k6 latency p50 / p95 / p99 by operation"),
                  ("k6-client.json", "k6 latency avg / p99.9 by operation"),
                  ("compare-runs.json", "p99 latency by operation, base and other aligned at start")]


def test_ops_panels_and_the_reports_ops_sum_to_the_rows(looped, prometheus):
    """Each per-op ops/s query (the dashboards' and the report's), over the
    grid: one series, op=insert, whose rate times the step sums to the
    table's rows within edge_bound; and each counter selector it reads,
    summed over its series at the run's end, is the rows exactly."""
    g = grid(looped)
    rows, bound, push = looped["rows"], edge_bound(looped["inserts"]), float(g["step"])
    queries = [(f"{b} / {t}", x["expr"]) for b, t in OPS_PANELS for x in targets(b, t)
               if "$other" not in x["expr"]]  # compare-runs' other: the same run shifted
    queries.append(("report ops_per_second", prom_queries(looped["testid"], g["window"])["ops_per_second"]))
    for where, expr in queries:
        expr = fill(expr, values(looped, g))
        got = evaluate(prometheus, expr, g)
        assert set(got) == {"insert"}, f"{where}: series {sorted(got)} from {expr}"
        total = sum(v for _, v in got["insert"]) * push
        assert abs(total - rows) <= bound, f"{where}: {total:.1f} against {rows} rows (bound {bound:g}): {expr}"
        for sel in set(COUNTERS.findall(expr)):
            (s,) = prometheus.api("query", query=f"sum(last_over_time({sel}[10m]))")["result"]
            assert float(s["value"][1]) == rows, f"{where}: {sel} sums to {s['value'][1]}, rows {rows}"


def test_overviews_total_ops_is_the_inserts_slope_at_each_instant(looped, prometheus):
    """The overview's stat (its instants whose window lies inside the run):
    at each, the slope of the insert counter between the first and last
    push in its window (both within half a push of the window's edges, so
    Prometheus extrapolates to them: the rate is the slope), to 1e-6
    (timestamps in ms).
    Counting k6's loops too would read 1 + 1/N of it. And its selector
    sums to the rows."""
    g = grid(looped)
    (target,) = targets("overview.json", "k6 ops/s (client, selected runs)")
    expr = fill(target["expr"], values(looped, g))
    got = evaluate(prometheus, expr, g)
    assert set(got) == {""}, got
    window, inserts = K * float(g["step"]), looped["inserts"]
    assert len(got[""]) >= len(inserts) - 2 * K, (len(got[""]), len(inserts))  # the run's inside
    for t, v in got[""]:
        inside = [(ts, x) for ts, x in inserts if t - window < ts <= t]
        assert len(inside) == K, (t, inside)
        (t0, v0), (t1, v1) = inside[0], inside[-1]
        assert max(t0 - (t - window), t - t1) < 1.1 * (t1 - t0) / (K - 1), (t, inside)  # extrapolated to the edges
        assert v == pytest.approx((v1 - v0) / (t1 - t0), rel=1e-6), (t, v, inside)
    (sel,) = set(COUNTERS.findall(expr))
    (s,) = prometheus.api("query", query=f"sum(last_over_time({sel}[10m]))")["result"]
    assert float(s["value"][1]) == looped["rows"], sel


def test_latency_panels_read_the_statements_only(looped, prometheus):
    """Each per-op latency query (the dashboards' and the report's): one
    series, op=insert, with a value somewhere; its histograms, summed at
    the run's end, count the rows exactly (a loop's duration, of N
    statements, would add k6's loops to that count)."""
    g = grid(looped)
    # Milliseconds per unit of each query's result: the panel's unit (Grafana's "s" or "ms"), the report's ms.
    to_ms = {"s": 1000.0, "ms": 1.0}
    queries = [(f"{b} / {t}", x["expr"], to_ms[unit(b, t)]) for b, t in LATENCY_PANELS for x in targets(b, t)
               if "$other" not in x["expr"]]
    report = prom_queries(looped["testid"], g["window"])
    queries += [(f"report {k}", report[k], 1.0) for k in ("latency_avg_ms", "latency_p99_ms")]
    # The run's own statement latency (summary.json: our Go module's histograms of every insert, 3 significant
    # digits): every window's figure is under the slowest statement (with a native-histogram bucket's width, ~9%,
    # and a margin), and the windows' median is not under a quarter of the run's median. A x1000 slip either way
    # (seconds read as ms, or the reverse) fails one of the two.
    own = looped["run"].digest()["ops"]["insert"]["latency_ms"]
    for where, expr, ms in queries:
        expr = fill(expr, values(looped, g))
        got = evaluate(prometheus, expr, g)
        assert set(got) == {"insert"}, f"{where}: series {sorted(got)} from {expr}"
        assert got["insert"] and all(v > 0 for _, v in got["insert"]), where
        shown = [v * ms for _, v in got["insert"]]
        assert max(shown) <= 1.2 * own["max"], f"{where}: {max(shown):.3f} ms, the run's slowest {own['max']} ms"
        assert statistics.median(shown) >= own["p50"] / 4, f"{where}: median {statistics.median(shown):.4f} ms, " \
            f"the run's p50 {own['p50']} ms"
        sels = set(HISTOGRAMS.findall(expr))
        assert sels, where
        for sel in sels:
            got = prometheus.api("query", query=f"histogram_count(sum by (op) (last_over_time({sel}[10m])))")
            counts = {s["metric"].get("op", ""): float(s["value"][1]) for s in got["result"]}
            assert counts == {"insert": looped["rows"]}, f"{where}: {sel} counts {counts}, rows {looped['rows']}"


def test_k6_iterations_panel_shows_the_loops_apart(looped, prometheus):
    """The k6 client dashboard's iterations/s, by op tag: op=loop sums to
    k6's own count of its loops, op=insert to the rows, each within its
    edge_bound; never one line adding them up."""
    g = grid(looped)
    (target,) = targets("k6-client.json", "k6 iterations/s by op tag")
    got = evaluate(prometheus, fill(target["expr"], values(looped, g)), g)
    assert set(got) == {"insert", "loop"}, sorted(got)
    push = float(g["step"])
    for op, want, pushes in (("insert", looped["rows"], looped["inserts"]),
                             ("loop", looped["loops"], looped["loop_pushes"])):
        total = sum(v for _, v in got[op]) * push
        assert abs(total - want) <= edge_bound(pushes), (op, total, want)


def test_report_charts_only_the_statements(looped, prometheus):
    """`ybbench report` on the run: its k6 charts hold op=insert alone."""
    out = looped["results"] / "loop.html"
    p = ybbench("report", looped["testid"], "--results", str(looped["results"]), "--prometheus", prometheus.url,
                "--out", str(out))
    assert p.returncode == 0, p.stderr
    (run,) = json.loads(out.with_suffix(".json").read_text())["runs"]
    charts = {c["id"]: c for c in run["charts"]}
    for cid in ("ops_per_second", "latency_avg_ms", "latency_p99_ms", "summary_ops_per_second"):
        assert set(charts[cid]["data"]) == {"insert"}, (cid, sorted(charts[cid]["data"]))
