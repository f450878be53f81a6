"""`ybbench validate PATH...`: every results file in the folders (or the
files) given, checked against its schema (core/formats.py) as ybbench
reads it: older versions through their upgrade, newer or broken refused.
Exit 0 when all are valid, 1 when one is not (each named with its field),
2 for a path that does not exist or a file that is not a results file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from ybbench.core import formats
from ybbench.core.errors import UserError


def _version(doc: object) -> object:
    return doc.get("format_version", 0) if isinstance(doc, dict) else 0


def check(path: Path) -> tuple[str | None, str | None, str]:
    """(kind, error, how it was read) of one file; kind None: not ours."""
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        kind = formats.BY_NAME.get(path.name)
        return kind, f"{path}: not readable JSON: {e}", ""
    kind = formats.kind_of(path, doc)
    if kind is None:
        return None, None, ""
    v = _version(doc)
    try:
        formats.upgraded(path, kind, doc)
    except UserError as e:
        return kind, str(e), ""
    current = formats.version(kind)
    return kind, None, f"{kind} version {v}" + (f", read as version {current}" if v != current else "")


def _files(folder: Path) -> Iterator[Path]:
    # Hidden folders are stages being written (core/files.py staged_dir).
    for p in sorted(folder.rglob("*.json")):
        if not any(part.startswith(".") for part in p.relative_to(folder).parts):
            yield p


def check_tree(path: Path) -> Iterator[tuple[Path, str | None]]:
    """(file, error or None) of each results file under a folder (or the file)."""
    for f in _files(path) if path.is_dir() else [path]:
        kind, error, _ = check(f)
        if kind is not None:
            yield f, error


def command(paths: list[str]) -> int:
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        raise UserError(f"no such file or folder: {', '.join(missing)}")
    checked = invalid = skipped = 0
    for given in map(Path, paths):
        for f in _files(given) if given.is_dir() else [given]:
            kind, error, how = check(f)
            if kind is None:
                if not given.is_dir():
                    raise UserError(f"{f}: not a ybbench results file (docs/results-format.md lists them)")
                skipped += 1
                continue
            checked += 1
            if error:
                invalid += 1
                print(f"INVALID {error}")
            else:
                print(f"ok      {f} ({how})")
    print(f"{checked} results file(s) checked, {invalid} invalid"
          + (f"; {skipped} other JSON file(s) skipped (not ybbench's: k6's own)" if skipped else ""))
    return 1 if invalid else 0
