"""Shipping a run's k6 log to Loki, labelled with its testid, so that Grafana
shows a run's logs next to its metrics. k6's own `--log-output=loki` would
take the log away from the terminal and from results/<testid>/k6.log, where
`ybbench run` reads k6's errors, so the lines are pushed from here."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

from ybbench.core.errors import UserError


def push(url: str, labels: dict[str, str], lines: list[tuple[int, str]]) -> None:
    """Push (unix-ns, line) pairs as one stream, in batches Loki accepts."""
    for start in range(0, len(lines), 1000):
        batch = [[str(ts), line] for ts, line in lines[start:start + 1000]]
        body = json.dumps({"streams": [{"stream": labels, "values": batch}]}).encode()
        req = urllib.request.Request(f"{url.rstrip('/')}/loki/api/v1/push", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            urllib.request.urlopen(req, timeout=30).close()
        except (urllib.error.URLError, OSError) as e:
            raise UserError(f"could not push the k6 log to Loki at {url}: {getattr(e, 'reason', e)}") from None
