"""Prometheus's HTTP API as the report and the analyses read it: the query
client (Prom), the step of a run's window, the rate range for k6's series,
the report's PromQL of k6's ops/s and latency, and a range query's series
by one label."""

from __future__ import annotations

import json
import math
import urllib.error
import urllib.parse
import urllib.request

from ybbench.core.errors import UserError
from ybbench.core.k6_series import STATEMENTS


class Prom:
    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def range(self, promql: str, start: float, end: float, step: float) -> list[dict]:
        return self._get("query_range", promql, start=f"{start:.3f}", end=f"{end:.3f}", step=f"{step:g}")

    def instant(self, promql: str, t: float) -> list[dict]:
        return self._get("query", promql, time=f"{t:.3f}")

    def _get(self, api: str, promql: str, **params) -> list[dict]:
        q = urllib.parse.urlencode({"query": promql, **params})
        try:
            with urllib.request.urlopen(f"{self.url}/api/v1/{api}?{q}", timeout=30) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            raise UserError(f"Prometheus at {self.url}: query {promql!r} failed: HTTP {e.code} "
                            f"{e.read().decode(errors='replace')[:300]}") from None
        except (urllib.error.URLError, OSError) as e:
            raise UserError(f"Prometheus at {self.url} is not reachable: {getattr(e, 'reason', e)}") from None
        return body["data"]["result"]


def window_step(start: float, end: float) -> float:
    """The query step for a window: about 120 points, at least 1 s."""
    return max(1.0, math.ceil((end - start) / 120))


def k6_range(prom: Prom, testid: str, start: float, end: float, step: float) -> str | None:
    """The rate range for k6's series: 3 of k6's pushes (their spacing over
    the window, K6_PROMETHEUS_RW_PUSH_INTERVAL) and at least 3 steps, so
    that a short run's rates are not read over mostly empty time. None when
    k6 pushed fewer than 2 samples."""
    window_ms = max(1, int((end - start) * 1000))
    got = prom.instant(f'max(count_over_time(k6_iterations_total{{testid="{testid}"}}[{window_ms}ms]))', end)
    pushes = float(got[0]["value"][1]) if got else 0
    if pushes < 2:
        return None
    return f"{max(math.ceil(3 * (end - start) / (pushes - 1)), int(3 * step))}s"


def prom_queries(testid: str, k6_rng: str) -> dict[str, str]:
    sel = f'testid="{testid}", {STATEMENTS}'  # k6's iterations of the inner loop are not ops
    hist = f"sum by (op) (rate(k6_iteration_duration_seconds{{{sel}}}[{k6_rng}]))"
    return {
        "ops_per_second": f"sum by (op) (rate(k6_iterations_total{{{sel}}}[{k6_rng}]))",
        "latency_avg_ms": f"histogram_sum({hist}) / histogram_count({hist}) * 1000",
        "latency_p99_ms": f"histogram_quantile(0.99, {hist}) * 1000",
    }


def labelled_series(result: list[dict], label: str) -> dict[str, dict]:
    """Each series of a range query by one label's value, NaN points dropped."""
    out = {}
    for s in result:
        pts = [(float(t), float(v)) for t, v in s["values"] if not math.isnan(float(v))]
        if pts:
            out[s["metric"].get(label, "")] = {"t": [p[0] for p in pts], "v": [p[1] for p in pts]}
    return out
