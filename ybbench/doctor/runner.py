"""Run every group of checks in order, show the table, write doctor.json.
Exit 0 when nothing fails, 1 when a check fails (bad input is a UserError: 2)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ybbench.core import formats
from ybbench.doctor import grafana, history, k6, loki, prometheus, queries, room, ysql
from ybbench.doctor.check import FAIL, OK, SKIPPED, WARN, Check
from ybbench.doctor.settings import Settings

FORMAT_VERSION = 1
STYLE = {OK: "green", WARN: "yellow", FAIL: "bold red", SKIPPED: "dim"}


def run_checks(s: Settings, report_exprs: list[str] = ()) -> list[Check]:
    """Every check, in the order a user fixes them: the database, Prometheus,
    what the dashboards and report read, k6, Loki, Grafana, the History
    dashboard's queries on the history store, room."""
    out, nodes = ysql.checks(s)
    # YugabyteDB's checks run where YSQL says -YB- or Prometheus scrapes YugabyteDB's servers.
    yb_ysql = any(n.kind == "yugabytedb" for n in nodes)
    got, prom = prometheus.checks(s.prometheus, yb_ysql)
    yb = yb_ysql or (prom is not None and prometheus.has_yb_targets(prom))
    out += got
    out += queries.checks(prom, yb, list(report_exprs))
    out += k6.checks(s.k6)
    out += loki.checks(s, nodes)
    out += grafana.checks(s)
    out += history.checks(s.history)
    out += room.checks(prom, s.compose_env)
    return out


def document(s: Settings, checks: list[Check], started: float) -> dict:
    counts = {st: sum(c.status == st for c in checks) for st in (OK, WARN, FAIL, SKIPPED)}
    return {
        "format_version": FORMAT_VERSION,
        "started_unix_s": started,
        "finished_unix_s": time.time(),
        "ok": counts[FAIL] == 0,
        "counts": counts,
        "settings": {"ysql_nodes": [f"{h}:{p}" for h, p in s.nodes], "user": s.user, "database": s.database,
                     "prometheus": s.prometheus, "loki": s.loki, "grafana": s.grafana, "k6": s.k6},
        "checks": [c.as_dict() for c in checks],
    }


def show(checks: list[Check], file=None) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(show_lines=False, expand=False)
    for col in ("status", "check", "expected", "found", "what to do"):
        table.add_column(col, overflow="fold")
    for c in checks:
        table.add_row(f"[{STYLE[c.status]}]{c.status}[/]", c.name, c.expected, c.found, c.todo)
    Console(file=file or sys.stdout, width=200 if file is None and not sys.stdout.isatty() else None).print(table)


def run(s: Settings, out: Path, report_exprs: list[str] = (), quiet: bool = False) -> tuple[int, dict]:
    started = time.time()
    checks = run_checks(s, report_exprs)
    doc = document(s, checks, started)
    formats.write(out, "doctor", doc)
    if not quiet:
        show(checks)
        c = doc["counts"]
        print(f"{c[OK]} ok, {c[WARN]} warn, {c[FAIL]} fail, {c[SKIPPED]} skipped; {out}")
    return (0 if doc["ok"] else 1), doc


class Refused(Exception):
    """`ybbench run --doctor`: a check failed, so the run did not start."""


def before_run(s: Settings, report_exprs: list[str], quiet: bool = False):
    """run --doctor's step before k6 starts: the checks, their verdict kept
    as doctor.json in the run's (staged) folder; Refused naming the failing
    checks, which takes the staged folder away with it (core/files.py)."""
    def check(stage: Path) -> None:
        code, doc = run(s, stage / "doctor.json", report_exprs, quiet=quiet)
        if code != 0:
            failed = [c for c in doc["checks"] if c["status"] == FAIL]
            raise Refused("; ".join(f"{c['name']}: {c['found']}" + (f" ({c['todo']})" if c["todo"] else "")
                                    for c in failed))
    return check
