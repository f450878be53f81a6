"""The History dashboard's SQL, on the history store's tables
(core/history_store.py) in PostgreSQL. Grafana expands its macros
($__unixEpochFilter: the dashboard's time range in epoch seconds) and the
$workload variable (quoted, comma separated) before PostgreSQL sees it.
JSON columns are text in the store: ::jsonb reads them. The table names
are the store's (dashboards stand alone, so not imported from it; the
History dashboard's test runs every query on a real store)."""

from __future__ import annotations

RUNS, OPS, CHANGES = "ybbench_history_runs", "ybbench_history_ops", "ybbench_history_change_points"

IN_RANGE = "$__unixEpochFilter(r.started_unix_s) AND r.workload IN (${workload:sqlstring})"
# A series is a workload and its knobs (the store's series_key) and an op.
SERIES = "r.workload || ' ' || o.op || ' ' || (r.series_key::jsonb -> 'knobs')::text"


def per_run(column: str) -> str:
    """One point per run (at its start) and op, of an op's figure."""
    return (f'SELECT to_timestamp(r.started_unix_s) AS "time", {SERIES} AS metric, o.{column} AS value\n'
            f"FROM {RUNS} r JOIN {OPS} o ON o.testid = r.testid\n"
            f"WHERE {IN_RANGE} AND o.{column} IS NOT NULL\nORDER BY 1, 2")


OPS_PER_S = per_run("ops_per_s")
P99_MS = per_run("p99_ms")

RUNS_TABLE = (
    'SELECT to_timestamp(r.started_unix_s) AS "started", r.testid, r.workload,\n'
    "  r.labels, r.knobs, r.versions, r.k6_exit_code, r.errors,\n"
    f"  (SELECT string_agg(o.op || ' ' || round(o.ops_per_s::numeric, 1) || ' ops/s, p99 '\n"
    f"     || round(o.p99_ms::numeric, 2) || ' ms', '; ' ORDER BY o.op) FROM {OPS} o WHERE o.testid = r.testid) AS ops\n"
    f"FROM {RUNS} r\nWHERE {IN_RANGE}\nORDER BY r.started_unix_s DESC, r.testid")

CHANGES_TABLE = (
    'SELECT to_timestamp(c.time_unix_s) AS "time", c.workload, c.op, c.field, c.testid AS first_run_after,\n'
    "  round(c.change_percent::numeric, 2) AS change_percent, c.pvalue, c.mean_before, c.mean_after,\n"
    "  c.regression = 1 AS regression, c.series\n"
    f"FROM {CHANGES} c JOIN {RUNS} r ON r.testid = c.testid\nWHERE {IN_RANGE}\nORDER BY c.time_unix_s DESC, c.metric")

# Grafana's SQL annotations: columns time, text and tags (comma separated).
CHANGE_POINTS = (
    'SELECT to_timestamp(c.time_unix_s) AS "time",\n'
    "  c.workload || ' ' || c.op || ' ' || CASE c.field WHEN 'ops_per_s' THEN 'ops/s' ELSE 'p99 ms' END\n"
    "    || ' ' || to_char(c.change_percent, 'FMSG990.0') || '% from run ' || c.testid\n"
    "    || ' (p ' || c.pvalue || CASE WHEN c.regression = 1 THEN ', worse' ELSE '' END || ')' AS text,\n"
    "  c.workload || ',' || c.metric AS tags\n"
    f"FROM {CHANGES} c JOIN {RUNS} r ON r.testid = c.testid\nWHERE {IN_RANGE}\nORDER BY 1")

WORKLOADS = f"SELECT DISTINCT workload FROM {RUNS} ORDER BY 1"
