"""k6 client-side panels, generic over `op`: the overview shows some of
them next to the server's view, the k6 dashboard shows them all."""

from __future__ import annotations

from .common import K6, timeseries

RATE = "$__rate_interval"
# k6's iteration series that are statements: its iterations and iteration
# durations are tagged with their op, but not every tag is one. With the
# inner loop (OPS_PER_ITERATION=N, k6-scripts/lib/loop.js) k6's own
# iteration of N statements is op=loop, each statement counted under its
# own op; an iteration that ran nothing is op=idle, and one never tagged
# has no op. Sums of operations and per-op latency leave those out (the
# summary does too, lib/summary.js). ybbench/core/k6_series.py says the same
# for the report (dashboards import nothing of ybbench's).
STATEMENTS = 'op!="", op!~"loop|idle"'


def ops_per_second(width: int = 12):
    return timeseries("k6 ops/s by operation", "ops", [
        (f"sum by (testid, op) (rate(k6_iterations_total{{{K6}, {STATEMENTS}}}[{RATE}]))", "{{testid}} {{op}}"),
    ], description="Statements run, as the client saw them (failed ones too: see errors/s); with "
                   "OPS_PER_ITERATION=N each statement of the inner loop, not k6's iterations of it (op=loop).",
       width=width)


# k6 sends its trends as Prometheus native histograms
# (k6 v2: K6_FEATURES=native-histograms; v1: K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM): percentiles over each
# window, not over the run so far, and O(1) memory in k6's output.
# Each statement's own duration: never the inner loop's whole iteration (op=loop).
LATENCY = f"k6_iteration_duration_seconds{{{K6}, {STATEMENTS}}}"


def latency_percentiles(width: int = 12):
    return timeseries("k6 latency p50 / p95 / p99 by operation", "s", [
        (f"histogram_quantile({q}, sum by (testid, op) (rate({LATENCY}[{RATE}])))", f"{{{{testid}}}} {{{{op}}}} p{name}")
        for q, name in ((0.5, "50"), (0.95, "95"), (0.99, "99"))
    ], description="Client-side statement latency (k6's iteration_duration of each statement; with "
                   "OPS_PER_ITERATION=N the inner loop's statements, not its iterations), percentiles over each "
                   "interval.", width=width)


def latency_avg_max(width: int = 12):
    return timeseries("k6 latency avg / p99.9 by operation", "s", [
        (f"histogram_avg(sum by (testid, op) (rate({LATENCY}[{RATE}])))", "{{testid}} {{op}} avg"),
        (f"histogram_quantile(0.999, sum by (testid, op) (rate({LATENCY}[{RATE}])))", "{{testid}} {{op}} p99.9"),
    ], width=width)


def errors_by_class(width: int = 12):
    return timeseries("k6 errors/s by SQLSTATE class", "ops", [
        (f"sum by (testid, op, sqlstate_class) (rate(k6_ybbench_errors_total{{{K6}}}[{RATE}]))",
         "{{testid}} {{op}} class {{sqlstate_class}}"),
    ], description="Failed statements; 23 integrity, 40 transaction rollback, 08 connection, 57 operator "
                   "intervention. No data means no errors.", width=width)
