"""Writing results so that a reader never sees half a file or half a folder."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ybbench.core.errors import UserError


def _umask() -> int:
    """The process's umask, read without changing it (os.umask would, for
    a moment, under the faults' thread)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def write_file(path: Path, content: str | bytes) -> None:
    """Write a file atomically: a temporary file in the same folder, then
    rename. The file gets the mode open() would give it (mkstemp's is 0600:
    Prometheus, another user, must read a tserver's target file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            f.write(content.encode() if isinstance(content, str) else content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: object) -> None:
    write_file(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


@contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """Yield a hidden sibling folder to fill; it becomes `final` only if the
    block succeeds, and is removed otherwise."""
    if final.exists():
        raise FileExistsError(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        yield stage
        os.rename(stage, final)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise


@contextmanager
def keeps_finished(folder: Path, doc: dict, name: str, what: str, series_id: str) -> Iterator[None]:
    """Around the runs of a resumable series (sweep, doe --run, reproduce):
    on a failure or Ctrl-C after its folder appeared, its record `name` says
    so, and a UserError says where the finished `what` are and how to go on."""
    try:
        yield
    except BaseException as e:
        if folder.exists():
            doc["status"] = "interrupted" if isinstance(e, KeyboardInterrupt) else f"failed: {e}"
            write_json(folder / name, doc)
            if isinstance(e, UserError):
                raise UserError(f"{e} (the finished {what} are kept in {folder}: --resume {series_id} "
                                "to go on)") from None
        raise
