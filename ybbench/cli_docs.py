"""docs/cli.md's reference section, "Every command and flag", generated from
the CLI's own parser (ybbench/cli.py): each subcommand with its help line,
each argument with its value, default and help. `python3 -m ybbench.cli_docs`
rewrites the section, `--check` says whether it is up to date;
tests/unit/test_cli_docs.py fails when it is not. Above cli.py in the
layers: nothing imports it."""

from __future__ import annotations

import argparse
import sys

from ybbench import cli
from ybbench.core import catalog, generated_section

MODULE = "ybbench.cli_docs"
DOC = catalog.REPO / "docs" / "cli.md"
# A positional argument's count, for its value column.
POSITIONAL = {"?": "optional", "*": "any number", "+": "one or more"}


def subcommands(p: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """Each subcommand of `p`: its parser and its help line, in the parser's order."""
    out = {}
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {c.dest: c.help or "" for c in action._choices_actions}
            out.update({name: (sub, helps.get(name, "")) for name, sub in action.choices.items()})
    return out


def _text(s: str) -> str:
    """Help text as a table cell: argparse's %% unescaped, pipes escaped, and
    <placeholders> outside code spans kept from reading as HTML tags."""
    s = " ".join(s.replace("%%", "%").split()).replace("|", "\\|")
    parts = s.split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;").replace(">", "&gt;") for i, p in enumerate(parts))


def _value(action: argparse.Action) -> str:
    """What an argument takes, as argparse's usage writes it."""
    if action.nargs == 0:
        return ""
    name = action.metavar or (action.dest if not action.option_strings else action.dest.upper())
    forms = {"?": f"[{name}]", "*": f"[{name} ...]", "+": f"{name} [{name} ...]"}
    return forms.get(action.nargs, name)


def _default(action: argparse.Action) -> str:
    """A default worth saying: not None, an empty list or False; a path in
    this checkout written from the repository's root."""
    d = action.default
    if d is None or d is False or d == [] or d == argparse.SUPPRESS or action.nargs == 0:
        return ""
    d = str(d)
    root = str(catalog.REPO) + "/"
    return f"`{d[len(root):] if d.startswith(root) else d}`"


def _rows(p: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in p._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        names = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
        value = _value(action) if action.option_strings else POSITIONAL.get(action.nargs, "")
        rows.append(f"| {names} | {_text(value)} | {_default(action)} | {_text(action.help or '')} |")
    return rows


def _command(path: str, p: argparse.ArgumentParser, help_line: str) -> list[str]:
    out = [f"### `ybbench {path}`", "", _text(help_line).rstrip(".") + ".", ""]
    rows = _rows(p)
    if rows:
        out += ["| argument | value | default | what it does |", "| --- | --- | --- | --- |", *rows, ""]
    for name, (sub, sub_help) in subcommands(p).items():
        out += _command(f"{path} {name}", sub, sub_help)
    return out


def render_section(top: argparse.ArgumentParser | None = None) -> str:
    """The section's text, from `top` (the CLI's parser unless given)."""
    top = top or cli.parser()
    tops = [a for a in top._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    env = ", ".join(f"`--{flag}` from `${var}`" for flag, var in cli.ENV_DEFAULTS.items())
    lines = ["## Every command and flag", "",
             "Each subcommand, its arguments (a positional one by its name, a flag by each of its names), "
             "the value each takes, its default and what it does, as `ybbench COMMAND --help` says them. "
             f"Where a flag is not given, the environment gives it: {env}.", ""]
    lines += [f"`ybbench {a.option_strings[0]}`: {_text(a.help or '')}." for a in tops] + [""]
    for name, (sub, help_line) in subcommands(top).items():
        lines += _command(name, sub, help_line)
    return "\n".join(lines)


def render(page: str, top: argparse.ArgumentParser | None = None) -> str:
    """`page` (docs/cli.md's text) with its generated section from `top`."""
    return generated_section.splice(page, MODULE, render_section(top))


def main(argv: list[str] | None = None) -> int:
    return generated_section.main(DOC, render, MODULE, argv)


if __name__ == "__main__":
    sys.exit(main())
