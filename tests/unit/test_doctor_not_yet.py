"""doctor's `queries` check: which absent k6 series a healthy stack may not
have yet (an event counter; one op's series before a workload ran it) and
which are a fault (a k6 series every run pushes). The selectors are written
as doctor builds them from Prometheus' parse_query."""

from __future__ import annotations

from ybbench.doctor.queries import not_yet


def test_one_ops_series_and_event_counters_wait_for_their_run():
    assert not_yet("k6_iterations_total", '{__name__="k6_iterations_total", op="new_order", testid=~".+"}')
    assert not_yet("k6_ybbench_rollbacks_total", '{__name__="k6_ybbench_rollbacks_total", testid=~".+"}')
    assert not_yet("k6_ybbench_errors_total", '{__name__="k6_ybbench_errors_total"}')
    # TPC-C's five ops by a regex; the statements style's attempts and its retries by count.
    assert not_yet("k6_iterations_total", '{__name__="k6_iterations_total", op=~"new_order|payment|delivery"}')
    assert not_yet("k6_ybbench_tpcc_attempt_seconds", '{__name__="k6_ybbench_tpcc_attempt_seconds"}')
    assert not_yet("k6_ybbench_tpcc_retried_total", '{__name__="k6_ybbench_tpcc_retried_total", retries!="0"}')


def test_series_every_run_pushes_are_required():
    assert not not_yet("k6_iterations_total", '{__name__="k6_iterations_total", testid=~".+"}')
    assert not not_yet("k6_iterations_total", '{__name__="k6_iterations_total", op=~".+"}')  # any op: every run
    assert not not_yet("k6_iteration_duration_seconds", '{__name__="k6_iteration_duration_seconds", scenario="x"}')
    # A YugabyteDB series with an op label is not k6's: absent is a fault.
    assert not not_yet("rpc_latency_count", '{__name__="rpc_latency_count", op="write"}')
    # A label that only ends in "op" is not the op label.
    assert not not_yet("k6_iterations_total", '{__name__="k6_iterations_total", loop="1"}')
