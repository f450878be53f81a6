"""Partial results. The real xk6-sql does not check rows.Err() after its row
loop, so an error that arrives after the first rows of a multi-row read (a
YugabyteDB read restart, 40001; a node dying mid-result) comes back as a
short result and no exception (tests/k6/sql_api.js). These tests run on the
test k6, so they cover the real xk6-sql v1.0.5 (lib/pq and pgx); that is
enough for the compose image's v1.2.0, whose query() is v1.0.5's (its Go
source differs only in the k6 import path: test_sql_extension.py), and the
k6 v2 build's stand-in is held to the same check by sql_api.js. The
workloads treat a short multi-row result as a failure: retried like 40001,
then counted as SQLSTATE "short", never as keys missing. On our Go helpers module's statement path (DB_DRIVER=pgconn,
what `ybbench run` takes where k6 has it) the error throws instead, and is
retried and counted by its own SQLSTATE.

Here a view over a loaded table raises 40001 at the sixth row of a
10-row read, on every read or only the first, as a read restart would."""

from __future__ import annotations

import uuid

import pytest

from ..support.workloads import count, run_ok

KEYS = 10


@pytest.fixture
def loaded(postgres, tmp_path):
    t = uuid.uuid4().hex[:8]
    d, _ = run_ok("kv-load", postgres, tmp_path, TABLE=f"base_{t}", KEY_PREFIX=t, NUM_UNIQUE_KEYS=KEYS, VUS=1,
                  DURATION="20s")
    assert d["rows_written"] == KEYS
    postgres.query(f"""
        CREATE SEQUENCE fired_{t};
        CREATE FUNCTION restart_{t}(k text, every_time bool) RETURNS bool LANGUAGE plpgsql AS $$
        BEGIN
          IF substring(k from '[0-9]+$')::bigint = 5 AND (every_time OR nextval('fired_{t}') = 1) THEN
            RAISE EXCEPTION 'read restart at %', k USING ERRCODE = '40001';
          END IF;
          RETURN true;
        END $$;
        CREATE VIEW always_{t} AS SELECT k, v FROM base_{t} WHERE restart_{t}(k, true);
        CREATE VIEW once_{t} AS SELECT k, v FROM base_{t} WHERE restart_{t}(k, false);""")
    return t


def reads(postgres, tmp_path, table: str, t: str, code: int = 0, **knobs) -> dict:
    r = run_ok("kv-random-read", postgres, tmp_path, TABLE=table, KEY_PREFIX=t, MAX_WRITTEN_KEY=KEYS, VUS=1,
               _ok=False, **{"OP_SIZE": KEYS, "READ_SHAPE": "range", "DURATION": "2s", "MAX_RETRIES": 2, **knobs})
    assert r.code == code, r.output
    return r.digest()


# The driver, and the error class a read that keeps failing at its sixth row
# is counted under.
PATHS = pytest.mark.parametrize("driver,failure", [("pgx", "short"), ("postgres", "short"), ("pgconn", "40")])


@PATHS
def test_a_read_cut_short_every_time_is_a_failure_not_keys_missing(postgres, tmp_path, loaded, driver, failure):
    # k6 exits 99: the errors threshold, as for any failed statement.
    d = reads(postgres, tmp_path, f"always_{loaded}", loaded, code=99, DB_DRIVER=driver)
    n = count(d, "select")
    assert n > 0
    assert d["errors_by_class"] == {failure: n}, d["errors_by_class"]
    assert d["errors"] == n and d["keys_missing"] == 0
    assert d["ops"]["select"]["retries"] == 2 * n  # MAX_RETRIES each, like 40001


@PATHS
def test_a_read_cut_short_once_is_retried_and_then_whole(postgres, tmp_path, loaded, driver, failure):
    d = reads(postgres, tmp_path, f"once_{loaded}", loaded, DB_DRIVER=driver)
    assert count(d, "select") > 0
    assert d["errors"] == 0 and d["keys_missing"] == 0 and d["errors_by_class"] == {}
    assert d["ops"]["select"]["retries"] == 1


def test_a_point_read_of_a_missing_key_is_still_a_key_missing(postgres, tmp_path, loaded):
    t = loaded
    postgres.query(f"DELETE FROM base_{t} WHERE substring(k from '[0-9]+$')::bigint < 5")
    d = reads(postgres, tmp_path, f"base_{t}", t, OP_SIZE=1, READ_SHAPE="in")
    n = count(d, "select")
    assert d["errors"] == 0 and 0 < d["keys_missing"] < n
