"""The SQL PostgreSQL receives from Grafana for a raw-SQL panel: the
dashboard's variables replaced first (in the browser; ${var:sqlstring}
quotes each value, '' for ', comma separated), then the $__macro(args) of
Grafana's PostgreSQL datasource expanded on its server (grafana/grafana
pkg/tsdb/grafana-postgresql-datasource/macros.go: the regex below, the
arguments split on commas and trimmed; read upstream 2026-11). Doctor runs
the History dashboard's queries so, and its test runs them so. A macro or
variable not expanded here is an error naming it, not SQL sent half-done."""

from __future__ import annotations

import re
from datetime import datetime, timezone

_MACRO = re.compile(r"\$([_a-zA-Z0-9]+)\(([^\)]*)\)")
# $name or ${name} or ${name:format}; a $name followed by "(" is a macro, left for _MACRO.
_VAR = re.compile(r"\$\{(\w+)(?::(\w+))?\}|\$(\w+)\b(?!\()")


class Unexpanded(ValueError):
    """A macro or variable this module does not expand (Grafana's server or browser would)."""


def sqlstring(values: list[str]) -> str:
    """A multi-value variable as ${var:sqlstring}: each value quoted, '' for '."""
    return ",".join("'" + v.replace("'", "''") + "'" for v in values)


def rfc3339nano(t: float) -> str:
    """Go's time.RFC3339Nano of a UTC time: fraction without trailing zeros, Z."""
    whole = datetime.fromtimestamp(int(t), timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    nanos = round((t - int(t)) * 1e9)
    return whole + (f".{nanos:09d}".rstrip("0") if nanos else "") + "Z"


def variables(sql: str, values: dict[str, list[str]]) -> str:
    """Each variable by its values: ${v:sqlstring} as sqlstring(), $v or ${v}
    as its one value (a raw value, as Grafana leaves a single one)."""
    def sub(m: re.Match) -> str:
        name, fmt = m.group(1) or m.group(3), m.group(2)
        if name not in values:
            raise Unexpanded(f"variable ${name} has no value here")
        if fmt == "sqlstring":
            return sqlstring(values[name])
        if fmt is None and len(values[name]) == 1:
            return values[name][0]
        raise Unexpanded(f"variable ${{{name}{':' + fmt if fmt else ''}}} with {len(values[name])} values: "
                         "only ${name:sqlstring} is expanded here")
    return _VAR.sub(sub, sql)


def macros(sql: str, start: float, end: float) -> str:
    """Grafana's time macros for the range [start, end] (unix seconds)."""
    def sub(m: re.Match) -> str:
        name, args = m.group(1), [a.strip(" ") for a in m.group(2).split(",")]  # Go: strings.Trim(arg, " ")
        if name == "__unixEpochFilter":
            return f"{args[0]} >= {int(start)} AND {args[0]} <= {int(end)}"
        if name == "__timeFilter":
            return f"{args[0]} BETWEEN '{rfc3339nano(start)}' AND '{rfc3339nano(end)}'"
        if name in ("__timeFrom", "__timeTo"):
            return f"'{rfc3339nano(start if name == '__timeFrom' else end)}'"
        raise Unexpanded(f"macro ${name} is not expanded here (add it as Grafana's macros.go has it)")
    return _MACRO.sub(sub, sql)


def expand(sql: str, values: dict[str, list[str]], start: float, end: float) -> str:
    """The raw SQL as PostgreSQL receives it for the range [start, end]."""
    return macros(variables(sql, values), start, end)
