"""Logs from Loki next to the metrics: what the logs dashboard shows in
full, the overview and the k6 dashboard show in part. Promtail labels every
container's lines with `service` and, from the line's format, `level`
(compose/promtail/promtail.yml); k6 runs carry their `testid`."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import logs as glogs
from grafana_foundation_sdk.models.common import LogsDedupStrategy, LogsSortOrder
from grafana_foundation_sdk.models.dashboard import VariableRefresh, VariableSort

from .common import ALL, LOKI, timeseries, with_targets

# Grafana's interval for LogQL: one count per step, so no line counts twice.
WINDOW = "$__interval"
SERVICES = 'service=~"$service"'  # the logs dashboard's service variable
EVERY_SERVICE = 'service=~".+"'  # where the dashboard has no such variable
PROBLEMS = 'level=~"warn|error|fatal"'
# Every stream with a testid is a k6 run's log: the k6 container's (Promtail
# labels it from compose's TESTID) and `ybbench run --loki`'s
# ({job="ybbench", testid, workload}). testid!="" keeps "All" (.*) from
# matching every stream, which Loki refuses.
K6_LOG = '{testid=~"$testid", testid!=""}'
# The compose services yb-master-N and yb-tserver-N.
YUGABYTEDB = 'service=~"yb-.*"'


def service_variable() -> gd.QueryVariable:
    """The services that logged, from Loki (Grafana's Loki variable query:
    type 1 is label values). All is .+: Loki refuses a selector that
    matches an empty label."""
    return (
        gd.QueryVariable("service")
        .label("Service (logs)")
        .datasource(LOKI)
        .query({"type": 1, "label": "service", "stream": '{service=~".+"}', "refId": "service-values"})
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .multi(True)
        .include_all(True)
        .all_value(".+")
        .current(ALL)
    )


def lines_by_service_and_level(width: int = 12, services: str = SERVICES):
    return timeseries("Log lines per service and level", "short", [
        (f"sum by (service, level) (count_over_time({{{services}}}[{WINDOW}]))", "{{service}} {{level}}"),
    ], description="Lines per interval. No level: a line in none of the formats Promtail knows.",
        width=width, datasource=LOKI)


def problems_by_service(width: int = 12, services: str = SERVICES):
    return timeseries("Errors and warnings per service", "short", [
        (f"sum by (service, level) (count_over_time({{{services}, {PROBLEMS}}}[{WINDOW}]))",
         "{{service}} {{level}}"),
    ], description="Log lines of level warn, error or fatal per interval, from Promtail's level label.",
        width=width, datasource=LOKI)


def _logs(title: str, expr: str, description: str, *, width: int, height: int) -> glogs.Panel:
    panel = (
        glogs.Panel().title(title).description(description).datasource(LOKI).span(width).height(height)
        .show_time(True).show_labels(True).wrap_log_message(True).enable_log_details(True)
        .sort_order(LogsSortOrder.DESCENDING).dedup_strategy(LogsDedupStrategy.NONE)
    )
    return with_targets(panel, [(expr, "")], LOKI)  # log lines have no legend


def problem_lines(width: int = 12, height: int = 8, services: str = SERVICES):
    return _logs("Errors and warnings", f"{{{services}, {PROBLEMS}}}",
                 "The lines behind Errors and warnings per service.", width=width, height=height)


def k6_log(width: int = 24, height: int = 10):
    return _logs("k6 log of the selected run", K6_LOG,
                 "What k6 printed: the compose k6 container's output (Promtail) and `ybbench run --loki`'s.",
                 width=width, height=height)


def yugabytedb_log(width: int = 24, height: int = 12):
    return _logs("YugabyteDB server logs", f"{{{YUGABYTEDB}, {SERVICES}}}",
                 "yb-master and yb-tserver (glog: I, W, E, F become the level label).",
                 width=width, height=height)


# YugabyteDB's own words for the events (github.com/yugabyte/yugabyte-db):
# src/yb/master/master_main.cc logs "Master server successfully started.",
# src/yb/tserver/tablet_server_main_impl.cc "Tablet server successfully
# started."; src/yb/consensus/raft_consensus.cc "Becoming Leader. State:
# ..." when a replica wins an election, a tablet's or the masters'
# sys.catalog (docs/content/stable/deploy/manual-deployment/start-masters.md
# shows one).
RESTARTS = f'{{{YUGABYTEDB}}} |~ "(Master|Tablet) server successfully started"'
LEADER_CHANGES = f'{{{YUGABYTEDB}}} |= "Becoming Leader"'


# Faults and expansion that `ybbench run --event` made (ybbench/run/faults.py).
EVENTS = '{job="ybbench", kind="event"}'


def annotations() -> list[gd.AnnotationQuery]:
    """Server (re)starts, Raft leader changes and ybbench's own events
    (stop, start, kill, add a tserver), drawn where throughput dips
    (common.ANNOTATION_PANELS)."""
    return [
        gd.AnnotationQuery().name("ybbench events").datasource(LOKI).enable(True)
        .icon_color("rgba(255, 120, 10, 0.9)").expr(EVENTS),
        gd.AnnotationQuery().name("YugabyteDB restarts").datasource(LOKI).enable(True)
        .icon_color("rgba(242, 73, 92, 0.8)").expr(RESTARTS),
        gd.AnnotationQuery().name("YugabyteDB leader changes").datasource(LOKI).enable(True)
        .icon_color("rgba(163, 82, 204, 0.8)").expr(LEADER_CHANGES),
    ]
