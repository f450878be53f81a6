"""Writing results so that a reader never sees half a file or half a folder."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ybbench.core.errors import UserError


def _sibling(path: Path) -> Path:
    """A hidden name beside `path` for its staging copy, chosen before
    anything is made, so that the cleanup knows it whatever moment an
    interrupt lands (tempfile.mkstemp's name is only known once it returns:
    a Ctrl-C just after its open left `.doe.json.xxxxxxxx` behind)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}")


def write_file(path: Path, content: str | bytes) -> None:
    """Write a file atomically: a temporary file in the same folder, then
    rename. The file gets the mode open() gives (Prometheus, another user,
    must read a tserver's target file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        tmp = _sibling(path)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
            with os.fdopen(fd, "wb") as f:
                f.write(content.encode() if isinstance(content, str) else content)
            os.replace(tmp, path)
            return
        except FileExistsError:
            continue  # another writer's staging name: draw again
        except BaseException:
            tmp.unlink(missing_ok=True)
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
    while True:
        stage = _sibling(final)
        try:
            os.mkdir(stage, 0o700)
            break
        except FileExistsError:
            continue
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
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
                                "to go on)", exit_code=e.exit_code) from None
        raise
