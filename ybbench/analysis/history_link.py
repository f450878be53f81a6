"""Where a run's history page is, for its report's link: the page
`ybbench history` wrote in its default place (<results>/history/) when its
history.json holds the run."""

from __future__ import annotations

import json
from pathlib import Path


def page_of(results: Path, testid: str) -> Path | None:
    path = results / "history" / "history.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    series = doc.get("series") if isinstance(doc, dict) else None
    if any(r.get("testid") == testid for s in series or [] for r in s.get("runs", [])):
        return path.with_name("history.html")
    return None
