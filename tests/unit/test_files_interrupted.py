"""core/files: Ctrl-C at any moment of a write leaves the old file or the
new one, and no staging file or folder beside it. The interrupt is planted
right after each system call the write makes (a SIGINT lands as
KeyboardInterrupt at the next bytecode), the window CI once hit: a doe.json
write left `.doe.json.lcydchmb` behind."""

from __future__ import annotations

import os

import pytest

from ybbench.core.files import staged_dir, write_file


def interrupted_after(monkeypatch, name: str) -> list:
    """os.<name> does its work, then the interrupt lands; the list says
    whether it was called (a call the write never makes proves nothing)."""
    real, made = getattr(os, name), []

    def call(*args, **kwargs):
        made.append(real(*args, **kwargs))
        raise KeyboardInterrupt

    monkeypatch.setattr(os, name, call)
    return made


def leftovers(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


@pytest.mark.parametrize("call", ["open", "replace"])
def test_an_interrupted_write_leaves_the_old_file_or_the_new(monkeypatch, tmp_path, call):
    target = tmp_path / "doe.json"
    target.write_text("old\n")
    with monkeypatch.context() as m:
        made = interrupted_after(m, call)
        with pytest.raises(KeyboardInterrupt):
            write_file(target, "new\n")
    assert made
    assert target.read_text() in ("old\n", "new\n")
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("call", ["mkdir", "rename"])
def test_an_interrupted_staged_folder_leaves_nothing_or_the_whole(monkeypatch, tmp_path, call):
    final = tmp_path / "run-1"
    with monkeypatch.context() as m:
        made = interrupted_after(m, call)
        with pytest.raises(KeyboardInterrupt):
            with staged_dir(final) as stage:
                (stage / "summary.json").write_text("{}")
    assert made
    assert not final.exists() or (final / "summary.json").read_text() == "{}"
    assert leftovers(tmp_path) == []
