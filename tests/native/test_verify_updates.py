"""`ybbench verify` after sql-updates: every key's value is one the run
wrote to it, and with a single writer the last acknowledged one. Expected
values come from the database and from the schedule's arithmetic, written
out here again (docs/faults-and-verify.md), never from verify's code."""

from __future__ import annotations

import json
import uuid

from ..support.workloads import count, run_ok, sql_updates_schedule as schedule
from ..support.ybbench_cli import verify, ybbench_run

def _loaded(postgres, tmp_path, keys: int):
    table, prefix = f"u_{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    d, _ = run_ok("sql-inserts", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, NUM_UNIQUE_KEYS=keys, VUS=2,
                  DURATION="30s")
    assert d["rows_written"] == keys
    return table, prefix


def _values(postgres, table: str, prefix: str) -> dict[int, str]:
    rows = postgres.query(f"SELECT k, v FROM {table}").splitlines()
    return {int(k[len(prefix) + 1:]): v for k, v in (r.split("|", 1) for r in rows)}


def _insert_value(prefix: str, n: int) -> str:
    # sql-inserts' value: val:<n> padded with x to 64 bytes of key + value
    return f"val:{n}" + "x" * max(0, 64 - len(f"{prefix}:{n}") - len(f"val:{n}"))


def test_single_writer_each_key_holds_its_last_acknowledged_update(postgres, tmp_path):
    keys = 150
    table, prefix = _loaded(postgres, tmp_path, keys)
    d, run = run_ok("sql-updates", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, MAX_WRITTEN_KEY=keys, VUS=1,
                    DURATION="3s")
    assert d["errors"] == 0
    its = count(d, "select") + count(d, "update")
    assert its > 3 * keys  # several rounds: most keys updated more than once
    key, update = schedule(keys, 50)
    assert sum(update(i) for i in range(its)) == count(d, "update")
    last: dict[int, list[int]] = {}
    for i in range(its):
        if update(i):
            last.setdefault(key(i), []).append(i)
    values = _values(postgres, table, prefix)
    tag = next(v for v in values.values() if v.count(":") == 2).split(":")[2].split(".")[0]
    # The script wrote what the schedule says: each key its last update's value.
    for n in range(keys):
        assert values[n] == (f"val:{n}:{tag}.{last[n][-1]}" if n in last else _insert_value(prefix, n)), n

    results, tid = run.folder.parent, run.folder.name
    p, clean = verify(results, tid, postgres, "--chunk", "64")
    assert p.returncode == 0, p.stdout + p.stderr
    assert clean["writers"] == "single" and clean["present"]["count"] == keys
    assert clean["acknowledged_updated"]["count"] == len(last)
    assert clean["iterations"] == its
    assert all(clean[k]["count"] == 0 for k in ("missing", "lost_update", "stale", "never_written"))

    twice = [n for n in sorted(last) if len(last[n]) >= 2]
    lost, stale, never, other, gone = twice[0], twice[1], twice[2], twice[3], twice[4]

    def k(n: int) -> str:
        return f"{prefix}:{n}"

    # A lost update: the value from before the run is back.
    postgres.query(f"UPDATE {table} SET v = '{_insert_value(prefix, lost)}' WHERE k = '{k((lost))}'")
    # A stale value: the key's update before its last one.
    postgres.query(f"UPDATE {table} SET v = 'val:{stale}:{tag}.{last[stale][-2]}' WHERE k = '{k((stale))}'")
    # Values never written: an iteration that updated another key, and junk.
    foreign = last[other][-1]
    assert key(foreign) != never
    postgres.query(f"UPDATE {table} SET v = 'val:{never}:{tag}.{foreign}' WHERE k = '{k((never))}'")
    postgres.query(f"UPDATE {table} SET v = 'tampered' WHERE k = '{k((other))}'")
    postgres.query(f"DELETE FROM {table} WHERE k = '{k((gone))}'")
    p, r = verify(results, tid, postgres, "--chunk", "64")
    assert p.returncode == 1, p.stdout + p.stderr
    assert r["lost_update"] == {"count": 1, "examples": [k((lost))]}
    assert r["stale"] == {"count": 1, "examples": [k((stale))]}
    assert r["never_written"]["count"] == 2 and set(r["never_written"]["examples"]) == {k((never)), k((other))}
    assert r["missing"] == {"count": 1, "examples": [k((gone))]}
    assert "FAILED" in p.stdout and k((stale)) in p.stdout


def test_concurrent_writers_any_update_of_the_key_is_allowed(postgres, tmp_path):
    keys = 200
    table, prefix = _loaded(postgres, tmp_path, keys)
    d, run = run_ok("sql-updates", postgres, tmp_path, TABLE=table, KEY_PREFIX=prefix, MAX_WRITTEN_KEY=keys, VUS=4,
                    DURATION="3s", WRITE_PERCENT=70)
    its = count(d, "select") + count(d, "update")
    key, update = schedule(keys, 70)
    ups: dict[int, list[int]] = {}
    for i in range(its):
        if update(i):
            ups.setdefault(key(i), []).append(i)
    results, tid = run.folder.parent, run.folder.name
    p, clean = verify(results, tid, postgres)
    assert p.returncode == 0, p.stdout + p.stderr
    assert clean["writers"] == "concurrent" and clean["acknowledged_updated"]["count"] == len(ups)

    values = _values(postgres, table, prefix)
    tag = next(v for v in values.values() if v.count(":") == 2).split(":")[2].split(".")[0]
    twice = [n for n in sorted(ups) if len(ups[n]) >= 2]
    lost, older, never = twice[0], twice[1], twice[2]
    postgres.query(f"UPDATE {table} SET v = '{_insert_value(prefix, lost)}' WHERE k = '{prefix}:{lost}'")
    # An older update of the key: allowed with concurrent writers (which one
    # commits last is not recorded), so not caught.
    postgres.query(f"UPDATE {table} SET v = 'val:{older}:{tag}.{ups[older][0]}' WHERE k = '{prefix}:{older}'")
    # An iteration past the run's end never wrote anything.
    postgres.query(f"UPDATE {table} SET v = 'val:{never}:{tag}.{its + keys}' WHERE k = '{prefix}:{never}'")
    p, r = verify(results, tid, postgres)
    assert p.returncode == 1
    assert r["lost_update"] == {"count": 1, "examples": [f"{prefix}:{lost}"]}
    assert r["never_written"] == {"count": 1, "examples": [f"{prefix}:{never}"]}
    assert r["stale"]["count"] == 0


def test_failed_updates_are_unknown_and_the_last_acknowledged_one_stays(postgres, tmp_path):
    """A trigger refuses every update of an iteration divisible by 5: those
    fail (SQLSTATE P0001), are logged, and the key keeps the update before."""
    keys = 100
    table, prefix = _loaded(postgres, tmp_path, keys)
    postgres.query(f"""CREATE FUNCTION {table}_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF split_part(NEW.v, '.', 2)::bigint % 5 = 0 THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$;
        CREATE TRIGGER refuse BEFORE UPDATE ON {table} FOR EACH ROW EXECUTE FUNCTION {table}_refuse()""")
    run = run_ok("sql-updates", postgres, tmp_path, _ok=False, TABLE=table, KEY_PREFIX=prefix, MAX_WRITTEN_KEY=keys,
                 VUS=1, DURATION="2s")
    assert run.code == 99, run.output  # the error threshold
    d = json.loads((run.folder / "summary.json").read_text())
    its = count(d, "select") + count(d, "update")
    key, update = schedule(keys, 50)
    refused = [i for i in range(its) if update(i) and i % 5 == 0]
    assert d["errors"] == len(refused) > 0
    acked: dict[int, int] = {}
    for i in range(its):
        if update(i) and i % 5:
            acked[key(i)] = i
    values = _values(postgres, table, prefix)
    tag = next(v for v in values.values() if v.count(":") == 2).split(":")[2].split(".")[0]
    assert all(values[n] == f"val:{n}:{tag}.{i}" for n, i in acked.items())
    results, tid = run.folder.parent, run.folder.name
    p, r = verify(results, tid, postgres)
    assert p.returncode == 0, p.stdout + p.stderr
    assert r["unacknowledged_updates"] == len(refused) and r["unknown_value"]["count"] == 0
    # The refused update had been the last of some keys: their previous one stands.
    n = next(key(i) for i in reversed(refused) if key(i) in acked and acked[key(i)] < i)
    postgres.query(f"DROP TRIGGER refuse ON {table}")
    postgres.query(f"UPDATE {table} SET v = '{_insert_value(prefix, n)}' WHERE k = '{prefix}:{n}'")
    p, r = verify(results, tid, postgres)
    assert p.returncode == 1 and r["lost_update"] == {"count": 1, "examples": [f"{prefix}:{n}"]}


def test_a_run_split_over_generators(postgres, tmp_path):
    """Two k6 processes, execution segments of one test: iteration numbers
    are striped over them (g + j x 2), and the schedule is the test's."""
    keys = 200
    table, prefix = _loaded(postgres, tmp_path, keys)
    results, tid = tmp_path / "results", f"g{uuid.uuid4().hex[:8]}"
    run = ybbench_run("sql-updates", postgres, results, testid=tid, extra_args=["--generators", "2"],
                      knobs={"TABLE": table, "KEY_PREFIX": prefix, "MAX_WRITTEN_KEY": str(keys), "VUS": "2",
                             "DURATION": "3s"})
    assert run.code == 0, run.output
    d = json.loads((run.folder / "summary.json").read_text())
    its = count(d, "select") + count(d, "update")
    p, clean = verify(results, tid, postgres)
    assert p.returncode == 0, p.stdout + p.stderr
    assert clean["generators"] == 2 and clean["writers"] == "concurrent" and clean["iterations"] == its
    values = _values(postgres, table, prefix)
    updated = sorted(n for n, v in values.items() if v.count(":") == 2)
    assert clean["acknowledged_updated"]["count"] == len(updated) > 0
    n = updated[len(updated) // 2]
    postgres.query(f"UPDATE {table} SET v = '{_insert_value(prefix, n)}' WHERE k = '{prefix}:{n}'")
    p, r = verify(results, tid, postgres)
    assert p.returncode == 1 and r["lost_update"] == {"count": 1, "examples": [f"{prefix}:{n}"]}
