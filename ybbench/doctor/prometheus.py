"""Prometheus: it answers; every target ybbench's dashboards and reports
read is up (per job, YugabyteDB per export type); k6's remote write is
accepted, with native histograms; the scrape interval the dashboards
assume; this host's clock against Prometheus'."""

from __future__ import annotations

import time
from dataclasses import dataclass

import yaml

from ybbench.core.catalog import REPO
from ybbench.core import visibility
from ybbench.doctor import scrape_errors
from ybbench.doctor.check import NOT_YB, WARN, Check, Unreachable, fail, get_json, ok, skipped

CONFIG = REPO / "prometheus" / "prometheus.yml"
YB_EXPORTS = ("master_export", "tserver_export", "cql_export", "ysql_export")
# A clock this far off Prometheus' (beyond what the request's own time leaves
# unknown) moves every run window the report and compare read by as much.
MAX_SKEW_S = 1.0
TARGETS_TODO = ("start it, or fix the target file (`ybbench targets` writes them; compose: "
                "prometheus/targets/compose); Prometheus' /targets page says why it is down")


@dataclass
class Prom:
    url: str

    def api(self, path: str, **params) -> object:
        body = get_json(self.url, f"/api/v1/{path}", params or None)
        if not isinstance(body, dict) or body.get("status") != "success":
            raise Unreachable(f"Prometheus at {self.url}: /api/v1/{path} answered {str(body)[:300]}")
        return body["data"]

    def query(self, promql: str) -> list[dict]:
        return self.api("query", query=promql)["result"]


def repo_config() -> dict:
    return yaml.safe_load(CONFIG.read_text())


def reachable(prom: Prom) -> Check:
    name = "prometheus reachable"
    try:
        info = prom.api("status/buildinfo")
    except Unreachable as e:
        return fail(name, f"Prometheus answers at {prom.url}", str(e),
                    "start Prometheus (compose: docker compose up -d prometheus) or pass --prometheus URL "
                    "(or set YBBENCH_PROMETHEUS)")
    return ok(name, f"Prometheus answers at {prom.url}", f"Prometheus {info.get('version', '?')}")


def _groups(active: list[dict]) -> dict[str, list[dict]]:
    """Active targets by the name of their check: the job, and for
    YugabyteDB the job and export type (masters, tservers, YSQL, YCQL)."""
    out: dict[str, list[dict]] = {}
    for t in active:
        job = t["labels"].get("job", "?")
        key = f"{job} {t['labels'].get('export_type', '?')}" if job == "yugabytedb" else job
        out.setdefault(key, []).append(t)
    return out


def targets(prom: Prom, yugabytedb: bool) -> list[Check]:
    """One check per job of prometheus/prometheus.yml (YugabyteDB per export type)."""
    active = prom.api("targets", state="active")["activeTargets"]
    groups = _groups(active)
    hidden = visibility.hidden()
    # Prometheus scraping some of YugabyteDB's servers: it should scrape each kind.
    yugabytedb = yugabytedb or any(k.startswith("yugabytedb") for k in groups)
    wanted = []
    for job in (c["job_name"] for c in repo_config()["scrape_configs"]):
        wanted += [f"{job} {e}" for e in YB_EXPORTS] if job == "yugabytedb" else [job]
    out = []
    for key in wanted + sorted(set(groups) - set(wanted)):
        name = f"prometheus targets {key}"
        found = groups.get(key, [])
        expected = "every target up"
        kind = "yugabytedb" if key.startswith("yugabytedb") else key
        if not found:
            if kind in hidden:
                out.append(skipped(name, hidden[kind], expected))
            elif key.startswith("yugabytedb") and not yugabytedb:
                out.append(skipped(name, f"{NOT_YB}, and Prometheus scrapes no {key} target", expected))
            elif key == "postgres":
                out.append(skipped(name, "no postgres target: the PostgreSQL baseline (compose profile pg) "
                                         "is not scraped", expected))
            else:
                out.append(fail(name, "at least one target, up", "no target of this job",
                                "write the target files with `ybbench targets` (docs/scale-out.md) and point "
                                "Prometheus at them"))
            continue
        down, todos = [], []
        for t in (t for t in found if t["health"] != "up"):
            why = scrape_errors.explain(t)
            down.append(f"{t['labels'].get('instance', t['scrapeUrl'])} "
                        f"({t['health']}: {why[0] if why else t.get('lastError') or 'not scraped yet'})")
            if why and why[1] not in todos:
                todos.append(why[1])
        if down:
            out.append(fail(name, expected, f"{len(found) - len(down)} of {len(found)} up; down: {'; '.join(down)}",
                            "; ".join(todos) or TARGETS_TODO))
        else:
            out.append(ok(name, expected, f"{len(found)} of {len(found)} up: "
                          + ", ".join(t["labels"].get("instance", "?") for t in found)))
    return out


def _duration_s(text: str) -> float:
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
    for unit in ("ms", "s", "m", "h"):
        if text.endswith(unit) and text[:-len(unit)].isdigit():
            return int(text[:-len(unit)]) * units[unit]
    raise ValueError(text)


def scrape_interval(prom: Prom) -> Check:
    name = "prometheus scrape interval"
    want = repo_config()["global"]["scrape_interval"]
    expected = f"{want}, as prometheus/prometheus.yml (the dashboards' rate windows assume it)"
    loaded = yaml.safe_load(prom.api("status/config")["yaml"])
    got = loaded.get("global", {}).get("scrape_interval", "1m")
    if _duration_s(got) != _duration_s(want):
        return Check(name, WARN, expected, got, "use the project's prometheus/prometheus.yml, or expect rates "
                     "over $__rate_interval to be smoother or gappier than the tests check")
    return ok(name, expected, got)


def remote_write(prom: Prom) -> list[Check]:
    """k6 writes with remote write, its trends as native histograms."""
    flags = prom.api("status/flags")
    version = prom.api("status/buildinfo").get("version", "0")
    out = []
    name = "prometheus remote write receiver"
    expected = "--web.enable-remote-write-receiver (k6's --out experimental-prometheus-rw writes there)"
    if flags.get("web.enable-remote-write-receiver") == "true":
        out.append(ok(name, expected, "on"))
    else:
        out.append(fail(name, expected, "off: k6's samples would be refused",
                        "start Prometheus with --web.enable-remote-write-receiver (compose does)"))
    name = "prometheus native histograms"
    expected = "native histograms taken from remote write (Prometheus 3.x, or 2.x with the native-histograms feature)"
    features = flags.get("enable-feature", "")
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else 0
    if major >= 3 or "native-histograms" in features:
        out.append(ok(name, expected, f"Prometheus {version}" + (f", features {features}" if features else "")))
    else:
        out.append(fail(name, expected, f"Prometheus {version} without --enable-feature=native-histograms",
                        "use Prometheus 3.x (compose/.env pins it), or add --enable-feature=native-histograms: "
                        "k6's latency percentiles are native histograms"))
    # A k6 run already written: its trend must have arrived as a native histogram.
    name = "prometheus k6 latency is a native histogram"
    got = prom.query("last_over_time(k6_iteration_duration_seconds[1d])")
    expected = ("k6_iteration_duration_seconds as native histograms (k6 v2: K6_FEATURES=native-histograms; v1: "
                "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=true)")
    if not got:
        # Without native histograms k6 writes a trend as one float series per
        # stat: k6_iteration_duration_p99, _avg, ... (K6_PROMETHEUS_RW_TREND_STATS).
        classic = prom.api("label/__name__/values", **{"match[]": '{__name__=~"k6_iteration_duration_.+"}',
                                                        "start": f"{time.time() - 86400:.0f}"})
        if classic:
            names = ", ".join(sorted(classic))
            out.append(fail(name, expected, f"k6's trends arrived as classic series ({names}), not native histograms",
                            "run k6 v2 with K6_FEATURES=native-histograms, k6 v1 with "
                            "K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=true (ybbench run sets the one its k6 takes), "
                            "into a Prometheus that takes native histograms (3.x)"))
        else:
            out.append(skipped(name, "no k6 run has written to this Prometheus in the last day", expected))
    elif any("histogram" not in s for s in got):
        out.append(fail(name, expected, "a float series, not a histogram", "check Prometheus' native histograms"))
    else:
        out.append(ok(name, expected, f"{len(got)} series"))
    return out


def clock(prom: Prom) -> Check:
    """This host's clock against Prometheus': Prometheus' time() between two
    readings of ours; what the request's own time leaves unknown is allowed."""
    name = "prometheus clock"
    expected = f"this host's clock within {MAX_SKEW_S:g} s of Prometheus'"
    t0 = time.time()
    got = prom.api("query", query="time()")["result"]  # a scalar: [evaluation time, "value"]
    t1 = time.time()
    theirs = float(got[1]) if isinstance(got, list) and len(got) == 2 else None
    if theirs is None:
        return fail(name, expected, f"time() answered {got!r}", "check the Prometheus URL")
    skew = theirs - (t0 + t1) / 2
    slack = (t1 - t0) / 2
    found = f"Prometheus {skew:+.3f} s from this host (±{slack:.3f} s of request time)"
    if abs(skew) - slack > MAX_SKEW_S:
        return fail(name, expected, found, "synchronise both clocks (chrony or systemd-timesyncd): run windows "
                    "are this host's times, the series Prometheus'")
    return ok(name, expected, found)


def has_yb_targets(prom: Prom) -> bool:
    try:
        return bool(prom.query('count(up{job="yugabytedb"})'))
    except Unreachable:
        return False


def checks(prom_url: str | None, yugabytedb: bool) -> tuple[list[Check], Prom | None]:
    """yugabytedb: YSQL said -YB-; YugabyteDB's targets are then expected."""
    if not prom_url:
        return [skipped("prometheus reachable", "no --prometheus given (nor YBBENCH_PROMETHEUS)")], None
    prom = Prom(prom_url.rstrip("/"))
    first = reachable(prom)
    if first.status != "ok":
        return [first], None
    out = [first]
    for part in (lambda: targets(prom, yugabytedb), lambda: [scrape_interval(prom)], lambda: remote_write(prom),
                 lambda: [clock(prom)]):
        try:
            out += part()
        except Unreachable as e:
            out.append(fail("prometheus api", "Prometheus' API answers", str(e), "check the Prometheus URL"))
    return out, prom
