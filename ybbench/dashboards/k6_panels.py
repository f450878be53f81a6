"""k6 client-side panels, generic over `op`: the overview shows some of
them next to the server's view, the k6 dashboard shows them all."""

from __future__ import annotations

from .common import K6, timeseries

RATE = "$__rate_interval"


def ops_per_second(width: int = 12):
    return timeseries("k6 ops/s by operation", "ops", [
        (f"sum by (testid, op) (rate(k6_iterations_total{{{K6}, op!=''}}[{RATE}]))", "{{testid}} {{op}}"),
    ], description="Statements that succeeded, as the client saw them.", width=width)


def latency_percentiles(width: int = 12):
    # k6 writes trend percentiles cumulative since the run started, in s.
    return timeseries("k6 latency p50 / p95 / p99 by operation", "s", [
        (f"max by (testid, op) (k6_iteration_duration_{stat}{{{K6}, op!=''}})", f"{{{{testid}}}} {{{{op}}}} {stat}")
        for stat in ("p50", "p95", "p99")
    ], description="Client-side statement latency; k6 reports each percentile over the run so far.", width=width)


def latency_avg_max(width: int = 12):
    return timeseries("k6 latency avg / max by operation", "s", [
        (f"max by (testid, op) (k6_iteration_duration_{stat}{{{K6}, op!=''}})", f"{{{{testid}}}} {{{{op}}}} {stat}")
        for stat in ("avg", "max")
    ], width=width)


def errors_by_class(width: int = 12):
    return timeseries("k6 errors/s by SQLSTATE class", "ops", [
        (f"sum by (testid, op, sqlstate_class) (rate(k6_ybbench_errors_total{{{K6}}}[{RATE}]))",
         "{{testid}} {{op}} class {{sqlstate_class}}"),
    ], description="Failed statements; 23 integrity, 40 transaction rollback, 08 connection, 57 operator "
                   "intervention. No data means no errors.", width=width)
