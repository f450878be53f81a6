"""One check's result, and the JSON helper every check group uses to read
a service's HTTP API (Prometheus, Loki, Grafana) without a traceback."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import asdict, dataclass

OK, WARN, FAIL, SKIPPED = "ok", "warn", "fail", "skipped"
NOT_YB = "not a YugabyteDB cluster"


@dataclass(frozen=True)
class Check:
    name: str  # stable: tests and users grep for it, e.g. "prometheus target node 127.0.0.1:9100"
    status: str  # OK, WARN, FAIL or SKIPPED
    expected: str
    found: str
    todo: str = ""  # what to do about it; empty when nothing needs doing

    def as_dict(self) -> dict:
        return asdict(self)


def ok(name: str, expected: str, found: str) -> Check:
    return Check(name, OK, expected, found)


def fail(name: str, expected: str, found: str, todo: str) -> Check:
    return Check(name, FAIL, expected, found, todo)


def skipped(name: str, why: str, expected: str = "") -> Check:
    return Check(name, SKIPPED, expected, why)


class Unreachable(Exception):
    """A service did not answer, or answered with an error: the message says which and why."""


def get_json(base: str, path: str, params: dict | list | None = None, auth: tuple[str, str] | None = None,
             timeout: float = 15) -> object:
    """GET base+path?params as JSON; Unreachable with the cause otherwise."""
    url = f"{base.rstrip('/')}{path}" + (f"?{urllib.parse.urlencode(params)}" if params else "")
    req = urllib.request.Request(url)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        body = e.read().decode(errors="replace").strip()[:300]
        raise Unreachable(f"{url.split('?')[0]} answered HTTP {e.code}: {body}") from None
    except (urllib.error.URLError, OSError) as e:
        raise Unreachable(f"{base} is not reachable: {getattr(e, 'reason', e)}") from None
    except ValueError as e:
        raise Unreachable(f"{url.split('?')[0]} answered something that is not JSON: {e}") from None
