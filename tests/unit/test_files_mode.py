"""core/files.write_file: atomic, and the file has the mode open() gives
(not mkstemp's 0600): Prometheus, running as another user, reads the
target file of a tserver added under load (run/faults.py)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

from ybbench.core.files import write_file, write_json


def test_the_mode_is_open_s(tmp_path):
    write_json(tmp_path / "a.json", {"x": 1})
    (tmp_path / "b.json").write_text("{}")
    assert stat.S_IMODE((tmp_path / "a.json").stat().st_mode) == stat.S_IMODE((tmp_path / "b.json").stat().st_mode)


def test_the_umask_is_honoured(tmp_path):
    code = ("import os; os.umask(0o077); from pathlib import Path; from ybbench.core.files import write_file; "
            f"write_file(Path({str(tmp_path / 'c')!r}), 'x')")
    subprocess.run([sys.executable, "-c", code], check=True)
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o600
    old = os.umask(0o022)
    try:
        write_file(tmp_path / "d", b"y")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "d").stat().st_mode) == 0o644
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
