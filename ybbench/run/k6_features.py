"""Trends as Prometheus native histograms, asked for the way each k6 takes
it: k6 v1 reads K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM; k6 v2 made that
variable a deprecated alias of its `native-histograms` feature (it warns
"Legacy env var detected, use --features or K6_FEATURES instead" on every
run, and retires such aliases later), so there it is K6_FEATURES. Either
way every k6 series also carries k6_feature_native_histograms="true" on v2
(k6's applyFeatureRunTags)."""

from __future__ import annotations

import subprocess

from ybbench.core.errors import UserError
from ybbench.run import k6_process, versions

LEGACY = "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM"
FEATURE = "native-histograms"


def k6_major(k6: str) -> int | None:
    """k6's major version, as `k6 version` says; None when it says none."""
    try:
        out = k6_process.version_text(k6)
    except (UserError, subprocess.TimeoutExpired):
        return None
    m = versions.K6_LINE.match(out)
    return int(m.group(1)[1:].split(".")[0]) if m else None


def native_histograms(k6: str, env: dict[str, str]) -> None:
    """Asks k6 for native histograms in `env`, unless the user's environment
    already says something about them (the legacy variable, or K6_FEATURES
    naming the feature), which wins."""
    features = [f.strip() for f in env.get("K6_FEATURES", "").split(",") if f.strip()]
    if LEGACY in env or FEATURE in features:
        return
    if (k6_major(k6) or 1) >= 2:
        env["K6_FEATURES"] = ",".join([*features, FEATURE])
    else:
        env[LEGACY] = "true"
