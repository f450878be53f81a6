"""Every `ybbench ab` and `ybbench compare` command shown in docs/reports.md
parses with the CLI's own parser (they need runs or a cluster to run:
tests/native/test_ab.py and test_compare.py run their kind), so a renamed
or missing flag in the guide fails here."""

from __future__ import annotations

import re
import shlex

import pytest

from ybbench import cli

from ..support.stack import REPO


def commands() -> list[str]:
    text = (REPO / "docs" / "reports.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", text, re.S)
    lines = [ln.split("#")[0].strip() for b in blocks for ln in b.replace("\\\n", " ").splitlines()]
    return [ln for ln in lines if re.match(r"ybbench (ab|compare) ", ln)]


def test_the_guide_shows_both():
    found = commands()
    assert any(c.startswith("ybbench ab ") for c in found) and any(c.startswith("ybbench compare ") for c in found)


@pytest.mark.parametrize("command", commands())
def test_each_parses(command):
    args = cli.parser().parse_args(shlex.split(command)[1:])
    assert args.func.__name__ in ("_ab", "_compare")


def test_a_wrong_flag_is_caught():
    with pytest.raises(SystemExit):
        cli.parser().parse_args(shlex.split("ab sql-selects --base-knob TABLE=kv"))
