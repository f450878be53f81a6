"""Which of k6's iteration series are statements, for PromQL.

k6 tags its `iterations` and `iteration_duration` with the op the
iteration ran (k6-scripts/lib/metrics.js), but not every tag is an
operation: with the inner loop (OPS_PER_ITERATION=N, lib/loop.js) k6's
own iteration of N statements is op=loop while each statement is counted
under its own op; an iteration that ran nothing is op=idle; one never
tagged has no op. A sum of operations or a per-op latency leaves them out,
as summary.json does (lib/summary.js). The dashboards, which import
nothing of ybbench's, say the same in ybbench/dashboards/k6_panels.py.
"""

from __future__ import annotations

# PromQL matchers: the series of statements only.
STATEMENTS = 'op!="", op!~"loop|idle"'
