"""k6 v2, the compose stack's k6, asked for native histograms its way: `ybbench
run` sets K6_FEATURES=native-histograms there (k6 v1: the old variable),
so a v2 run's log has no "Legacy env var" warning, its trends reach
Prometheus as native histograms (the report's quantiles answer), and every
k6 series carries the feature's run tag. The old variable on v2 is the
planted contrast: k6 warns, naming it."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from ybbench.run import k6_features

from ..support.stack import BIN, REPO
from ..support.ybbench_cli import ybbench_run

pytestmark = pytest.mark.late  # k6 v1.1.0 (native/build.sh late)

WARNING = "Legacy env var detected, use --features or K6_FEATURES instead"


@pytest.mark.parametrize("k6, major", [("k6", 1), ("k6-v2", 2), ("k6-v1.1", 1)])
def test_each_k6s_major_version_from_k6_itself(binaries, k6, major):
    assert k6_features.k6_major(str(BIN / k6)) == major


def test_a_v2_run_asks_for_native_histograms_without_the_legacy_variable(binaries, postgres, prometheus, tmp_path):
    rid = f"v2{uuid.uuid4().hex[:8]}"
    r = ybbench_run("sql-inserts", postgres, tmp_path, testid=rid, prometheus=prometheus.url,
                    knobs={"VUS": 2, "DURATION": "3s", "KEY_PREFIX": rid}, extra_env={"K6": str(BIN / "k6-v2")})
    assert r.code == 0, r.output
    log = (r.folder / "k6.log").read_text()
    assert WARNING not in log and "Unknown feature flag" not in log, log
    # Every k6 series of the run carries the feature's run tag (k6 v2's applyFeatureRunTags).
    series = prometheus.api("series", **{"match[]": f'{{testid="{rid}"}}'})
    assert series and all(s.get("k6_feature_native_histograms") == "true" for s in series), series[:3]
    # The trend is a native histogram: a quantile of it answers (a classic one would have _bucket series).
    q = prometheus.api("query", query=f'histogram_quantile(0.99, sum(k6_iteration_duration_seconds{{testid="{rid}"}}))')
    assert q["result"] and float(q["result"][0]["value"][1]) > 0, q
    assert not [s for s in series if s["__name__"].endswith("_bucket")]
    # The run records the k6 it ran though the binary is not named k6 (its version line starts
    # "k6-v2 v2.2.0"): the version the build pins in its go.mod.
    pinned = re.search(r"^\s*go\.k6\.io/k6/v2 (v\S+)$", (REPO / "native" / "k6-v2" / "go.mod").read_text(), re.M)[1]
    assert json.loads((r.folder / "params.json").read_text())["versions"]["k6"] == pinned


def test_the_legacy_variable_on_v2_is_what_k6_warns_about(binaries, postgres, prometheus, tmp_path):
    rid = f"v2l{uuid.uuid4().hex[:8]}"
    r = ybbench_run("sql-inserts", postgres, tmp_path, testid=rid, prometheus=prometheus.url,
                    knobs={"VUS": 1, "DURATION": "1s", "KEY_PREFIX": rid},
                    extra_env={"K6": str(BIN / "k6-v2"), k6_features.LEGACY: "true"})
    assert r.code == 0, r.output
    assert WARNING in (r.folder / "k6.log").read_text()
