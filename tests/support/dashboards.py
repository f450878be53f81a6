"""Reading the generated dashboards as Grafana would: every query of every
panel, variable and annotation, with Grafana's variables replaced by the
values a test chooses; and running the LogQL ones against a Loki."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from ybbench.dashboards import render
from ybbench.dashboards.sql import TYPE as SQL


@dataclass(frozen=True)
class Query:
    dashboard: str
    panel: str
    expr: str
    datasource: str = "prometheus"  # or "loki", or "grafana-postgresql-datasource" (expr: the raw SQL)
    label: str | None = None  # a label-values variable: the label, expr its stream selector

    def __str__(self) -> str:
        return f"{self.dashboard} / {self.panel}"


def boards() -> dict[str, dict]:
    return {name: json.loads(text) for name, text in render().items()}


def panels(board: dict) -> list[dict]:
    out = []
    for p in board["panels"]:
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def queries(board: dict) -> list[Query]:
    title = board["title"]
    out = [Query(title, p["title"], t["rawSql"] if t["datasource"]["type"] == SQL else t["expr"],
                 t["datasource"]["type"]) for p in panels(board) for t in p.get("targets", [])]
    out += [Query(title, f"annotation {a['name']}", a["target"]["rawSql"] if a["datasource"]["type"] == SQL
                  else a["expr"], a["datasource"]["type"]) for a in board["annotations"]["list"]]
    # SQL query variables: their query is the SQL.
    out += [Query(title, f"variable {v['name']}", v["query"], SQL)
            for v in board["templating"]["list"] if v.get("datasource", {}).get("type") == SQL]
    # Loki label-values variables (Grafana's Loki variable query, type 1).
    out += [Query(title, f"variable {v['name']}", v["query"]["stream"], "loki", v["query"]["label"])
            for v in board["templating"]["list"]
            if v.get("datasource", {}).get("type") == "loki" and v["query"].get("type") == 1]
    return out


def all_queries() -> list[Query]:
    return [q for b in boards().values() for q in queries(b)]


def sql_queries() -> list[Query]:
    return [q for q in all_queries() if q.datasource == SQL]


# The TPC-C panels read what only a tpcc run pushes: test_tpcc_run asks them
# about its own run, test_dashboards every other panel about its runs.
# Those of the statements style's retries and attempts only a statements run with retries pushes:
# test_tpcc_statements asks them about its serializable run.
TPCC_STATEMENTS_PANELS = ("TPC-C retries per transaction, by transaction", "TPC-C retried transactions/s by retries",
                          "TPC-C final and failed attempt p99 by transaction")
TPCC_PANELS = ("tpmC: New-Orders committed per minute", "TPC-C rollbacks/s by transaction", *TPCC_STATEMENTS_PANELS)


def promql_queries(tpcc: bool = False, statements: bool = False) -> list[Query]:
    """The Prometheus queries of every panel, but the TPC-C ones; only those with tpcc (but the
    statements style's retry panels; only those with statements too)."""
    return [q for q in all_queries() if q.datasource == "prometheus" and (q.panel in TPCC_PANELS) == tpcc
            and (not tpcc or (q.panel in TPCC_STATEMENTS_PANELS) == statements)]


def logql_queries() -> list[Query]:
    return [q for q in all_queries() if q.datasource == "loki"]


_VAR = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")


def fill(expr: str, values: dict[str, str]) -> str:
    """Replace $var and ${var}; a variable without a value is an error, so a
    new variable cannot slip through untested."""
    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        if name not in values:
            raise KeyError(f"no test value for ${name} in {expr}")
        return values[name]
    return _VAR.sub(sub, expr)


def run_logql(loki_url: str, query: Query, values: dict[str, str], start: float, end: float,
              step: str = "5s") -> list:
    """What Loki answers for the query as Grafana would send it: streams or
    series for a panel or annotation, label values for a variable. Raises
    on a query Loki refuses."""
    expr = fill(query.expr, values)
    if query.label:
        path = f"label/{query.label}/values"
        params = {"query": expr, "start": int(start * 1e9), "end": int(end * 1e9)}
    else:
        path = "query_range"
        params = {"query": expr, "start": int(start * 1e9), "end": int(end * 1e9), "step": step, "limit": 100}
    url = f"{loki_url.rstrip('/')}/loki/api/v1/{path}?{urllib.parse.urlencode(params)}"
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            body = json.load(r)
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"Loki refused {expr}: {e.read().decode(errors='replace').strip()}") from None
    if body.get("status") != "success":
        raise RuntimeError(f"Loki answered {body} to {expr}")
    if query.label:
        return body.get("data") or []  # Loki leaves data out when no stream has the label
    return body["data"]["result"]


def logql_failures(loki_url: str, values: dict[str, str], start: float | None = None,
                   end: float | None = None) -> list[str]:
    """Every LogQL query of every dashboard (panels, annotations, Loki
    variables) against the Loki at loki_url, with Grafana's variables
    replaced by `values` (testid, service, __interval, ...); the queries
    that fail or return nothing, one line each. Default window: the last
    hour."""
    end = time.time() if end is None else end
    start = end - 3600 if start is None else start
    failures = []
    for query in logql_queries():
        try:
            if not run_logql(loki_url, query, values, start, end):
                failures.append(f"{query}: no data for {fill(query.expr, values)}")
        except (KeyError, RuntimeError, OSError) as e:
            failures.append(f"{query}: {e}")
    return failures

