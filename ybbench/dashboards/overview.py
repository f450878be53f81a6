"""Benchmark overview (seed 000): YSQL ops/s by statement type, latency and
CPU per node from the servers, next to k6's view of the same run; the
servers' errors and warnings from Loki, and their restarts and leader
changes marked on the throughput charts."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd

from . import k6_panels, log_panels
from .common import CLUSTER, K6, YSQL, dashboard, inside_selected_runs, stat, timeseries
from .k6_panels import STATEMENTS

RUN_STAT = ("The mean over the instants whose rate window lies inside a selected k6 run (k6 pushed after the "
            "instant and before the window began), so no idle time from before or after a run is mixed in; "
            "empty for a run shorter than two rate windows.")


def build() -> gd.Dashboard:
    c = f"{{{CLUSTER}}}"
    inside = inside_selected_runs()
    board = dashboard("ybbench-overview", "ybbench / Benchmark overview",
                      "Seed 000's charts: total YSQL ops/sec by statement type, average and per-node latency, CPU "
                      "per node, side by side with k6's client-side ops/sec and latency for the selected run.",
                      logs=True)
    for annotation in log_panels.annotations():
        board = board.annotation(annotation)
    return (
        board
        .with_row(gd.Row("At a glance: the selected runs"))
        .with_panel(stat("YSQL ops/s (cluster, selected runs)", "ops", [
            (f"sum(rate(rpc_latency_count{{{YSQL}}}[$__rate_interval])) and on () {inside}", "YSQL"),
        ], calc="mean", description=RUN_STAT))
        .with_panel(stat("k6 ops/s (client, selected runs)", "ops", [
            (f"sum(rate(k6_iterations_total{{{K6}, {STATEMENTS}}}[$__rate_interval])) and on () {inside}", "k6"),
        ], calc="mean", description=RUN_STAT))
        .with_panel(stat("Average CPU busy (selected runs)", "percentunit", [
            (f'avg(1 - avg by (instance) (rate(node_cpu_seconds_total{{mode="idle", {CLUSTER}}}[$__rate_interval])))'
             f" and on () {inside}", "CPU"),
        ], calc="mean", description=RUN_STAT + " Each host's busy fraction averaged over its CPUs, then over hosts."))
        .with_panel(stat("k6 VUs (selected runs, most)", "short", [
            (f"sum(k6_vus{{{K6}}}) and on () {inside}", "VUs"),
        ], calc="max", description=RUN_STAT))
        .with_row(gd.Row("Throughput: server (YSQL) and client (k6)"))
        .with_panel(timeseries("Total YSQL ops/s by statement type", "ops", [
            (f"sum by (service_method) (cluster:ybbench_ysql_ops:rate1m{c})", "{{service_method}}"),
        ], description="Statements executed by the YSQL layer of every tserver (rpc_latency_count, "
                       "server_type yb_ysqlserver, service_type SQLProcessor), 1m rate."))
        .with_panel(k6_panels.ops_per_second())
        .with_row(gd.Row("Latency: server (YSQL) and client (k6)"))
        .with_panel(timeseries("Average YSQL latency by statement type", "µs", [
            (f"max by (service_method) (cluster:ybbench_ysql_latency_us:avg1m{c})", "{{service_method}}"),
        ], description="rpc_latency_sum / rpc_latency_count over the cluster, in µs, 1m window; gaps while a "
                       "statement type sees no traffic."))
        .with_panel(k6_panels.latency_percentiles())
        .with_row(gd.Row("Per node"))
        .with_panel(timeseries("CPU busy per node", "percentunit", [
            (f"instance:ybbench_cpu_busy:ratio1m{c}", "{{instance}}"),
            (f"avg(instance:ybbench_cpu_busy:ratio1m{c})", "average"),
        ], description="1 - idle, from node_exporter, averaged over each host's CPUs."))
        .with_panel(timeseries("YSQL ops/s per node", "ops", [
            (f"sum by (exported_instance) (node:ybbench_ysql_ops:rate1m{c})", "{{exported_instance}}"),
        ]))
        .with_panel(timeseries("YSQL latency per node", "µs", [
            (f"sum by (exported_instance) (node:ybbench_ysql_latency_sum_us:rate1m{c})"
             f" / sum by (exported_instance) (node:ybbench_ysql_ops:rate1m{c})", "{{exported_instance}}"),
        ], description="All statement types, weighted by their counts."))
        .with_panel(timeseries("TServer Read/Write RPCs per node", "ops", [
            (f"node:ybbench_tserver_rpcs:rate1m{c}", "{{exported_instance}} {{service_method}}"),
        ], description="TabletServerService Read and Write: what YSQL statements turn into at the storage layer."))
        .with_panel(timeseries("TServer Read/Write latency per node", "µs", [
            (f"node:ybbench_tserver_rpc_latency_us:avg1m{c}", "{{exported_instance}} {{service_method}}"),
        ]))
        .with_panel(k6_panels.errors_by_class())
        .with_row(gd.Row("Logs (Loki)"))
        .with_panel(log_panels.problems_by_service(services=log_panels.EVERY_SERVICE))
        .with_panel(log_panels.problem_lines(services=log_panels.EVERY_SERVICE))
    )
