"""The PromQL matchers that keep k6's statements apart from its other
iterations (the inner loop's own, op=loop; idle ones; untagged ones) leave
out exactly the tags the k6 scripts give iterations that are not a
statement, and keep every op a workload tags; the dashboards' copy and the
report's are the same."""

from __future__ import annotations

import re

from ybbench.core import k6_series
from ybbench.dashboards import k6_panels

from ..support.stack import REPO

SCRIPTS = REPO / "k6-scripts"
MATCHER = re.compile(r'op(!=|!~)"([^"]*)"')


def excluded(tag: str, matchers: str) -> bool:
    """Whether Prometheus' matchers (anchored regexes) leave out a series with op=tag."""
    for kind, value in MATCHER.findall(matchers):
        if (kind == "!=" and tag == value) or (kind == "!~" and re.fullmatch(value, tag)):
            return True
    return False


def tags_in(paths) -> set[str]:
    found = set()
    for p in paths:
        text = p.read_text()
        found |= set(re.findall(r'tagIteration\("([^"]+)"\)', text))
        found |= set(re.findall(r'LOOP_OP = "([^"]+)"', text))
    return found


def test_both_copies_are_the_same():
    assert k6_panels.STATEMENTS == k6_series.STATEMENTS
    assert set(MATCHER.findall(k6_series.STATEMENTS)) and not MATCHER.sub("", k6_series.STATEMENTS).strip(", ")


def test_statements_kept_and_other_iterations_left_out():
    # Not statements: the tags lib/metrics.js (idle) and lib/loop.js (the loop) give, and none.
    others = tags_in([SCRIPTS / "lib" / "metrics.js", SCRIPTS / "lib" / "loop.js"]) | {""}
    statements = tags_in(p for p in SCRIPTS.rglob("*.js") if p.name not in ("metrics.js", "loop.js"))
    assert {"loop", "idle"} <= others and {"insert", "select", "update", "scan"} <= statements
    for tag in others:
        assert excluded(tag, k6_series.STATEMENTS), tag
    for tag in statements:
        assert not excluded(tag, k6_series.STATEMENTS), tag
    # The test's own reading of the matchers: the old filter kept the loop.
    assert not excluded("loop", 'op!=""') and excluded("", 'op!=""')
