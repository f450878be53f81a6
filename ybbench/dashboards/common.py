"""What every ybbench dashboard shares: the datasource, cluster and testid
variables, run annotations, and panel helpers that set units, the
datasource variable and reference ids, so no panel can forget them."""

from __future__ import annotations

import json
import string

from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.builders import prometheus as gp
from grafana_foundation_sdk.builders import stat as gstat
from grafana_foundation_sdk.builders import timeseries as gts
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import (
    DataSourceRef,
    DashboardCursorSync,
    VariableOption,
    VariableRefresh,
    VariableSort,
)

# Every panel, target, variable and annotation names the datasource through
# this variable; compose provisions uid ybbench-prometheus as the default.
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
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


def dashboard(uid: str, title: str, description: str, extra_variables: tuple = ()) -> gd.Dashboard:
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
        .with_variable(query_variable("cluster", "Cluster (node_prefix)", "label_values(up, node_prefix)"))
        .with_variable(query_variable("testid", "k6 run (testid)", "label_values(k6_vus, testid)"))
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


def _targets(panel, queries: list[tuple[str, str]]):
    for ref, (expr, legend) in zip(string.ascii_uppercase, queries):
        panel = panel.with_target(gp.Dataquery().expr(expr).legend_format(legend).ref_id(ref).datasource(DS))
    return panel


def timeseries(title: str, unit: str, queries: list[tuple[str, str]], *, description: str = "",
               width: int = 12, height: int = 8, min_zero: bool = True) -> gts.Panel:
    """A time series panel: queries are (PromQL, legend) pairs."""
    panel = gts.Panel().title(title).description(description).unit(unit).datasource(DS).span(width).height(height)
    if min_zero:
        panel = panel.min(0)
    return _targets(panel, queries)


def stat(title: str, unit: str, queries: list[tuple[str, str]], *, description: str = "",
         width: int = 6, height: int = 4) -> gstat.Panel:
    panel = gstat.Panel().title(title).description(description).unit(unit).datasource(DS).span(width).height(height)
    return _targets(panel, queries)


# Fields of Grafana's Prometheus annotation queries the SDK has no setter for.
ANNOTATION_FIELDS = {
    "k6 runs": {"titleFormat": "k6 run {{testid}}", "tagKeys": "testid", "step": "5s"},
    "k6 phases": {"titleFormat": "phase {{scenario}}", "tagKeys": "testid,scenario", "step": "5s"},
}


def to_json(board: gd.Dashboard) -> str:
    """The dashboard's JSON: stable panel ids, Prometheus annotation fields."""
    data = json.loads(json.dumps(board.build(), cls=JSONEncoder))
    for i, panel in enumerate(data["panels"], start=1):
        panel["id"] = i
    for ann in data["annotations"]["list"]:
        ann.update(ANNOTATION_FIELDS.get(ann["name"], {}))
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
