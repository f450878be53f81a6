"""The compose stand-in images against their upstream images
(tests/compose/README.md): each has the user, entrypoint, volumes and ports
of the upstream Dockerfile it follows, the tools that image has and none it
lacks, and every command that something runs inside a container (the
compose file's healthchecks and commands, the README's and the tests'
`exec`s, ybbench's events) exists in that service's image.

A command is looked up the way the engine's exec does, in the image's own
filesystem (`docker create` + `docker export`, following symlinks) on the
image's PATH: no shell is assumed, and the distroless Loki has none."""

from __future__ import annotations

import json
import posixpath
import re
import shlex
import subprocess
import tarfile
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

from ..support.compose_stack import EVERY_PROFILE, Compose, Engine, build_images
from ..support.stack import REPO, wait_until

# Facts of the upstream Dockerfiles each stand-in follows (read 2026-11;
# tests/compose/README.md cites them): user, entrypoint, cmd, volumes, ports.
UPSTREAM = {
    # docker-library/busybox latest/glibc
    "busybox": dict(user="", entrypoint=None, cmd=["sh"], volumes=set(), ports=set()),
    # prometheus/prometheus Dockerfile
    "prometheus": dict(user="nobody", entrypoint=["/bin/prometheus"], workdir="/prometheus",
                       cmd=["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"],
                       volumes={"/prometheus"}, ports={"9090/tcp"}),
    # prometheus/node_exporter Dockerfile
    "node-exporter": dict(user="nobody", entrypoint=["/bin/node_exporter"], volumes=set(), ports={"9100/tcp"}),
    # prometheus-community/postgres_exporter Dockerfile
    "postgres-exporter": dict(user="nobody", entrypoint=["/bin/postgres_exporter"], volumes=set(),
                              ports={"9187/tcp"}),
    # grafana/loki cmd/loki/Dockerfile
    "loki": dict(user="10001", entrypoint=["/usr/bin/loki"], cmd=["-config.file=/etc/loki/local-config.yaml"],
                 workdir="/", volumes=set(), ports={"3100/tcp"}),
    # grafana/loki clients/cmd/promtail/Dockerfile (3.6)
    "promtail": dict(user="", entrypoint=["/usr/bin/promtail"], cmd=["-config.file=/etc/promtail/config.yml"],
                     volumes=set(), ports=set()),
    # grafana/grafana Dockerfile
    "grafana": dict(user="472", entrypoint=["/run.sh"], workdir="/usr/share/grafana", volumes=set(),
                    ports={"3000/tcp"}),
    # docker-library/postgres 15/bookworm
    "postgres": dict(user="", entrypoint=["docker-entrypoint.sh"], cmd=["postgres"],
                     volumes={"/var/lib/postgresql/data"}, ports={"5432/tcp"}),
    # ours: compose/k6/Dockerfile, whose runtime stage follows grafana/k6's
    # Dockerfile (alpine, `adduser -D -u 12345`, /usr/bin/k6, WORKDIR
    # /home/k6, ENTRYPOINT ["k6"], no CMD) but names the user: USER k6
    "k6": dict(user="k6", entrypoint=["k6"], cmd=None, workdir="/home/k6", volumes=set(), ports=set()),
    # yugabytedb/yugabyte (REFERENCE.md: its image config)
    "yugabytedb": dict(user="", entrypoint=["/sbin/tini", "--"], workdir="/home/yugabyte",
                       volumes={"/mnt/disk0", "/mnt/disk1"}, ports=set()),
    # ours: compose/ybbench/Dockerfile (root, then the entrypoint drops to
    # the owner of the repository mounted at /ybbench)
    "ybbench": dict(user="", entrypoint=["/usr/local/bin/ybbench-entrypoint"], cmd=["--help"], workdir="/ybbench",
                    volumes=set(), ports=set()),
}

# What each upstream image can run, and what it cannot (its base family's
# tools): present -> must resolve on PATH, absent -> must not.
TOOLS = {
    "busybox": dict(present={"sh", "wget", "head", "base64", "tr", "chown", "chmod", "cat", "stat", "sha256sum",
                             "cut"},
                    absent={"curl", "bash", "python3", "perl", "apt-get", "dpkg"}),
    "prometheus": dict(present={"prometheus", "promtool", "sh", "wget"}, absent={"curl", "bash", "python3", "dpkg"}),
    "node-exporter": dict(present={"node_exporter", "sh", "wget"}, absent={"curl", "bash", "dpkg"}),
    "postgres-exporter": dict(present={"postgres_exporter", "sh", "wget"}, absent={"curl", "bash", "dpkg"}),
    "loki": dict(present={"loki"}, absent={"sh", "bash", "busybox", "wget", "curl", "cat", "ls"}),
    "promtail": dict(present={"promtail", "sh", "bash"}, absent=set()),
    "grafana": dict(present={"sh", "bash", "wget", "curl", "cat"}, absent=set()),
    "postgres": dict(present={"bash", "sh", "postgres", "pg_isready", "psql", "initdb"}, absent=set()),
    "yugabytedb": dict(present={"bash", "sh", "curl", "python3", "tini", "ysqlsh", "yb-admin", "yb-master",
                                "yb-tserver"}, absent={"wget"}),
    # alpine:3.24 (busybox applets: ash as sh, wget; no bash, no curl;
    # aports main/busybox/busyboxconfig) + ca-certificates + k6
    "k6": dict(present={"k6", "sh", "wget", "cat", "head", "id", "ls", "env", "sleep"},
               absent={"bash", "curl", "python3", "perl", "apt-get", "dpkg"}),
    # python:3.11-slim-bookworm (Debian) + k6 + docker:cli's client and plugin
    "ybbench": dict(present={"ybbench", "k6", "docker", "python3", "sh", "setpriv", "stat", "install", "id",
                             "mkdir", "chown"}, absent={"wget"}),
}

# Tools the upstream image lacks that its stand-in, on a Debian base, has
# and cannot shed: a command calling one is reported as missing all the same.
UPSTREAM_LACKS = {
    "postgres": {"curl", "wget", "python3"},  # debian:bookworm-slim and PostgreSQL
    "promtail": {"curl", "wget", "python3"},  # ubuntu:noble, tzdata, CA certificates
    "grafana": {"python3", "psql", "apt-get", "dpkg"},  # Alpine (psql: the stand-in's PostgreSQL health check)
    "ybbench": {"curl", "wget"},  # python:3.11-slim-bookworm
    "yugabytedb": {"apt-get", "dpkg"},  # AlmaLinux 8: rpm and dnf
}

# The compose service -> the stand-in image that runs it.
# ysql: the external-mode test's cluster (tests/compose/external_cluster.yml), a PostgreSQL.
SERVICE_IMAGE = {"secrets": "busybox", "k6-pg": "k6", "history-db": "postgres", "ysql": "postgres"} | {
    s: "yugabytedb" for s in ("yb-master-1", "yb-master-2", "yb-master-3", "yb-tserver-1", "yb-tserver-2",
                              "yb-tserver-3", "yb-tserver-4")}

SHELLS = {"sh", "bash", "ash", "dash"}
# Shell builtins of busybox ash, dash and bash: never looked up on PATH.
BUILTINS = {"cd", "umask", "set", "export", "exit", "return", "shift", "read", "eval", "exec", "trap", "wait",
            "true", "false", ":", ".", "[", "test", "echo", "printf", "local", "unset", "command", "type"}
KEYWORDS = {"if", "then", "else", "elif", "fi", "for", "do", "done", "while", "until", "case", "esac", "in", "{",
            "}", "!", "(", ")"}
SEPARATORS = {";", "&&", "||", "|", "&", "\n", "(", ")", ";;"}


@pytest.fixture(scope="module")
def engine(compose_binaries):
    e = Engine()
    yield e
    e.stop()


@pytest.fixture(scope="module")
def built(engine) -> dict[str, str]:
    """YBT_<NAME>_IMAGE -> tag, as build.sh prints them."""
    return build_images()


@pytest.fixture(scope="module")
def images(built) -> dict[str, str]:
    """stand-in name -> image tag (YBT_PROMETHEUS_IMAGE -> prometheus)."""
    return {k.removeprefix("YBT_").removesuffix("_IMAGE").lower().replace("_", "-"): v for k, v in built.items()}


@dataclass(frozen=True)
class Entry:
    kind: str  # "file", "dir", "link", "hardlink"
    mode: int
    target: str = ""
    uid: int = 0


class ImageFs:
    """An image's filesystem as `docker export` writes it, and its config."""

    def __init__(self, tag: str):
        self.config = json.loads(subprocess.run(["docker", "image", "inspect", tag], capture_output=True, text=True,
                                                check=True).stdout)[0]["Config"]
        cid = subprocess.run(["docker", "create", "--network", "none", tag, "x"], capture_output=True, text=True,
                             check=True).stdout.strip()
        self.entries: dict[str, Entry] = {}
        self.text: dict[str, str] = {}  # the users and groups
        try:
            export = subprocess.Popen(["docker", "export", cid], stdout=subprocess.PIPE)
            with tarfile.open(fileobj=export.stdout, mode="r|") as tar:
                for m in tar:
                    path = "/" + m.name.lstrip("./").rstrip("/")
                    if m.issym():
                        self.entries[path] = Entry("link", m.mode, m.linkname, m.uid)
                    elif m.islnk():
                        self.entries[path] = Entry("hardlink", m.mode, "/" + m.linkname.lstrip("./"), m.uid)
                    elif m.isdir():
                        self.entries[path] = Entry("dir", m.mode, uid=m.uid)
                    else:
                        self.entries[path] = Entry("file", m.mode, uid=m.uid)
                        if path in ("/etc/passwd", "/etc/group"):
                            self.text[path] = tar.extractfile(m).read().decode()
            export.wait()
        finally:
            subprocess.run(["docker", "rm", "-v", cid], capture_output=True)  # and its anonymous volumes

    def env(self, name: str) -> str:
        return next((e.split("=", 1)[1] for e in self.config.get("Env") or [] if e.startswith(name + "=")), "")

    def resolve(self, path: str, hops: int = 0) -> Entry | None:
        """The entry a path names, its symlinks (in any of its folders) followed."""
        if hops > 20:
            return None
        parts, done = [p for p in path.split("/") if p], "/"
        for i, part in enumerate(parts):
            cur = posixpath.join(done, part)
            e = self.entries.get(cur)
            if e is None:
                return None
            if e.kind == "link":
                target = e.target if e.target.startswith("/") else posixpath.join(done, e.target)
                rest = "/".join(parts[i + 1:])
                return self.resolve(posixpath.normpath(posixpath.join(target, rest) if rest else target), hops + 1)
            if e.kind == "hardlink":
                e = self.entries.get(e.target, e)
            done = cur
            if i == len(parts) - 1:
                return e
        return self.entries.get("/")

    def which(self, command: str) -> str | None:
        """Where exec finds COMMAND: a path as given, else the first
        executable regular file of that name on the image's PATH."""
        candidates = [command] if "/" in command else [
            posixpath.join(d, command) for d in self.env("PATH").split(":") if d]
        for c in candidates:
            if not c.startswith("/"):
                c = posixpath.join(self.config.get("WorkingDir") or "/", c)
            e = self.resolve(c)
            if e and e.kind in ("file", "hardlink") and e.mode & 0o111:
                return c
        return None


@pytest.fixture(scope="module")
def fs(images):
    @cache
    def of(name: str) -> ImageFs:
        return ImageFs(images[name])

    return of


# --- what runs inside a container ----------------------------------------


def shell_commands(script: str) -> set[str]:
    """The commands a sh script runs (simple commands' first words, and
    those of its $(...) substitutions), without builtins, keywords and the
    functions it defines. Enough for the scripts of this project."""
    script = script.replace("$$", "$")
    found: set[str] = set()
    for sub in re.findall(r"\$\(([^()]*)\)", script):
        found |= shell_commands(sub)
    lex = shlex.shlex(script, posix=True, punctuation_chars=";&|()<>")
    lex.whitespace = " \t\r"
    lex.wordchars += "$-/.:=[]{}!+,%@^~*?"
    tokens = list(lex)
    functions, start, i = set(), True, 0
    while i < len(tokens):
        t = tokens[i]
        if t in SEPARATORS or t == "\n":
            start = True
        elif t in (">", ">>", "<", ">&", "<&", "2>", "&>"):
            i += 1  # the redirection's file
        elif start and t == "for":  # for NAME in WORDS: a name and words, not commands
            while i + 1 < len(tokens) and tokens[i + 1] not in SEPARATORS and tokens[i + 1] != "\n":
                i += 1
        elif start and t in KEYWORDS:
            pass
        elif start and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", t):
            pass  # an assignment before the command
        elif start and tokens[i + 1:i + 2] == ["()"] or start and tokens[i + 1:i + 3] == ["(", ")"]:
            functions.add(t)
            i += 1 if tokens[i + 1] == "()" else 2
        elif start:
            found.add(t)
            start = False
        i += 1
    return found - BUILTINS - functions - KEYWORDS


def argv_commands(argv: list[str]) -> set[str]:
    """The programs an exec argv runs: its first word; past an init such
    as tini, the program it starts; inside `sh -c SCRIPT`, the script's."""
    if not argv:
        return set()
    first, rest = argv[0], argv[1:]
    found = {first}
    if posixpath.basename(first) in ("tini", "tini-static", "dumb-init"):
        while rest and rest[0].startswith("-"):
            flag, rest = rest[0], rest[1:]
            if flag == "--":
                break
        return found | argv_commands(rest)
    if posixpath.basename(first) in SHELLS:
        for j, a in enumerate(rest):
            if re.match(r"^-[a-z]*c[a-z]*$", a) and j + 1 < len(rest):
                return found | shell_commands(rest[j + 1])
    return found


@dataclass(frozen=True)
class Use:
    service: str
    command: str
    where: str


def compose_project(env: dict[str, str]) -> dict:
    """The compose file as the tests run it: every profile, with the
    override's stand-in images."""
    return json.loads(subprocess.run(
        Compose.command(*EVERY_PROFILE, "config", "--format", "json"),
        cwd=REPO, env=env, capture_output=True, text=True, check=True).stdout)


def compose_uses(project: dict, fs) -> list[Use]:
    uses = []
    for name, svc in project["services"].items():
        test = (svc.get("healthcheck") or {}).get("test") or []
        if test[:1] == ["CMD"]:
            uses += [Use(name, c, "healthcheck") for c in argv_commands(test[1:])]
        elif test[:1] == ["CMD-SHELL"]:
            uses += [Use(name, c, "healthcheck") for c in argv_commands(["/bin/sh", "-c", test[1]])]
        image = fs(SERVICE_IMAGE.get(name, name)).config
        entrypoint = svc["entrypoint"] if svc.get("entrypoint") is not None else image.get("Entrypoint") or []
        command = svc["command"] if svc.get("command") is not None else image.get("Cmd") or []
        uses += [Use(name, c, "entrypoint/command") for c in argv_commands(list(entrypoint) + list(command))]
    return uses


EXEC = re.compile(r"docker (?:compose(?: -f \S+| -p \S+| --profile \S+)* exec|exec)(?: -T| -i| -t| -it)* "
                  r"(?P<service>[a-z][\w-]*) (?P<command>[^\s`'\"|;)]+)")
PY_EXEC = re.compile(r'"exec",\s*"-T",\s*"(?P<service>[\w-]+)",\s*"(?P<command>[^"]+)"')
# An exec into a service held in a variable names, in a comment on its line,
# a service whose image every value runs: `# image of: yb-tserver-1`.
PY_EXEC_VAR = re.compile(r'"exec",\s*"-T",\s*\w+,\s*"(?P<command>[^"]+)".*#\s*image of:\s*(?P<service>[\w-]+)')


def doc_uses() -> list[Use]:
    """`docker compose ... exec SERVICE CMD` and `docker exec` in the docs."""
    uses = []
    for doc in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        for line in doc.read_text().splitlines():
            if " exec " not in line:
                continue
            for m in EXEC.finditer(line):
                uses.append(Use(m["service"], m["command"], f"{doc.relative_to(REPO)}"))
    return uses


def compose_test_files() -> list[Path]:
    """tests/compose/test_*.py but this file."""
    return [f for f in sorted((REPO / "tests" / "compose").glob("test_*.py"))
            if f.resolve() != Path(__file__).resolve()]


def code_uses() -> list[Use]:
    """`exec` in ybbench, in the compose tests' helpers and in every compose
    test file (a glob: a new one is read without being listed here). This
    file is the one left out: its `"exec"`s are the patterns above and
    `docker exec` into containers it starts itself from an image, not into a
    compose service."""
    uses = []
    for f in [*sorted((REPO / "ybbench").rglob("*.py")), REPO / "tests" / "support" / "compose_stack.py",
              *compose_test_files()]:
        text = f.read_text()
        found = [Use(m["service"], m["command"], str(f.relative_to(REPO)))
                 for pattern in (PY_EXEC, PY_EXEC_VAR) for m in pattern.finditer(text)]
        # An exec written another way would go unchecked: it must be parsed too.
        assert len(found) == len(re.findall(r'"exec"', text)), f"an exec in {f} that PY_EXEC does not read"
        uses += found
    return uses


def missing(uses: list[Use], fs) -> list[str]:
    def image(u: Use) -> str:
        return SERVICE_IMAGE.get(u.service, u.service)

    return [f"{u.service} ({image(u)}): {u.command} [{u.where}]" for u in uses
            if fs(image(u)).which(u.command) is None
            or posixpath.basename(u.command) in UPSTREAM_LACKS.get(image(u), set())]


@pytest.fixture(scope="module")
def project(built):
    return compose_project(Compose(built).env)


# --- the tests -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(UPSTREAM))
def test_each_stand_in_has_its_upstream_user_entrypoint_volumes_and_ports(fs, name):
    c, want = fs(name).config, UPSTREAM[name]
    assert (c.get("User") or "") == want["user"]
    assert c.get("Entrypoint") == want["entrypoint"]
    if "cmd" in want:
        assert c.get("Cmd") == want["cmd"]
    if "workdir" in want:
        assert c.get("WorkingDir") == want["workdir"]
    assert set(c.get("Volumes") or {}) == want["volumes"]
    assert set(c.get("ExposedPorts") or {}) == want["ports"]


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_each_stand_in_has_its_upstream_tools_and_none_it_lacks(fs, name):
    image = fs(name)
    assert {t for t in TOOLS[name]["present"] if image.which(t) is None} == set()
    assert {t: image.which(t) for t in TOOLS[name]["absent"] if image.which(t)} == {}


def test_the_ybbench_image_runs_its_entrypoints_commands_and_the_compose_plugin(fs, images):
    """Every command entrypoint.sh runs is in the image; the compose plugin
    is where the docker:cli image keeps it; the CLI answers."""
    image = fs("ybbench")
    script = (REPO / "compose" / "ybbench" / "entrypoint.sh").read_text()
    used = shell_commands(script.replace("exec ", ""))  # exec's program, not the builtin
    assert {"stat", "id", "mkdir", "chown", "install", "setpriv", "ybbench"} <= used, used
    assert {c for c in used if image.which(c) is None} == set()
    plugin = image.resolve("/usr/local/libexec/docker/cli-plugins/docker-compose")
    assert plugin and plugin.mode & 0o111
    assert image.which("/usr/local/bin/docker") and image.which("/usr/bin/k6")
    run = subprocess.run(["docker", "run", "--rm", "--network", "none", images["ybbench"], "--help"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "usage: ybbench" in run.stdout, run.stdout + run.stderr
    # No repository mounted: /ybbench is the image's, owned by root, so it stays root.
    who = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "sh", images["ybbench"], "-c",
                          "stat -c %u /ybbench; docker compose version"], capture_output=True, text=True)
    assert who.stdout.splitlines()[0] == "0" and "Docker Compose version" in who.stdout, who.stdout + who.stderr


def _dist(name: str) -> str:
    """A distribution's name as its .dist-info folder may spell it, normalised (PEP 503, dots too)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def test_the_ybbench_image_has_otava_where_the_real_image_puts_it(fs, images):
    """Apache Otava as compose/ybbench/Dockerfile installs it: the venv it
    makes (its own site-packages, not the system's), YBBENCH_OTAVA naming
    its program, every package native/otava-requirements.txt pins at its
    version; and `ybbench history` finds that program there."""
    real = (REPO / "compose" / "ybbench" / "Dockerfile").read_text()
    venv = re.search(r"python3 -m venv (\S+)", real)[1]
    program = re.search(r"^ENV YBBENCH_OTAVA=(\S+)$", real, re.M)[1]
    assert (venv, program) == ("/opt/otava", "/opt/otava/bin/otava")  # the path analysis/otava.py's docstring names
    image = fs("ybbench")
    assert image.env("YBBENCH_OTAVA") == program
    assert image.which(program) == program
    assert image.resolve(f"{venv}/pyvenv.cfg") is not None
    site = f"{venv}/lib/python3.11/site-packages/"
    installed = {_dist(m[1]): m[2] for p in image.entries if p.startswith(site)
                 for m in [re.fullmatch(r"([^/]+)-([^-/]+)\.dist-info", p[len(site):])] if m}
    pinned = {_dist(n): v for n, v in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$",
                                                 (REPO / "native" / "otava-requirements.txt").read_text(), re.M)}
    assert pinned["apache_otava"] == "0.8.0" and len(pinned) > 30
    assert {n: installed.get(n) for n, v in pinned.items() if installed.get(n) != v} == {}
    # And what Python 3.11's ensurepip puts in a new venv (its _PACKAGES: setuptools, pip); nothing else.
    assert set(installed) - set(pinned) == {"pip", "setuptools"}, set(installed) - set(pinned)
    script = " && ".join([
        "python3 -c 'from ybbench.analysis import otava; print(\"program\", otava.program())'",
        f"{venv}/bin/python3 -c 'import numpy, sys; print(\"numpy\", numpy.__version__, sys.prefix)'",
        '"$YBBENCH_OTAVA" analyze --help'])
    run = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "sh", images["ybbench"], "-c",
                          script], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    said = dict(line.split(" ", 1) for line in run.stdout.splitlines() if line.startswith(("program ", "numpy ")))
    assert said["program"] == program, run.stdout
    assert said["numpy"] == f"{pinned['numpy']} {venv}", run.stdout  # Otava's own numpy, not the package's
    assert "usage: otava analyze" in run.stdout, run.stdout + run.stderr


def test_loki_is_one_static_binary_on_an_empty_image(fs, images):
    """Distroless static: no libc, no shell; CA certificates, passwd with
    10001, /tmp; and the binary runs there."""
    loki = fs("loki")
    assert not [p for p in loki.entries if re.search(r"/(libc|ld-linux)[^/]*$", p)]
    assert {"/etc/passwd", "/etc/group", "/etc/ssl/certs/ca-certificates.crt", "/tmp", "/usr/bin/loki", "/loki",
            "/etc/loki"} <= set(loki.entries)
    assert not [p for p in loki.entries if p.startswith(("/bin/", "/lib", "/usr/lib/", "/var/lib/dpkg"))]
    assert re.search(r"^loki:x:10001:10001:", loki.text["/etc/passwd"], re.M)
    assert (loki.entries["/loki"].uid, loki.entries["/etc/loki"].uid) == (10001, 10001)
    run = subprocess.run(["docker", "run", "--rm", "--network", "none", images["loki"], "-version"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "version" in run.stdout + run.stderr, run.stdout + run.stderr


def test_the_k6_image_runs_k6_as_the_user_k6_12345(fs, images):
    """compose/k6/Dockerfile: `adduser -D -u 12345 k6` (busybox: group k6
    with gid = uid, home /home/k6 owned by it), USER k6; the secrets service
    chowns the pgpass to 12345, so the name must resolve to that uid."""
    k6 = fs("k6")
    assert re.search(r"^k6:x:12345:12345:[^:]*:/home/k6:/bin/sh$", k6.text["/etc/passwd"], re.M), k6.text["/etc/passwd"]
    assert re.search(r"^k6:x:12345:", k6.text["/etc/group"], re.M)
    assert k6.entries["/home/k6"].kind == "dir" and k6.entries["/home/k6"].uid == 12345
    assert k6.which("/usr/bin/k6") and k6.resolve("/etc/ssl/certs/ca-certificates.crt")
    who = subprocess.run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "id", images["k6"]],
                         capture_output=True, text=True)
    assert who.stdout.startswith("uid=12345(k6) gid=12345(k6)"), who.stdout + who.stderr
    run = subprocess.run(["docker", "run", "--rm", "--network", "none", images["k6"], "version"],
                         capture_output=True, text=True)
    assert run.returncode == 0 and "k6/x/sql" in run.stdout, run.stdout + run.stderr


def test_every_compose_test_file_is_read_for_its_execs():
    """A new tests/compose/test_*.py is scanned without being listed."""
    files = {f.name for f in compose_test_files()}
    assert {"test_compose_stack.py", "test_compose.py"} <= files, files
    assert files == {f.name for f in (REPO / "tests" / "compose").glob("test_*.py")} - {Path(__file__).name}


def test_every_command_run_in_a_container_exists_in_its_image(project, fs):
    uses = compose_uses(project, fs) + doc_uses() + code_uses()
    seen = {(u.service, u.command) for u in uses}
    # The parser found what it must: every healthcheck program, the secrets
    # script's tools, tini's program, the README's and the tests' execs.
    assert {("prometheus", "wget"), ("grafana", "wget"), ("loki", "/usr/bin/loki"), ("postgres", "pg_isready"),
            ("yb-master-1", "/home/yugabyte/bin/yb-admin"), ("yb-tserver-1", "/home/yugabyte/bin/ysqlsh"),
            ("yb-tserver-1", "/sbin/tini"), ("yb-tserver-1", "/home/yugabyte/bin/yb-tserver"),
            ("secrets", "sh"), ("secrets", "head"), ("secrets", "base64"), ("secrets", "tr"), ("secrets", "chown"),
            ("secrets", "chmod"), ("secrets", "cat"), ("grafana", "cat"), ("yb-tserver-1", "ysqlsh"),
            ("postgres", "psql"), ("yb-tserver-1", "python3"), ("history-db", "pg_isready")} <= seen, seen
    # ybbench's events are compose commands on the host, none inside a container.
    from ybbench.run import faults as events
    assert not [a for a in events.ACTIONS.values() if "exec" in a]
    assert missing(uses, fs) == []


def test_a_healthcheck_calling_a_tool_the_image_lacks_is_caught(project, fs):
    """The control: curl in Prometheus (busybox has wget, not curl), a
    shell-form check in Loki (no shell), and curl in postgres, which the
    Debian-based stand-in has but postgres:15 lacks, are reported."""
    broken = json.loads(json.dumps(project))
    broken["services"]["prometheus"]["healthcheck"]["test"] = ["CMD", "curl", "-f", "http://127.0.0.1:9090/-/ready"]
    broken["services"]["loki"]["healthcheck"]["test"] = ["CMD-SHELL", "/usr/bin/loki -health"]
    broken["services"]["postgres"]["healthcheck"]["test"] = ["CMD", "curl", "-f", "http://127.0.0.1:5432/"]
    assert fs("postgres").which("curl")  # the stand-in runs it: only UPSTREAM_LACKS catches it
    assert sorted(missing(compose_uses(broken, fs), fs)) == [
        "loki (loki): /bin/sh [healthcheck]", "postgres (postgres): curl [healthcheck]",
        "prometheus (prometheus): curl [healthcheck]"]


def test_the_engine_fails_a_healthcheck_whose_tool_is_missing(images, engine, tmp_path):
    """The same control, for real: the stand-in Prometheus with a curl
    healthcheck goes unhealthy, with wget it goes healthy."""
    project = f"ybbench-toolset-{uuid.uuid4().hex[:6]}"
    check = {"interval": "1s", "timeout": "3s", "retries": 3, "start_period": "0s"}
    f = tmp_path / "compose.yml"
    f.write_text(json.dumps({"services": {
        name: {"image": images["prometheus"], "pull_policy": "never", "network_mode": "none",
               "healthcheck": {"test": ["CMD", tool, "-q", "-O", "/dev/null", "http://127.0.0.1:9090/-/ready"], **check}}
        for name, tool in (("with-wget", "wget"), ("with-curl", "curl"))}}))
    base = ["docker", "compose", "-p", project, "-f", str(f)]
    try:
        up = subprocess.run([*base, "up", "-d", "--wait", "--wait-timeout", "90"], capture_output=True, text=True,
                            timeout=180)
        assert up.returncode != 0, up.stdout + up.stderr

        def states():
            found = {}
            for name in ("with-wget", "with-curl"):
                cid = subprocess.run([*base, "ps", "-q", name], capture_output=True, text=True).stdout.strip()
                health = json.loads(subprocess.run(["docker", "inspect", cid], capture_output=True, text=True,
                                                   check=True).stdout)[0]["State"]["Health"]
                found[name] = (health["Status"], health["Log"][-1]["Output"] if health["Log"] else "")
            return found

        # --wait gives up at the first unhealthy container; the other may
        # still be starting then.
        settled = wait_until(lambda: (lambda s: s if "starting" not in {v[0] for v in s.values()} else None)(
            states()), "both healthchecks to settle", timeout=60, interval=1)
        assert settled["with-curl"][0] == "unhealthy" and "curl" in settled["with-curl"][1], settled
        assert settled["with-wget"][0] == "healthy", settled
    finally:
        subprocess.run([*base, "down", "-v"], capture_output=True, timeout=120)


def test_shell_parser_finds_the_commands_of_a_script():
    script = ("umask 077\ncd /s\ngen() { [ -s \"$$1\" ] || head -c 24 /dev/urandom | base64 | tr -d '/+=\\n' > \"$$1\"; "
              "chown \"$$2\" \"$$1\"; }\ngen a 1\nX=1 cat a > b\nprintf '%s' \"$$(cut -c1 a)\"\n")
    assert shell_commands(script) == {"head", "base64", "tr", "chown", "cat", "cut"}
    assert argv_commands(["/sbin/tini", "--", "/home/yugabyte/bin/yb-master", "--x"]) == {
        "/sbin/tini", "/home/yugabyte/bin/yb-master"}


@pytest.mark.parametrize("flag", ["--alsologtostderr", "--logtostderr"])
def test_the_yugabytedb_stand_in_logs_ysql_where_the_real_tserver_does(images, engine, flag):
    """pg_wrapper.cc: unless --logtostderr, the tserver starts PostgreSQL with
    logging_collector=on and log_directory=<log dir>, <first fs_data_dir>/
    yb-data/tserver/logs by default: YSQL's ERROR lines go to
    postgresql-*.log there and not to stderr (--alsologtostderr copies only
    glog's own lines). With --logtostderr, they go to stderr and no file."""
    name = f"ybbench-ysql-log-{uuid.uuid4().hex[:6]}"
    table = f"ybbench_missing_{uuid.uuid4().hex[:8]}"
    subprocess.run(["docker", "run", "-d", "--name", name, "--network", "none", images["yugabytedb"],
                    "/home/yugabyte/bin/yb-tserver", "--fs_data_dirs=/mnt/disk0,/mnt/disk1", flag],
                   check=True, capture_output=True)
    try:
        ysql = ["docker", "exec", name, "ysqlsh", "-h", "127.0.0.1", "-p", "5433", "-U", "yugabyte", "-XAtc"]
        wait_until(lambda: subprocess.run([*ysql, "SELECT 1"], capture_output=True).returncode == 0,
                   "the stand-in's YSQL", timeout=90, interval=1)
        failed = subprocess.run([*ysql, f"SELECT * FROM {table}"], capture_output=True, text=True)
        assert "does not exist" in failed.stderr
        subprocess.run(["docker", "exec", name, "sh", "-c", "sleep 1"], check=True)  # the collector's write
        stderr = subprocess.run(["docker", "logs", name], capture_output=True, text=True).stderr
        files = subprocess.run(["docker", "exec", name, "sh", "-c",
                                "cat /mnt/disk0/yb-data/tserver/logs/postgresql-*.log 2>/dev/null"],
                               capture_output=True, text=True).stdout
        error = f'ERROR:  relation "{table}" does not exist'
        assert "yb-tserver STAND-IN" in stderr + files
        if flag == "--logtostderr":
            assert error in stderr and error not in files, (stderr[-2000:], files[-2000:])
        else:
            assert error in files and error not in stderr, (stderr[-2000:], files[-2000:])
            assert "yb-tserver STAND-IN" in stderr  # glog's own lines: also on stderr
    finally:
        subprocess.run(["docker", "rm", "-f", "-v", name], capture_output=True)
