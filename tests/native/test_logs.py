"""Loki keeps the logs: the compose Loki config runs on the pinned Loki, and
`ybbench run --loki` ships a run's k6 log there, labelled with its testid."""

from __future__ import annotations

import pytest

from ..support.stack import free_port, wait_until
from ..support.ybbench_cli import ybbench_run

pytestmark = pytest.mark.late  # Loki


def test_a_runs_k6_log_is_in_loki_under_its_testid(postgres, loki, tmp_path, testid):
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid,
                    knobs={"VUS": 2, "DURATION": "2s"}, extra_args=["--loki", loki.url])
    assert r.code == 0, r.output
    lines = wait_until(lambda: loki.lines(f'{{job="ybbench", testid="{testid}", workload="sql-inserts"}}'),
                       "the run's log lines in Loki", timeout=30)
    assert any(f"sql-inserts: keys {testid}:<n>" in line for line in lines), lines[:5]
    assert len(lines) == len((r.folder / "k6.log").read_text().splitlines())
    assert postgres.password not in "\n".join(lines)


def test_loki_down_stops_the_run_before_any_load(postgres, tmp_path, testid):
    port = free_port()
    table = f"lokidown_{testid}"
    r = ybbench_run("sql-inserts", postgres, tmp_path / "results", testid=testid, knobs={"TABLE": table},
                    extra_args=["--loki", f"http://127.0.0.1:{port}"])
    assert r.code != 0 and f"Loki at http://127.0.0.1:{port} is not reachable" in r.output
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())
    assert postgres.query(f"SELECT to_regclass('public.{table}') IS NULL") == "t"


def test_loki_enforces_its_retention(loki):
    """limits_config.retention_period does nothing unless the compactor
    applies it; Loki refuses retention without a delete_request_store, so a
    Loki that runs this config has both."""
    import urllib.request

    import yaml

    with urllib.request.urlopen(f"{loki.url}/config", timeout=10) as r:
        config = yaml.safe_load(r.read())
    assert config["compactor"]["retention_enabled"] is True
    assert config["compactor"]["delete_request_store"] == "filesystem"
    assert config["limits_config"]["retention_period"] == "1w"
