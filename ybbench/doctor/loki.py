"""Loki: every service's logs arrive with a `level`, and YSQL's own log is
among them: a statement that fails on purpose (a table that does not
exist, named uniquely) must show its ERROR line in Loki, with level
"error", within a deadline (unless YBBENCH_CLUSTER_LOGS=elsewhere says the
cluster's log goes elsewhere: compose's external mode). Nothing is written
to Loki."""

from __future__ import annotations

import time
import uuid

from ybbench.core import visibility
from ybbench.doctor.check import Check, Unreachable, fail, get_json, ok, skipped
from ybbench.doctor.settings import Settings
from ybbench.doctor.ysql import Node, connect

WINDOW_S = 3600
TO_FILES = ("YSQL's log does not reach Loki: a yb-tserver without --logtostderr writes YSQL's log to files "
            "under its log dir, which the log shipper does not read; start it with --logtostderr (compose "
            "does), or ship those files")


def _series(loki: str, selector: str, start: float, end: float) -> list[dict]:
    body = get_json(loki, "/loki/api/v1/series", {"match[]": selector, "start": f"{int(start * 1e9)}",
                                                  "end": f"{int(end * 1e9)}"})
    return body.get("data") or []


# Compose services whose lines have no severity to label, on any stack: the
# ybbench CLI's own output (tables, progress, k6's summary) and the one-shot
# script that writes the stack's passwords.
NO_SEVERITY = {"ybbench": "the ybbench CLI's output (tables, progress): no severity to label",
               "secrets": "the one-shot script that writes the stack's passwords: no severity to label"}


def levels(loki: str) -> list[Check]:
    """Per service seen in the last hour: some of its streams carry a level."""
    now = time.time()
    streams = _series(loki, '{service=~".+"}', now - WINDOW_S, now)
    by_service: dict[str, set[str]] = {}
    for labels in streams:
        by_service.setdefault(labels["service"], set()).add(labels.get("level", ""))
    if not by_service:
        return [fail("loki services", "log lines labelled by service in the last hour",
                     "no stream with a service label", "start the log shipper (compose: promtail); "
                     "its pipeline labels each line with its service and level")]
    out = []
    for service, found in sorted(by_service.items()):
        name = f"loki level {service}"
        expected = "lines with a level label (debug, info, warn, error, fatal)"
        have = sorted(lv for lv in found if lv)
        if have:
            out.append(ok(name, expected, f"levels {', '.join(have)}"))
        elif service in NO_SEVERITY:
            out.append(skipped(name, NO_SEVERITY[service], expected))
        else:
            out.append(fail(name, expected, "its lines carry no level label",
                            "the log shipper's pipeline sets level (compose/promtail/promtail.yml); use it"))
    return out


def ysql_error(s: Settings, loki: str, nodes: list[Node]) -> Check:
    name = "loki ysql error line"
    expected = f"a failing statement's ERROR line in Loki with level=error within {s.loki_deadline_s:g} s"
    hidden = visibility.hidden().get("logs")
    if hidden:
        return skipped(name, hidden + " (compose's external mode; set it to `loki` if your cluster's shipper pushes "
                       "here)", expected)
    node = next((n for n in nodes if n.kind), None)
    if node is None:
        return skipped(name, "no YSQL node answered", expected)
    marker = f"ybbench_doctor_missing_{uuid.uuid4().hex[:12]}"
    host, _, port = node.address.rpartition(":")
    try:
        conn = connect(s, host, int(port))
    except Exception as e:  # noqa: BLE001 - the YSQL checks say more
        return skipped(name, f"{node.address} did not answer: {str(e).strip().splitlines()[0]}", expected)
    started = time.time()
    try:
        with conn:
            conn.execute(f"SELECT * FROM {marker}")
        return fail(name, expected, f"SELECT * FROM {marker} did not fail", "check the database")
    except Exception as e:  # noqa: BLE001 - the failure is the point: relation does not exist
        if marker not in str(e):
            return fail(name, expected, f"the statement failed otherwise: {str(e).strip().splitlines()[0]}",
                        "check the YSQL connection")
    query = f'{{service=~".+"}} |= "{marker}"'
    deadline = started + s.loki_deadline_s
    while True:
        body = get_json(loki, "/loki/api/v1/query_range", {"query": query, "start": f"{int((started - 5) * 1e9)}",
                                                           "end": f"{int((time.time() + 5) * 1e9)}", "limit": "20"})
        streams = body.get("data", {}).get("result", [])
        error = [st["stream"] for st in streams if st["stream"].get("level") == "error"]
        if error:
            return ok(name, expected, f"on {error[0].get('service')} after {time.time() - started:.1f} s")
        if time.time() > deadline:
            break
        time.sleep(1)
    if streams:
        got = ", ".join(f"{st['stream'].get('service')} level={st['stream'].get('level', 'none')}" for st in streams)
        return fail(name, expected, f"the line arrived without level=error: {got}",
                    "the log shipper's pipeline sets level from PostgreSQL's SEVERITY (compose/promtail/promtail.yml)")
    return fail(name, expected, f"no line with {marker} after {s.loki_deadline_s:g} s (statement on {node.address})",
                TO_FILES)


def checks(s: Settings, nodes: list[Node]) -> list[Check]:
    if not s.loki:
        return [skipped("loki reachable", "no --loki given (nor YBBENCH_LOKI)")]
    try:
        get_json(s.loki, "/loki/api/v1/labels")
    except Unreachable as e:
        return [fail("loki reachable", f"Loki answers at {s.loki}", str(e),
                     "start Loki (compose: docker compose up -d loki) or pass --loki URL (or set YBBENCH_LOKI)")]
    out = [ok("loki reachable", f"Loki answers at {s.loki}", "answers")]
    try:
        out += levels(s.loki)
        out.append(ysql_error(s, s.loki, nodes))
    except Unreachable as e:
        out.append(fail("loki api", "Loki's API answers", str(e), "check the Loki URL"))
    return out
