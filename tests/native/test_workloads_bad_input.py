"""Every knob of the new workloads, given a bad value, stops the run before
any load with a message that names it; nothing is written."""

from __future__ import annotations

import pytest

from ..support.ybbench_cli import assert_nothing_written, ybbench_run

READS = {"KEY_PREFIX": "p", "MAX_WRITTEN_KEY": "100"}

CASES = [
    ("kv-load", {"LOAD_MODEL": "poisson"}, 'invalid LOAD_MODEL="poisson": must be one of closed'),
    ("kv-load", {"LOAD_MODEL": "constant-arrival-rate"}, "RATE is required and not set"),
    ("kv-load", {"LOAD_MODEL": "constant-arrival-rate", "RATE": "fast"}, 'invalid RATE="fast": not a whole number'),
    ("kv-load", {"LOAD_MODEL": "constant-arrival-rate", "RATE": "10", "VUS": "8", "MAX_VUS": "4"}, 'invalid MAX_VUS="4"'),
    ("kv-load", {"LOAD_MODEL": "ramping-arrival-rate"}, "STAGES is required and not set"),
    ("kv-load", {"LOAD_MODEL": "ramping-arrival-rate", "STAGES": "100 for 30s"}, 'invalid STAGES="100 for 30s"'),
    ("kv-load", {"LOAD_MODEL": "ramping-arrival-rate", "STAGES": "10:5s", "START_RATE": "-1"}, 'invalid START_RATE="-1"'),
    ("kv-load", {"MAX_RETRIES": "many"}, 'invalid MAX_RETRIES="many"'),
    ("kv-load", {"ISOLATION": "snapshot"}, 'invalid ISOLATION="snapshot": must be one of default, read_committed'),
    ("kv-load", {"KEY_BYTES": "4"}, 'invalid KEY_BYTES="4"'),
    ("kv-load", {"KEY_BYTES": "12", "KEY_PREFIX": "a-long-prefix"}, "KEY_BYTES=12 leaves no room"),
    ("kv-load", {"VALUE_BYTES": "0"}, 'invalid VALUE_BYTES="0"'),
    ("kv-load", {"OP_SIZE": "0"}, 'invalid OP_SIZE="0"'),
    ("kv-load", {"OP_SIZE": "1001"}, 'invalid OP_SIZE="1001"'),
    ("kv-load", {"OP_SIZE": "100", "NUM_UNIQUE_KEYS": "150"}, "invalid NUM_UNIQUE_KEYS=150: must be a multiple of OP_SIZE=100"),
    ("kv-random-read", {**READS, "READ_SHAPE": "scan"}, 'invalid READ_SHAPE="scan"'),
    ("kv-random-read", {**READS, "OP_SIZE": "200"}, "invalid OP_SIZE=200: more than the 100 keys read"),
    ("kv-random-read", {"MAX_WRITTEN_KEY": "100"}, "KEY_PREFIX is required"),
    ("kv-random-read", {"KEY_PREFIX": "p"}, "MAX_WRITTEN_KEY is required"),
    ("kv-read-heavy", {**READS, "WRITE_PERCENT": "101"}, 'invalid WRITE_PERCENT="101": must be between 0 and 100'),
    ("kv-read-heavy", {**READS, "WRITE_PERCENT": "half"}, 'invalid WRITE_PERCENT="half": not a decimal number'),
    ("kv-recent-read-heavy", {**READS, "RECENT_KEYS": "0"}, 'invalid RECENT_KEYS="0"'),
    ("kv-recent-read-heavy", {**READS, "RECENT_KEYS": "101"}, 'invalid RECENT_KEYS="101": must be between 1 and 100'),
    ("kv-read-heavy", {**READS}, "cannot read bad_"),  # a table no load wrote: refused in setup
    ("ycsb", {"YCSB_WORKLOAD": "z"}, 'invalid YCSB_WORKLOAD="z": must be one of a, b, c'),
    ("ycsb", {"READ_PROPORTION": "1.5"}, 'invalid READ_PROPORTION="1.5"'),
    ("ycsb", {"REQUEST_DISTRIBUTION": "hotspot"}, 'invalid REQUEST_DISTRIBUTION="hotspot"'),
    ("ycsb", {"ZIPFIAN_CONSTANT": "1"}, 'invalid ZIPFIAN_CONSTANT="1"'),
    ("ycsb", {"ZIPFIAN_CONSTANT": "0"}, 'invalid ZIPFIAN_CONSTANT="0": must be above 0'),
    ("ycsb", {"RECORD_COUNT": "1"}, 'invalid RECORD_COUNT="1"'),
    ("ycsb", {"OPERATION_COUNT": "-1"}, 'invalid OPERATION_COUNT="-1"'),
    ("ycsb", {"FIELD_COUNT": "0"}, 'invalid FIELD_COUNT="0"'),
    ("ycsb", {"RECORD_COUNT": "50"}, "cannot read bad_"),
    ("ycsb-load", {"FIELD_LENGTH": "0"}, 'invalid FIELD_LENGTH="0"'),
    ("ycsb-load", {"INSERT_START": "1000"}, 'invalid INSERT_START="1000": must be between 0 and 999'),
    ("ycsb-load", {"INSERT_START": "500", "INSERT_COUNT": "501"}, "invalid INSERT_COUNT=501: INSERT_START + INSERT_COUNT exceeds"),
    ("ycsb-analytic", {"RUNS": "0"}, 'invalid RUNS="0"'),
    ("ycsb-analytic", {"FIELD": "field0; DROP TABLE x"}, 'invalid FIELD="field0; DROP TABLE x"'),
    ("sql-updates", {"KEY_PREFIX": "p", "MAX_WRITTEN_KEY": "10", "WRITE_PERCENT": "x"}, 'invalid WRITE_PERCENT="x"'),
    ("sql-updates", {"MAX_WRITTEN_KEY": "10"}, "KEY_PREFIX is required"),
    ("sql-secondary-index", {"WRITE_PERCENT": "0"}, 'invalid WRITE_PERCENT="0": must be above 0'),
    ("sql-secondary-index", {"TABLE": "Bad-Name"}, 'invalid TABLE="Bad-Name"'),
]


@pytest.mark.parametrize("workload,knobs,message", CASES, ids=[f"{w}-{'-'.join(k)}" for w, k, _ in CASES])
def test_a_bad_knob_is_named(binaries, postgres, tmp_path, testid, workload, knobs, message):
    table = f"bad_{testid}"
    r = ybbench_run(workload, postgres, tmp_path / "results", testid=testid, knobs={"TABLE": table, **knobs})
    assert r.code != 0
    assert message in r.output, r.output
    assert_nothing_written(postgres, tmp_path / "results", table)
