"""The generated dashboards: committed JSON is what the code generates, the
hygiene Grafana users rely on, and every query returns data from real
components (k6 runs, node_exporter, postgres_exporter, recording rules and
the YugabyteDB captures) in the native Prometheus."""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid

import pytest

from ybbench.dashboards import OUT, render

from .dashboards import all_queries, boards, fill, panels
from .stack import BIN, REPO, wait_until
from .ybbench_cli import ybbench_run

RATE_WINDOW = "20s"  # Grafana's $__rate_interval for a 5s scrape interval


def test_committed_json_is_what_the_code_generates():
    committed = {p.name: p.read_text() for p in OUT.glob("*.json")}
    generated = render()
    assert sorted(committed) == sorted(generated), "run: python -m ybbench.dashboards"
    for name, text in generated.items():
        assert committed[name] == text, f"{name} is stale: run python -m ybbench.dashboards"


def test_uids_are_unique_and_panels_have_ids():
    uids = [b["uid"] for b in boards().values()]
    assert len(uids) == len(set(uids)), uids
    for b in boards().values():
        ids = [p["id"] for p in panels(b)]
        assert len(ids) == len(set(ids)), f"{b['title']}: duplicate panel ids"
        assert b["schemaVersion"] == 41, b["title"]


def test_every_dashboard_has_datasource_cluster_and_testid_variables_and_run_annotations():
    for b in boards().values():
        variables = {v["name"]: v for v in b["templating"]["list"]}
        assert variables["datasource"]["type"] == "datasource", b["title"]
        assert {"testid", "cluster"} <= set(variables), b["title"]
        names = {a["name"] for a in b["annotations"]["list"]}
        assert {"k6 runs", "k6 phases"} <= names, b["title"]


def test_datasource_by_variable_units_everywhere_no_instance_names():
    refs = []
    for b in boards().values():
        refs += [(b["title"], v["name"], v["datasource"]) for v in b["templating"]["list"] if "datasource" in v]
        refs += [(b["title"], a["name"], a["datasource"]) for a in b["annotations"]["list"]]
        for p in panels(b):
            if p["type"] == "row":
                continue
            where = f"{b['title']} / {p['title']}"
            assert p["fieldConfig"]["defaults"].get("unit"), f"{where}: no unit"
            refs.append((b["title"], p["title"], p["datasource"]))
            refs += [(b["title"], p["title"], t["datasource"]) for t in p["targets"]]
    for board, what, ds in refs:
        assert ds == {"type": "prometheus", "uid": "${datasource}"}, f"{board} / {what}: datasource {ds}"
    for q in all_queries():
        assert not re.search(r'instance\s*=~?\s*"[^$]', q.expr), f"{q}: hard-coded instance: {q.expr}"
        assert not re.search(r"\d+\.\d+\.\d+\.\d+|localhost|:\d{2,5}\b", q.expr), f"{q}: host in {q.expr}"


def test_rates_use_rate_interval_or_a_recording_rule():
    for q in all_queries():
        for window in re.findall(r"\[([^\]]+)\]", q.expr):
            assert window == "$__rate_interval", f"{q}: window [{window}] in {q.expr}"


def _k6_open_model(testid: str, prometheus_url: str) -> None:
    env = dict(os.environ, K6_PROMETHEUS_RW_SERVER_URL=f"{prometheus_url}/api/v1/write",
               K6_PROMETHEUS_RW_PUSH_INTERVAL="1s", K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM="true")
    subprocess.run([str(BIN / "k6"), "run", "--quiet", "--no-summary", "--tag", f"testid={testid}",
                    "-o", "experimental-prometheus-rw", str(REPO / "tests" / "k6" / "dropped_iterations.js")],
                   check=True, capture_output=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def live(prometheus, postgres, tmp_path_factory):
    """Real k6 runs into the native Prometheus: inserts, selects of which
    some miss their key, inserts of keys that exist (SQLSTATE 23505),
    contended updates that retry (40001), and an open-model run that drops
    iterations. Returns the query window."""
    results = tmp_path_factory.mktemp("dash-results")
    run = f"d{uuid.uuid4().hex[:8]}"
    start = time.time()
    common = {"VUS": 4, "KEY_PREFIX": run}
    ins = ybbench_run("sql-inserts", postgres, results, testid=f"{run}-ins", prometheus=prometheus.url,
                      knobs={**common, "DURATION": "5s"})
    assert ins.code == 0, ins.output
    written = ins.digest()["rows_written"]
    # Delete every odd key but the last (the workload's setup checks it):
    # about half the selects then find nothing.
    postgres.query(f"DELETE FROM postgresqlkeyvalue WHERE k LIKE '{run}:%' "
                   f"AND split_part(k, ':', 2)::bigint % 2 = 1 AND split_part(k, ':', 2)::bigint < {written - 1}")
    sel = ybbench_run("sql-selects", postgres, results, testid=f"{run}-sel", prometheus=prometheus.url,
                      knobs={**common, "DURATION": "4s", "MAX_WRITTEN_KEY": written})
    assert sel.code == 0, sel.output
    assert sel.metric("ybbench_keys_missing").get("count", 0) > 0, sel.output
    # The same keys again: every insert fails with a unique violation.
    dup = ybbench_run("sql-inserts", postgres, results, testid=f"{run}-dup", prometheus=prometheus.url,
                      knobs={**common, "DURATION": "3s"})
    assert dup.metric("ybbench_errors").get("count", 0) > 0, dup.output
    # Every VU updating the same two rows under repeatable read: PostgreSQL
    # answers concurrent updates with 40001, which the workload retries.
    upd = ybbench_run("sql-updates", postgres, results, testid=f"{run}-upd", prometheus=prometheus.url,
                      knobs={"VUS": 8, "DURATION": "3s", "KEY_PREFIX": run, "MAX_WRITTEN_KEY": 2,
                             "WRITE_PERCENT": 100, "ISOLATION": "repeatable_read"})
    assert upd.metric("ybbench_retries").get("count", 0) > 0, upd.output
    _k6_open_model(f"{run}-open", prometheus.url)
    # Rules evaluate every 5s: wait until the k6 rule has seen the runs.
    wait_until(lambda: prometheus.query(f'testid:ybbench_k6_ops:rate1m{{testid=~"{run}-.*"}}'),
               "the k6 recording rule to record the runs", timeout=60)
    return {"testid": f"{run}-.*", "start": start - 30, "end": time.time() + 1}


def _values(live: dict) -> dict[str, str]:
    """Grafana's variables as a user opening the dashboard would have them."""
    return {"testid": live["testid"], "cluster": "native", "device": ".*", "database": ".*",
            "__rate_interval": RATE_WINDOW}


@pytest.mark.parametrize("query", all_queries(), ids=str)
def test_every_panel_query_returns_data(live, prometheus, query):
    expr = fill(query.expr, _values(live))
    try:
        result = prometheus.api("query_range", query=expr, start=live["start"], end=live["end"], step="2s")["result"]
    except Exception as e:  # noqa: BLE001 - reported with the panel's name
        pytest.fail(f"{query}: query failed: {expr}\n{e}")
    assert result, f"{query}: no series for {expr}"
