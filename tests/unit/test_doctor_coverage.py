"""doctor's "ysql nodes cover the cluster": YSQL_NODES by DNS name (as
verify-full needs) against yb_servers()' addresses, compared by what the
names resolve to (the OS resolver's answer for localhost)."""

from __future__ import annotations

import socket

from ybbench.doctor.settings import Settings
from ybbench.doctor.ysql import Node, coverage

# yb_servers() as a server gives it: by address. LOCALHOST: what the OS
# resolver gives for localhost (127.0.0.1 on most hosts); the other, a
# documentation address that names only itself.
LOCALHOST = socket.getaddrinfo("localhost", 5433, type=socket.SOCK_STREAM)[0][4][0]
OTHER = "198.51.100.7:5433"
SERVERS = [f"{LOCALHOST}:5433", OTHER]


def check(*given: str):
    nodes = [Node(a, kind="yugabytedb", servers=SERVERS) for a in given]
    return coverage(Settings(nodes=[]), nodes)


def test_a_name_that_resolves_to_a_server_covers_it():
    c = check("localhost:5433", OTHER)
    assert c.status == "ok" and c.found == "all 2 tablet servers", c


def test_the_server_left_out_is_named_by_its_address():
    c = check("localhost:5433")
    assert c.status == "warn" and c.found == f"YSQL_NODES leaves out {OTHER} of 2 tservers", c


def test_the_port_counts_too():
    c = check("localhost:5434", OTHER)
    assert c.status == "warn" and f"leaves out {LOCALHOST}:5433" in c.found, c


def test_a_name_that_does_not_resolve_is_compared_as_written():
    c = check("no-such-host.invalid:5433", OTHER)
    assert c.status == "warn" and f"leaves out {LOCALHOST}:5433" in c.found, c
