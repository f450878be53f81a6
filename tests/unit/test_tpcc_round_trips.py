"""bench/tpcc_round_trips.py's arithmetic on two made-up snapshots: the
statements the server counted, plus BEGIN and COMMIT from its transactions
when the run sent blocks, or its rolled-back calls when it did not; the
setup's, the sessions' and the bench's own transactions taken out."""

from __future__ import annotations

import json

from bench.tpcc_round_trips import Counts, kind, parse, round_trips


def test_each_statement_is_counted_as_its_kind():
    assert kind("BEGIN") == kind("COMMIT") == kind("ROLLBACK") == "control"
    assert kind("CREATE INDEX IF NOT EXISTS orders_c ON orders (o_w_id)") == "setup"
    assert kind("SELECT $1 AS ok") == kind("SELECT d_w_id, d_id, d_next_o_id FROM district") == "setup"
    assert kind("SELECT json_build_object('calls', 1) FROM pg_stat_database") == "own"
    assert kind("SELECT tpcc_no($1, $2, $3, $4, $5, $6)") == kind("SELECT d_next_o_id FROM district") == "run"


def test_the_same_text_twice_is_summed_and_whitespace_folded():
    c = parse(json.dumps({"calls": [["SELECT  a\n FROM t", 2], ["SELECT a FROM t", 3]],
                          "commits": 1, "rollbacks": 0, "sessions": 1}))
    assert c.calls == {"SELECT a FROM t": 5}


def test_blocks_are_statements_and_two_a_transaction():
    before = Counts({"BEGIN": 8, "SELECT x": 100}, 1000, 10, 5)
    # 100 blocks (2 rolled back) of 28 statements; 8 new sessions; 5 setup statements; 3 own queries.
    after = Counts({"BEGIN": 16, "SELECT x": 100 + 2800, "CREATE INDEX i": 5}, 1000 + 98 + 8 + 5 + 3, 12, 13)
    r = round_trips(before, after, own=3)
    assert (r.statements, r.transactions, r.rollbacks, r.blocks) == (2800, 100, 2, True)
    assert r.total == 2800 + 200


def test_autocommit_calls_are_one_round_trip_each_failed_ones_too():
    before = Counts({"SELECT tpcc_no($1)": 0}, 0, 0, 0)
    # 100 calls, 2 of them raised (not in pg_stat_statements, rolled back); 8 sessions, 1 own query.
    after = Counts({"SELECT tpcc_no($1)": 98}, 98 + 8 + 1, 2, 8)
    r = round_trips(before, after, own=1)
    assert (r.statements, r.transactions, r.blocks) == (98, 100, False)
    assert r.total == 100
