"""docs/workloads.md's knobs table is the scripts' own
(ybbench/core/knobs_docs.py, reading them through core/script_knobs.py):
the page is what the generator writes, and a knob added to a copy of the
scripts, a default changed there or a new reading function make it differ,
which `--check` says with exit 1."""

from __future__ import annotations

import shutil

import pytest

from ybbench.core import generated_section, knobs_docs, script_knobs
from ybbench.core.errors import UserError

from ..support.stack import REPO

PAGE = REPO / "docs" / "workloads.md"


def scripts_copy(tmp_path, file: str, old: str, new: str):
    """A copy of k6-scripts/ with `old` replaced by `new` in `file`."""
    root = tmp_path / "k6-scripts"
    shutil.copytree(REPO / "k6-scripts", root)
    text = (root / file).read_text()
    assert text.count(old) == 1, old
    (root / file).write_text(text.replace(old, new))
    return root


def test_the_page_is_generated_from_the_scripts():
    # Regenerate with `python3 -m ybbench.core.knobs_docs`.
    page = PAGE.read_text()
    assert page == knobs_docs.render(page), "docs/workloads.md is out of date: run python3 -m ybbench.core.knobs_docs"
    assert knobs_docs.main(["--check"]) == 0


def test_the_table_holds_what_the_scripts_read():
    table = knobs_docs.render_section()
    assert "| `VUS` | 16; kv-random-read 150" in table
    assert "| `DURATION` | `24h` | tpcc-load |" in table
    assert "| `TABLE` | `postgresqlkeyvalue` | sql-inserts, sql-selects, sql-updates |" in table
    # lib/kv.js's branches: the load and the reads each read their own.
    assert "| `NUM_UNIQUE_KEYS` | `0` | kv-load, sql-inserts |" in table
    assert "| `RECENT_KEYS` | 1% of `MAX_WRITTEN_KEY` (at least 1) | kv-recent-read-heavy |" in table
    assert "| `KEY_PREFIX` | required | kv-random-read, kv-read-heavy, kv-recent-read-heavy, sql-selects, " \
           "sql-updates |" in table
    assert {f"`{r.knob}`" for r in script_knobs.all_reads()} <= set(table.split())


def test_a_knob_added_to_a_workload_makes_the_page_out_of_date(tmp_path, capsys):
    root = scripts_copy(tmp_path, "sql-inserts.js", 'const rowBytes = int("ROW_BYTES"',
                        'const planted = int("PLANTED_KNOB", 7);\nconst rowBytes = int("ROW_BYTES"')
    page = PAGE.read_text()
    new = knobs_docs.render(page, root)
    assert new != page and "| `PLANTED_KNOB` | `7` | sql-inserts |" in new
    copy = tmp_path / "workloads.md"
    copy.write_text(page)
    planted = lambda text: knobs_docs.render(text, root)  # noqa: E731
    assert generated_section.main(copy, planted, knobs_docs.MODULE, ["--check"]) == 1
    assert "out of date" in capsys.readouterr().err and copy.read_text() == page


def test_a_default_changed_in_a_lib_file_changes_every_reader_s_row(tmp_path):
    root = scripts_copy(tmp_path, "lib/metrics.js", 'int("MAX_RETRIES", 10,', 'int("MAX_RETRIES", 12,')
    assert "| `MAX_RETRIES` | `12` | every workload |" in knobs_docs.render_section(root)


def test_a_new_reading_function_is_found(tmp_path):
    # A function that passes its first parameter to a reader reads a knob:
    # found without a list of names to keep up.
    root = scripts_copy(tmp_path, "lib/config.js", "export function required(",
                        "export function port(name, dflt) {\n  return int(name, dflt, { min: 1, max: 65535 });\n}\n\n"
                        "export const plantedPort = port(\"PLANTED_PORT\", 5433);\n\nexport function required(")
    assert "port" in script_knobs.readers(root)
    assert "| `PLANTED_PORT` | `5433` | every workload |" in knobs_docs.render_section(root)


def test_a_computed_default_needs_its_note(tmp_path):
    root = scripts_copy(tmp_path, "lib/metrics.js", 'int("MAX_RETRIES", 10,', 'int("MAX_RETRIES", 5 * 2,')
    with pytest.raises(UserError, match="MAX_RETRIES's default `5 \\* 2` is computed"):
        knobs_docs.render_section(root)


def test_no_note_or_branch_outlives_its_read():
    assert knobs_docs.unused_notes() == []
    reads = {(r.file, r.knob, r.required) for r in script_knobs.all_reads()}
    assert sorted(set(script_knobs.ONLY_FOR) - reads) == []
