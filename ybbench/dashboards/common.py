"""What every ybbench dashboard shares: the datasource, cluster and testid
variables, run annotations, links between the dashboards, and panel
helpers that set units, the datasource variable and reference ids, so no
panel can forget them."""

from __future__ import annotations

import json
import string

from grafana_foundation_sdk.builders import common as gc
from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import loki as gl
from grafana_foundation_sdk.builders import prometheus as gp
from grafana_foundation_sdk.builders import stat as gstat
from grafana_foundation_sdk.builders import timeseries as gts
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    DashboardCursorSync,
    DashboardLinkType,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

from . import history_sql
from .sql import annotation_target

# Every panel, target, variable and annotation names the datasource through
# this variable; compose provisions uid ybbench-prometheus as the default.
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
# Log panels and annotations name Loki the same way, through `loki`
# (compose provisions uid ybbench-loki, the only Loki).
LOKI = DataSourceRef(type_val="loki", uid="${loki}")
ALL = VariableOption(selected=True, text="All", value="$__all")

# The filters every query uses; the tests substitute concrete values.
K6 = 'testid=~"$testid"'
CLUSTER = 'node_prefix=~"$cluster"'
YSQL = f'server_type="yb_ysqlserver", service_type="SQLProcessor", {CLUSTER}'
TSERVER = f'export_type="tserver_export", {CLUSTER}'


def query_variable(name: str, label: str, query: str, *, multi: bool = True) -> gd.QueryVariable:
    """A multi-value variable defaulting to All (a regex matching anything),
    so the dashboards show the running test without any editing."""
    return (
        gd.QueryVariable(name)
        .label(label)
        .datasource(DS)
        .query({"qryType": 1, "query": query, "refId": f"{name}-values"})
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED)
        .sort(VariableSort.ALPHABETICAL_ASC)
        .multi(multi)
        .include_all(True)
        .all_value(".*")
        .current(ALL)
    )


def ybbench_link() -> gd.DashboardLink:
    """Every ybbench dashboard, one click away, at the same time range and
    with the same run, cluster and datasources selected."""
    return (gd.DashboardLink("ybbench dashboards").type(DashboardLinkType.DASHBOARDS).tags(["ybbench"])
            .as_dropdown(True).keep_time(True).include_vars(True))


def dashboard(uid: str, title: str, description: str, extra_variables: tuple = (), *,
              logs: bool = False) -> gd.Dashboard:
    """`logs`: the dashboard has Loki panels, so it gets the `loki`
    datasource variable too."""
    board = (
        gd.Dashboard(title)
        .uid(uid)
        .description(description)
        .tags(["ybbench"])
        .refresh("10s")
        .time("now-30m", "now")
        .tooltip(DashboardCursorSync.CROSSHAIR)
        .readonly()
        .with_variable(gd.DatasourceVariable("datasource").label("Prometheus").type("prometheus"))
    )
    if logs:
        board = board.with_variable(gd.DatasourceVariable("loki").label("Loki").type("loki"))
    board = (
        board
        .with_variable(query_variable("cluster", "Cluster (node_prefix)", "label_values(up, node_prefix)"))
        .with_variable(query_variable("testid", "k6 run (testid)", "label_values(k6_vus, testid)"))
        .link(ybbench_link())
    )
    for v in extra_variables:
        board = board.with_variable(v)
    # Run annotations: one region per k6 run and one per phase (scenario),
    # from the first to the last sample k6 wrote for it.
    board = board.annotation(
        gd.AnnotationQuery().name("k6 runs").datasource(DS).enable(True).icon_color("rgba(0, 211, 255, 0.6)")
        .expr(f"max by (testid) (k6_vus{{{K6}}})")
    ).annotation(
        gd.AnnotationQuery().name("k6 phases").datasource(DS).enable(True).icon_color("rgba(255, 152, 48, 0.6)")
        .expr(f"count by (testid, scenario) (k6_iterations_total{{{K6}}})")
    )
    return board


def with_targets(panel, queries: list[tuple[str, str]], datasource: DataSourceRef = DS):
    for ref, (expr, legend) in zip(string.ascii_uppercase, queries):
        if datasource.type_val == "loki":
            target = gl.Dataquery().query_type("range")
        else:
            target = gp.Dataquery()
        target = target.expr(expr).ref_id(ref).datasource(datasource)
        panel = panel.with_target(target.legend_format(legend) if legend else target)
    return panel


def timeseries(title: str, unit: str, queries: list[tuple[str, str]], *, description: str = "",
               width: int = 12, height: int = 8, min_zero: bool = True,
               datasource: DataSourceRef = DS) -> gts.Panel:
    """A time series panel: queries are (PromQL, legend) pairs, or (LogQL
    metric query, legend) pairs with datasource=LOKI."""
    panel = (gts.Panel().title(title).description(description).unit(unit).datasource(datasource)
             .span(width).height(height))
    if min_zero:
        panel = panel.min(0)
    return with_targets(panel, queries, datasource)


def stat(title: str, unit: str, queries: list[tuple[str, str]], *, description: str = "",
         width: int = 6, height: int = 4, calc: str = "lastNotNull") -> gstat.Panel:
    """A stat panel; calc is Grafana's reduction of each series over the
    time range (lastNotNull, mean, max, ...)."""
    panel = (gstat.Panel().title(title).description(description).unit(unit).datasource(DS).span(width)
             .height(height).reduce_options(gc.ReduceDataOptions().calcs([calc])))
    return with_targets(panel, queries)


def inside_selected_runs() -> str:
    """True at the instants t whose rate window (t - $__rate_interval, t]
    lies inside a selected k6 run: k6 pushed after t (the run had not ended
    at t) and at or before t - $__rate_interval (it had started by then).
    A stat panel's rates `and on()` this, reduced by mean, read the run's
    own window: no idle time from before or after it (issue 26)."""
    def pushed(offset: str) -> str:
        return f"sum(count_over_time(k6_vus{{{K6}}}[$__rate_interval] offset {offset})) > 0"

    return f"({pushed('-$__rate_interval')}) and on () ({pushed('$__rate_interval')})"


# Fields of Grafana's Prometheus, Loki and SQL annotation queries the SDK
# has no setter for.
ANNOTATION_FIELDS = {
    "change points": {"target": annotation_target(history_sql.CHANGE_POINTS)},
    "k6 runs": {"titleFormat": "k6 run {{testid}}", "tagKeys": "testid", "step": "5s"},
    "k6 phases": {"titleFormat": "phase {{scenario}}", "tagKeys": "testid,scenario", "step": "5s"},
    "YugabyteDB restarts": {"titleFormat": "{{service}} started", "tagKeys": "service"},
    "YugabyteDB leader changes": {"titleFormat": "leader change on {{service}}", "tagKeys": "service"},
    "ybbench events": {"titleFormat": "{{action}} {{service}}", "tagKeys": "testid,action,service"},
}

# Annotations drawn on some panels only, by panel title: Grafana's filter
# names panel ids, which exist once to_json numbers the panels.
THROUGHPUT_PANELS = ("Total YSQL ops/s by statement type", "k6 ops/s by operation")
ANNOTATION_PANELS = {
    "YugabyteDB restarts": THROUGHPUT_PANELS,
    "YugabyteDB leader changes": THROUGHPUT_PANELS,
    "ybbench events": THROUGHPUT_PANELS,
}


def to_json(board: gd.Dashboard) -> str:
    """The dashboard's JSON: stable panel ids, annotation fields and panel
    filters."""
    data = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    for i, panel in enumerate(data["panels"], start=1):
        panel["id"] = i
    for ann in data["annotations"]["list"]:
        ann.update(ANNOTATION_FIELDS.get(ann["name"], {}))
        if ann["name"] in ANNOTATION_PANELS:
            titles = ANNOTATION_PANELS[ann["name"]]
            ids = [p["id"] for p in data["panels"] if p["title"] in titles]
            if len(ids) != len(titles):
                raise ValueError(f"{data['title']}: annotation {ann['name']!r} needs the panels {titles}")
            ann["filter"] = {"exclude": False, "ids": ids}
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
