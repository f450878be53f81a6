"""Disk and cache (seed 004): `iostat -mx` per device from node_exporter,
and the tablet servers' block cache hits and misses."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd

from .common import CLUSTER, TSERVER, dashboard, query_variable, timeseries

RATE = "$__rate_interval"
DISK = f'{CLUSTER}, device=~"$device"'


def _rate(metric: str) -> str:
    return f"rate({metric}{{{DISK}}}[{RATE}])"


def build() -> gd.Dashboard:
    t = f"{{{TSERVER}}}"
    legend = "{{instance}} {{device}}"
    device = query_variable("device", "Disk device",
                            f"label_values(node_disk_reads_completed_total{{{CLUSTER}}}, device)")
    return (
        dashboard("ybbench-disk-cache", "ybbench / Disk and cache",
                  "Seed 004's `iostat -mx` view per host and device (r/s, w/s, rMB/s, wMB/s, request size, "
                  "r_await, w_await, queue, %util) and the tservers' block cache hit and miss rates.",
                  extra_variables=(device,))
        .with_row(gd.Row("iostat -mx (node_exporter)"))
        .with_panel(timeseries("r/s", "rps", [(_rate("node_disk_reads_completed_total"), legend)], width=6))
        .with_panel(timeseries("w/s", "wps", [(_rate("node_disk_writes_completed_total"), legend)], width=6))
        .with_panel(timeseries("rMB/s", "binBps", [(_rate("node_disk_read_bytes_total"), legend)], width=6))
        .with_panel(timeseries("wMB/s", "binBps", [(_rate("node_disk_written_bytes_total"), legend)], width=6))
        .with_panel(timeseries("Average request size (areq-sz)", "bytes", [
            (f"({_rate('node_disk_read_bytes_total')} + {_rate('node_disk_written_bytes_total')})"
             f" / ({_rate('node_disk_reads_completed_total')} + {_rate('node_disk_writes_completed_total')})", legend),
        ], width=6, description="Bytes per completed request; seed 004 reads 29 KB against a 32 KB block."))
        .with_panel(timeseries("r_await", "s", [
            (f"{_rate('node_disk_read_time_seconds_total')} / {_rate('node_disk_reads_completed_total')}", legend),
        ], width=6, description="Average time a read spends queued and served."))
        .with_panel(timeseries("w_await", "s", [
            (f"{_rate('node_disk_write_time_seconds_total')} / {_rate('node_disk_writes_completed_total')}", legend),
        ], width=6))
        .with_panel(timeseries("%util", "percentunit", [(_rate("node_disk_io_time_seconds_total"), legend)],
                               width=6, description="Fraction of time the device had I/O in flight."))
        .with_panel(timeseries("Average queue size (aqu-sz)", "short", [
            (_rate("node_disk_io_time_weighted_seconds_total"), legend),
        ], width=12))
        .with_panel(timeseries("avg-cpu", "percentunit", [
            (f'avg by (instance, mode) (rate(node_cpu_seconds_total{{{CLUSTER}, mode=~"user|nice|system|iowait|steal"}}[{RATE}]))',
             "{{instance}} %{{mode}}"),
        ], width=12, description="iostat's avg-cpu line: share of CPU time per mode, averaged over CPUs."))
        .with_row(gd.Row("Block cache (tablet servers)"))
        .with_panel(timeseries("Block cache hits and misses/s per node", "ops", [
            (f"sum by (exported_instance) (rate(rocksdb_block_cache_hit{t}[{RATE}]))", "{{exported_instance}} hit"),
            (f"sum by (exported_instance) (rate(rocksdb_block_cache_miss{t}[{RATE}]))", "{{exported_instance}} miss"),
        ]))
        .with_panel(timeseries("Block cache misses/s by block type", "ops", [
            (f"sum by (exported_instance) (rate(rocksdb_block_cache_{kind}_miss{t}[{RATE}]))",
             f"{{{{exported_instance}}}} {kind}")
            for kind in ("data", "index", "filter")
        ], description="Seed 004: with index and bloom filter blocks cached, every miss is a data block read."))
        .with_panel(timeseries("Block cache hit ratio", "percentunit", [
            (f"sum by (exported_instance) (rate(rocksdb_block_cache_hit{t}[{RATE}])) / (sum by (exported_instance) "
             f"(rate(rocksdb_block_cache_hit{t}[{RATE}])) + sum by (exported_instance) "
             f"(rate(rocksdb_block_cache_miss{t}[{RATE}])))", "{{exported_instance}}"),
        ]))
        .with_panel(timeseries("Block cache usage per node", "bytes", [
            (f"sum by (exported_instance) (block_cache_usage{t})", "{{exported_instance}}"),
        ]))
    )
