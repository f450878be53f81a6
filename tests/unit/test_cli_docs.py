"""docs/cli.md's "Every command and flag" is the parser's own
(ybbench/cli_docs.py): the page in the repository is what the generator
writes, every flag of every subcommand is in it, and a flag added to or
taken out of (a copy of) the parser makes the page out of date, which
`--check` says with exit 1."""

from __future__ import annotations

import argparse

from ybbench import cli, cli_docs
from ybbench.core import generated_section

from ..support.stack import REPO

PAGE = REPO / "docs" / "cli.md"


def every_option(p: argparse.ArgumentParser) -> set[str]:
    out = {s for a in p._actions if a.help != argparse.SUPPRESS for s in a.option_strings} - {"-h", "--help"}
    for name, (sub, _) in cli_docs.subcommands(p).items():
        out |= every_option(sub)
    return out


def test_the_page_is_generated_from_the_parser():
    # Regenerate with `python3 -m ybbench.cli_docs`.
    page = PAGE.read_text()
    assert page == cli_docs.render(page), "docs/cli.md is out of date: run python3 -m ybbench.cli_docs"
    assert generated_section.main(PAGE, cli_docs.render, cli_docs.MODULE, ["--check"]) == 0


def test_every_flag_and_subcommand_is_in_the_section():
    section = cli_docs.render_section()
    top = cli.parser()
    for flag in every_option(top):
        assert f"`{flag}`" in section or f"`ybbench {flag}`" in section, flag
    for name in cli_docs.subcommands(top):
        assert f"### `ybbench {name}`" in section, name
    assert "### `ybbench history import`" in section
    assert "`--history`" not in section.split("### `ybbench ab`")[1].split("### `ybbench demo`")[0]  # suppressed


def test_a_flag_added_to_the_parser_makes_the_page_out_of_date(tmp_path, capsys):
    top = cli.parser()
    cli_docs.subcommands(top)["run"][0].add_argument("--planted-flag", metavar="N", default="7", help="a planted flag")
    page = PAGE.read_text()
    new = cli_docs.render(page, top)
    assert new != page
    assert "| `--planted-flag` | N | `7` | a planted flag |" in new
    # Only the section changes: the guide around it is kept as it is.
    head, tail = page.split(generated_section.begin(cli_docs.MODULE))[0], page.split(generated_section.END)[1]
    assert new.startswith(head) and new.endswith(generated_section.END + tail)

    copy = tmp_path / "cli.md"
    copy.write_text(page)
    planted = lambda text: cli_docs.render(text, top)  # noqa: E731
    assert generated_section.main(copy, planted, cli_docs.MODULE, ["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert copy.read_text() == page  # --check writes nothing
    assert generated_section.main(copy, planted, cli_docs.MODULE, []) == 0
    assert copy.read_text() == new


def test_a_flag_taken_out_of_the_parser_makes_the_page_out_of_date():
    top = cli.parser()
    sub = cli_docs.subcommands(top)["sweep"][0]
    action = sub._option_string_actions["--step-duration"]
    sub._remove_action(action)
    for group in sub._action_groups:
        if action in group._group_actions:
            group._group_actions.remove(action)
    page = PAGE.read_text()
    assert cli_docs.render(page, top) != page
    assert "`--step-duration`" not in cli_docs.render_section(top)
