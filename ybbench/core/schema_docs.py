"""docs/results-format.md, generated from the schemas (core/schemas/) and
the upgrades (core/formats.py): `python3 -m ybbench.core.schema_docs`
rewrites it (`--check`: exit 1 when it is out of date);
tests/unit/test_results_format.py checks it is. The page holds the fields;
each kind's example is a file of its own, docs/examples/<kind>.json, linked
from it and checked against its schema by that test."""

from __future__ import annotations

import inspect
import json
import re
import sys
from pathlib import Path

from ybbench.core import formats, generated_section

DOC = Path(__file__).resolve().parents[2] / "docs" / "results-format.md"
EXAMPLES = DOC.parent / "examples"
ORDER = ["params", "summary", "usage", "limits", "events", "verify", "report", "compare", "ab", "sweep", "doe",
         "reproduce", "doe-results", "scale-results", "doctor", "history", "per-second"]

HEAD = """# Results format

Everything ybbench writes into `results/` is plain JSON, and each kind of
file has a [JSON Schema](https://json-schema.org/draft/2020-12) (draft
2020-12) in [`ybbench/core/schemas/`](../ybbench/core/schemas/): which
fields exist, their types and their units (`_s` seconds, `_ms`
milliseconds, `_unix_s` unix seconds, `per_second` and `ops_per_s` ops per
second; counts are counts). Every file carries its `"format_version"`.
This page is generated from those schemas
(`python3 -m ybbench.core.schema_docs`; a test fails when it is out of date),
and each kind's section links an example of its file, in
[`docs/examples/`](examples/) (each checked against its schema by a test).

- **ybbench reads what it wrote before.** Every command reads results
  through one reader (`ybbench/core/run_folder.py`), which checks each file
  against its schema. A file of an older version is read through the
  upgrade below, in memory: the file itself is never rewritten. A newer
  version, or a file that does not match, is refused with an error that
  names the file, the field and the version.
- **`ybbench validate PATH...`** checks a results folder (every results
  file under it) or single files, for your own tooling and CI: exit 0 when
  all are valid, 1 when one is not (the file and field named), 2 for a
  path that does not exist or a file that is not a results file. JSON
  that is not ybbench's (k6's own `k6-summary.json`) is skipped.
- With `YBBENCH_CHECK_WRITES=1`, ybbench checks every file against its
  schema as it writes it (and each `summary.json` its k6 scripts write);
  the tests run with it, so every file every command writes in them is
  checked.

## Reading a run

From Python, through ybbench's own reader (checked, older versions
upgraded):

```python
from pathlib import Path
from ybbench.core import run_folder

run = run_folder.read(Path("results/sql-inserts-20260101T120000"))
start, end = run.window                      # unix seconds (params.json)
for op, o in run.summary["ops"].items():     # summary.json
    print(op, o["per_second"], (o["latency_ms"] or {}).get("p99"))
print(run.knobs, run.events())               # params.json knobs, events.json
```

or as plain JSON, checking the version first:

```python
import json

summary = json.load(open("results/sql-inserts-20260101T120000/summary.json"))
assert summary["format_version"] == 2, "a format this script does not know"
print(summary["ops"]["insert"]["per_second"])
```

From the shell, with `jq`:

```sh
run=results/sql-inserts-20260101T120000
jq '.format_version' $run/summary.json
jq '.ops | map_values(.per_second)' $run/summary.json        # ops/s per op
jq '.ops.insert.latency_ms.p99' $run/summary.json             # ms, or null
jq '.finished_unix_s - .started_unix_s' $run/params.json      # seconds
jq -r '.steps[] | [.vus, .ops_per_s, .p99_ms] | @tsv' results/<sweep id>/sweep.json
ybbench validate results/                                      # exit 1 if any file is off
```
"""


def _type(node: dict) -> str:
    t = node.get("type")
    if "const" in node:
        return f"const {json.dumps(node['const'])}"
    if "enum" in node:
        return " \\| ".join(json.dumps(v) for v in node["enum"])
    if t is None:
        return "any"
    return " or ".join(t) if isinstance(t, list) else t


def _resolve(node: dict, root: dict) -> dict:
    ref = node.get("$ref")
    if ref and ref.startswith("#/$defs/"):
        target = root["$defs"][ref.removeprefix("#/$defs/")]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def fields(node: dict, root: dict, path: str = "") -> list[tuple[str, str, bool, str]]:
    """(field path, type, required, description) of every field below `node`."""
    out = []
    node = _resolve(node, root)
    required = set(node.get("required", []))
    for name, sub in node.get("properties", {}).items():
        sub = _resolve(sub, root)
        here = f"{path}.{name}" if path else name
        out.append((here, _type(sub), name in required, sub.get("description", "")))
        out += _below(sub, root, here)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict) and not node.get("properties"):
        pass  # a map: _below of its parent names it
    elif isinstance(extra, dict):
        sub = _resolve(extra, root)
        here = f"{path}.<other>" if path else "<other>"
        out.append((here, _type(sub), False, sub.get("description", "")))
        out += _below(sub, root, here)
    return out


def _below(sub: dict, root: dict, here: str) -> list:
    if sub.get("properties"):
        return fields(sub, root, here)
    items = sub.get("items")
    if isinstance(items, dict):
        items = _resolve(items, root)
        inner = fields(items, root, f"{here}[]") if items.get("properties") else []
        if not inner and isinstance(items.get("items"), dict):
            inner = _below(items, root, f"{here}[]")
        return inner
    extra = sub.get("additionalProperties")
    if isinstance(extra, dict):
        extra = _resolve(extra, root)
        key = f"{here}.<key>"
        return [(key, _type(extra), False, extra.get("description", ""))] + _below(extra, root, key)
    return []


def _table(rows: list[tuple[str, str, bool, str]]) -> list[str]:
    out = ["| field | type | required | what it holds, with its unit |", "|---|---|---|---|"]
    for path, typ, req, desc in rows:
        out.append(f"| `{path}` | {_cell(typ)} | {'yes' if req else ''} | {_cell(desc)} |")
    return out


def _branches(root: dict) -> list[tuple[str, dict]]:
    """A schema that chooses by a field (compare.json): each branch."""
    if "then" not in root:
        return [("", root)]
    out = [("kind reproduce", root["then"])]
    rest = root["else"]
    out += [("kind sweep, design or scale", _resolve(rest["then"], root)),
            ("runs (no kind)", _resolve(rest["else"], root))]
    return out


def file_path(kind: str) -> str:
    """The path of a kind's file, without the notes after it: `x-ybbench-file`
    up to its first " (" or ", " ("results/<compare id>/compare.json" whole,
    not cut at its first space)."""
    return re.split(r" \(|, ", formats.schema(kind)["x-ybbench-file"], maxsplit=1)[0]


def upgrades_text() -> list[str]:
    out = ["## Versions and upgrades", "",
           "| file | version written and read |", "|---|---|"]
    out += [f"| `{file_path(k)}` ({k}) | {formats.version(k)} |" for k in ORDER]
    out += ["", "A file without `format_version` is version 0: written before ybbench versioned its files. "
            "Older versions are read through these upgrades (`ybbench/core/formats.py`), one version at a time, in memory:", ""]
    seen = []
    for k in ORDER:
        for fn in formats.upgrades(k).values():
            if fn not in seen:
                seen.append(fn)
    out += [f"- {' '.join(inspect.getdoc(fn).split())}" for fn in seen]
    out += ["", "A version newer than this ybbench's is refused (use a newer ybbench); one file is never "
            "rewritten to a new version."]
    return out


def render() -> str:
    lines = [HEAD.rstrip("\n"), "", *upgrades_text(), ""]
    for kind in ORDER:
        root = formats.schema(kind)
        lines += [f"## {root['title']}: {kind}", "",
                  f"`{root['x-ybbench-file']}`, version {formats.version(kind)}; schema "
                  f"[`{kind}.schema.json`](../ybbench/core/schemas/{kind}.schema.json).", "",
                  " ".join(root["description"].split()), ""]
        for name, branch in _branches(root):
            if name:
                lines += [f"### {kind}: {name}", "", " ".join(branch.get("description", "").split()), ""]
            lines += _table(fields(branch, root)) + [""]
        lines += [f"Example: [`examples/{kind}.json`](examples/{kind}.json).", ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def example_file(kind: str) -> Path:
    """A kind's example: a trimmed real file (events.json's written by hand)."""
    return EXAMPLES / f"{kind}.json"


def example(kind: str) -> object:
    return json.loads(example_file(kind).read_text())


def main(argv: list[str] | None = None) -> int:
    return generated_section.main(DOC, lambda _page: render(), "ybbench.core.schema_docs", argv)


if __name__ == "__main__":
    sys.exit(main())
