"""k6 client: VUs, iterations, dropped iterations, per-operation latency,
errors by SQLSTATE class, retries, TPC-C's tpmC and rollbacks, and the
run's k6 log from Loki."""

from __future__ import annotations

from grafana_foundation_sdk.builders import dashboard as gd

from . import k6_panels, log_panels
from .common import K6, dashboard, timeseries

RATE = "$__rate_interval"
# k6's own iterations, kept apart by op tag, never summed across tags: with
# OPS_PER_ITERATION=N an op=loop iteration ran N statements, each also
# counted under its own op (lib/loop.js).
ITERATIONS = ("k6's own iterations by the op they are tagged with. One iteration is one statement, except with "
              "OPS_PER_ITERATION=N: then op=loop is k6's iteration of the inner loop, which ran N statements, "
              "each counted under its op as well (so the lines are not to be added up); op=idle ran nothing.")


TPMC = ("New-Orders that committed, per minute: k6's New-Order iterations less those that failed and those "
        "rolled back, x 60. Over a whole run it is summary.json's tpcc.tpmc. Spec mode (TPCC_MODE=spec): at most "
        "12.86 x warehouses, and efficiency is tpmC over that; throughput mode has no think time: not bounded. "
        "NOPM, the database's count (D_NEXT_O_ID's advance, summary.json's tpcc.nopm, as HammerDB reports it), "
        "is read once after the run, so it has no live series here.")

# The statements style's (TPCC_STYLE=statements) TPC-C series: per transaction, as yugabyte/tpcc reports them.
TPCC_OPS = 'op=~"new_order|payment|order_status|delivery|stock_level"'
RETRIED = ("Transactions a second by the retries each needed before it ended (1, 2, ... 10, 11+; 0 left out), "
           "TPCC_STYLE=statements only: a serialization failure (40001) or deadlock (40P01) runs the whole "
           "transaction again. summary.json's tpcc.attempts.<op>.retry_histogram is the same over the whole run.")
ATTEMPT = ("p99 of each transaction's final attempt alone (yugabyte/tpcc's \"operation\"; the op latency panels: "
           "with its retries) and of its failed attempts, TPCC_STYLE=statements only.")


def tpmc(selector: str, rng: str = RATE) -> str:
    """60 x (New-Orders - failed - rolled back) per second over rng; a missing
    error or rollback series counts as 0 (k6 makes one at its first sample).
    The run report draws the same (ybbench/report/tpcc.py)."""
    no = selector[:-1] + ', op="new_order"}'
    iterations = f"sum by (testid) (rate(k6_iterations_total{no}[{rng}]))"
    less = " - ".join(f"(sum by (testid) (rate(k6_ybbench_{m}_total{no}[{rng}])) or 0 * {iterations})"
                      for m in ("errors", "rollbacks"))
    return f"60 * ({iterations} - {less})"


def build() -> gd.Dashboard:
    k = f"{{{K6}}}"
    kw = f'{{{K6}, op=~"insert|update"}}'
    return (
        dashboard("ybbench-k6", "ybbench / k6 client",
                  "What the load generator saw: VUs, iterations, dropped iterations (open model), per-operation "
                  "throughput and latency, errors by SQLSTATE class and retries, and the run's k6 log.",
                  logs=True)
        .with_row(gd.Row("Load"))
        .with_panel(timeseries("VUs", "short", [
            (f"sum by (testid) (k6_vus{k})", "{{testid}} active"),
            (f"sum by (testid) (k6_vus_max{k})", "{{testid}} allocated"),
        ], width=8))
        .with_panel(timeseries("k6 iterations/s by op tag", "ops", [
            (f"sum by (testid, scenario, op) (rate(k6_iterations_total{k}[{RATE}]))", "{{testid}} {{scenario}} {{op}}"),
        ], width=8, description=ITERATIONS))
        .with_panel(timeseries("Dropped iterations/s", "ops", [
            (f"sum by (testid, scenario) (rate(k6_dropped_iterations_total{k}[{RATE}]))", "{{testid}} {{scenario}}"),
        ], width=8, description="Open model only: iterations that found no free VU. Above 0 the target "
                                "arrival rate was not met."))
        .with_row(gd.Row("Operations"))
        .with_panel(k6_panels.ops_per_second())
        .with_panel(k6_panels.latency_percentiles())
        .with_panel(k6_panels.latency_avg_max())
        .with_panel(timeseries("k6 iteration duration p95 / p99 by scenario and op tag", "s", [
            (f"histogram_quantile({q}, sum by (testid, scenario, op) (rate(k6_iteration_duration_seconds{k}[{RATE}])))",
             f"{{{{testid}}}} {{{{scenario}}}} {{{{op}}}} p{name}")
            for q, name in ((0.95, "95"), (0.99, "99"))
        ], description=ITERATIONS))
        .with_panel(timeseries("Successful writes/s", "ops", [
            # The difference, or the writes alone while no error series exists.
            (f"(sum by (testid) (rate(k6_iterations_total{kw}[{RATE}]))"
             f" - sum by (testid) (rate(k6_ybbench_errors_total{kw}[{RATE}])))"
             f" or sum by (testid) (rate(k6_iterations_total{kw}[{RATE}]))", "{{testid}}"),
        ], width=8, description="Write statements (insert, update) that did not fail. A statement writes "
                                "OP_SIZE rows in the kv workloads; updates that found no row are under Keys missing."))
        .with_panel(timeseries("Keys missing/s", "ops", [
            (f"sum by (testid, op) (rate(k6_ybbench_keys_missing_total{k}[{RATE}]))", "{{testid}} {{op}}"),
        ], width=8, description="Reads of a key the workload expected to exist; 0 in a correct run."))
        .with_panel(timeseries("Retries/s", "ops", [
            (f"sum by (testid, op) (rate(k6_ybbench_retries_total{k}[{RATE}]))", "{{testid}} {{op}}"),
        ], width=8, description="Statements retried after SQLSTATE 40001 (serialization failure)."))
        .with_row(gd.Row("TPC-C (tpcc)"))
        .with_panel(timeseries("tpmC: New-Orders committed per minute", "short", [(tpmc(k), "{{testid}}")],
                               width=12, description=TPMC))
        .with_panel(timeseries("TPC-C rollbacks/s by transaction", "ops", [
            (f"sum by (testid, op) (rate(k6_ybbench_rollbacks_total{k}[{RATE}]))", "{{testid}} {{op}}"),
        ], width=12, description="Transactions rolled back as the specification asks: 1% of New-Orders "
                                 "(an unused item, SQLSTATE TPC01). Not errors; not in tpmC."))
        .with_panel(timeseries("TPC-C retries per transaction, by transaction", "short", [
            (f"sum by (testid, op) (rate(k6_ybbench_retries_total{{{K6}, {TPCC_OPS}}}[{RATE}])) / "
             f"sum by (testid, op) (rate(k6_iterations_total{{{K6}, {TPCC_OPS}}}[{RATE}]))", "{{testid}} {{op}}"),
        ], width=8, description="Retries (40001, 40P01: the transaction run again from its start) over the "
                                "transactions that ended, per transaction; no line while none was retried."))
        .with_panel(timeseries("TPC-C retried transactions/s by retries", "ops", [
            (f'sum by (testid, op, retries) (rate(k6_ybbench_tpcc_retried_total{{{K6}, retries!="0"}}[{RATE}]))',
             "{{testid}} {{op}} {{retries}}"),
        ], width=8, description=RETRIED))
        .with_panel(timeseries("TPC-C final and failed attempt p99 by transaction", "s", [
            (f"histogram_quantile(0.99, sum by (testid, op) (rate(k6_ybbench_tpcc_{m}_seconds{k}[{RATE}])))",
             f"{{{{testid}}}} {{{{op}}}} {name}")
            for m, name in (("attempt", "final attempt"), ("failed_attempt", "failed attempt"))
        ], width=8, description=ATTEMPT))
        .with_row(gd.Row("Errors"))
        .with_panel(k6_panels.errors_by_class())
        .with_panel(timeseries("k6 errors/s by SQLSTATE", "ops", [
            (f"sum by (testid, op, sqlstate) (rate(k6_ybbench_errors_total{k}[{RATE}]))",
             "{{testid}} {{op}} {{sqlstate}}"),
        ]))
        .with_row(gd.Row("Log (Loki)"))
        .with_panel(log_panels.k6_log())
    )
