"""Checking, before any load, that a service a run writes to is there."""

from __future__ import annotations

import urllib.error
import urllib.request

from ybbench.core.errors import UserError


def check_ready(name: str, url: str, path: str) -> None:
    """Fail with a message naming `name` and `url` unless `url+path` answers 200."""
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}{path}", timeout=5) as r:
            if r.status != 200:
                raise UserError(f"{name} at {url} is not ready (HTTP {r.status})")
    except (urllib.error.URLError, OSError) as e:
        raise UserError(f"{name} at {url} is not reachable: {getattr(e, 'reason', e)}") from None
