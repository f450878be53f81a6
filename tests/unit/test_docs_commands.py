"""Every command the README and docs/*.md show is one this checkout knows.

What is checked, in fenced code blocks (```sh, ```bash, ```shell,
```console: its `$ ` lines; an unlabelled block: its lines that start with a
command below) and in inline code spans of the prose:

- `ybbench ARGS` (also `python3 -m ybbench ARGS` and `docker compose run
  --rm ybbench ARGS`): in a block, parsed by `ybbench.cli.parser()` as the
  CLI parses it (an unknown subcommand or flag, a missing argument fails);
  in a block or a span, every flag must be one of its subcommand's own,
  spelled in full (argparse would take an abbreviation);
- `docker compose ...`: its subcommand and flags are the real Compose
  CLI's (`docker compose SUB --help`), its services and `--profile`s those
  of the project (`docker compose --profile '*' config --format json`);
- `make TARGET`: a target of the Makefile;
- `python3 -m MODULE`: a module of this checkout.
Other programs (k6, kubectl, jq, ...) are not checked.

Placeholders. A command may stand for several: `<testid>` (angle brackets),
`...` (more arguments, as above), `$VAR` (the shell's), and in the prose an
all-capitals word (`WORKLOAD`, `ARGS`, `SERVICE`). A fenced block whose
commands hold a `<...>` or `...` placeholder cannot be pasted as it is, and
says so: an HTML comment, on the last non-blank line before its fence,

    <!-- not-run: a real cluster's address -->

with the reason. Such a block is still parsed (a placeholder is a value like
any other; a lone `...` is left out), and a block without the comment may
hold no placeholder. The comment does not show on the rendered page.

The checker is `check(text, name, compose)`, on text: the tests at the end
plant a removed flag, an unknown service and the like in a copy of a page.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ybbench import cli

from ..support import shared
from ..support.stack import REPO, built

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELLS = {"sh", "bash", "shell", "console", ""}
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([\w+-]*)")
NOT_RUN = re.compile(r"^\s*<!--\s*not-run:\s*(\S.*?)\s*-->\s*$")
CODE_SPAN = re.compile(r"(?<!`)`([^`]+?)`(?!`)")
PLACEHOLDER = re.compile(r"<[^<>\s][^<>]*>")
CAPS = re.compile(r"^[A-Z][A-Z0-9_]*(?:[.=,:].*)?$")
ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
OPERATORS = {"&&", "||", "|", ";", "&"}
COMPOSE_GLOBAL_VALUE = {"-f", "--file", "-p", "--project-name", "--profile", "--env-file",
                        "--project-directory", "--ansi", "--progress", "--parallel"}
COMPOSE_FIRST_IS_SERVICE = {"run", "exec", "port", "attach"}
COMPOSE_NO_SERVICES = {"config", "version", "ls", "cp", "bridge", "publish", "volumes"}


@dataclass
class Command:
    line: int
    words: list[str]
    block: bool  # in a fenced block (else an inline span of the prose)
    not_run: str | None = None  # the block's not-run reason


# --- finding the commands ---------------------------------------------------------------------


def _words(text: str) -> list[list[str]]:
    """A shell line's commands (split at && || | ; &), comments dropped."""
    lex = shlex.shlex(text, posix=True, punctuation_chars="&|;")
    lex.whitespace_split = True
    lex.commenters = ""  # shlex would cut a#b too: a comment starts a word, as in the shell
    out: list[list[str]] = [[]]
    for tok in lex:
        if tok.startswith("#"):
            break
        if tok in OPERATORS or set(tok) <= set("&|;") and tok:
            out.append([])
        else:
            out[-1].append(tok)
    return [w for w in out if w]


def _strip_env(words: list[str]) -> list[str]:
    while words and ENV.match(words[0]):
        words = words[1:]
    return words


def _family(words: list[str]) -> str | None:
    if words[:1] == ["ybbench"] or words[:3] == ["python3", "-m", "ybbench"]:
        return "ybbench"
    if words[:2] == ["docker", "compose"]:
        return "compose"
    if words[:1] == ["make"]:
        return "make"
    if words[:2] == ["python3", "-m"] and len(words) > 2:
        return "module"
    return None


def commands(text: str) -> tuple[list[Command], list[str]]:
    """The checkable commands of a page, and what is wrong with its marks."""
    found: list[Command] = []
    problems: list[str] = []
    lines = text.split("\n")
    i = 0
    prose: list[tuple[int, str]] = []
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            prose.append((i + 1, lines[i]))
            i += 1
            continue
        fence, lang, start = m.group(1), m.group(2).lower(), i
        prev = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        mark = NOT_RUN.match(prev)
        if "not-run" in prev and not mark:
            problems.append(f"line {i}: a malformed not-run mark (<!-- not-run: REASON -->): {prev.strip()}")
        i += 1
        body: list[tuple[int, str]] = []
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and not lines[i].strip().lstrip(fence[0])):
            body.append((i + 1, lines[i]))
            i += 1
        i += 1
        if lang not in SHELLS:
            continue
        block_found: list[Command] = []
        joined: list[tuple[int, str]] = []
        for n, ln in body:
            if joined and joined[-1][1].endswith("\\"):
                joined[-1] = (joined[-1][0], joined[-1][1][:-1] + " " + ln.strip())
            else:
                joined.append((n, ln))
        for n, ln in joined:
            s = ln.strip()
            if lang == "console":
                if not s.startswith("$ "):
                    continue
                s = s[2:]
            try:
                parts = _words(s)
            except ValueError as e:
                if lang or s.split()[:1] in (["ybbench"], ["docker"], ["make"]):
                    problems.append(f"line {n}: cannot be read as a shell line ({e}): {s}")
                continue
            for words in parts:
                words = _strip_env(words)
                if words and _family(words):
                    block_found.append(Command(n, words, True, mark.group(1) if mark else None))
        if mark and not block_found:
            problems.append(f"line {start + 1}: a not-run mark on a block with no command checked here")
        found += block_found
    # Inline code spans: a span may wrap onto the next line of its paragraph.
    text_prose = "\n".join(ln for _, ln in prose)
    numbers = [n for n, _ in prose]
    for m in CODE_SPAN.finditer(text_prose):
        span = " ".join(m.group(1).split())
        if not re.match(r"(ybbench|python3 -m ybbench|docker compose|make) ", span):
            continue
        n = numbers[text_prose.count("\n", 0, m.start())]
        try:
            parts = _words(span)
        except ValueError as e:
            problems.append(f"line {n}: cannot be read as a shell line ({e}): {span}")
            continue
        for words in parts:
            words = _strip_env(words)
            if words and _family(words):
                found.append(Command(n, words, False))
    return found, problems


# --- the ybbench CLI ----------------------------------------------------------------------------


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags_problem(words: list[str], top: argparse.ArgumentParser) -> str | None:
    """The first subcommand or flag `words` (after `ybbench`) name that the
    CLI does not have; placeholders pass."""
    p, where = top, "ybbench"
    subs = _subparsers(p)
    rest = list(words)
    while rest and subs:
        w = rest[0]
        if w.startswith("-"):
            break
        if w in subs:
            p, where = subs[w], f"{where} {w}"
            subs = _subparsers(p)
            rest = rest[1:]
        elif w == "..." or CAPS.match(w) or PLACEHOLDER.search(w):
            return None  # `ybbench COMMAND ...`: nothing more to check
        elif p is top:
            return f"no subcommand {w!r}"
        else:
            break  # a positional argument of p
    known = set(p._option_string_actions)
    for w in rest:
        flag = w.strip("[]()").split("=", 1)[0]
        if flag.startswith("--") and len(flag) > 2 and flag not in known:
            return f"{where} has no flag {flag}"
        if re.fullmatch(r"-[A-Za-z]", flag) and flag not in known:
            return f"{where} has no flag {flag}"
    return None


def _parse_problem(words: list[str]) -> str | None:
    """What ybbench.cli.parser() says of `words`, or None if they parse."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            cli.parser().parse_args([w for w in words if w != "..."])
    except SystemExit as e:
        if e.code not in (0, None):
            said = [ln for ln in err.getvalue().splitlines() if ln.strip()]
            return said[-1] if said else f"exit {e.code}"
    return None


def _check_ybbench(words: list[str], block: bool) -> str | None:
    # What follows `--` goes to k6 as it is (cli.main): not ybbench's to check.
    words = words[:words.index("--")] if "--" in words else words
    return _flags_problem(words, cli.parser()) or (_parse_problem(words) if block else None)


# --- docker compose -----------------------------------------------------------------------------


@dataclass
class Compose:
    """The real Compose CLI (the plugin native/build.sh builds) and the
    project it loads at the repository root."""
    program: Path
    _help: dict[str, tuple[bool, dict[str, bool]]] = field(default_factory=dict)
    _projects: dict[tuple[str, ...], dict] = field(default_factory=dict)

    def options(self, sub: str) -> tuple[bool, dict[str, bool]]:
        """Whether `sub` is a subcommand (or "" for the top level), and its
        flags, each with whether it takes a value."""
        if sub not in self._help:
            p = subprocess.run([str(self.program), *([sub] if sub else []), "--help"],
                               capture_output=True, text=True, cwd=REPO)
            flags: dict[str, bool] = {"--help": False, "-h": False}
            for m in re.finditer(r"^\s+(?:(-\w), )?(--[\w-]+)(?: (\w+))?", p.stdout, re.M):
                for name in (m.group(1), m.group(2)):
                    if name:
                        flags[name] = bool(m.group(3))
            self._help[sub] = (p.returncode == 0 and "Options:" in p.stdout, flags)
        return self._help[sub]

    def project(self, files: tuple[str, ...]) -> dict:
        if files not in self._projects:
            args = [a for f in files for a in ("-f", f)]
            p = subprocess.run([str(self.program), *args, "--profile", "*", "config", "--format", "json"],
                               capture_output=True, text=True, cwd=REPO)
            assert p.returncode == 0, f"docker compose {' '.join(args)} config: {p.stderr}"
            self._projects[files] = json.loads(p.stdout)
        return self._projects[files]


def _placeholder(w: str) -> bool:
    return w == "..." or bool(CAPS.match(w) or PLACEHOLDER.search(w) or w.startswith("$"))


def _split_options(words: list[str], flags: dict[str, bool]) -> tuple[list[tuple[str, str | None]], list[str], str | None]:
    """(flag, value) pairs up to the first positional word, the rest, and
    the first flag `flags` does not have."""
    opts: list[tuple[str, str | None]] = []
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        flag, eq, value = words[i].partition("=")
        if flag not in flags:
            return opts, words[i:], flag
        if flags[flag] and not eq:
            i += 1
            value = words[i] if i < len(words) else None
        opts.append((flag, value if (eq or flags[flag]) else None))
        i += 1
    return opts, words[i:], None


def _check_compose(words: list[str], compose: Compose, block: bool = True) -> str | None:
    _, top = compose.options("")
    opts, rest, bad = _split_options(words[2:], top)
    if bad:
        return f"docker compose has no flag {bad}"
    if not rest or rest[0] == "...":
        return None
    sub, rest = rest[0], rest[1:]
    if _placeholder(sub):
        return None
    exists, flags = compose.options(sub)
    if not exists:
        return f"docker compose has no subcommand {sub!r}"
    files = tuple(v for f, v in opts if f in ("-f", "--file") and v)
    project = compose.project(files)
    profiles = {p for s in project["services"].values() for p in s.get("profiles", [])} | {"*"}
    for f, v in opts:
        if f == "--profile" and v not in profiles and not _placeholder(v or ""):
            return f"no profile {v!r} in the compose project (it has {', '.join(sorted(profiles - {'*'}))})"
    # The subcommand's own flags, then its services (and, for run, the
    # command: a ybbench one is parsed as ybbench's).
    services: list[str] = []
    while rest:
        o, rest, bad = _split_options(rest, flags)
        if bad:
            return f"docker compose {sub} has no flag {bad}"
        if not rest:
            break
        if sub in COMPOSE_FIRST_IS_SERVICE:
            services.append(rest[0])
            if sub == "run" and rest[0] == "ybbench" and len(rest) > 1:
                problem = _check_ybbench(rest[1:], block)
                if problem:
                    return f"in the ybbench service: {problem}"
            break
        services.append(rest[0])
        rest = rest[1:]
    if sub in COMPOSE_NO_SERVICES:
        return None
    for s in services:
        if not _placeholder(s) and s not in project["services"]:
            return f"no service {s!r} in the compose project"
    return None


# --- make and python3 -m ------------------------------------------------------------------------


def make_targets(makefile: Path = REPO / "Makefile") -> set[str]:
    return set(re.findall(r"^([A-Za-z0-9][\w.-]*)\s*:(?!=)", makefile.read_text(), re.M))


def _check_make(words: list[str], targets: set[str]) -> str | None:
    for w in words[1:]:
        if w.startswith("-") or "=" in w or _placeholder(w):
            continue
        if w not in targets:
            return f"the Makefile has no target {w!r} (it has {', '.join(sorted(targets))})"
    return None


def _check_module(words: list[str]) -> str | None:
    name = words[2]
    if not re.match(r"(ybbench|bench)(\.|$)", name):
        return None  # not ours (pip, venv, ...)
    if importlib.util.find_spec(name.split(".")[0]) is None:
        return None
    try:
        found = importlib.util.find_spec(name)
    except ModuleNotFoundError:
        found = None
    return None if found else f"no module {name}"


# --- the checker --------------------------------------------------------------------------------


def check(text: str, name: str, compose: Compose | None = None) -> list[str]:
    """Every problem of the page's commands, as `name:line: command: problem`.
    Without `compose`, `docker compose` commands are not checked."""
    found, problems = commands(text)
    out = [f"{name}:{p}".replace(":line ", ":", 1) for p in problems]
    targets = make_targets()
    for c in found:
        words = c.words
        family = _family(words)
        if family == "ybbench":
            args = words[3:] if words[0] == "python3" else words[1:]
            problem = _check_ybbench(args, c.block)
        elif family == "compose":
            problem = _check_compose(words, compose, c.block) if compose else None
        elif family == "make":
            problem = _check_make(words, targets)
        else:
            problem = _check_module(words)
        if not problem and c.block and not c.not_run:
            held = [w for w in words if w == "..." or PLACEHOLDER.search(w)]
            if held:
                problem = (f"placeholder {held[0]!r} in a block without a not-run mark "
                           "(<!-- not-run: REASON --> before its fence)")
        if problem:
            out.append(f"{name}:{c.line}: {' '.join(words)}: {problem}")
    return out


def _compose() -> Compose:
    program = built("compose") / "docker-compose"
    shared.need_tool(program.exists(), f"the Docker Compose CLI plugin is not at {program} (native/build.sh builds it)")
    return Compose(program)


@pytest.fixture(scope="module")
def compose() -> Compose:
    return _compose()


def _name(doc: Path) -> str:
    return str(doc.relative_to(REPO))


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_ybbench_make_and_module_commands(doc):
    assert check(doc.read_text(), _name(doc)) == []


@pytest.mark.late  # the Compose plugin
@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_docker_compose_commands(doc, compose):
    assert check(doc.read_text(), _name(doc), compose) == []


def test_the_pages_show_every_kind():
    """The guide shows each kind of command, in blocks and in the prose (a
    checker that found none would pass everything)."""
    seen: dict[tuple[str, bool], int] = {}
    for doc in DOCS:
        for c in commands(doc.read_text())[0]:
            key = (_family(c.words) or "", c.block)
            seen[key] = seen.get(key, 0) + 1
    for key in [("ybbench", True), ("ybbench", False), ("compose", True), ("compose", False),
                ("make", True), ("make", False), ("module", True)]:
        assert seen.get(key, 0) > 0, (key, seen)
    readme = commands((REPO / "README.md").read_text())[0]
    assert any(c.words[:4] == ["docker", "compose", "run", "--rm"] for c in readme)
    # Comparing runs: the guide's ab and compare commands are parsed whole.
    reports = [c.words[:2] for c in commands((REPO / "docs" / "reports.md").read_text())[0] if c.block]
    assert ["ybbench", "ab"] in reports and ["ybbench", "compare"] in reports, reports


def test_the_layout_lists_every_subcommand():
    """docs/layout.md names the CLI's subcommands: each one the parser has,
    and none it has not."""
    text = (REPO / "docs" / "layout.md").read_text()
    listed = re.search(r"the `ybbench` CLI \(([^)]*)\)", text)
    assert listed, "docs/layout.md: no list of the CLI's subcommands"
    assert sorted(re.findall(r"`([a-z-]+)`", listed.group(1))) == sorted(_subparsers(cli.parser()))


# --- planted faults: the checker catches each -------------------------------------------------


def test_a_removed_flag_in_a_copy_of_a_page_is_caught(tmp_path):
    page = (REPO / "docs" / "faults-and-verify.md").read_text()
    line = "ybbench verify sql-inserts-20260101T120000"
    assert line in page
    planted = page.replace(line, "ybbench run sql-inserts --no-such-flag", 1)
    (tmp_path / "page.md").write_text(planted)
    at = planted.split("\n").index(next(ln for ln in planted.split("\n") if "--no-such-flag" in ln)) + 1
    found = check((tmp_path / "page.md").read_text(), "page.md")
    assert found == [f"page.md:{at}: ybbench run sql-inserts --no-such-flag: ybbench run has no flag --no-such-flag"]


def test_argparse_errors_are_reported_with_the_page_and_line():
    text = "intro\n\n```sh\nybbench nosuch x\nybbench run\nybbench ab sql-selects --base-knob TABLE=kv\n```\n"
    found = check(text, "t.md")
    assert found[0] == "t.md:4: ybbench nosuch x: no subcommand 'nosuch'"
    assert found[1].startswith("t.md:5: ybbench run: ") and "required" in found[1]
    assert found[2] == "t.md:6: ybbench ab sql-selects --base-knob TABLE=kv: ybbench ab has no flag --base-knob"


def test_an_abbreviated_flag_is_caught_though_argparse_takes_it():
    assert _parse_problem(["run", "sql-inserts", "--prom", "http://x"]) is None  # argparse's abbreviation
    assert check("```sh\nybbench run sql-inserts --prom http://x\n```\n", "t.md") == [
        "t.md:2: ybbench run sql-inserts --prom http://x: ybbench run has no flag --prom"]


def test_inline_spans_continuations_and_other_entry_points():
    text = ("Run `ybbench sweep --no-step` or `python3 -m ybbench verify\n--nope x`.\n\n"
            "```sh\nA=1 ybbench run sql-inserts \\\n  --bogus\n"
            "python3 -m ybbench.no_such_module\nmake test && make nosuch\n```\n")
    found = check(text, "t.md")
    assert found == [
        "t.md:5: ybbench run sql-inserts --bogus: ybbench run has no flag --bogus",
        "t.md:7: python3 -m ybbench.no_such_module: no module ybbench.no_such_module",
        "t.md:8: make nosuch: the Makefile has no target 'nosuch' (it has " + ", ".join(sorted(make_targets())) + ")",
        "t.md:1: ybbench sweep --no-step: ybbench sweep has no flag --no-step",
        "t.md:1: python3 -m ybbench verify --nope x: ybbench verify has no flag --nope",
    ]


def test_placeholders_need_a_not_run_mark_and_are_still_parsed():
    bare = "```sh\nybbench verify <testid>\nybbench sweep sql-selects --rate 1,2 ...\n```\n"
    found = check(bare, "t.md")
    assert len(found) == 2 and all("without a not-run mark" in f for f in found), found
    marked = "<!-- not-run: the run's id -->\n\n" + bare
    assert check(marked, "t.md") == []
    wrong = "<!-- not-run: the run's id -->\n```sh\nybbench verify <testid> --chunks 5\n```\n"
    assert check(wrong, "t.md") == ["t.md:3: ybbench verify <testid> --chunks 5: ybbench verify has no flag --chunks"]
    assert check("<!-- not-run -->\n```sh\nybbench verify <testid>\n```\n", "t.md")[0].startswith(
        "t.md:1: a malformed not-run mark")


@pytest.mark.late  # the Compose plugin
def test_compose_subcommands_flags_services_and_profiles_are_the_real_ones(compose):
    text = ("```sh\ndocker compose --profile bench run --rm k6\n"
            "docker compose --profile nosuch up -d\n"
            "docker compose up -d --wait postgres no-such-service\n"
            "docker compose teardown\n"
            "docker compose down --no-such-flag\n"
            "docker compose -f compose/docker-compose.yml --profile '*' down\n"
            "docker compose exec grafana cat /run/secrets/x\n"
            "docker compose run --rm ybbench sweep sql-inserts --max-vus 4 --no-such\n```\n")
    found = check(text, "t.md", compose)
    assert [f.split(": ", 2)[0] for f in found] == ["t.md:3", "t.md:4", "t.md:5", "t.md:6", "t.md:9"], found
    assert "no profile 'nosuch'" in found[0] and "bench" in found[0]
    assert found[1].endswith("no service 'no-such-service' in the compose project")
    assert found[2].endswith("docker compose has no subcommand 'teardown'")
    assert found[3].endswith("docker compose down has no flag --no-such-flag")
    assert found[4].endswith("in the ybbench service: ybbench sweep has no flag --no-such")
    # The prose too, placeholders left alone.
    assert check("`docker compose ACTION SERVICE`, `docker compose logs nosuch`", "t.md", compose) == [
        "t.md:1: docker compose logs nosuch: no service 'nosuch' in the compose project"]
