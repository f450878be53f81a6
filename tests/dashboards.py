"""Reading the generated dashboards as Grafana would: every query of every
panel, variable and annotation, with Grafana's variables replaced by the
values a test chooses."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ybbench.dashboards import render


@dataclass(frozen=True)
class Query:
    dashboard: str
    panel: str
    expr: str

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
    out = [Query(title, p["title"], t["expr"]) for p in panels(board) for t in p.get("targets", [])]
    out += [Query(title, f"annotation {a['name']}", a["expr"]) for a in board["annotations"]["list"]]
    return out


def all_queries() -> list[Query]:
    return [q for b in boards().values() for q in queries(b)]


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
