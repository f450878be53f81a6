"""PostgreSQL baseline (compose profile `pg`): the overview's panels from
postgres_exporter and node_exporter, next to k6's view of the same run."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd

from . import k6_panels
from .common import CLUSTER, dashboard, query_variable, timeseries

RATE = "$__rate_interval"
PG = f'job="postgres", {CLUSTER}, datname=~"$database"'


def _rate(metric: str) -> str:
    return f"sum by (datname) (rate({metric}{{{PG}}}[{RATE}]))"


def build() -> gd.Dashboard:
    database = query_variable("database", "Database",
                              f'label_values(pg_stat_database_xact_commit{{job="postgres", {CLUSTER}}}, datname)')
    return (
        dashboard("ybbench-postgres", "ybbench / PostgreSQL baseline",
                  "The benchmark overview for the PostgreSQL baseline: rows and transactions per second from "
                  "postgres_exporter (pg_stat_database), CPU per host, and k6's ops/s and latency for the run.",
                  extra_variables=(database,))
        .with_row(gd.Row("PostgreSQL (server side)"))
        .with_panel(timeseries("Rows/s by operation", "ops", [
            (_rate("pg_stat_database_tup_inserted"), "{{datname}} inserted"),
            (_rate("pg_stat_database_tup_fetched"), "{{datname}} fetched"),
            (_rate("pg_stat_database_tup_updated"), "{{datname}} updated"),
            (_rate("pg_stat_database_tup_deleted"), "{{datname}} deleted"),
        ], description="PostgreSQL counts rows, not statements: a single-row INSERT or point SELECT is one of "
                       "each, as in the YSQL overview."))
        .with_panel(timeseries("Transactions/s", "ops", [
            (_rate("pg_stat_database_xact_commit"), "{{datname}} commit"),
            (_rate("pg_stat_database_xact_rollback"), "{{datname}} rollback"),
        ]))
        .with_panel(timeseries("Buffer cache hit ratio", "percentunit", [
            (f"{_rate('pg_stat_database_blks_hit')} / ({_rate('pg_stat_database_blks_hit')} + "
             f"{_rate('pg_stat_database_blks_read')})", "{{datname}}"),
        ], description="Blocks found in shared buffers over blocks requested; NaN while idle."))
        .with_panel(timeseries("Connections", "short", [
            (f"sum by (datname) (pg_stat_database_numbackends{{{PG}}})", "{{datname}}"),
        ]))
        .with_panel(timeseries("Database size", "bytes", [
            (f"sum by (datname) (pg_database_size_bytes{{{PG}}})", "{{datname}}"),
        ]))
        .with_panel(timeseries("CPU busy per node", "percentunit", [
            (f"instance:ybbench_cpu_busy:ratio1m{{{CLUSTER}}}", "{{instance}}"),
        ]))
        .with_row(gd.Row("k6 (client side)"))
        .with_panel(k6_panels.ops_per_second())
        .with_panel(k6_panels.latency_percentiles())
    )
