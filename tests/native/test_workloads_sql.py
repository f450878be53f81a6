"""yb-sample-apps' SqlUpdates and SqlSecondaryIndex shapes against the
native PostgreSQL."""

from __future__ import annotations

import uuid

from ..support.stack import wait_until
from ..support.workloads import count, n_tup_upd, run_ok


def test_sql_updates_update_the_rows_sql_inserts_wrote(binaries, postgres, tmp_path):
    table, prefix = f"sqlkv_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    ins, _ = run_ok("sql-inserts", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=3000, VUS=4,
                    DURATION="60s")
    assert ins["rows_written"] == 3000
    d, run = run_ok("sql-updates", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, MAX_WRITTEN_KEY=3000, VUS=4,
                    DURATION="3s")
    assert d["errors"] == 0 and d["keys_missing"] == 0
    updates = count(d, "update")
    assert updates == d["rows_written"] > 100
    assert 0.45 < updates / (updates + count(d, "select")) < 0.55
    # With the Go helpers (ybbench run's default where k6 has them),
    # every op's latency is in the summary, from their histograms, and no
    # per-op trend is kept (test_per_op_latency_in_the_summary_when_asked:
    # k6's own summary).
    assert ins["ops"]["insert"]["latency_ms"]["p99"] > 0
    for op in ("select", "update"):
        lat = d["ops"][op]["latency_ms"]
        assert 0 < lat["p50"] <= lat["p99"] <= lat["max"], (op, lat)
    assert not [m for m in d["k6"] if m.startswith("iteration_duration{")]
    wait_until(lambda: n_tup_upd(postgres, table) == updates, f"pg_stat to count {updates} updates", timeout=15)
    # Updated values are val:<n>:<run tag>.<iteration>, and every value still names its key.
    assert postgres.query(f"SELECT count(*) FROM {table} WHERE v NOT LIKE 'val:' || split_part(k, ':', 2) || '%'") == "0"
    assert int(postgres.query(f"SELECT count(*) FROM {table} WHERE v ~ '^val:[0-9]+:[0-9a-z]+[.][0-9]+$'")) > 0


def test_sql_secondary_index_reads_by_value_find_the_rows_written(binaries, postgres, tmp_path):
    table = f"si_{uuid.uuid4().hex[:8]}"
    d, _ = run_ok("sql-secondary-index", postgres, tmp_path, TABLE=table, VUS=4, DURATION="3s")
    assert d["errors"] == 0 and d["keys_missing"] == 0
    assert count(d, "select") > 100 and count(d, "insert") == d["rows_written"] > 100
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == d["rows_written"]
    assert postgres.query(f"SELECT indexdef FROM pg_indexes WHERE indexname = '{table}_index'").endswith("(v)")


def test_per_op_latency_in_the_summary_when_asked(binaries, postgres, tmp_path):
    # k6's own summary (the official extensions only): a mixed workload has
    # per-op latency only with OP_LATENCY_SUMMARY=on (k6 would re-sort a
    # per-op trend every 2 s), and says where it is instead.
    table, prefix = f"sqlkv_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    run_ok("sql-inserts", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=500, VUS=2, DURATION="60s")
    plain = {"TABLE": table, "KEY_PREFIX": prefix, "MAX_WRITTEN_KEY": 500, "VUS": 2, "DURATION": "2s",
             "YBBENCH_GO_HELPERS": "0"}
    d, run = run_ok("sql-updates", postgres, tmp_path, **plain)
    assert d["ops"]["update"]["latency_ms"] is None and "OP_LATENCY_SUMMARY=on" in (run.folder / "k6.log").read_text()
    d, run = run_ok("sql-updates", postgres, tmp_path, **plain, OP_LATENCY_SUMMARY="on")
    for op in ("select", "update"):
        lat = d["ops"][op]["latency_ms"]
        assert 0 < lat["p50"] <= lat["p99"] <= lat["max"], (op, lat)
        assert d["k6"][f"iteration_duration{{op:{op}}}"]["values"]["max"] == lat["max"]
    assert "OP_LATENCY_SUMMARY" not in (run.folder / "k6.log").read_text()
