"""The k6 process: which k6, its environment (Go's GC, no usage report, the
web dashboard), the extensions a build has, its exit codes and error lines."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ybbench.core import tls_files
from ybbench.core.durations import seconds
from ybbench.core.errors import UserError
from ybbench.core.services import check_ready


# Go's garbage collector for k6, unless the environment sets it: each
# statement allocates ~4 KB of short-lived JS and driver objects, and
# collecting at 5x the live heap instead of 2x takes ~10% less client CPU per
# operation for more RSS (556 MB instead of 387 at 400 VUs;
# docs/client-efficiency.md).
# k6's own summary keeps every iteration's duration, so the live heap grows
# with a long run (not with our Go helpers: k6-scripts/lib/go_helpers.js);
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


def k6_env(knobs: dict[str, str]) -> dict[str, str]:
    """The environment k6 runs in: ours, the knobs, Go's GC setting, no
    usage report. A TLS file (DB_SSLROOTCERT, DB_SSLCERT, DB_SSLKEY) that is not what it says is refused
    here, before k6 starts; a good one is made absolute (core/tls_files.py)."""
    env = dict(os.environ, **knobs)
    for k, v in {**K6_GO_ENV, **K6_QUIET_ENV}.items():
        env.setdefault(k, v)
    tls_files.check_env(env)
    return env


PGX_MODULE = "k6/x/sql/driver/pgx"
GO_HELPERS_MODULE = "k6/x/ybbench"


@functools.lru_cache(maxsize=None)
def version_text(k6: str) -> str:
    """What `k6 version` prints, asked once per k6 binary: its extensions
    (k6_modules), its major version (k6_features) and params.json's versions
    (versions.py) all read it."""
    try:
        return subprocess.run([k6, "version"], capture_output=True, text=True, timeout=60).stdout
    except OSError as e:
        raise UserError(f"k6 at {k6} does not run: {e}") from None


def k6_modules(k6: str) -> frozenset[str]:
    """The JS modules of a k6 build's extensions, as `k6 version` lists them
    ("github.com/grafana/xk6-sql v1.0.5, k6/x/sql [js]")."""
    return frozenset(re.findall(r", (k6/x/\S+) \[js\]", version_text(k6)))


def default_extensions(k6: str, env: dict[str, str]) -> None:
    """The cheapest statement path this k6 has, where nobody chose a driver:
    our Go helpers module's pgconn, else pgx; the scripts' own default is
    lib/pq, the official extension (k6-scripts/lib/db.js). Our Go helpers
    likewise (k6-scripts/lib/go_helpers.js), unless YBBENCH_GO_HELPERS or
    its old name YBBENCH_NATIVE is set."""
    modules = k6_modules(k6)
    if "DB_DRIVER" not in env:
        if GO_HELPERS_MODULE in modules:
            env["DB_DRIVER"] = "pgconn"
        elif PGX_MODULE in modules:
            env["DB_DRIVER"] = "pgx"
    if not {"YBBENCH_GO_HELPERS", "YBBENCH_NATIVE"} & env.keys() and GO_HELPERS_MODULE in modules:
        env["YBBENCH_GO_HELPERS"] = "1"


# k6's HTML report comes from its web dashboard, whose cumulative view keeps
# every Trend sample (xk6-dashboard v0.8.1): k6's memory would grow with the
# run again, whatever the summary does. Kept for runs up to this long.
DASHBOARD_MAX_S = 15 * 60


def long_runs_without_dashboard(env: dict[str, str]) -> None:
    """K6_WEB_DASHBOARD=false for runs longer than DASHBOARD_MAX_S, unless
    the user's environment says otherwise (docs/reports.md "k6's own report")."""
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
