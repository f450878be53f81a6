"""Every knob a workload reads can be set the two ways users run them:
`ybbench run --set` (KNOBS) and the compose k6 service's environment. The
knobs read are found in the scripts by ybbench/core/script_knobs.py, the
reader of docs/workloads.md's knobs table too."""

from __future__ import annotations

import yaml

from ybbench.core import script_knobs
from ybbench.core.catalog import KNOBS

from ..support.stack import REPO

SET_BY_YBBENCH = {"SUMMARY_JSON"}  # ybbench run points it into results/<testid>/


def knobs_read_by_scripts() -> set[str]:
    return {r.knob for r in script_knobs.all_reads()}


def test_every_knob_can_be_set_with_ybbench_run():
    read = knobs_read_by_scripts()
    # STAGES through run.js's stages(), DB_SSLROOTCERT through config.js's tlsFile(): functions that read.
    assert {"OP_SIZE", "ISOLATION", "LOAD_MODEL", "STAGES", "REQUEST_DISTRIBUTION", "DB_SSLROOTCERT"} <= read
    assert read - SET_BY_YBBENCH <= set(KNOBS), read - set(KNOBS)


def test_every_knob_passes_through_the_compose_k6_service():
    compose = yaml.safe_load((REPO / "compose" / "docker-compose.yml").read_text())
    env = set(compose["services"]["k6"]["environment"])
    assert knobs_read_by_scripts() <= env, knobs_read_by_scripts() - env
