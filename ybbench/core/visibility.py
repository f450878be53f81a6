"""What a user's set-up lets the stack see, said as settings: a cluster
that gives no scrape access (YugabyteDB Aeon), hosts without node_exporter,
a cluster whose logs go to a shipper of its own. doctor then skips what
cannot be seen, saying "not visible, by your settings", instead of failing,
and the limits analysis and the report say the same of what they could not
read; a run works with k6's own series."""

from __future__ import annotations

import os

from ybbench.core.errors import UserError

# setting -> (its default, the value that hides, what it hides, why one sets it)
SETTINGS = {
    "YBBENCH_CLUSTER_METRICS": ("scraped", "none", "yugabytedb",
                                "the cluster's servers are not scraped (no access, as on YugabyteDB Aeon)"),
    "YBBENCH_NODE_METRICS": ("node_exporter", "none", "node", "the cluster's hosts run no node_exporter"),
    "YBBENCH_CLUSTER_LOGS": ("loki", "elsewhere", "logs", "the cluster's YSQL log is not shipped to this Loki"),
}


def hidden(env: dict[str, str] | None = None) -> dict[str, str]:
    """What is not visible ("yugabytedb", "node", "logs") -> the sentence
    that says so; a value that is neither the default nor the hiding one is
    bad input, named."""
    env = os.environ if env is None else env
    out = {}
    for name, (default, hides, what, why) in SETTINGS.items():
        value = env.get(name) or default
        if value not in (default, hides):
            raise UserError(f"{name}={value}: expected {default} or {hides}")
        if value == hides:
            out[what] = f"not visible, by your settings ({name}={hides}: {why})"
    return out
