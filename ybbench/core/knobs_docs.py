"""docs/workloads.md's knobs table, generated from the k6 scripts
(core/script_knobs.py): each knob, its default and the workloads that read
it. `python3 -m ybbench.core.knobs_docs` rewrites the section, `--check`
says whether it is up to date; tests/unit/test_knobs_docs.py fails when it
is not."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ybbench.core import catalog, generated_section, script_knobs
from ybbench.core.errors import UserError

MODULE = "ybbench.core.knobs_docs"
DOC = catalog.REPO / "docs" / "workloads.md"

# What a default the scripts compute, or leave unset, comes to, by knob and
# the expression as the script writes it: a changed expression has no note
# and stops the generator, so that a note never outlives its code.
NOTES = {
    ("VUS", "defaultVus"): "16; kv-random-read 150, ycsb-analytic 1, tpcc-load `WAREHOUSES` + 1 (at most 16), "
                           "tpcc with `TPCC_MODE=spec` `WAREHOUSES` / 5 rounded up",
    ("MAX_VUS", "vus"): "`VUS`",
    ("INSERT_COUNT", "t.recordCount - insertStart"): "`RECORD_COUNT` − `INSERT_START`",
    ("READ_PROPORTION", "{ a: 0.5, b: 0.95, c: 1 }[workload]"): "by `YCSB_WORKLOAD`: a 0.5, b 0.95, c 1",
    ("WRITE_PERCENT", "writePercent"): "kv-read-heavy 0.5, kv-recent-read-heavy 1.7, kv-random-read 0",
    ("RECENT_KEYS", "Math.max(1, Math.floor(maxWrittenKey / 100))"): "1% of `MAX_WRITTEN_KEY` (at least 1)",
    ("KEY_PREFIX", "undefined"): "the run's testid",
    ("RATE", "undefined"): "none: required with `LOAD_MODEL=constant-arrival-rate`",
    ("STAGES", "undefined"): "none: required with `LOAD_MODEL=ramping-arrival-rate`",
    ("YBBENCH_GO_HELPERS", "undefined"): "unset: off (`ybbench run` sets `1` where k6 has the module)",
    ("YBBENCH_NATIVE", "undefined"): "unset (the old name of `YBBENCH_GO_HELPERS`)",
    ("SUMMARY_JSON", "undefined"): "none: `ybbench run` sets `results/<testid>/summary.json`",
}
LITERAL = re.compile(r'^"[^"]*"$|^-?[0-9][0-9_.]*$')


def default_text(read: script_knobs.Read) -> str:
    """A read's default as the table says it."""
    if read.required:
        return "required"
    note = NOTES.get((read.knob, read.default))
    if note:
        return note
    if read.default == "undefined":
        return "none"
    if read.default == '""':
        return "none (empty)"
    if LITERAL.match(read.default):
        return f"`{read.default.strip(chr(34))}`"
    raise UserError(f"{read.file}: {read.knob}'s default `{read.default}` is computed: "
                    f"give it a note in ybbench/core/knobs_docs.py NOTES")


def workloads(root: Path = catalog.SCRIPTS) -> list[str]:
    return sorted(p.stem for p in root.glob("*.js"))


def rows(root: Path = catalog.SCRIPTS) -> list[tuple[str, str, list[str]]]:
    """(knob, default, workloads that read it with that default), by knob,
    from the scripts under `root` (k6-scripts/ unless given)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for w in workloads(root):
        for knob, reads in script_knobs.workload_reads(w, root).items():
            for default in dict.fromkeys(default_text(r) for r in reads):
                grouped.setdefault((knob, default), []).append(w)
    return sorted(((k, d, ws) for (k, d), ws in grouped.items()), key=lambda r: (r[0], r[2]))


def unused_notes() -> list[tuple[str, str]]:
    """NOTES no read of the scripts needs any more."""
    used = {(r.knob, r.default) for r in script_knobs.all_reads()}
    return sorted(set(NOTES) - used)


def render_section(root: Path = catalog.SCRIPTS) -> str:
    every = workloads(root)
    lines = ["## Every knob", "",
             "Each knob the scripts read, its default and the workloads that read it (a workload reads what its "
             "script and the `lib/` files it imports read), found in the scripts themselves. Set one with "
             "`ybbench run --set KNOB=VALUE`, or in k6's environment.", "",
             "| knob | default | read by |", "| --- | --- | --- |"]
    for knob, default, readers in rows(root):
        left_out = [w for w in every if w not in readers]
        who = ("every workload" if not left_out else f"every workload but {', '.join(left_out)}"
               if len(left_out) <= 2 else ", ".join(readers))
        lines.append(f"| `{knob}` | {default} | {who} |")
    return "\n".join(lines)


def render(page: str, root: Path = catalog.SCRIPTS) -> str:
    """`page` (docs/workloads.md's text) with its generated knobs table."""
    return generated_section.splice(page, MODULE, render_section(root))


def main(argv: list[str] | None = None) -> int:
    return generated_section.main(DOC, render, MODULE, argv)


if __name__ == "__main__":
    sys.exit(main())
