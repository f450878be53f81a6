"""History: the runs in the history store (`ybbench history`, the stack's
history-db PostgreSQL), each series' ops/s and p99 per operation over its
runs, one point per run at its start; the runs with their labels and knobs;
and the change points Apache Otava found (the last `ybbench history` wrote
them to the store), drawn as annotations and listed. Its datasource is the
store's PostgreSQL, not Prometheus: no cluster or run variables, a
workload variable instead."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import table as gtable
from grafana_foundation_sdk.builders import timeseries as gts
from grafana_foundation_sdk.models.dashboard import VariableOption, VariableRefresh, VariableSort

from . import history_sql as q
from .common import ybbench_link
from .sql import HISTORY, TYPE, Sql


def workload_variable() -> gd.QueryVariable:
    return (gd.QueryVariable("workload").label("Workload").datasource(HISTORY).query(q.WORKLOADS)
            .refresh(VariableRefresh.ON_DASHBOARD_LOAD).sort(VariableSort.ALPHABETICAL_ASC).multi(True)
            .include_all(True).current(VariableOption(selected=True, text="All", value="$__all")))


def per_run(title: str, unit: str, sql: str, description: str) -> gts.Panel:
    # Points joined by lines: each is a run, nothing lies between two runs.
    return (gts.Panel().title(title).description(description).unit(unit).datasource(HISTORY).span(12).height(9)
            .show_points("always").point_size(6).with_target(Sql(sql, fmt="time_series")))


def table(title: str, sql: str, description: str) -> gtable.Panel:
    return (gtable.Panel().title(title).description(description).unit("none").datasource(HISTORY).span(24)
            .height(10).with_target(Sql(sql)))


def build() -> gd.Dashboard:
    return (
        gd.Dashboard("ybbench / History").uid("ybbench-history")
        .description("Every run in the history store, one point per run: each series' (workload, knobs, op) "
                     "ops/s and p99 over its runs, the runs' labels and knobs, and the change points Apache "
                     "Otava found (run `ybbench history` to update them).")
        .tags(["ybbench"]).time("now-30d", "now").refresh("1m").readonly()
        .with_variable(gd.DatasourceVariable("history").label("History store").type(TYPE))
        .with_variable(workload_variable())
        .link(ybbench_link())
        .annotation(gd.AnnotationQuery().name("change points").datasource(HISTORY).enable(True)
                    .icon_color("rgba(255, 96, 96, 0.9)"))
        .with_row(gd.Row("Series"))
        .with_panel(per_run("ops/s per run, by series and operation", "ops", q.OPS_PER_S,
                            "k6's ops/s of each operation over each whole run (summary.json)."))
        .with_panel(per_run("p99 per run, by series and operation", "ms", q.P99_MS,
                            "k6's p99 latency of each operation over each whole run (summary.json)."))
        .with_row(gd.Row("Runs and change points"))
        .with_panel(table("Runs", q.RUNS_TABLE, "Each run with its labels (--label), knobs and versions, newest "
                          "first."))
        .with_panel(table("Change points", q.CHANGES_TABLE,
                          "What the last `ybbench history` found in each series: the first run after each "
                          "change, the change in % and Otava's p-value."))
    )
