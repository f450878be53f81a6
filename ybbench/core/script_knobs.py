"""The knobs the k6 scripts read, found in their text: each call of a
reading function (`int("VUS", 16, ...)`, `str(...)`, `oneOf(...)`, ... of
k6-scripts/lib/config.js, and any function that reads its first argument
through one of them) with its knob, its default as written and whether
`required(...)` wraps it; and which workloads read each, through the lib/
files each script imports. The docs' knobs table
(core/knobs_docs.py) and the test that every knob can be set
(tests/unit/test_workloads_knobs.py) both read the scripts through this."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ybbench.core import catalog

# lib/config.js reads a variable through raw(name); a reading function is
# raw, or one that passes its first parameter to a reading function.
BASE_READER = "raw"
FUNCTION = re.compile(r"^(?:export\s+)?function\s+(\w+)\(([^)]*)\)", re.M)
IMPORT = re.compile(r"""(?:\bfrom|^import)\s+["'](\.{1,2}/[^"']+)["']""", re.M)
BLOCK_COMMENT = re.compile(r"/\*.*?\*/", re.S)
LINE_COMMENT = re.compile(r"^\s*//.*$", re.M)

# Reads a lib/ file makes for some of the workloads that import it only
# (lib/kv.js: the load and the reads take different branches), by file,
# knob and whether the read is required; tests/unit/test_knobs_docs.py
# fails when one of these reads is no longer in its file.
_KV_READERS = frozenset(w for w, load in catalog.READS_KEYS_OF.items() if load == "kv-load")
ONLY_FOR = {
    ("lib/kv.js", "KEY_PREFIX", False): frozenset({"kv-load"}),
    ("lib/kv.js", "NUM_UNIQUE_KEYS", False): frozenset({"kv-load"}),
    ("lib/kv.js", "KEY_PREFIX", True): _KV_READERS,
    ("lib/kv.js", "MAX_WRITTEN_KEY", True): _KV_READERS,
    ("lib/kv.js", "WRITE_PERCENT", False): _KV_READERS,
    ("lib/kv.js", "RECENT_KEYS", False): frozenset({"kv-recent-read-heavy"}),
}


@dataclass(frozen=True)
class Read:
    file: str  # under k6-scripts/, e.g. lib/run.js
    knob: str
    default: str  # the JavaScript expression as written; "undefined" when none
    required: bool


def _code(path: Path) -> str:
    """A script without its comments (a reader named in one is no read)."""
    return LINE_COMMENT.sub("", BLOCK_COMMENT.sub("", path.read_text()))


def _argument(text: str, at: int) -> str:
    """The JavaScript expression from `at` to the next comma or closing
    bracket at its own depth (strings and nested brackets skipped)."""
    depth, i, quote = 0, at, None
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                break
            depth -= 1
        elif c == "," and depth == 0:
            break
        i += 1
    return " ".join(text[at:i].split())


def readers(root: Path = catalog.SCRIPTS) -> dict[str, str | None]:
    """Each reading function of the scripts, and its default: None when it
    is the caller's second argument (`int(name, dflt, ...)`), else the
    expression it reads with (`tlsFile(name, sslmode)`: str(name, "")).
    Found to a fixed point: duration() reads through str(), which reads
    through raw()."""
    functions = {}
    for f in sorted(root.rglob("*.js")):
        text = _code(f)
        for m in FUNCTION.finditer(text):
            end = text.find("\n}", m.end())
            params = [p.split("=")[0].strip() for p in m.group(2).split(",")]
            functions[m.group(1)] = (params, text[m.end():end if end > 0 else len(text)])
    found: dict[str, str | None] = {BASE_READER: None}
    grown = True
    while grown:
        grown = False
        for name, (params, body) in functions.items():
            if name in found or not params[0].isidentifier():
                continue
            inner = re.search(rf"\b({'|'.join(found)})\(\s*{params[0]}\s*([,)])", body)
            if inner is None:
                continue
            second = _argument(body, inner.end()) if inner.group(2) == "," else "undefined"
            passed_on = inner.group(1) == BASE_READER or (len(params) > 1 and second == params[1])
            found[name] = None if passed_on else (found[inner.group(1)] or second)
            grown = True
    return found


def reads_in(path: Path, root: Path = catalog.SCRIPTS, known: dict[str, str | None] | None = None) -> list[Read]:
    """Every knob read of one script, in order."""
    known = readers(root) if known is None else known
    call = re.compile(rf"\b({'|'.join(known)})\(\"([A-Z][A-Z0-9_]*)\"")
    text = _code(path)
    out = []
    for m in call.finditer(text):
        rest = m.end()
        default = known[m.group(1)] or (_argument(text, rest + 1) if text[rest] == "," else "undefined")
        required = re.search(rf"\brequired\(\"{m.group(2)}\",\s*$", text[max(0, m.start() - 80):m.start()]) is not None
        out.append(Read(path.relative_to(root).as_posix(), m.group(2), default or "undefined", required))
    return out


def imports(path: Path) -> list[Path]:
    """The scripts `path` imports, by relative path."""
    return [(path.parent / rel).resolve() for rel in IMPORT.findall(_code(path))]


def _closure(path: Path) -> list[Path]:
    seen: list[Path] = []
    todo = [path.resolve()]
    while todo:
        p = todo.pop()
        if p not in seen and p.is_file():
            seen.append(p)
            todo += imports(p)
    return seen


def all_reads(root: Path = catalog.SCRIPTS) -> list[Read]:
    """Every knob read of every script, workloads and lib/."""
    known = readers(root)
    return [r for f in sorted(root.rglob("*.js")) for r in reads_in(f, root, known)]


def workload_reads(workload: str, root: Path = catalog.SCRIPTS) -> dict[str, list[Read]]:
    """The knobs one workload reads, each with the reads that give its
    default: the workload's own file's, else those of the lib/ files it
    imports (less ONLY_FOR's reads meant for other workloads)."""
    own = root / f"{workload}.js"
    known = readers(root)
    by_knob: dict[str, list[Read]] = {}
    for f in _closure(own):
        for r in reads_in(f, root, known):
            only = ONLY_FOR.get((r.file, r.knob, r.required))
            if only is None or workload in only:
                by_knob.setdefault(r.knob, []).append(r)
    mine = own.relative_to(root).as_posix()
    return {k: [r for r in rs if r.file == mine] or rs for k, rs in sorted(by_knob.items())}
