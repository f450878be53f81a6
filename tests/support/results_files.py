"""Run folders as `ybbench run` writes them, in the current results format
(ybbench/core/schemas/, docs/results-format.md), for tests that fake a run
without k6; and the check that every results file under a folder matches
its schema (`ybbench validate`'s own code)."""

from __future__ import annotations

from pathlib import Path

from ybbench.core import formats


def op(count: int, per_second: float, *, errors: int = 0, latency_ms: dict | None = None) -> dict:
    """One op of summary.json."""
    return {"count": count, "per_second": per_second, "latency_ms": latency_ms, "retries": 0, "errors": errors,
            "keys_missing": 0}


def summary(testid: str, ops: dict[str, dict], *, workload: str = "sql-inserts", errors: int = 0,
            duration_s: float = 5.0, rows_written: int = 0, dropped_iterations: int = 0) -> dict:
    """summary.json as k6-scripts/lib/summary.js writes it (k6's own metrics left out)."""
    return {"format_version": formats.version("summary"), "workload": workload, "testid": testid,
            "scenario": {"executor": "constant-vus", "vus": 1, "duration": f"{duration_s:g}s"},
            "duration_s": duration_s, "ops": ops, "errors": errors, "errors_by_class": {},
            "rows_written": rows_written, "keys_missing": 0, "dropped_iterations": dropped_iterations,
            "latency_source": "k6: every sample kept", "thresholds_failed": [], "written": None}


def params(testid: str, *, workload: str = "sql-inserts", knobs: dict | None = None, started: float = 1000.0,
           finished: float = 1005.0, k6_exit_code: int = 0) -> dict:
    """params.json as ybbench/run/k6run.py writes it."""
    return {"format_version": formats.version("params"), "workload": workload, "testid": testid,
            "knobs": knobs or {}, "prometheus": None, "loki": None, "started_unix_s": started,
            "finished_unix_s": finished, "k6_exit_code": k6_exit_code}


def invalid_files(folder: Path) -> dict[Path, str]:
    """Each results file under `folder` that does not read (its error);
    empty when all do. Files of no kind (k6's own) are not looked at."""
    from ybbench.core import validate

    return {path: why for path, why in validate.check_tree(folder) if why is not None}
