"""`ybbench verify` after ycsb-load and YCSB workload a: every record is
there and each field is one a run wrote to it. Keys come from the tests'
own YCSB hashing (tests/support/workloads.py), planted faults from SQL."""

from __future__ import annotations

import json
import uuid

from ..support.workloads import count, run_ok, ycsb_key
from ..support.ybbench_cli import verify

RECORDS = 300


def _field(postgres, table: str, keynum: int, f: int) -> str:
    # Between brackets: psql's output is stripped, and a field can end in a
    # space (one in 95), which a bare SELECT would lose.
    out = postgres.query(f"SELECT '[' || field{f} || ']' FROM {table} WHERE ycsb_key = '{ycsb_key(keynum)}'")
    assert out.startswith("[") and out.endswith("]"), out
    return out[1:-1]


def test_ycsb_load_every_record_and_field(postgres, tmp_path):
    table = f"usertable_{uuid.uuid4().hex[:8]}"
    d, run = run_ok("ycsb-load", postgres, tmp_path, TABLE=table, RECORD_COUNT=RECORDS, VUS=2, DURATION="60s")
    assert d["rows_written"] == RECORDS
    # The stamp: L<tag>:<keynum>.<field>:, then random printable characters.
    f3 = _field(postgres, table, 42, 3)
    assert len(f3) == 100 and f3.startswith("L") and f3.split(":", 1)[1].startswith("42.3:")
    results, tid = run.folder.parent, run.folder.name
    p, clean = verify(results, tid, postgres, "--chunk", "64")
    assert p.returncode == 0, p.stdout + p.stderr
    assert clean["present"]["count"] == clean["records_checked"] == RECORDS == clean["rows_in_table"]

    postgres.query(f"DELETE FROM {table} WHERE ycsb_key = '{ycsb_key(7)}'")
    postgres.query(f"UPDATE {table} SET field3 = NULL WHERE ycsb_key = '{ycsb_key(11)}'")
    # Same length and characters, no stamp: a value no run wrote.
    postgres.query(f"UPDATE {table} SET field5 = repeat('z', 100) WHERE ycsb_key = '{ycsb_key(12)}'")
    # A value the run wrote, but to another record.
    postgres.query(f"UPDATE {table} SET field0 = (SELECT field0 FROM {table} WHERE ycsb_key = '{ycsb_key(14)}') "
                   f"WHERE ycsb_key = '{ycsb_key(13)}'")
    # ... and to another field of the same record.
    postgres.query(f"UPDATE {table} SET field9 = field8 WHERE ycsb_key = '{ycsb_key(15)}'")
    p, r = verify(results, tid, postgres, "--chunk", "64")
    assert p.returncode == 1, p.stdout + p.stderr
    assert r["lost"] == {"count": 1, "examples": [ycsb_key(7)]}
    assert r["missing_field"] == {"count": 1, "examples": [f"{ycsb_key(11)}.field3"]}
    assert r["never_written"]["count"] == 3 and set(r["never_written"]["examples"]) == {
        f"{ycsb_key(12)}.field5", f"{ycsb_key(13)}.field0", f"{ycsb_key(15)}.field9"}
    assert "FAILED" in p.stdout and ycsb_key(7) in p.stdout


def test_ycsb_a_updates_are_fields_the_run_wrote(postgres, tmp_path):
    table = f"usertable_{uuid.uuid4().hex[:8]}"
    run_ok("ycsb-load", postgres, tmp_path, TABLE=table, RECORD_COUNT=RECORDS, VUS=2, DURATION="60s")
    d, run = run_ok("ycsb", postgres, tmp_path, TABLE=table, RECORD_COUNT=RECORDS, VUS=2, DURATION="2s",
                    YCSB_WORKLOAD="a", REQUEST_DISTRIBUTION="uniform")
    updates = count(d, "update")
    assert updates > 50 and d["errors"] == 0
    its = count(d, "select") + updates
    fields = " UNION ALL ".join(f"SELECT field{f} AS v FROM {table}" for f in range(10))
    stamped = int(postgres.query(f"SELECT count(*) FROM ({fields}) s WHERE v LIKE 'U%'"))
    assert 0 < stamped <= updates
    results, tid = run.folder.parent, run.folder.name
    p, clean = verify(results, tid, postgres, "--chunk", "64")
    assert p.returncode == 0, p.stdout + p.stderr
    assert clean["present"]["count"] == RECORDS and clean["updated_by_this_run"]["count"] == stamped

    # An update's field: which record and iteration it names, from the database.
    k, f, v = postgres.query(
        f"SELECT ycsb_key, f, v FROM (SELECT ycsb_key, 0 AS f, field0 AS v FROM {table} UNION ALL "
        f"SELECT ycsb_key, 1, field1 FROM {table}) s WHERE v LIKE 'U%' LIMIT 1").split("|", 2)
    head, _, rest = v.partition(":")
    it = int(rest.split(".")[0])
    assert it < its
    # The same stamp with an iteration the run never reached.
    forged = (f"{head}:{its + 1000}.{f}:" + rest.split(":", 1)[1] + "z" * 20)[:100]
    quoted = forged.replace("'", "''")  # a random field may hold any printable character
    postgres.query(f"UPDATE {table} SET field{f} = '{quoted}' WHERE ycsb_key = '{k}'")
    postgres.query(f"DELETE FROM {table} WHERE ycsb_key = '{ycsb_key(RECORDS - 2)}'")
    postgres.query(f"UPDATE {table} SET field4 = NULL WHERE ycsb_key = '{ycsb_key(3)}'")
    p, r = verify(results, tid, postgres, "--chunk", "64")
    assert p.returncode == 1, p.stdout + p.stderr
    assert r["never_written"] == {"count": 1, "examples": [f"{k}.field{f}"]}
    assert r["lost"] == {"count": 1, "examples": [ycsb_key(RECORDS - 2)]}
    assert r["missing_field"] == {"count": 1, "examples": [f"{ycsb_key(3)}.field4"]}
    assert json.loads((run.folder / "verify.json").read_text())["ok"] is False
