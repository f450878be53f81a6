"""The live ops/s of long runs (ybbench/core/progress.py) from a real k6 run's
own progress lines: the counts it reads are k6's, to the iteration."""

from __future__ import annotations

import json
import uuid

import pytest

from ybbench.core.progress import LiveOps, parse_k6_progress
from ybbench.run import k6run

from ..support.stack import BIN


@pytest.fixture
def k6_env(postgres, monkeypatch):
    for k, v in postgres.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("K6", str(BIN / "k6"))


def test_live_ops_follow_k6s_progress_lines_of_a_real_run(postgres, k6_env, tmp_path):
    lines, live = [], LiveOps()

    def seen(line: str) -> None:
        lines.append(line)
        live.feed(line)

    tid = f"prog{uuid.uuid4().hex[:8]}"
    r = k6run.run("sql-inserts", testid=tid, results=tmp_path, quiet=True, on_line=seen, settings=[
        f"YSQL_NODES=127.0.0.1:{postgres.port}", f"DB_USER={postgres.user}", f"DB_NAME={postgres.database}",
        "VUS=2", "DURATION=4s", f"KEY_PREFIX={tid}"])
    assert r.exit_code == 0
    progress = [p for p in map(parse_k6_progress, lines) if p]
    assert len(progress) >= 3, lines
    # k6's last progress line counts every iteration of the run, and each
    # insert iteration wrote one row.
    iterations = json.loads((r.folder / "k6-summary.json").read_text())["metrics"]["iterations"]["count"]
    assert live.last[2] == iterations == json.loads((r.folder / "summary.json").read_text())["rows_written"]
    # The live rate is the last interval's: completed iterations over k6's
    # clock between two lines (k6's closing line repeats the last time).
    (t0, _, n0), (t1, _, n1) = [(a, b) for a, b in zip(progress, progress[1:]) if b[0] > a[0]][-1]
    assert live.ops_per_s == pytest.approx((n1 - n0) / (t1 - t0))
    assert "ops/s, " in live.text()


@pytest.mark.parametrize("line, parsed", [
    ("running (01.0s), 2/2 VUs, 190 complete and 0 interrupted iterations", (1.0, 2, 190)),
    ("running (01m02.5s), 08/16 VUs, 123456 complete and 3 interrupted iterations", (62.5, 8, 123456)),
    ("running (1h00m01.0s), 400/400 VUs, 7 complete and 0 interrupted iterations", (3601.0, 400, 7)),
    ("default   [  33% ] 2 VUs  1.0s/3s", None),
])
def test_progress_line_forms(line, parsed):
    assert parse_k6_progress(line) == parsed
