"""Recording rules: promtool checks them and runs their unit tests, and the
native Prometheus loads and evaluates them without errors."""

from __future__ import annotations

import subprocess

from ..support.stack import REPO, wait_until

RULES = REPO / "prometheus" / "rules"


def test_promtool_unit_tests_pass(binaries):
    tests = sorted((RULES / "tests").glob("*.yml"))
    assert tests, "no rule unit tests in prometheus/rules/tests"
    p = subprocess.run([str(binaries / "promtool"), "test", "rules", *map(str, tests)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_promtool_checks_the_rule_files(binaries):
    files = sorted(RULES.glob("*.yml"))
    p = subprocess.run([str(binaries / "promtool"), "check", "rules", *map(str, files)], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_prometheus_loads_every_rule_and_evaluates_it_without_error(prometheus):
    def evaluated():
        groups = prometheus.api("rules")["groups"]
        rules = [r for g in groups for r in g["rules"]]
        return rules if rules and all(r.get("lastEvaluation", "").startswith("2") for r in rules) else None
    rules = wait_until(evaluated, "every rule group to be evaluated", timeout=30)
    names = {r["name"] for r in rules}
    assert "cluster:ybbench_ysql_ops:rate1m" in names
    unhealthy = [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"]
    assert not unhealthy, unhealthy
