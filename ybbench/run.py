"""`ybbench run`: one k6 workload, one run id, one results folder.

results/<testid>/ holds params.json (what ran, with which knobs), the k6
summary and k6's log. The folder appears whole or not at all.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from . import events as ev
from . import generators as gen, latency, logs
from .durations import seconds
from .errors import UserError
from .services import check_ready
from .files import staged_dir, write_json

REPO = Path(__file__).resolve().parent.parent
SCRIPTS = REPO / "k6-scripts"

# Knobs the scripts read (k6-scripts/lib/config.js and the workloads); their
# values are recorded in params.json. Passwords are never among them.
KNOBS = (
    "DB_DRIVER YBBENCH_NATIVE YSQL_NODES DB_USER DB_NAME DB_SSLMODE DB_CONNECT_TIMEOUT TABLE KEY_PREFIX "
    "NUM_UNIQUE_KEYS MAX_WRITTEN_KEY ROW_BYTES VUS DURATION "
    # load models, retries, sessions (k6-scripts/lib/run.js, metrics.js, config.js)
    "LOAD_MODEL RATE MAX_VUS START_RATE STAGES MAX_RETRIES ISOLATION OP_LATENCY_SUMMARY "
    # key-value, YCSB, analytic and yb-sample-apps workloads
    "KEY_BYTES VALUE_BYTES OP_SIZE READ_SHAPE WRITE_PERCENT RECENT_KEYS "
    "YCSB_WORKLOAD READ_PROPORTION REQUEST_DISTRIBUTION ZIPFIAN_CONSTANT RECORD_COUNT FIELD_COUNT FIELD_LENGTH RUNS "
    "OPERATION_COUNT INSERT_START INSERT_COUNT FIELD "
    # the k6 process (K6_GO_ENV)
    "GOGC GOMEMLIMIT"
).split()
SECRET_NAMES = re.compile(r"PASS|SECRET|TOKEN", re.I)
TESTID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

# Go's garbage collector for k6, unless the environment sets it: each
# statement allocates ~4 KB of short-lived JS and driver objects, and
# collecting at 5x the live heap instead of 2x takes ~10% less client CPU per
# operation for more RSS (556 MB instead of 387 at 400 VUs; README "Client
# efficiency").
# k6's own summary keeps every iteration's duration, so the live heap grows
# with a long run (not with our native helpers: k6-scripts/lib/native.js);
# the soft limit (a quarter of this machine's memory) makes Go collect more
# often as the heap nears it, instead of growing to 5x.
def _quarter_of_memory() -> str:
    return f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') // 4 // 2**20}MiB"


K6_GO_ENV = {"GOGC": "400", "GOMEMLIMIT": _quarter_of_memory()}
# k6 posts a usage report to Grafana after every run unless told not to,
# and a k6 that lacks an extension a script imports asks Grafana's build
# service for a binary that has it (automatic extension resolution); nothing
# of ours reaches out unless the user asks (either variable set otherwise).
K6_QUIET_ENV = {"K6_NO_USAGE_REPORT": "true", "K6_AUTO_EXTENSION_RESOLUTION": "false"}

# k6's built-in web dashboard, exported as results/<testid>/k6-report.html
# when k6 ends (the report links to it). Port 0 on 127.0.0.1: a free loopback
# port for each k6, so parallel runs never collide; k6 v1.8.1's port -1 does
# not turn the server off, it listens on a random port on every interface.
# Period 1s: k6 skips the export with under 2 snapshots (10s by default).
K6_REPORT = "k6-report.html"
K6_DASHBOARD_ENV = {"K6_WEB_DASHBOARD": "true", "K6_WEB_DASHBOARD_HOST": "127.0.0.1",
                    "K6_WEB_DASHBOARD_PORT": "0", "K6_WEB_DASHBOARD_PERIOD": "1s"}

# k6 exit codes: 0 ok, 99 thresholds crossed (the run happened, with errors).
K6_RAN = (0, 99)


# Workloads that write new keys under KEY_PREFIX (the testid by default): a
# run repeated after an interruption (sweep, doe) needs a fresh prefix, or
# its inserts collide with the keys the first attempt wrote.
NEW_KEYS = frozenset({"sql-inserts", "sql-secondary-index", "kv-load"})


def fresh_prefix(kind: str) -> str:
    """A key prefix no earlier attempt used (short: kv keys are 50 bytes)."""
    return f"{kind}{uuid.uuid4().hex[:12]}"


def workloads() -> list[str]:
    return sorted(p.stem for p in SCRIPTS.glob("*.js"))


def k6_env(knobs: dict[str, str]) -> dict[str, str]:
    """The environment k6 runs in: ours, the knobs, Go's GC setting, no
    usage report."""
    env = dict(os.environ, **knobs)
    for k, v in {**K6_GO_ENV, **K6_QUIET_ENV}.items():
        env.setdefault(k, v)
    return env


PGX_MODULE = "k6/x/sql/driver/pgx"
NATIVE_MODULE = "k6/x/ybbench"


@functools.lru_cache(maxsize=None)
def k6_modules(k6: str) -> frozenset[str]:
    """The JS modules of a k6 build's extensions, as `k6 version` lists them
    ("github.com/grafana/xk6-sql v1.0.5, k6/x/sql [js]")."""
    try:
        out = subprocess.run([k6, "version"], capture_output=True, text=True, timeout=60).stdout
    except OSError as e:
        raise UserError(f"k6 at {k6} does not run: {e}") from None
    return frozenset(re.findall(r", (k6/x/\S+) \[js\]", out))


def default_extensions(k6: str, env: dict[str, str]) -> None:
    """The cheapest statement path this k6 has, where nobody chose a driver:
    our native module's pgconn, else pgx; the scripts' own default is lib/pq,
    the official extension (k6-scripts/lib/db.js). Our native helpers
    likewise (k6-scripts/lib/native.js)."""
    modules = k6_modules(k6)
    if "DB_DRIVER" not in env:
        if NATIVE_MODULE in modules:
            env["DB_DRIVER"] = "pgconn"
        elif PGX_MODULE in modules:
            env["DB_DRIVER"] = "pgx"
    if "YBBENCH_NATIVE" not in env and NATIVE_MODULE in modules:
        env["YBBENCH_NATIVE"] = "1"


# k6's HTML report comes from its web dashboard, whose cumulative view keeps
# every Trend sample (xk6-dashboard v0.8.1): k6's memory would grow with the
# run again, whatever the summary does. Kept for runs up to this long.
DASHBOARD_MAX_S = 15 * 60


def long_runs_without_dashboard(env: dict[str, str]) -> None:
    """K6_WEB_DASHBOARD=false for runs longer than DASHBOARD_MAX_S, unless
    the user's environment says otherwise (README "k6's own report")."""
    if "K6_WEB_DASHBOARD" in env:
        return
    try:
        length = seconds("DURATION", env.get("DURATION", "30s"))
    except UserError:
        return  # k6 names a bad DURATION itself, before any load
    if length > DASHBOARD_MAX_S:
        env["K6_WEB_DASHBOARD"] = "false"


def check_services(prometheus: str | None, loki: str | None = None) -> str:
    """Before any load: k6 is there (its path is returned), and so are the
    Prometheus and Loki a run will write to."""
    k6 = k6_binary()
    if prometheus:
        check_ready("Prometheus", prometheus, "/-/ready")
    if loki:
        check_ready("Loki", loki, "/ready")
    return k6


def k6_binary() -> str:
    k6 = os.environ.get("K6") or shutil.which("k6")
    if not k6:
        raise UserError("k6 not found: put it on PATH or set K6 to its path")
    return k6


@dataclass
class RunResult:
    testid: str
    folder: Path
    exit_code: int


def series_id(given: str | None, resume: str | None, default: str, most: int) -> str:
    """The id of a series of runs (sweep, doe --run, reproduce): --id, the
    --resume'd one, or a default; at most `most` characters, leaving room
    for each run's suffix in its 64-character testid."""
    if given and resume:
        raise UserError("--id and --resume: give one")
    sid = resume or given or default
    if not re.fullmatch(rf"[A-Za-z0-9_.-]{{1,{most}}}", sid):
        raise UserError(f"{'--resume' if resume else '--id'} {sid!r}: use 1-{most} letters, digits, . _ -")
    return sid


def parse_settings(settings: list[str]) -> dict[str, str]:
    out = {}
    for s in settings:
        name, eq, value = s.partition("=")
        if not eq or not name:
            raise UserError(f"--set {s!r}: expected NAME=VALUE")
        if name not in KNOBS:
            raise UserError(f"--set {name}: unknown knob; known: {', '.join(KNOBS)}")
        out[name] = value
    return out


def run(
    workload: str,
    *,
    testid: str | None = None,
    results: Path = REPO / "results",
    prometheus: str | None = None,
    loki: str | None = None,
    settings: list[str] = (),
    quiet: bool = False,
    on_line: Callable[[str], None] | None = None,
    generators: int | str = 1,
    events: list[str] = (),
) -> RunResult:
    """on_line sees each line of k6's output as it comes (a live progress);
    events are AT:ACTION:SERVICE faults on the compose stack (events.py)."""
    if workload not in workloads():
        raise UserError(f"unknown workload {workload!r}; known: {', '.join(workloads())}")
    testid = testid or f"{workload}-{time.strftime('%Y%m%dT%H%M%S')}"
    if not TESTID.match(testid):
        raise UserError(f"--testid {testid!r}: use 1-64 letters, digits, . _ -")
    knobs = parse_settings(list(settings))
    n_gen = gen.count(generators)
    gen.check_vus(n_gen, knobs)
    planned = []
    if events:
        if n_gen > 1:
            raise UserError("--event: faults are timed from one k6 process; use --generators 1")
        planned = ev.parse(list(events), knobs.get("DURATION"))
        ev.check_compose(planned)
    k6 = check_services(prometheus, loki)
    final = results / testid
    if final.exists():
        raise UserError(f"{final} exists: a run id is used once")

    env = k6_env(knobs)
    default_extensions(k6, env)
    long_runs_without_dashboard(env)
    # k6's REST API on a free loopback port: runs at the same time (sweeps,
    # generators, tests) would otherwise fight over 127.0.0.1:6565.
    cmd = [k6, "run", "--no-color", "--address", env.get("K6_ADDRESS", "127.0.0.1:0"), "--tag", f"testid={testid}"]
    if prometheus:
        env.update(
            K6_PROMETHEUS_RW_SERVER_URL=f"{prometheus.rstrip('/')}/api/v1/write",
            K6_PROMETHEUS_RW_PUSH_INTERVAL=env.get("K6_PROMETHEUS_RW_PUSH_INTERVAL", "5s"),
            # Trends as native histograms: percentiles per window in PromQL, and
            # O(1) memory in k6's output (its p99 stats keep every sample).
            K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM=env.get("K6_PROMETHEUS_RW_TREND_AS_NATIVE_HISTOGRAM", "true"),
        )
        cmd += ["--out", "experimental-prometheus-rw"]
    if n_gen > 1:  # execution segments over N k6 processes (generators.py)
        return gen.run(workload, testid, final, cmd, env, n_gen, prometheus=prometheus, loki=loki, quiet=quiet,
                       on_line=on_line)

    with staged_dir(final) as stage:
        cmd += ["--summary-export", str(stage / "k6-summary.json"), str(SCRIPTS / f"{workload}.js")]
        env["SUMMARY_JSON"] = str(stage / "summary.json")  # the workloads' handleSummary
        for k, v in {**K6_DASHBOARD_ENV, "K6_WEB_DASHBOARD_EXPORT": str(stage / K6_REPORT)}.items():
            env.setdefault(k, v)  # the user's K6_WEB_DASHBOARD* win
        started = time.time()
        stamped: list[tuple[int, str]] = []  # (unix ns, line) for Loki
        with open(stage / "k6.log", "w") as log:
            proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            assert proc.stdout is not None
            schedule = ev.Schedule(planned, say=(lambda s: None) if quiet else (lambda s: print(s, flush=True)))
            schedule.start()
            try:
                for line in proc.stdout:
                    log.write(line)
                    if loki:
                        stamped.append((time.time_ns(), line.rstrip("\n")))
                    if not quiet:
                        sys.stdout.write(line)
                    if on_line:
                        on_line(line)
            except BaseException:
                # Interrupted (Ctrl-C reaches k6 too): k6 ends before the
                # stage is removed, so it writes nothing into a folder after.
                proc.terminate()
                proc.wait()
                schedule.finish()
                raise
            code = proc.wait()
        happened = schedule.finish()
        failed = [e for e in happened if not e["ok"]]
        if planned:
            write_json(stage / "events.json", happened)
            if loki:
                ev.to_loki(loki, testid, happened)
        if loki:
            logs.push(loki, {"job": "ybbench", "workload": workload, "testid": testid}, stamped)
        if code not in K6_RAN:
            raise UserError(f"{workload} failed (k6 exit {code}): {k6_error(stage / 'k6.log')}")
        finished = time.time()
        summary = stage / "summary.json"
        if prometheus and summary.exists():
            for op, lat in latency.fill(summary, prometheus, testid, started, finished).items():
                if not quiet:
                    print(f"  {op} latency from Prometheus (native histogram): p50 {lat['p50']:.3f} ms, "
                          f"p95 {lat['p95']:.3f} ms, p99 {lat['p99']:.3f} ms")
        write_json(
            stage / "params.json",
            {
                "workload": workload,
                "testid": testid,
                "knobs": {k: env[k] for k in KNOBS if k in env and not SECRET_NAMES.search(k)},
                "prometheus": prometheus,
                "loki": loki,
                "started": started,
                "finished": finished,
                "k6_exit_code": code,
            },
        )
    if failed:
        # The run happened and its folder stays, events.json saying which
        # fault did not: it is not the run that was asked for.
        raise UserError(f"run {testid} ({final}) did not get its events: " + "; ".join(
            f"{e['action']} {e['service']} at {e['at_s']:g} s failed: {e['output'][-300:]}" for e in failed))
    return RunResult(testid, final, code)


def k6_error(log: Path) -> str:
    """What k6's error lines say, without logfmt quoting or JS stack traces."""
    lines = log.read_text().splitlines()
    msgs = []
    for line in lines:
        m = re.search(r'level=error msg="((?:[^"\\]|\\.)*)"', line)
        if m:
            text = m.group(1).encode().decode("unicode_escape").split("\n")[0]
            msgs.append(re.sub(r"^(Go)?Error: ", "", text))
    return "; ".join(msgs) or (lines[-1] if lines else "no output")
