"""OPS_PER_ITERATION=N on YCSB's run phase (k6-scripts/ycsb.js): each k6
iteration runs N reads or updates in our Go module (ycsb_loop.go), counted
as the JavaScript path counts them. Expected values come from the database
(pg_stat_statements' calls, pg_stat_user_tables' updated tuples, the
stamps the fields hold), from k6's own count of its loops, and from the
binomial law of the workload's read proportion; never from the loop's code."""

from __future__ import annotations

import uuid

from ..support.workloads import binomial, count, run_ok
from ..support.ybbench_cli import verify
from ..support.inner_loop import LOOP, N, calls, loops, settled, stat, unacked

RECORDS, FIELDS = 300, 10


def load(postgres, tmp_path) -> str:
    table = f"usertable_{uuid.uuid4().hex[:8]}"
    run_ok("ycsb-load", postgres, tmp_path, TABLE=table, RECORD_COUNT=RECORDS, VUS=2, DURATION="60s")
    return table


def read_text(table: str) -> str:
    """lib/ycsb.js's read, the statement the server counts."""
    return f"SELECT ycsb_key, {', '.join(f'field{f}' for f in range(FIELDS))} FROM {table} WHERE ycsb_key = $1"


def updates_called(postgres, table: str) -> int:
    return sum(calls(postgres, f"UPDATE {table} SET field{f} = $1 WHERE ycsb_key = $2") for f in range(FIELDS))


def test_ycsb_a_counts_as_the_server_mixes_half_and_half_and_passes_verify(postgres, tmp_path):
    table = load(postgres, tmp_path)
    before = stat(postgres, table, "n_tup_upd")
    d, run = run_ok("ycsb", postgres, tmp_path, TABLE=table, RECORD_COUNT=RECORDS, VUS=2, DURATION="3s",
                    YCSB_WORKLOAD="a", REQUEST_DISTRIBUTION="uniform", **LOOP)
    reads, updates = count(d, "select"), count(d, "update")
    assert d["errors"] == 0 and d["keys_missing"] == 0 and reads + updates > 20 * N
    # The server's counts of each statement, and of the tuples updated.
    assert calls(postgres, read_text(table)) == reads
    assert updates_called(postgres, table) == updates
    assert settled(postgres, table, "n_tup_upd", before + updates) == before + updates
    # k6 ran the loop: N operations per iteration, but those the run's end cut off.
    assert loops(run) * N == reads + updates + sum(rows for _, rows in unacked(run)), (loops(run), reads, updates)
    # Workload a: each operation an update with probability 1/2, independently.
    ok, why = binomial(updates, reads + updates, 0.5)  # refused once in 10^6 runs
    assert ok, why
    # Each update stamps its field U<tag>:<operation number>.<field>: with the
    # operation's number below the loops' N x iterations; verify reads them.
    fields = " UNION ALL ".join(f"SELECT field{f} AS v FROM {table}" for f in range(FIELDS))
    stamps = postgres.query(f"SELECT v FROM ({fields}) s WHERE v LIKE 'U%'").splitlines()
    assert 0 < len(stamps) <= updates
    numbers = [int(v.split(":", 1)[1].split(".", 1)[0]) for v in stamps]
    assert max(numbers) < loops(run) * N and max(numbers) >= N  # past the first iteration's
    p, r = verify(run.folder.parent, run.folder.name, postgres, "--chunk", "64")
    assert p.returncode == 0, p.stdout + p.stderr
    assert r["present"]["count"] == RECORDS and r["updated_by_this_run"]["count"] == len(stamps)
    assert r["never_written"]["count"] == 0


def test_ycsb_c_only_reads(postgres, tmp_path):
    table = load(postgres, tmp_path)
    before = stat(postgres, table, "n_tup_upd")
    d, run = run_ok("ycsb", postgres, tmp_path, TABLE=table, RECORD_COUNT=RECORDS, VUS=2, DURATION="2s",
                    YCSB_WORKLOAD="c", **LOOP)
    reads = count(d, "select")
    assert d["errors"] == 0 and d["keys_missing"] == 0 and reads > 10 * N and count(d, "update") == 0
    assert calls(postgres, read_text(table)) == reads
    assert updates_called(postgres, table) == 0 and stat(postgres, table, "n_tup_upd") == before
    assert loops(run) * N == reads + sum(rows for _, rows in unacked(run))


def test_ycsb_operation_count_must_end_on_whole_iterations(postgres, tmp_path):
    run = run_ok("ycsb", postgres, tmp_path, _ok=False, TABLE="usertable", DURATION="2s", OPERATION_COUNT="15", **LOOP)
    assert run.code != 0
    log = (run.folder / "k6.log").read_text() if (run.folder / "k6.log").exists() else ""
    assert "OPERATION_COUNT=15 is not a multiple of OPS_PER_ITERATION=10" in run.output + log, run.output + log


def test_the_benchs_ycsb_loop_rows_count_the_servers_statements(postgres, tmp_path):
    # make bench's ycsb-a loop10 row (bench/client_efficiency.py, beside
    # go-ycsb): its count of statements is the server's, not those plus k6's loops.
    from bench import client_efficiency as ce

    assert "ycsb" in ce.LOOPED
    table = load(postgres, tmp_path)
    m = ce.k6(postgres, "ycsb", "loop10", 2, 2, TABLE=table, RECORD_COUNT=RECORDS, YCSB_WORKLOAD="a",
              REQUEST_DISTRIBUTION="uniform")
    assert m.ops == calls(postgres, read_text(table)) + updates_called(postgres, table) > 0


def test_prometheus_holds_each_read_and_update_of_the_loop(postgres, prometheus, tmp_path):
    # The JavaScript path's series, per op: k6_iterations_total{op} and the
    # native histogram k6_iteration_duration_seconds{op}, as many as the
    # server's calls of the op's statements; k6's own loops apart (op=loop).
    from ..support.ybbench_cli import ybbench_run

    table = load(postgres, tmp_path)
    testid = f"ily{uuid.uuid4().hex[:8]}"
    run = ybbench_run("ycsb", postgres, tmp_path / "results", testid=testid, prometheus=prometheus.url,
                      knobs={"TABLE": table, "RECORD_COUNT": str(RECORDS), "VUS": "2", "DURATION": "3s",
                             "YCSB_WORKLOAD": "a", "REQUEST_DISTRIBUTION": "uniform",
                             **{k: str(v) for k, v in LOOP.items()}})
    assert run.code == 0, run.output
    server = {"select": calls(postgres, read_text(table)), "update": updates_called(postgres, table)}

    def last(promql: str) -> float:
        result = prometheus.api("query", query=f"{promql}[10m]")["result"]
        assert len(result) == 1, (promql, result)
        return float(result[0]["values"][-1][1])

    for op, n in server.items():
        assert n > 0 and last(f'k6_iterations_total{{testid="{testid}", op="{op}"}}') == n, op
        h = prometheus.query(f'histogram_count(k6_iteration_duration_seconds{{testid="{testid}", op="{op}"}})')
        assert len(h) == 1 and float(h[0]["value"][1]) == n, (op, h)
    assert last(f'k6_iterations_total{{testid="{testid}", op="loop"}}') == loops(run)
