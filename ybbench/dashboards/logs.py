"""Logs: how much every service logs and at which level, its errors and
warnings, the selected k6 run's log and the YugabyteDB servers' logs, on
the same time range and run as the metric dashboards."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd

from . import log_panels
from .common import dashboard


def build() -> gd.Dashboard:
    return (
        dashboard("ybbench-logs", "ybbench / Logs",
                  "Loki: log lines per service and level (Promtail reads the level from each line's format), "
                  "errors and warnings, the selected k6 run's log and the YugabyteDB servers' logs.",
                  extra_variables=(log_panels.service_variable(),), logs=True)
        .with_row(gd.Row("Volume"))
        .with_panel(log_panels.lines_by_service_and_level())
        .with_panel(log_panels.problems_by_service())
        .with_row(gd.Row("Lines"))
        .with_panel(log_panels.problem_lines(width=24))
        .with_panel(log_panels.k6_log())
        .with_panel(log_panels.yugabytedb_log())
    )
