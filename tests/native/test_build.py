"""native/build.sh's module arguments and its per-module lock, which make
test counts on: the late modules build in the background while the tests
that need one of them call build.sh for it and must wait, not build it a
second time beside the first."""

from __future__ import annotations

import fcntl
import os
import subprocess

from ..support.stack import REPO, wait_until

BUILD = REPO / "native" / "build.sh"


def blocked_on(fd: int) -> bool:
    """Whether some process waits for a lock on fd's file (/proc/locks: "N: -> FLOCK ADVISORY WRITE
    pid dev:inode ...", a waiter's line; a holder's has no "->")."""
    ino = os.fstat(fd).st_ino
    waiting = [line.split() for line in open("/proc/locks").read().splitlines() if line.split()[1:2] == ["->"]]
    return any(len(f) > 6 and f[6].rsplit(":", 1)[-1] == str(ino) for f in waiting)


def test_an_unknown_module_is_named_and_nothing_is_built(tmp_path):
    env = dict(os.environ, YBBENCH_CACHE=str(tmp_path))
    p = subprocess.run([BUILD, "node_exporter", "nodeexporter"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, p.stderr
    assert "no module nodeexporter" in p.stderr and "building" not in p.stderr
    assert not list((tmp_path / "bin").iterdir())


def test_a_second_build_of_a_module_waits_for_the_first_and_does_not_build_it_again(tmp_path):
    """The test holds node_exporter's lock as a first build would: a build.sh
    started then neither builds nor ends until the lock is released; once it
    has built, another one builds nothing."""
    env = dict(os.environ, YBBENCH_CACHE=str(tmp_path))
    (tmp_path / "bin").mkdir()
    said = tmp_path / "second.err"
    with open(tmp_path / "bin" / ".lock-node_exporter", "w") as lock, open(said, "w") as err:
        fcntl.flock(lock, fcntl.LOCK_EX)
        second = subprocess.Popen([BUILD, "node_exporter"], env=env, stdout=subprocess.DEVNULL, stderr=err)
        # The kernel's word that the second build waits on this lock: a blocked ("->") entry for the
        # file's inode in /proc/locks. A build that ignored the lock would never wait there, however slow.
        wait_until(lambda: blocked_on(lock.fileno()) or second.poll() is not None,
                   "the second build to wait on node_exporter's lock", timeout=120)
        assert second.poll() is None and "building" not in said.read_text(), said.read_text()
    assert second.wait(timeout=600) == 0, said.read_text()
    assert said.read_text().count("building node_exporter") == 1 and (tmp_path / "bin" / "node_exporter").is_file()
    again = subprocess.run([BUILD, "node_exporter"], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "building" not in again.stderr, again.stderr
