"""Checks for the user's input files (design, cluster, experiment YAML): each
problem is a UserError naming the file, the place in it and what is wrong."""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from ybbench.core.errors import UserError


def load_yaml(path: Path) -> object:
    try:
        text = path.read_text()
    except OSError as e:
        raise UserError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise UserError(f"{path}: not valid YAML: {e}") from None


def text(where: str, value: object, required: bool = False) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise UserError(f"{where}: expected {'non-empty ' if required else ''}text, got {value!r}")
    return value


def mapping(where: str, value: object, allowed: set[str], required: set[str] = frozenset()) -> dict:
    if not isinstance(value, dict):
        raise UserError(f"{where}: expected a mapping, got {type(value).__name__}")
    unknown = [str(k) for k in value if k not in allowed]
    if unknown:
        raise UserError(f"{where}: unknown key {', '.join(map(repr, unknown))}; known: {', '.join(sorted(allowed))}")
    missing = sorted(required - set(value))
    if missing:
        raise UserError(f"{where}: missing {', '.join(missing)}")
    return value


def number(where: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise UserError(f"{where}: {value!r} is not a number") from None
        else:
            raise UserError(f"{where}: {value!r} is not a number")
    if not math.isfinite(value):
        raise UserError(f"{where}: {value!r} is not a finite number")
    return float(value)
