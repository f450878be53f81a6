"""Storage growth (seed 001): SSTable size and file count per node, WAL,
flush and compaction bytes, data-set size over time."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd

from .common import CLUSTER, TSERVER, dashboard, timeseries

RATE = "$__rate_interval"


def build() -> gd.Dashboard:
    t = f"{{{TSERVER}}}"
    return (
        dashboard("ybbench-storage", "ybbench / Storage growth",
                  "Seed 001's data-set growth: SSTable bytes and files per tablet server, WAL, flush and "
                  "compaction traffic, total data-set size.")
        .with_row(gd.Row("SSTables"))
        .with_panel(timeseries("SSTable size per node", "bytes", [
            (f"node:ybbench_sst_files_size_bytes:sum{{{CLUSTER}}}", "{{exported_instance}}"),
        ], description="rocksdb_current_version_sst_files_size summed over every table and tablet of a tserver."))
        .with_panel(timeseries("SST files per node", "short", [
            (f"sum by (exported_instance) (rocksdb_current_version_num_sst_files{t})", "{{exported_instance}}"),
        ]))
        .with_panel(timeseries("Data-set size (cluster)", "bytes", [
            (f"sum(rocksdb_current_version_sst_files_size{t})", "SSTables (compressed)"),
            (f"sum(rocksdb_current_version_sst_files_uncompressed_size{t})", "SSTables (uncompressed)"),
            (f"sum(log_wal_size{t})", "WAL"),
        ], description="On-disk size summed over every tserver: every replica counts."))
        .with_panel(timeseries("Tablet data size per node", "bytes", [
            (f"sum by (exported_instance) (ts_data_size{t})", "{{exported_instance}}"),
        ], description="ts_data_size: what the tserver reports as its data on disk."))
        .with_row(gd.Row("Write path"))
        .with_panel(timeseries("WAL bytes written/s per node", "Bps", [
            (f"sum by (exported_instance) (rate(log_bytes_logged{t}[{RATE}]))", "{{exported_instance}}"),
        ]))
        .with_panel(timeseries("Flush and compaction bytes/s per node", "Bps", [
            (f"sum by (exported_instance) (rate(rocksdb_flush_write_bytes{t}[{RATE}]))", "{{exported_instance}} flush"),
            (f"sum by (exported_instance) (rate(rocksdb_compact_read_bytes{t}[{RATE}]))",
             "{{exported_instance}} compaction read"),
            (f"sum by (exported_instance) (rate(rocksdb_compact_write_bytes{t}[{RATE}]))",
             "{{exported_instance}} compaction write"),
        ]))
    )
