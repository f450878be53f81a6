"""`make bench`'s go-ycsb rows (bench/go_ycsb.py): its counts and run length
read from a recorded go-ycsb v1.0.3 run (YCSB A, 4 threads, stopped with
SIGINT after 2 s; its password and port replaced), the expected numbers
read by eye from that output. Each bench run also checks its count against
the server's pg_stat_statements, which stops the bench on a mismatch."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import go_ycsb

RECORDED = (Path(__file__).parents[1] / "data" / "go-ycsb" / "run-workload-a.txt").read_text()


def test_its_statements_are_its_reads_and_updates_not_their_total_again():
    # READ Count: 5272, UPDATE Count: 5317 (TOTAL Count: 10589, their sum).
    assert go_ycsb.operations(RECORDED) == 5272 + 5317


def test_its_run_length_is_its_own_run_finished_line():
    assert go_ycsb.length(RECORDED) == pytest.approx(1.890972333)
    assert go_ycsb.length("Run finished, takes 1m2.5s\n") == pytest.approx(62.5)
    assert go_ycsb.length("Run finished, takes 950.5ms\n") == pytest.approx(0.9505)


def test_an_output_without_counts_stops_the_bench():
    with pytest.raises(RuntimeError, match="no READ or UPDATE count"):
        go_ycsb.operations(RECORDED.split("Run finished")[0])
