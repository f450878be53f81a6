"""Every knob a workload reads can be set the two ways users run them:
`ybbench run --set` (KNOBS) and the compose k6 service's environment."""

from __future__ import annotations

import re

import yaml

from ybbench.core.catalog import KNOBS

from ..support.stack import REPO

READERS = re.compile(r'\b(?:int|str|oneOf|duration|number|nodes|identifier|stages)\("([A-Z_]+)"')
SET_BY_YBBENCH = {"SUMMARY_JSON"}  # ybbench run points it into results/<testid>/


def knobs_read_by_scripts() -> set[str]:
    return {name for f in (REPO / "k6-scripts").rglob("*.js") for name in READERS.findall(f.read_text())}


def test_every_knob_can_be_set_with_ybbench_run():
    read = knobs_read_by_scripts()
    assert {"OP_SIZE", "ISOLATION", "LOAD_MODEL", "STAGES", "REQUEST_DISTRIBUTION"} <= read
    assert read - SET_BY_YBBENCH <= set(KNOBS), read - set(KNOBS)


def test_every_knob_passes_through_the_compose_k6_service():
    compose = yaml.safe_load((REPO / "compose" / "docker-compose.yml").read_text())
    env = set(compose["services"]["k6"]["environment"])
    assert knobs_read_by_scripts() <= env, knobs_read_by_scripts() - env
