"""What a user's settings say cannot be seen (core/visibility.py): the
sentence doctor, the limits analysis and the report show, and bad values."""

from __future__ import annotations

import pytest

from ybbench.core.errors import UserError
from ybbench.core.visibility import hidden


def test_defaults_hide_nothing():
    assert hidden({}) == {}
    assert hidden({"YBBENCH_CLUSTER_METRICS": "scraped", "YBBENCH_NODE_METRICS": "node_exporter",
                   "YBBENCH_CLUSTER_LOGS": "loki"}) == {}


def test_each_setting_hides_its_own_and_says_which_setting():
    got = hidden({"YBBENCH_CLUSTER_METRICS": "none", "YBBENCH_NODE_METRICS": "none",
                  "YBBENCH_CLUSTER_LOGS": "elsewhere"})
    assert set(got) == {"yugabytedb", "node", "logs"}
    assert got["yugabytedb"].startswith("not visible, by your settings (YBBENCH_CLUSTER_METRICS=none")
    assert "YBBENCH_NODE_METRICS=none" in got["node"] and "YBBENCH_CLUSTER_LOGS=elsewhere" in got["logs"]


@pytest.mark.parametrize("name,value", [("YBBENCH_NODE_METRICS", "no"), ("YBBENCH_CLUSTER_METRICS", "None")])
def test_a_bad_value_names_the_setting_and_what_it_takes(name, value):
    with pytest.raises(UserError, match=f"{name}={value}: expected"):
        hidden({name: value})
