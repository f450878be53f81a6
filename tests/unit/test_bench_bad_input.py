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
    refused("bench.client_efficiency", args, named)


def refused(module: str, args: list[str], named: str) -> None:
    """The bench's argparse error: exit 2, the message naming the option, no traceback."""
    done = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stderr
    assert named in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("args, named", [
    (["--spread", "0.01"], "--spread and --change go together"),
    (["--spread", "2", "--change", "-0.05"], "--spread 2.0 or --change -0.05: not a fraction"),
    (["--spread", "0.01", "--change", "-5"], "--spread 0.01 or --change -5.0: not a fraction"),
    (["--spread", "0.01", "--change", "0"], "--change 0.0: not a fraction (0.012 for 1.2%), or no change"),
])
def test_the_rule_simulation_refuses_a_host_it_cannot_simulate(args, named):
    refused("bench.ab_rule_simulation", ["--trials", "1", *args], named)


def simulated(spread: str, change: str) -> dict[str, list[str]]:
    """bench.ab_rule_simulation's two lines for a host: {scenario: [share, with place, runs, p90, wall]}
    (its table's scenario column is 50 wide)."""
    done = subprocess.run([sys.executable, "-m", "bench.ab_rule_simulation", "--trials", "20", "--spread", spread,
                           "--change", change], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return {line[:50].strip(): line[50:].split()[-5:] for line in done.stdout.splitlines()[2:]}


def test_a_hosts_two_lines_are_simulated_at_its_spread():
    """Runs 0.1% apart: a 5% slowdown is 50 sd, found by every ab. Runs 50% apart: 5% needs about
    2 x (1.96 + 0.84)^2 x 0.5^2 / 0.05^2 = 1,568 runs a side, so every ab stops at the cap of 20."""
    quiet = simulated("0.001", "-0.05")
    assert set(quiet) == {"identical sides, runs 0.1% apart", "5.0% slower, runs 0.1% apart"}, quiet
    assert quiet["5.0% slower, runs 0.1% apart"][:2] == ["100.0%", "100.0%"], quiet
    noisy = simulated("0.5", "-0.05")
    assert len(noisy) == 2, noisy
    for scenario, row in noisy.items():
        assert row[-3:-1] == ["20.0", "20"], (scenario, row)
