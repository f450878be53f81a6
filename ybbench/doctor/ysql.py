"""YSQL, node by node: it answers, its server version, and the workloads'
statement path (create, insert, select, drop a table of our own) with the
round trip; on YugabyteDB, whether YSQL_NODES covers every tablet server."""

from __future__ import annotations

import socket
import statistics
import time
import uuid
from dataclasses import dataclass

from ybbench.core import tls_files
from ybbench.doctor.check import NOT_YB, Check, fail, ok, skipped
from ybbench.doctor.settings import Settings

CREDENTIALS = ("check YSQL_NODES (--set YSQL_NODES=host:port,...), DB_USER and DB_NAME, and the password "
               "(PGPASSWORD or PGPASSFILE, as for psql)")
TLS = ("check that DB_SSLROOTCERT is the root CA that signed the server's certificate (a managed cluster's "
       "download), with DB_SSLMODE=verify-full that YSQL_NODES names each node by a name its certificate holds, "
       "and that DB_SSLCERT's CN is DB_USER where the cluster asks for a client certificate")
ROUND_TRIPS = 5


@dataclass
class Node:
    """What one node told us; kind is 'yugabytedb', 'postgresql' or None (no answer)."""
    address: str
    kind: str | None = None
    version: str = ""
    servers: list[str] | None = None  # yb_servers(): host:port of every tserver's YSQL


def connect(s: Settings, host: str, port: int):
    import psycopg  # loads libpq: only when a check runs

    return psycopg.connect(host=host, port=port, user=s.user, dbname=s.database, sslmode=s.sslmode,
                           **tls_files.psycopg_args(s.tls), connect_timeout=s.connect_timeout_s,
                           application_name="ybbench doctor", autocommit=True,
                           client_encoding="utf8")  # text, not bytes, from a SQL_ASCII database too


def _first_line(e: Exception) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0]


def _statements(conn) -> str:
    """Create, insert, select and drop a table of our own; its name is
    unique, and it is dropped whatever happens in between."""
    table = f"ybbench_doctor_{uuid.uuid4().hex[:12]}"
    t0 = time.perf_counter()
    conn.execute(f"CREATE TABLE {table} (k text PRIMARY KEY, v bytea)")
    try:
        conn.execute(f"INSERT INTO {table} (k, v) VALUES (%s, %s)", ("doctor:1", b"\x00\x01ybbench"))
        got = conn.execute(f"SELECT v FROM {table} WHERE k = %s", ("doctor:1",)).fetchone()
        if got is None or bytes(got[0]) != b"\x00\x01ybbench":
            raise ValueError(f"the row read back is {got!r}, not the one inserted")
    finally:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    statements_ms = (time.perf_counter() - t0) * 1000
    trips = []
    for _ in range(ROUND_TRIPS):
        t = time.perf_counter()
        conn.execute("SELECT 1").fetchone()
        trips.append((time.perf_counter() - t) * 1000)
    return (f"create, insert, select, drop in {statements_ms:.1f} ms; round trip (SELECT 1) "
            f"median {statistics.median(trips):.2f} ms over {ROUND_TRIPS}")


def check_node(s: Settings, host: str, port: int) -> tuple[list[Check], Node]:
    node = Node(f"{host}:{port}")
    prefix = f"ysql {node.address}"
    try:
        conn = connect(s, host, port)
    except Exception as e:  # noqa: BLE001 - psycopg's errors and the OS's: each is a failing check
        found = tls_files.explain(_first_line(e), s.tls, s.sslmode, s.user)
        return [fail(f"{prefix} connect", f"a session as {s.user!r} on database {s.database!r}", found,
                     TLS if found != _first_line(e) else CREDENTIALS)], node
    out = [ok(f"{prefix} connect", f"a session as {s.user!r} on database {s.database!r}", "connected")]
    with conn:
        try:
            node.version = conn.execute("SELECT version()").fetchone()[0]
            node.kind = "yugabytedb" if "-YB-" in node.version else "postgresql"
            out.append(ok(f"{prefix} version", "YugabyteDB (version() says -YB-) or PostgreSQL", node.version))
        except Exception as e:  # noqa: BLE001
            out.append(fail(f"{prefix} version", "SELECT version() answers", _first_line(e), CREDENTIALS))
        expected = "a table of ybbench's own created, a row inserted and read back, the table dropped"
        try:
            out.append(ok(f"{prefix} statements", expected, _statements(conn)))
        except Exception as e:  # noqa: BLE001
            out.append(fail(f"{prefix} statements", expected, _first_line(e),
                            f"the role {s.user!r} needs CREATE on database {s.database!r}'s public schema, "
                            "as the workloads create their tables"))
        if node.kind == "yugabytedb":
            try:
                node.servers = sorted(f"{h}:{p}" for h, p in conn.execute("SELECT host, port FROM yb_servers()"))
            except Exception:  # noqa: BLE001 - the coverage check says it could not tell
                node.servers = None
    return out, node


def resolved(address: str) -> set[str]:
    """host:port as the addresses it resolves to (the name itself too, when it resolves to none)."""
    host, _, port = address.rpartition(":")
    try:
        infos = socket.getaddrinfo(host.strip("[]"), int(port), type=socket.SOCK_STREAM)
    except (OSError, ValueError):
        return {address}
    return {address} | {f"{info[4][0]}:{port}" for info in infos}


def coverage(s: Settings, nodes: list[Node]) -> Check:
    """On YugabyteDB: the load reaches every tablet server only if YSQL_NODES names them all."""
    name = "ysql nodes cover the cluster"
    expected = "YSQL_NODES names every tablet server yb_servers() lists"
    yb = [n for n in nodes if n.kind == "yugabytedb"]
    if not yb:
        kinds = {n.kind for n in nodes if n.kind}
        return skipped(name, f"{NOT_YB} (YSQL answers as {', '.join(sorted(kinds))})" if kinds
                       else f"{NOT_YB}: no YSQL node answered", expected)
    servers = next((n.servers for n in yb if n.servers is not None), None)
    if servers is None:
        return fail(name, expected, "SELECT host, port FROM yb_servers() failed on every node", CREDENTIALS)
    # By address, not by name: YSQL_NODES may name the nodes by DNS (as verify-full needs), yb_servers()
    # as --server_broadcast_addresses gives them (often IP addresses).
    given = set().union(*(resolved(n.address) for n in nodes))
    left = [a for a in servers if not resolved(a) & given]
    if left:
        return Check(name, "warn", expected, f"YSQL_NODES leaves out {', '.join(left)} of {len(servers)} tservers",
                     f"--set YSQL_NODES={','.join(servers)} to spread the load over every tablet server")
    return ok(name, expected, f"all {len(servers)} tablet servers")


def checks(s: Settings) -> tuple[list[Check], list[Node]]:
    out, nodes = [], []
    for host, port in s.nodes:
        got, node = check_node(s, host, port)
        out += got
        nodes.append(node)
    out.append(coverage(s, nodes))
    return out, nodes
