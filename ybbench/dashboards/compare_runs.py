"""Compare runs: two k6 runs (`base`, `other`) overlaid on one time axis,
aligned at their starts, the view in Grafana of `ybbench compare`.

Select a time range that holds both runs and the base run's window: the
other run is drawn shifted by `shift`, the base run's start minus the other
run's (in seconds; each start is the time of k6's first push of `k6_vus`
for that testid), so both begin at the same instant. A later other run gives
a negative shift, which PromQL's `offset` takes (Prometheus 3)."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.models.dashboard import VariableRefresh

from .common import DS, dashboard, timeseries
from .k6_panels import STATEMENTS

RATE = "$__rate_interval"
RUNS = "label_values(k6_vus, testid)"


def start(testid_var: str) -> str:
    """When a run began: its first `k6_vus` sample within the range (a 1 s
    subquery over the dashboard's range, so the start is found to 1 s)."""
    return f'min(min_over_time(timestamp(k6_vus{{testid="${testid_var}"}})[${{__range_s}}s:1s]))'


# Grafana's query_result() returns "{} <value> <ms timestamp>"; the regex
# keeps the value, a whole number of seconds (round), for `offset ${shift}s`.
SHIFT_QUERY = f"query_result(round({start('base')} - {start('other')}))"
SHIFT_REGEX = r"/^\{\} (-?[0-9]+) /"


def run_variable(name: str, label: str) -> gd.QueryVariable:
    return (
        gd.QueryVariable(name).label(label).datasource(DS)
        .query({"qryType": 1, "query": RUNS, "refId": f"{name}-values"})
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).multi(False).include_all(False)
    )


def shift_variable() -> gd.QueryVariable:
    return (
        gd.QueryVariable("shift").label("other shifted by (s)").datasource(DS)
        .query({"qryType": 3, "query": SHIFT_QUERY, "refId": "shift-value"})
        .regex(SHIFT_REGEX).refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).multi(False).include_all(False)
    )


def base_and_other(expr: str) -> list[tuple[str, str]]:
    """The same query for both runs, the other one shifted onto the base's start.
    `expr` has {run} where the testid matcher goes and {shift} after its range."""
    return [
        (expr.format(run='testid="$base"', shift=""), "base {{op}}"),
        (expr.format(run='testid="$other"', shift=" offset ${shift}s"), "other {{op}}"),
    ]


def build() -> gd.Dashboard:
    ops = f"sum by (op) (rate(k6_iterations_total{{{{{{run}}, {STATEMENTS}}}}}[{RATE}]{{shift}}))"
    lat = (f"histogram_quantile({{q}}, sum by (op) (rate(k6_iteration_duration_seconds{{{{{{run}}, {STATEMENTS}}}}}"
           f"[{RATE}]{{shift}})))")
    return (
        dashboard("ybbench-compare", "ybbench / Compare runs",
                  "Two k6 runs overlaid and aligned at their starts: ops/s and latency per operation. "
                  "Pick base and other, and a time range that holds both runs; `ybbench compare` gives the "
                  "verdict with its interval.",
                  extra_variables=(run_variable("base", "base run (testid)"),
                                   run_variable("other", "other run (testid)"), shift_variable()))
        .with_row(gd.Row("Throughput"))
        .with_panel(timeseries("ops/s by operation, base and other aligned at start", "ops",
                               base_and_other(ops), width=24,
                               description="The other run is drawn shifted by $shift s onto the base run's "
                                           "start."))
        .with_row(gd.Row("Latency"))
        .with_panel(timeseries("p99 latency by operation, base and other aligned at start", "s",
                               base_and_other(lat.replace("{q}", "0.99"))))
        .with_panel(timeseries("p50 latency by operation, base and other aligned at start", "s",
                               base_and_other(lat.replace("{q}", "0.5"))))
    )
