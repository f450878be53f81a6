"""The key-value workloads of seeds 001/004 (and seed 002's factors) against
the native PostgreSQL: what k6 reports is what the table holds."""

from __future__ import annotations

import uuid
import zlib

import pytest

from ..support.stack import wait_until
from ..support.workloads import binomial, count, n_tup_upd, run_ok

KEYS, RECENT = 12000, 500


@pytest.fixture(scope="module")
def kv(binaries, postgres, tmp_path_factory):
    """One load, then the read workloads over it, each on the module's table."""
    tmp = tmp_path_factory.mktemp("kv")
    table, prefix = f"kv_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    common = {"TABLE": table, "VUS": 4}
    load, _ = run_ok("kv-load", postgres, tmp, **common, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=KEYS, DURATION="60s")
    reads = {"KEY_PREFIX": prefix, "MAX_WRITTEN_KEY": KEYS, "DURATION": "3s", **common}
    # xids bracket each run: a row's xmin says which run last wrote it.
    xid0 = int(postgres.query("SELECT txid_current()"))
    recent, _ = run_ok("kv-recent-read-heavy", postgres, tmp, **reads, RECENT_KEYS=RECENT, WRITE_PERCENT=10)
    xid1 = int(postgres.query("SELECT txid_current()"))
    heavy, _ = run_ok("kv-read-heavy", postgres, tmp, **reads, WRITE_PERCENT=10)
    random_read, random_run = run_ok("kv-random-read", postgres, tmp, **reads, OP_SIZE=100, READ_SHAPE="range",
                                     ISOLATION="repeatable_read", LOAD_MODEL="constant-arrival-rate", RATE=150,
                                     MAX_VUS=8)
    return {"table": table, "prefix": prefix, "load": load, "recent": recent, "heavy": heavy,
            "random": random_read, "random_run": random_run, "xids": (xid0, xid1)}


def test_load_wrote_every_key_once_with_50_byte_keys_and_256_byte_values(kv, postgres):
    t = kv["table"]
    assert kv["load"]["rows_written"] == count(kv["load"], "insert") == KEYS
    assert postgres.query(f"SELECT count(*), min(length(k)), max(length(k)), min(length(v)), max(length(v)) FROM {t}") \
        == f"{KEYS}|50|50|256|256"
    # <prefix>:<index zero-padded>, indexes exactly 0..KEYS-1.
    assert postgres.query(f"SELECT count(DISTINCT split_part(k, ':', 2)::bigint), min(split_part(k, ':', 2)::bigint), "
                          f"max(split_part(k, ':', 2)::bigint) FROM {t} WHERE k LIKE '{kv['prefix']}:%'") \
        == f"{KEYS}|0|{KEYS - 1}"
    # Every value (loaded or updated since) carries its key's index in its first 6 bytes.
    assert postgres.query(f"SELECT count(*) FROM {t} WHERE ('x' || encode(substring(v FROM 1 FOR 6), 'hex'))::bit(48)"
                          f"::bigint <> split_part(k, ':', 2)::bigint") == "0"


def test_values_do_not_compress(kv, postgres):
    # Neighbouring rows, as a storage block holds them.
    hexes = postgres.query(f"SELECT string_agg(encode(v, 'hex'), '' ORDER BY k) FROM "
                           f"(SELECT k, v FROM {kv['table']} ORDER BY k LIMIT 400) s")
    raw = bytes.fromhex(hexes)
    assert len(raw) == 400 * 256
    assert len(zlib.compress(raw, 9)) > 0.97 * len(raw)


def test_reads_found_every_key_and_updates_hit_existing_rows(kv, postgres):
    for name in ("recent", "heavy", "random"):
        d = kv[name]
        assert d["errors"] == 0 and d["keys_missing"] == 0, (name, d)
        assert count(d, "select") > 100, (name, d)
    for name in ("recent", "heavy"):
        d = kv[name]
        ops = count(d, "select") + count(d, "update")
        assert count(d, "update") == d["rows_written"]
        ok, why = binomial(count(d, "update"), ops, 0.10)  # WRITE_PERCENT=10, each op drawn alone
        assert ok, (name, why)
    # The table saw exactly the updates k6 acknowledged.
    acked = kv["recent"]["rows_written"] + kv["heavy"]["rows_written"]
    wait_until(lambda: n_tup_upd(postgres, kv["table"]) == acked, f"pg_stat to count {acked} updates", timeout=15)
    assert postgres.query(f"SELECT count(*) FROM {kv['table']}") == str(KEYS)


def test_recent_reads_and_writes_stay_in_the_recent_window(kv, postgres):
    x0, x1 = kv["xids"]
    lo = postgres.query(f"SELECT min(split_part(k, ':', 2)::bigint) FROM {kv['table']} "
                        f"WHERE xmin::text::bigint > {x0} AND xmin::text::bigint < {x1}")
    assert lo and int(lo) >= KEYS - RECENT


def test_open_model_with_100_row_range_reads_under_repeatable_read(kv):
    d, run = kv["random"], kv["random_run"]
    assert d["scenario"]["executor"] == "constant-arrival-rate"
    assert "dropped_iterations" in d
    # 150/s for 3 s: what ran plus what was dropped is what was asked for.
    assert count(d, "select") + d["dropped_iterations"] == pytest.approx(450, abs=15)
    assert "100 row(s) per statement, isolation repeatable read" in (run.folder / "k6.log").read_text()


def test_esle_multi_row_insert_under_repeatable_read(binaries, postgres, tmp_path):
    table = f"esle_{uuid.uuid4().hex[:8]}"
    d, run = run_ok("kv-load", postgres, tmp_path, TABLE=table, VUS=2, OP_SIZE=100, NUM_UNIQUE_KEYS=3000,
                    ISOLATION="repeatable_read", DURATION="60s")
    assert count(d, "insert") == 30 and d["rows_written"] == 3000
    assert postgres.query(f"SELECT count(DISTINCT k) FROM {table}") == "3000"
    assert "isolation repeatable read" in (run.folder / "k6.log").read_text()


def test_open_model_stops_counting_inserts_at_the_key_bound(binaries, postgres, tmp_path):
    # 400/s for 3 s asks for ~1200 iterations; past NUM_UNIQUE_KEYS they
    # write nothing and must not count as inserts.
    table = f"bound_{uuid.uuid4().hex[:8]}"
    d, _ = run_ok("kv-load", postgres, tmp_path, TABLE=table, VUS=4, NUM_UNIQUE_KEYS=300, DURATION="3s",
                  LOAD_MODEL="constant-arrival-rate", RATE=400, MAX_VUS=8)
    assert count(d, "insert") == d["rows_written"] == 300
    assert postgres.query(f"SELECT count(*) FROM {table}") == "300"
