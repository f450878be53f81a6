"""ybbench/cli.py: --prometheus and --loki from YBBENCH_PROMETHEUS and
YBBENCH_LOKI when the flag is absent (the compose `ybbench` service sets
them); unset, or with the flag given, nothing changes."""

from __future__ import annotations

import pytest

from ybbench import cli


def parsed(argv: list[str]):
    a = cli.parser().parse_args(argv)
    cli.env_defaults(a)
    return a


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("YBBENCH_PROMETHEUS", "http://prometheus:9090")
    monkeypatch.setenv("YBBENCH_LOKI", "http://loki:3100")


@pytest.mark.parametrize("argv,loki", [
    (["run", "sql-inserts"], True), (["sweep", "sql-inserts"], True), (["doe", "d.yaml", "--run"], True),
    (["doe", "d.yaml", "--resume", "x"], True), (["report", "t"], False), (["reproduce", "000"], False),
    (["scale", "sql-inserts", "--clusters", "c.yaml"], False),
])
def test_absent_flags_come_from_the_environment(env, argv, loki):
    a = parsed(argv)
    assert a.prometheus == "http://prometheus:9090"
    assert getattr(a, "loki", None) == ("http://loki:3100" if loki else None)


def test_a_given_flag_wins(env):
    a = parsed(["run", "sql-inserts", "--prometheus", "http://p:1", "--loki", "http://l:2"])
    assert (a.prometheus, a.loki) == ("http://p:1", "http://l:2")


def test_the_design_analysis_alone_takes_neither(env):
    """`doe FILE` without --run refuses --prometheus and --loki: the
    environment must not make it refuse."""
    a = parsed(["doe", "d.yaml"])
    assert (a.prometheus, a.loki) == (None, None)


def test_unset_changes_nothing(monkeypatch):
    for var in cli.ENV_DEFAULTS.values():
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("YBBENCH_PROMETHEUS", "")
    a = parsed(["run", "sql-inserts"])
    assert (a.prometheus, a.loki) == (None, None)
