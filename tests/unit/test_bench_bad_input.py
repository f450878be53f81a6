"""`make bench`'s command line refuses bad numbers before it starts a
server: a clear error naming the option, exit 2, no traceback. Found when
`--memory-vus 0` was accepted and k6 then failed on VUS=0 with a traceback."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ..support.stack import REPO


@pytest.mark.parametrize("args, named", [
    (["--memory-vus", "0"], "--memory-vus: 0: must be 1 or more"),
    (["--memory-vus", "400,-5"], "--memory-vus: -5: must be 1 or more"),
    (["--memory-vus", "400,lots"], "--memory-vus: 'lots' is not a whole number"),
    (["--clients", "0"], "--clients: 0: must be 1 or more"),
    (["--seconds", "1.5"], "--seconds: '1.5' is not a whole number"),
    (["--repeat", "0"], "--repeat: 0: must be 1 or more"),
    (["--rss-minutes", "-1"], "--rss-minutes: -1: must be 0 or more"),
    (["--rss-minutes", "nan"], "--rss-minutes: nan: must be 0 or more"),
])
def test_a_bad_number_is_refused_by_name(args, named):
    done = subprocess.run([sys.executable, "-m", "bench.client_efficiency", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert "Traceback" not in done.stderr
