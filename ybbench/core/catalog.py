"""The workloads (k6-scripts/*.js), the knobs they read, and the ids of runs
and series of runs: what every command checks before it starts anything."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from ybbench.core.errors import UserError

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "k6-scripts"

# Knobs the scripts read (k6-scripts/lib/config.js and the workloads); their
# values are recorded in params.json. Passwords are never among them.
# YBBENCH_NATIVE is the old name of YBBENCH_GO_HELPERS, still accepted
# (k6-scripts/lib/go_helpers.js).
KNOBS = (
    "DB_DRIVER YBBENCH_GO_HELPERS YBBENCH_NATIVE YSQL_NODES DB_USER DB_NAME DB_SSLMODE DB_SSLROOTCERT DB_SSLCERT DB_SSLKEY DB_CONNECT_TIMEOUT DB_STATEMENT_TIMEOUT_MS TABLE KEY_PREFIX "
    "NUM_UNIQUE_KEYS MAX_WRITTEN_KEY ROW_BYTES VUS DURATION "
    # load models, retries, sessions (k6-scripts/lib/run.js, metrics.js, config.js)
    "LOAD_MODEL RATE MAX_VUS START_RATE STAGES MAX_RETRIES ISOLATION OP_LATENCY_SUMMARY "
    # the inner loop in Go (k6-scripts/lib/loop.js)
    "OPS_PER_ITERATION "
    # key-value, YCSB, analytic and yb-sample-apps workloads
    "KEY_BYTES VALUE_BYTES OP_SIZE READ_SHAPE WRITE_PERCENT RECENT_KEYS "
    "YCSB_WORKLOAD READ_PROPORTION REQUEST_DISTRIBUTION ZIPFIAN_CONSTANT RECORD_COUNT FIELD_COUNT FIELD_LENGTH RUNS "
    "OPERATION_COUNT INSERT_START INSERT_COUNT FIELD "
    # TPC-C (k6-scripts/tpcc-load.js, tpcc.js)
    "WAREHOUSES TABLE_PREFIX C_LOAD TPCC_MODE TPCC_STYLE "
    # the k6 process (K6_GO_ENV)
    "GOGC GOMEMLIMIT"
).split()
SECRET_NAMES = re.compile(r"PASS|SECRET|TOKEN", re.I)
TESTID = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")

# Workloads that write new keys under KEY_PREFIX (the testid by default): a
# run repeated after an interruption (sweep, doe) needs a fresh prefix, or
# its inserts collide with the keys the first attempt wrote.
NEW_KEYS = frozenset({"sql-inserts", "sql-secondary-index", "kv-load"})
# Workloads that read the keys a load run wrote, and that load's workload
# (run --keys-from, reproduce's `reads`).
READS_KEYS_OF = {"sql-selects": "sql-inserts", "sql-updates": "sql-inserts", "kv-read-heavy": "kv-load",
                 "kv-recent-read-heavy": "kv-load", "kv-random-read": "kv-load", "ycsb": "ycsb-load",
                 "tpcc": "tpcc-load"}


def fresh_prefix(kind: str) -> str:
    """A key prefix no earlier attempt used (short: kv keys are 50 bytes)."""
    return f"{kind}{uuid.uuid4().hex[:12]}"


def workloads() -> list[str]:
    return sorted(p.stem for p in SCRIPTS.glob("*.js"))


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
