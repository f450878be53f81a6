"""Promtail's pipeline (compose/promtail/promtail.yml, unchanged) gives each
line the `level` its format says, whatever service wrote it: YugabyteDB's
glog prefix ([IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line], github.com/
yugabyte/glog src/glog/logging.h.in; the lines in tests/support/log_samples.py are
quoted from YugabyteDB's docs and issues, each with its source),
PostgreSQL's and YSQL's '%m [%p] SEVERITY:  ', and logfmt's level=. The
native Promtail runs it in --stdin --dry-run mode, which applies the first
scrape config's stages and prints each line with its labels."""

from __future__ import annotations

import pytest

import subprocess
import uuid

from ..support import log_samples
from ..support.promtail import labels_of

pytestmark = pytest.mark.late  # Promtail

LEVELS = {"debug", "info", "warn", "error", "fatal"}


def test_every_format_gets_its_level(binaries):
    labels = labels_of([line for line, _ in log_samples.ALL])
    wrong = [f"{labels[line].get('level')!r} instead of {want!r}: {line}"
             for line, want in log_samples.ALL if labels[line].get("level") != want]
    assert not wrong, "\n".join(wrong)


def test_level_is_the_only_label_and_has_five_values(binaries):
    labels = labels_of([line for line, _ in log_samples.ALL])
    assert {name for found in labels.values() for name in found} == {"level"}
    assert {found["level"] for found in labels.values() if found} == LEVELS


def test_a_real_postgresql_log_gets_its_levels(binaries, postgres):
    """What PostgreSQL 15 itself writes with its default log_line_prefix:
    a WARNING, an ERROR with its STATEMENT, a FATAL with its DETAIL."""
    log = postgres.log_dir / "postgres.log"
    start_up = log.read_text().splitlines()[:20]
    offset = log.stat().st_size  # the session's earlier tests logged before this
    marker = f"nosuch_{uuid.uuid4().hex[:8]}"

    def psql(sql: str, password: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(["psql", "-X", "-h", "127.0.0.1", "-p", str(postgres.port), "-U", postgres.user,
                               "-d", postgres.database, "-c", sql],
                              capture_output=True, text=True, env=postgres.env(password))

    assert psql("ROLLBACK").returncode == 0  # WARNING:  there is no transaction in progress
    assert psql(f"SELECT * FROM {marker}").returncode != 0
    assert "password authentication failed" in psql("SELECT 1", password=marker).stderr

    with open(log) as f:
        f.seek(offset)
        lines = [line for line in start_up + f.read().splitlines() if line]
    labels = labels_of(lines)

    def level_of(fragment: str) -> str | None:
        return labels[next(line for line in reversed(lines) if fragment in line)].get("level")

    assert level_of("WARNING:  there is no transaction in progress") == "warn"
    assert level_of(f'ERROR:  relation "{marker}" does not exist') == "error"
    assert level_of(f"STATEMENT:  SELECT * FROM {marker}") is None
    assert level_of("FATAL:  password authentication failed for user") == "fatal"
    assert level_of("LOG:  database system is ready to accept connections") == "info"
