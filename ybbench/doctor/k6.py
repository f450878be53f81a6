"""k6: the binary `ybbench run` would use (K6, else PATH), its version,
and every module the scripts import loading for real: a script that
imports and requires each one runs one iteration and says what it got."""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

from ybbench.doctor.check import Check, fail, ok
from ybbench.run.k6_process import k6_env

# The oldest k6 the scripts load on (docs/workloads.md; tests/native/test_k6_matrix.py).
OLDEST = (1, 1, 0)
# Each module the scripts use, and how its export is told from a placeholder
# (a later k6 hands one over for a module it lacks: k6-scripts/lib/go_helpers.js).
SYMBOL = 'm => typeof m.valueOf === "function" && typeof m.valueOf() === "symbol"'
MODULES = {
    "k6/x/sql": 'm => typeof m.open === "function"',
    "k6/x/sql/driver/postgres": SYMBOL,
    "k6/x/sql/driver/pgx": SYMBOL,
    "k6/x/ybbench": 'm => typeof m.ycsbKeyName === "function"',
}
WHY = {
    "k6/x/sql": "xk6-sql: every workload's statements",
    "k6/x/sql/driver/postgres": "xk6-sql-driver-postgres (lib/pq): setup, teardown, DB_DRIVER=postgres",
    "k6/x/sql/driver/pgx": "our pgx driver (compose/k6/xk6-sql-driver-pgx): DB_DRIVER=pgx",
    "k6/x/ybbench": "our Go helpers (compose/k6/xk6-ybbench): DB_DRIVER=pgconn and YBBENCH_GO_HELPERS=1",
}
BUILD = ("build k6 with every module: the xk6 command of compose/k6/Dockerfile (the compose k6 has them), "
         "native/build.sh for the tests' k6; point K6 at it")
PROBE = """
const found = {};
function probe(path, isIt) {
  try { const m = require(path); found[path] = isIt(m) ? "ok" : "a placeholder, not the module"; }
  catch (e) { found[path] = String((e && e.message) || e); }
}
%s
export const options = { vus: 1, iterations: 1 };
export default function () { console.log(JSON.stringify(found)); }
export function handleSummary() { return {}; }
"""


def _version(out: str) -> tuple[int, ...] | None:
    m = re.search(r"\bv(\d+)\.(\d+)\.(\d+)", out)
    return tuple(int(x) for x in m.groups()) if m else None


def listed(version_output: str) -> set[str]:
    """The JS modules a build's `k6 version` lists ("github.com/grafana/xk6-sql v1.0.5, k6/x/sql [js]")."""
    return set(re.findall(r", (k6/x/\S+) \[js\]", version_output))


def modules(k6: str, paths: list[str]) -> tuple[dict[str, str], str]:
    """Each module -> "ok" or what k6 said; and k6's error when the probe did
    not run. Only modules the build lists: k6 v1.2+ fails the whole script
    on one it lacks, even one asked for by require()."""
    with tempfile.TemporaryDirectory(prefix="ybbench-doctor-") as tmp:
        script, console = Path(tmp) / "probe.js", Path(tmp) / "console.log"
        script.write_text(PROBE % "\n".join(f"probe({json.dumps(p)}, {MODULES[p]});" for p in paths))
        env = dict(k6_env({}), K6_WEB_DASHBOARD="false")
        p = subprocess.run([k6, "run", "--no-color", "--quiet", "--address", "127.0.0.1:0",
                            "--console-output", str(console), str(script)],
                           capture_output=True, text=True, timeout=120, env=env)
        lines = console.read_text().splitlines() if console.exists() else []
    for line in lines:  # logfmt: msg="<the JSON, quoted>"
        m = re.search(r'msg="((?:[^"\\]|\\.)*)"', line)
        try:
            return json.loads(json.loads(f'"{m.group(1)}"')), ""
        except (ValueError, AttributeError):
            continue
    return {}, (p.stdout + p.stderr).strip()[-500:] or f"k6 exit {p.returncode}, no output"


def checks(k6: str | None) -> list[Check]:
    if not k6:
        return [fail("k6 binary", "a k6 on PATH, or K6 naming it", "none found",
                     "install k6 built with the modules (compose/k6/Dockerfile), or set K6=/path/to/k6")]
    try:
        out = subprocess.run([k6, "version"], capture_output=True, text=True, timeout=60, env=k6_env({})).stdout
    except (OSError, subprocess.SubprocessError) as e:
        return [fail("k6 binary", f"{k6} runs", str(e), "set K6 to a k6 that runs on this host")]
    checks_ = [ok("k6 binary", "a k6 on PATH, or K6 naming it", k6)]
    version = _version(out)
    want = "v" + ".".join(map(str, OLDEST))
    first = out.splitlines()[0] if out else "no output"
    if version is None or version < OLDEST:
        checks_.append(fail("k6 version", f"{want} or newer", first, f"use k6 {want} or newer (compose/.env pins "
                            "the compose k6's)"))
    else:
        checks_.append(ok("k6 version", f"{want} or newer", first))
    has = listed(out)
    got, error = modules(k6, [p for p in MODULES if p in has]) if has & MODULES.keys() else ({}, "")
    for path in MODULES:
        name = f"k6 module {path}"
        expected = f"loads ({WHY[path]})"
        if path not in has:
            checks_.append(fail(name, expected, f"not in this build (`k6 version` lists: "
                                f"{', '.join(sorted(has)) or 'no extension'})", BUILD))
        elif got.get(path) == "ok":
            checks_.append(ok(name, expected, "loaded"))
        else:
            checks_.append(fail(name, expected, got.get(path) or f"the probe script did not run: {error}", BUILD))
    return checks_
