"""Every dashboard query and every report query reads series that exist on
this cluster: each PromQL expression, its Grafana variables filled as wide
as they go, parsed by Prometheus itself (/api/v1/parse_query) into its
series selectors (a recording rule's name expanded into its rule's, as
Prometheus serves them), and each selector looked up (/api/v1/series). The
metrics that are absent are listed by name: a metric renamed by a new
YugabyteDB version is caught here, panel by panel."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field

from ybbench.core.catalog import REPO
from ybbench.core import visibility
from ybbench.doctor.check import NOT_YB, Check, Unreachable, fail, ok, skipped
from ybbench.doctor.prometheus import Prom

DASHBOARDS = REPO / "grafana" / "dashboards"
# A variable's value where it selects: a placeholder whose matchers are
# dropped, so the selector is as wide as Grafana's "All".
PLACEHOLDER = "ybbenchdoctorvar"
FIXED = {"__rate_interval": "1m", "__interval": "1m", "__range_s": "60", "shift": "0"}
_VAR = re.compile(r"\$\{(\w+)(?::[\w-]+)?\}|\$(\w+)|\[\[(\w+)\]\]")
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*?)(?:,\s*\w+)?\)\s*$", re.S)
_QUERY_RESULT = re.compile(r"^\s*query_result\((.*)\)\s*$", re.S)
# Series that must be there now (scraped) are looked up over this window;
# k6's come only with runs: over this longer one.
RECENT_S = 600
K6_WINDOW_S = 30 * 86400
# k6 series that exist only once what they count happens (k6-scripts/lib/metrics.js,
# k6's dropped_iterations): absent on a clean run, so not seen yet is no fault. tpcc's
# attempts exist only after a run in the statements style, their failures and retries
# only once one is retried.
K6_EVENTS = {"k6_ybbench_errors_total", "k6_ybbench_retries_total", "k6_ybbench_keys_missing_total",
             "k6_ybbench_rollbacks_total", "k6_dropped_iterations_total", "k6_ybbench_tpcc_attempt_seconds",
             "k6_ybbench_tpcc_failed_attempt_seconds", "k6_ybbench_tpcc_retried_total"}
# A k6 series of some ops (the tpmC panel's op="new_order", TPC-C's five by
# op=~"new_order|payment|...") exists once a workload with those ops has run:
# tpcc's only after a tpcc run.
_ONE_OP = re.compile(r'(^|[{,] ?)op=~?"\w')  # op="x" or op=~"x|y", not op=~".+"


def not_yet(metric: str, sel: str) -> bool:
    """A k6 series that a healthy stack may not have yet: an event counter,
    or one op's series."""
    return metric in K6_EVENTS or (kind_of(metric) == "k6" and bool(_ONE_OP.search(sel)))


@dataclass
class Reader:
    """The PromQL of one dashboard (or of the report), by where it is shown."""
    name: str
    exprs: list[tuple[str, str]] = field(default_factory=list)  # (panel title, PromQL)


def fill(expr: str) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2) or m.group(3)
        return FIXED.get(name, PLACEHOLDER)
    return _VAR.sub(sub, expr)


def _walk_panels(panels: list[dict]):
    for p in panels:
        yield p
        yield from _walk_panels(p.get("panels", []))


def dashboard_readers() -> list[Reader]:
    out = []
    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text())
        r = Reader(f"dashboard {board.get('uid', path.stem)}")
        for p in _walk_panels(board.get("panels", [])):
            r.exprs += [(p.get("title", "?"), t["expr"]) for t in p.get("targets", [])
                        if (t.get("datasource") or {}).get("type") == "prometheus" and t.get("expr")]
        r.exprs += [(f"annotation {a['name']}", a["expr"]) for a in board.get("annotations", {}).get("list", [])
                    if (a.get("datasource") or {}).get("type") == "prometheus" and a.get("expr")]
        for v in board.get("templating", {}).get("list", []):
            q = v.get("query")
            text = q.get("query") if isinstance(q, dict) else q
            if v.get("type") != "query" or (v.get("datasource") or {}).get("type", "prometheus") != "prometheus" \
                    or not isinstance(text, str):
                continue
            m = _LABEL_VALUES.match(text) or _QUERY_RESULT.match(text)
            if m and m.group(1).strip():
                r.exprs.append((f"variable {v['name']}", m.group(1)))
        if r.exprs:  # a board on another datasource (History: the history store) reads nothing of Prometheus
            out.append(r)
    return out


def kind_of(metric: str) -> str:
    """Which source serves a metric, by its name."""
    for prefix, kind in (("k6_", "k6"), ("node_", "node"), ("pg_", "postgres"), ("prometheus_", "prometheus"),
                         ("scrape_", "prometheus")):
        if metric.startswith(prefix):
            return kind
    return "prometheus" if metric in ("up", "") else "yugabytedb"


class Lookup:
    """Selectors looked up once for all readers; rules from Prometheus."""

    def __init__(self, prom: Prom):
        self.prom = prom
        self.rules = {r["name"]: r["query"] for g in prom.api("rules", type="record")["groups"] for r in g["rules"]}
        self.parsed: dict[str, list[str]] = {}
        self.present: dict[str, bool] = {}
        self.now = time.time()

    def selectors(self, expr: str) -> list[tuple[str, str]]:
        """(metric name, selector) of every series expr reads, rules expanded."""
        out = []

        def walk(node):
            if isinstance(node, list):
                for n in node:
                    walk(n)
            elif isinstance(node, dict):
                if "matchers" in node and isinstance(node["matchers"], list):
                    kept = [m for m in node["matchers"] if PLACEHOLDER not in m["value"]]
                    if not kept:
                        return
                    name = node.get("name") or next((m["value"] for m in kept if m["name"] == "__name__"), "")
                    sel = "{" + ", ".join(f"{m['name']}{m['type']}{json.dumps(m['value'])}" for m in kept) + "}"
                    if name in self.rules and not self.is_present(name, sel):
                        out.extend(self.selectors(self.rules[name]))  # which of its inputs is absent
                    else:
                        out.append((name, sel))
                else:
                    for n in node.values():
                        walk(n)

        walk(self.prom.api("parse_query", query=expr))
        return out

    def is_present(self, name: str, selector: str) -> bool:
        if selector not in self.present:
            window = K6_WINDOW_S if kind_of(name) == "k6" else RECENT_S
            # No end: a whole-second `end` of now left out a series whose
            # only sample was scraped in the last half second (a Prometheus
            # just started, its first scrape), and called it absent.
            got = self.prom.api("series", **{"match[]": selector, "start": f"{self.now - window:.3f}",
                                             "limit": "1"})
            self.present[selector] = bool(got)
        return self.present[selector]


def check_reader(lookup: Lookup, r: Reader, skip: dict[str, str]) -> Check:
    """One check per dashboard (or the report): every selector it reads present."""
    name = f"queries {r.name}"
    expected = "every series its queries read present (the dashboards' variables as wide as they go)"
    absent: dict[str, list[str]] = {}  # metric -> panels
    unseen: set[str] = set()  # not_yet(): not counted or run yet
    skipped_kinds: set[str] = set()
    read = 0
    for where, expr in r.exprs:
        try:
            sels = lookup.selectors(fill(expr))
        except Unreachable as e:
            return fail(name, expected, f"{where}: {e}", "a query Prometheus cannot parse: regenerate the "
                        "dashboards (python3 -m ybbench.dashboards) with this Prometheus version")
        for metric, sel in sels:
            kind = kind_of(metric)
            if kind in skip:
                skipped_kinds.add(kind)
                continue
            read += 1
            if not lookup.is_present(metric, sel) and not_yet(metric, sel):
                unseen.add(sel if _ONE_OP.search(sel) else metric)
            elif not lookup.is_present(metric, sel):
                absent.setdefault(f"{metric or sel} ({sel})" if metric else sel, []).append(where)
    skips = "; ".join([f"{k} series not checked: {skip[k]}" for k in sorted(skipped_kinds)]
                      + ([f"not counted yet (k6 counts them when they happen, an op's once a workload runs it): "
                          f"{', '.join(sorted(unseen))}"]
                         if unseen else []))
    if absent:
        listed = "; ".join(f"{m} read by {', '.join(sorted(set(w)))}" for m, w in sorted(absent.items()))
        return fail(name, expected, f"absent: {listed}" + (f" ({skips})" if skips else ""),
                    "a metric renamed or not exported by this version: the panels that read it stay empty; "
                    "check the server's /prometheus-metrics for its new name, and its target is up")
    if not read:
        return skipped(name, skips or "reads no series", expected)
    return ok(name, expected, f"{read} selectors present" + (f" ({skips})" if skips else ""))


def checks(prom: Prom | None, yugabytedb: bool, report_exprs: list[str]) -> list[Check]:
    readers = dashboard_readers()
    readers.append(Reader("report", [("report", e) for e in report_exprs]))
    if prom is None:
        return [skipped(f"queries {r.name}", "Prometheus not reachable or not given") for r in readers]
    try:
        lookup = Lookup(prom)
        skip = {}
        if not yugabytedb:
            skip["yugabytedb"] = NOT_YB
        skip.update({k: v for k, v in visibility.hidden().items() if k in ("yugabytedb", "node")})
        if not prom.api("series", **{"match[]": '{job="postgres"}', "start": f"{lookup.now - RECENT_S:.0f}",
                                     "limit": "1"}):
            skip["postgres"] = "no postgres target scraped (compose profile pg)"
        if not prom.api("label/__name__/values", **{"match[]": '{__name__=~"k6_.+"}',
                                                    "start": f"{lookup.now - K6_WINDOW_S:.0f}"}):
            skip["k6"] = "no k6 run has written to this Prometheus yet (ybbench run --prometheus writes them)"
    except Unreachable as e:
        return [fail("queries", "Prometheus' API answers", str(e), "check the Prometheus URL")]
    return [check_reader(lookup, r, skip) for r in readers]
