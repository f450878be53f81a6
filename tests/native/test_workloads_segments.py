"""Distributed k6: two instances run one test as execution segments (as
k6-operator runners do), at the same moment, on one table. Both run setup()'s
DDL concurrently; together they write each key exactly once."""

from __future__ import annotations

import json
import subprocess
import uuid

from ..support.stack import BIN, REPO

SEGMENTS = ("0:1/2", "1/2:1")


def run_segments(workload: str, pg, tmp_path, **knobs) -> list[dict]:
    testid = f"seg{uuid.uuid4().hex[:8]}"
    env = pg.env()
    env.update(YSQL_NODES=f"127.0.0.1:{pg.port}", DB_USER=pg.user, DB_NAME=pg.database,
               **{k: str(v) for k, v in knobs.items()})
    procs = []
    for i, seg in enumerate(SEGMENTS):
        out = tmp_path / f"{testid}-{i}.json"
        cmd = [str(BIN / "k6"), "run", "--no-color", "--quiet", "--address", "127.0.0.1:0", "--tag", f"testid={testid}",
               "--execution-segment", seg, "--execution-segment-sequence", "0,1/2,1",
               str(REPO / "k6-scripts" / f"{workload}.js")]
        procs.append((subprocess.Popen(cmd, env=dict(env, SUMMARY_JSON=str(out)), stdout=subprocess.PIPE,
                                       stderr=subprocess.STDOUT, text=True), out))
    digests = []
    for p, out in procs:
        log, _ = p.communicate(timeout=120)
        assert p.returncode == 0, log
        digests.append(json.loads(out.read_text()))
    return digests


def test_ycsb_load_in_two_segments_writes_each_record_once(binaries, postgres, tmp_path):
    from ..support.workloads import ycsb_key
    table = f"usertable_seg_{uuid.uuid4().hex[:6]}"
    parts = run_segments("ycsb-load", postgres, tmp_path, TABLE=table, RECORD_COUNT=3000, VUS=4, DURATION="60s")
    assert [d["errors"] for d in parts] == [0, 0]
    assert all(d["rows_written"] > 0 for d in parts)
    assert sum(d["rows_written"] for d in parts) == 3000
    keys = set(postgres.query(f"SELECT ycsb_key FROM {table}").splitlines())
    assert keys == {ycsb_key(n) for n in range(3000)}


def test_kv_load_for_a_duration_in_two_segments_never_collides(binaries, postgres, tmp_path):
    table = f"kv_seg_{uuid.uuid4().hex[:6]}"
    parts = run_segments("kv-load", postgres, tmp_path, TABLE=table, KEY_PREFIX="seg", VUS=4, DURATION="3s")
    # A collision would be a duplicate key error (23505) in either instance.
    assert [d["errors"] for d in parts] == [0, 0]
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == sum(d["rows_written"] for d in parts) > 1000


def test_secondary_index_readers_in_two_segments_find_their_rows(binaries, postgres, tmp_path):
    table = f"si_seg_{uuid.uuid4().hex[:6]}"
    parts = run_segments("sql-secondary-index", postgres, tmp_path, TABLE=table, KEY_PREFIX="seg", VUS=4,
                         DURATION="3s")
    for d in parts:
        assert d["errors"] == 0 and d["keys_missing"] == 0, d
        assert d["ops"]["select"]["count"] > 100
    assert int(postgres.query(f"SELECT count(*) FROM {table}")) == sum(d["rows_written"] for d in parts)
