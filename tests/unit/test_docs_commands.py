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

And every `--flag` the pages write, in a span or a block, also alone in
the prose (`--max-repeat`): it is an option of the subcommand its command
line, paragraph or heading names, else of some subcommand, unless the
context makes it another program's (`flag_problems`, below, with its
allow-list NOT_OURS of other programs' flags written alone).

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
plant a removed flag, an unknown service and the like in a copy of a page;
`flag_problems(text, name, parser)` is checked against copies of the CLI's
parser with a flag taken out.
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


# --- every --flag the pages write ---------------------------------------------------------------
#
# Every `--flag` token of a code span or a fenced block, also one written
# alone (`--max-repeat` in the prose), is one of the ybbench subcommand's it
# is written for: a command line's own (`ybbench ab ... --max-repeat`, `ab
# --fail-on`, `docker compose run --rm ybbench ab ...`; in a fenced line's
# comment, the line's command or the `ybbench SUB` the comment names); for a
# flag alone, one of the subcommands its paragraph names (`ybbench SUB`, or
# a span `SUB`) or the nearest heading above it that names one; else some
# subcommand's. Another program's flags are left alone when the context says
# whose they are: a command line of that program (OTHER_PROGRAMS, `docker
# compose` without the ybbench service, `python3 -m` a module that is not the
# CLI), what follows `--` on a ybbench command line (k6 run's own), or a
# flag alone in NOT_OURS whose paragraph or section names its program.

FLAG = re.compile(r"(?<![\w-])--[A-Za-z](?:[\w.-]*[A-Za-z0-9])?")

# The first word of a command line whose flags are that program's, not ybbench's.
OTHER_PROGRAMS = {"docker", "make", "k6", "kubectl", "psql", "pip", "go", "git", "curl", "pgbench",
                  "sysbench", "go-ycsb", "chrt", "hostname", "alloy", "install", "printf", "pytest"}

# Flags of other programs that the prose writes alone (a code span of its
# own, no command line around it): flag -> (what its paragraph or section
# must name, a regex; why it is there). Not a way out for a flag ybbench
# lost: a test checks that no subcommand has any of them, and that each is
# still written somewhere.
K6 = r"\bk6\b"
YUGABYTEDB = r"YugabyteDB|tserver|YSQL"
NOT_OURS: dict[str, tuple[str, str]] = {
    # k6 run's own: those `ybbench run -- ...` refuses (docs/cli.md), and
    # the ones ybbench gives each generator's k6 (docs/scale-out.md).
    "--iterations": (K6, "k6 run's; ybbench run refuses it after --"),
    "--stage": (K6, "k6 run's; ybbench run refuses it after --"),
    "--summary-export": (K6, "k6 run's; ybbench run refuses it after --"),
    "--no-thresholds": (K6, "k6 run's; ybbench run refuses it after --"),
    "--no-summary": (K6, "k6 run's; ybbench run refuses it after --"),
    "--address": (K6, "k6 run's REST API address; --generators gives each k6 its own"),
    "--execution-segment": (K6, "k6's execution segments, what --generators N and k6-operator split a run by"),
    "--tag": (K6, "k6 run's; --generators tags each k6's series testid and instance_id"),
    "--local-execution": (K6, "k6 cloud run's (docs/scale-out.md, Grafana Cloud k6)"),
    "--paused": (K6, "k6 run's, in the command lines k6-operator gives its runner pods"),
    # sysbench's, as make bench runs it beside pgbench (docs/client-efficiency.md).
    "--threads": (r"sysbench", "sysbench's client count"),
    "--create_secondary": (r"sysbench", "sysbench's OLTP scripts' option"),
    "--rand-type": (r"sysbench", "sysbench's key distribution"),
    "--db-ps-mode": (r"sysbench", "sysbench's prepared statements switch"),
    # YugabyteDB's servers' flags (gflags), as the compose stack starts them.
    "--callhome_enabled": (YUGABYTEDB, "a yb-master/yb-tserver flag"),
    "--ysql_max_connections": (YUGABYTEDB, "a yb-tserver flag"),
    "--ysql_enable_auth": (YUGABYTEDB, "a yb-tserver flag"),
    "--logtostderr": (YUGABYTEDB, "a yb-master/yb-tserver flag"),
    "--alsologtostderr": (YUGABYTEDB, "a yb-master/yb-tserver flag"),
    "--webserver_certificate_file": (YUGABYTEDB, "a yb-master/yb-tserver flag: its web ports over HTTPS"),
    "--webserver_password_file": (YUGABYTEDB, "a yb-master/yb-tserver flag: HTTP Digest on its web ports"),
    # node_exporter's (exporter-toolkit's TLS and basic auth), as docs/own-cluster.md scrapes it.
    "--web.config.file": (r"node_exporter", "node_exporter's web configuration file"),
    # The benchmark scripts' own (python3 -m bench.X, behind make bench, make
    # bench-monitoring and make soak) and the k6-operator ConfigMap maker's.
    "--pinning": (r"make bench|bench\.client_efficiency", "bench/client_efficiency.py's"),
    "--seconds": (r"soak", "bench/soak.py's short form, as tests/native/test_soak.py runs it"),
    "--minutes": (r"monitoring_100_nodes|soak", "bench/monitoring_100_nodes.py's and bench/soak.py's"),
    "--no-drop-reference": (r"monitoring_100_nodes", "bench/monitoring_100_nodes.py's"),
    "--k6": (r"k6_operator", "python3 -m ybbench.run.k6_operator's (the k6 that archives)"),
    # yugabyte/tpcc's (tpccbenchmark), as YugabyteDB's TPC-C pages run it (docs/experiments.md, docs/tpcc.md).
    "--warmup-time-secs": (r"yugabyte/tpcc|tpccbenchmark", "yugabyte/tpcc's warm-up, left out of its figures"),
    # Other tools'.
    "--wait": (r"compose", "docker compose up's"),
    "--durations": (r"pytest", "pytest's slowest-tests report"),
}


def _subcommand_path(words: list[str], top: argparse.ArgumentParser) -> tuple[argparse.ArgumentParser, str, list[str]]:
    """The (sub)subcommand parser `words` (after `ybbench`) reach, its name
    and the words after it."""
    p, where, rest = top, "ybbench", list(words)
    while rest and rest[0] in _subparsers(p):
        p, where = _subparsers(p)[rest[0]], f"{where} {rest[0]}"
        rest = rest[1:]
    return p, where, rest


def _comment_at(line: str) -> int:
    """Where a shell line's comment starts (len(line) if none)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return i
    return len(line)


def _flags_of(text: str) -> list[str]:
    return [m.group(0) for m in FLAG.finditer(text)]


def _not_a_flag_of(flag: str, parsers: dict[str, argparse.ArgumentParser]) -> bool:
    return not any(flag in p._option_string_actions for p in parsers.values())


def _ybbench_args(words: list[str]) -> list[str] | None:
    """The words after `ybbench` if `words` run ybbench (also as `python3 -m
    ybbench` and `docker compose run ... ybbench`), else None."""
    if words[:1] == ["ybbench"]:
        return words[1:]
    if words[:3] == ["python3", "-m", "ybbench"]:
        return words[3:]
    if words[:2] == ["docker", "compose"] and "run" in words and "ybbench" in words[words.index("run"):]:
        return words[words.index("ybbench", words.index("run")) + 1:]
    return None


def _owner(words: list[str]) -> str | None:
    """The program other than ybbench whose command line `words` is, if one."""
    if not words:
        return None
    if words[:2] == ["python3", "-m"] and len(words) > 2 and words[2] != "ybbench":
        return f"python3 -m {words[2]}"
    return words[0] if words[0] in OTHER_PROGRAMS else None


def _command_flags(words: list[str], top: argparse.ArgumentParser) -> tuple[list[tuple[str, str]], bool]:
    """The ybbench flags `words` hold that their subcommand lacks, as
    (flag, problem); and whether `words` are a command line at all (ybbench's
    or another program's)."""
    args = _ybbench_args(words)
    if args is None:
        return [], _owner(words) is not None
    args = args[:args.index("--")] if "--" in args else args  # after --: k6 run's own
    p, where, rest = _subcommand_path(args, top)
    flags = [w.strip("[]()").split("=", 1)[0] for w in rest]
    bad = [(f, f"{where} has no flag {f}") for f in flags
           if FLAG.fullmatch(f) and f not in p._option_string_actions]
    return bad, True


def _named_subcommands(text: str, top: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommands a paragraph names: `ybbench SUB`, or a code span that is `SUB`."""
    subs = _subparsers(top)
    names = {m.group(1) for m in re.finditer(r"\bybbench\s+([a-z][a-z-]*)", text)}
    names |= {m.group(1).strip() for m in CODE_SPAN.finditer(text)}
    return {n: subs[n] for n in sorted(names) if n in subs}


def _sections(lines: list[str]) -> list[str]:
    """Each line's section: the text from its heading to the next one."""
    out: list[str] = []
    start = 0
    for i in range(len(lines) + 1):
        if i == len(lines) or re.match(r"^#{1,6} ", lines[i]):
            out += ["\n".join(lines[start:i])] * (i - start)
            start = i
    return out


def flag_problems(text: str, name: str, top: argparse.ArgumentParser | None = None,
                  used: set[str] | None = None) -> list[str]:
    """Every `--flag` of the page (code spans and fenced blocks) that is not
    an option of the ybbench subcommand it is written for, as
    `name:line: where: problem`. `top` is the CLI's parser (a copy with a
    flag taken out, in the tests); `used` collects the NOT_OURS entries the
    page needed."""
    top = top or cli.parser()
    every = _subparsers(top)
    used = set() if used is None else used
    out: list[str] = []
    lines = text.split("\n")
    sections = _sections(lines)

    def alone(n: int, flag: str, shown: str, context: str, named: dict[str, argparse.ArgumentParser]) -> None:
        """A flag written without its command line."""
        if not _not_a_flag_of(flag, named or every):
            return
        other = NOT_OURS.get(flag)
        if other and context and re.search(other[0], context):
            used.add(flag)
            return
        of = ", ".join(f"ybbench {s}" for s in named) if named else "any ybbench subcommand"
        out.append(f"{name}:{n}: {shown}: {flag} is not a flag of {of}")

    headings: list[str] = []  # the current section's heading, its parent's, ...
    paragraph: list[tuple[int, str]] = []

    def prose_paragraph() -> None:
        if not paragraph:
            return
        body = "\n".join(ln for _, ln in paragraph)
        named = _named_subcommands(body, top)
        for h in reversed(headings):  # and the nearest heading that names one
            if _named_subcommands(h, top):
                named = {**_named_subcommands(h, top), **named}
                break
        numbers = [n for n, _ in paragraph]
        for m in CODE_SPAN.finditer(body):
            span = " ".join(m.group(1).split())
            if not FLAG.search(span):
                continue
            n = numbers[body.count("\n", 0, m.start())]
            try:
                parts = _words(span)
            except ValueError:
                parts = [span.split()]
            for words in parts:
                words = _strip_env(words)
                if words and words[0] in every:  # `ab --fail-on`: that subcommand's
                    words = ["ybbench", *words]
                bad, is_command = _command_flags(words, top)
                out.extend(f"{name}:{n}: `{span}`: {problem}" for _, problem in bad)
                if not is_command:
                    for flag in _flags_of(" ".join(words)):
                        alone(n, flag, f"`{span}`", body + "\n" + sections[n - 1], named)
        paragraph.clear()

    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            h = re.match(r"^(#{1,6}) ", lines[i])
            if not lines[i].strip() or h:
                prose_paragraph()
                if h:  # a paragraph of its own, in its own section
                    headings[len(h.group(1)) - 1:] = [lines[i]]
                    paragraph.append((i + 1, lines[i]))
                    prose_paragraph()
            else:
                if lines[i].lstrip().startswith("|"):
                    prose_paragraph()  # a table's row is a paragraph of its own
                paragraph.append((i + 1, lines[i]))
            i += 1
            continue
        prose_paragraph()
        fence, lang = m.group(1), m.group(2).lower()
        i += 1
        body: list[tuple[int, str]] = []
        while i < len(lines) and not (lines[i].strip().startswith(fence[0] * len(fence))
                                      and not lines[i].strip().lstrip(fence[0])):
            if body and body[-1][1].endswith("\\"):
                body[-1] = (body[-1][0], body[-1][1][:-1] + " " + lines[i].strip())
            else:
                body.append((i + 1, lines[i]))
            i += 1
        i += 1
        for n, ln in body:
            s = ln.strip()
            if not FLAG.search(s):
                continue
            shell = lang in SHELLS or s.startswith("$ ")
            s = s[2:] if s.startswith("$ ") else s
            at = _comment_at(s) if shell else len(s)
            code, comment = s[:at], s[at + 1:]
            parts: list[list[str]] = []
            if shell:
                try:
                    parts = [_strip_env(w) for w in _words(code)]
                except ValueError:
                    parts = []
            checked = False
            for words in parts:
                bad, is_command = _command_flags(words, top)
                out.extend(f"{name}:{n}: {problem}" for _, problem in bad)
                checked = checked or is_command
            if not checked:  # not a command line: output, a config
                for flag in _flags_of(code):
                    alone(n, flag, "a fenced line", "", {})
            if FLAG.search(comment):
                # `ybbench doe ... # --alpha 0.05`: the line's subcommand's;
                # `# folders written by ybbench scale ... --out`: the one it names.
                said = re.search(r"\bybbench\b.*", comment)
                words = said.group(0).split() if said else None
                if words is None and parts and _ybbench_args(parts[-1]) is not None:
                    words = parts[-1] + comment.split()
                if words is not None:
                    out.extend(f"{name}:{n}: {problem} (in a comment)" for _, problem in _command_flags(words, top)[0])
                elif not (parts and _owner(parts[-1])):
                    for flag in _flags_of(comment):
                        alone(n, flag, "a fenced line's comment", "", {})
    prose_paragraph()
    return out


def parser_without(flag: str, only: str | None = None) -> argparse.ArgumentParser:
    """ybbench.cli.parser() less `flag`, in every subcommand (or in `only`):
    the CLI as it would be were the flag removed."""
    top = cli.parser()
    removed = 0
    for sub_name, p in _subparsers(top).items():
        action = p._option_string_actions.get(flag)
        if action is None or only not in (None, sub_name):
            continue
        del p._option_string_actions[flag]
        action.option_strings = [s for s in action.option_strings if s != flag]
        if not action.option_strings:
            p._remove_action(action)
            for group in p._action_groups:
                if action in group._group_actions:
                    group._group_actions.remove(action)
        removed += 1
    assert removed, f"no subcommand has {flag}"
    return top


@pytest.mark.parametrize("doc", DOCS, ids=_name)
def test_every_flag_written_is_one_of_the_cli_s(doc):
    """Every `--flag` of the page, in a command or alone in the prose, is an
    option of the subcommand it is written for (else of some subcommand),
    unless the context makes it another program's."""
    assert flag_problems(doc.read_text(), _name(doc)) == []


@pytest.mark.parametrize("flag", ["--resolve", "--max-repeat", "--warmup-runs", "--alpha", "--keys-from",
                                  "--throughput", "--min-change", "--step-duration"])
def test_a_flag_removed_from_the_parser_is_caught(flag):
    """The pages as they are, against the CLI less one flag: every place
    that writes it, alone in the prose or in a command, is reported."""
    top = parser_without(flag)
    assert not any(flag in p._option_string_actions for p in _subparsers(top).values())
    found = [p for doc in DOCS for p in flag_problems(doc.read_text(), _name(doc), top)]
    where = [p for doc in DOCS for n, ln in enumerate(doc.read_text().split("\n"), 1)
             if re.search(rf"`{re.escape(flag)}\b", ln) for p in [f"{_name(doc)}:{n}:"]]
    assert where, f"the pages write {flag} alone nowhere: pick another flag"
    assert all(flag in p for p in found), found
    for at in where:  # each span that starts with the flag
        assert any(p.startswith(at) for p in found), (at, found)


def test_the_removals_the_task_names_are_caught_in_the_prose():
    """`--resolve`, `--max-repeat`, `--warmup-runs` and `--alpha` are written
    alone in docs/reports.md's paragraphs on ab and compare; each, taken out
    of the parser, is reported there, naming the subcommands those
    paragraphs are about."""
    page = (REPO / "docs" / "reports.md").read_text()
    for flag in ("--resolve", "--max-repeat", "--warmup-runs", "--alpha"):
        found = flag_problems(page, "docs/reports.md", parser_without(flag))
        alone = [p for p in found if f": `{flag}" in p]
        assert alone and all("is not a flag of ybbench ab" in p for p in alone), (flag, found)
    assert flag_problems(page, "docs/reports.md") == []


def test_a_flag_is_checked_against_the_subcommand_the_text_names():
    top = cli.parser()
    # --max-repeat is ab's: written for sweep, it is wrong though ab has it.
    assert flag_problems("`ybbench sweep` goes on to `--max-repeat` steps.\n", "t.md") == [
        "t.md:1: `--max-repeat`: --max-repeat is not a flag of ybbench sweep"]
    assert flag_problems("`ybbench ab` goes on to `--max-repeat` runs.\n", "t.md") == []
    assert flag_problems("`sweep --max-repeat 3`, `ab --max-repeat 3`\n", "t.md") == [
        "t.md:1: `sweep --max-repeat 3`: ybbench sweep has no flag --max-repeat"]
    # The nearest heading that names a subcommand, when the paragraph names none.
    text = "## Sweeps (`ybbench sweep`)\n\n### Details\n\nIt stops at `--max-repeat`.\n"
    assert flag_problems(text, "t.md") == ["t.md:5: `--max-repeat`: --max-repeat is not a flag of ybbench sweep"]
    # Named nowhere: some subcommand's.
    assert flag_problems("At most `--max-repeat` runs.\n", "t.md") == []
    # Taken out of ab alone, it is caught where ab is named.
    assert flag_problems("`ybbench ab`: `--max-repeat`\n", "t.md", parser_without("--max-repeat", "ab")) == [
        "t.md:1: `--max-repeat`: --max-repeat is not a flag of ybbench ab"]
    # --id is a second name on ab, not on run.
    assert flag_problems("```sh\nybbench ab sql-selects --id x\nybbench run sql-inserts --id x\n```\n", "t.md",
                         top) == ["t.md:3: ybbench run has no flag --id"]


def test_another_program_s_flags_are_left_to_it_by_context():
    text = ("```sh\n"
            "docker compose run --rm ybbench run sql-inserts --no-such -- --out json=x.json\n"
            "docker compose up -d --wait\n"
            "k6 run --out json=x.json k6-scripts/sql-inserts.js\n"
            "psql --no-psqlrc -c 'select 1'\n"
            "python3 -m bench.soak --minutes 1\n"
            "ybbench doe experiments/seed-002-esle.yaml --out x   # --alpha 0.1, --nope\n"
            "ybbench compare a b   # as ybbench scale ... --out x --nope2 writes them\n"
            "--bogus-output-line\n"
            "```\n\n"
            "k6 takes `--tag x=y`; YugabyteDB's `--logtostderr`.\n\n"
            "## Another section\n\n"
            "A paragraph about nothing: `--tag x=y`, `--no-such-flag`.\n")
    assert flag_problems(text, "t.md") == [
        "t.md:2: ybbench run has no flag --no-such",
        "t.md:7: ybbench doe has no flag --nope (in a comment)",
        "t.md:8: ybbench scale has no flag --nope2 (in a comment)",
        "t.md:9: a fenced line: --bogus-output-line is not a flag of any ybbench subcommand",
        "t.md:16: `--tag x=y`: --tag is not a flag of any ybbench subcommand",
        "t.md:16: `--no-such-flag`: --no-such-flag is not a flag of any ybbench subcommand",
    ]


def test_the_allow_list_is_other_programs_flags_each_still_written():
    """No NOT_OURS flag is one of ybbench's (the list cannot hide a flag the
    CLI lost), and each is still needed by a page."""
    ours = {f for p in _subparsers(cli.parser()).values() for f in p._option_string_actions}
    assert sorted(set(NOT_OURS) & ours) == []
    used: set[str] = set()
    for doc in DOCS:
        flag_problems(doc.read_text(), _name(doc), used=used)
    assert sorted(set(NOT_OURS) - used) == []


def test_the_readme_lists_every_subcommand():
    """The README's "Every command is ..." names each subcommand the parser has."""
    text = (REPO / "README.md").read_text()
    listed = re.search(r"Every command is `docker compose run --rm ybbench COMMAND`:(.*?)`ybbench --help`", text, re.S)
    assert listed, "README.md: no list of the commands"
    assert sorted(set(re.findall(r"`([a-z-]+)`", listed.group(1)))) == sorted(_subparsers(cli.parser()))


def test_each_run_block_makes_its_own_testids():
    """A `ybbench run ... --testid X` in a fenced block names an X no other
    block of the pages makes (pasted in turn, the second would stop:
    results/X exists), and each `--keys-from X` reads one a block on its page
    made before it."""
    made: dict[str, str] = {}
    for doc in DOCS:
        mine: list[str] = []
        for c in commands(doc.read_text())[0]:
            if not c.block:
                continue
            args = _ybbench_args(c.words)
            if not args or args[0] not in ("run", "ab"):
                continue
            opts = dict(zip(args, args[1:]))
            if "--keys-from" in opts:
                assert opts["--keys-from"] in mine, \
                    f"{_name(doc)}:{c.line}: --keys-from {opts['--keys-from']}: no block before it makes it"
            if args[0] == "run" and "--testid" in opts:
                tid = opts["--testid"]
                assert tid not in made, f"{_name(doc)}:{c.line}: --testid {tid} is made at {made[tid]} too"
                made[tid] = f"{_name(doc)}:{c.line}"
                mine.append(tid)
    assert len(made) >= 4, made
