"""Doctor's expansion of the History dashboard's raw SQL against Grafana's
own text: each expected string is written here from grafana/grafana
pkg/tsdb/grafana-postgresql-datasource/macros.go (its fmt.Sprintf formats,
Go's Unix() and RFC3339Nano) and Grafana's sqlstring variable format, not
from the code under test."""

from __future__ import annotations

import re

import pytest

from ybbench.doctor.grafana_sql import Unexpanded, expand

WHERE = "WHERE $__unixEpochFilter(r.started_unix_s) AND r.workload IN (${workload:sqlstring})"


def test_the_history_filter_as_postgresql_receives_it():
    # Unix() drops the fraction: 1800000000.7 -> 1800000000.
    got = expand(WHERE, {"workload": ["sql-selects", "sql-inserts"]}, 1_800_000_000.7, 1_800_000_600.2)
    assert got == ("WHERE r.started_unix_s >= 1800000000 AND r.started_unix_s <= 1800000600 "
                   "AND r.workload IN ('sql-selects','sql-inserts')")


def test_sqlstring_doubles_a_quote_and_an_empty_value_stays_quoted():
    assert expand("IN (${w:sqlstring})", {"w": ["o'neil"]}, 0, 1) == "IN ('o''neil')"
    assert expand("IN (${w:sqlstring})", {"w": [""]}, 0, 1) == "IN ('')"


def test_time_macros_in_rfc3339nano_and_arguments_trimmed_of_spaces():
    assert expand("$__timeFilter( t )", {}, 0.5, 86400) == \
        "t BETWEEN '1970-01-01T00:00:00.5Z' AND '1970-01-02T00:00:00Z'"
    assert expand("$__timeFrom() $__timeTo()", {}, 86400.25, 86401) == \
        "'1970-01-02T00:00:00.25Z' '1970-01-02T00:00:01Z'"
    assert expand("$__unixEpochFilter(  c  )", {}, 3, 4) == "c >= 3 AND c <= 4"


def test_a_single_value_variable_is_its_raw_value():
    assert expand("LIMIT $n", {"n": ["5"]}, 0, 1) == "LIMIT 5"
    assert expand("LIMIT ${n}", {"n": ["5"]}, 0, 1) == "LIMIT 5"


@pytest.mark.parametrize(("sql", "values", "named"), [
    ("$__timeGroup(t, '5m')", {}, "macro $__timeGroup"),
    ("IN (${env:sqlstring})", {}, "variable $env"),
    ("IN ($w)", {"w": ["a", "b"]}, "${w} with 2 values"),
    ("IN (${w:csv})", {"w": ["a"]}, "${w:csv}"),
])
def test_what_is_not_expanded_here_is_an_error_naming_it(sql, values, named):
    with pytest.raises(Unexpanded, match=re.escape(named)):
        expand(sql, values, 0, 1)
