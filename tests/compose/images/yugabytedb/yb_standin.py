#!/usr/bin/env python3
"""YugabyteDB STAND-IN for the compose tests: not YugabyteDB.

Runs as `yb-master` or `yb-tserver` with the flags compose passes, and
serves what the compose stack relies on:
  - the real YugabyteDB 2.23.1 /prometheus-metrics captures (timestamps
    stripped, as a live scrape would be fresh) on the master :7000, tserver
    :9000, YCQL :12000 and YSQL :13000 ports, their counters moving: each
    by ADVANCE_PER_S per second, and YSQL's statement counters (on the
    tserver that keeps the data) by the statements its PostgreSQL executes;
  - the master RPC port (:7100), which the stand-in yb-admin connects to;
  - the master's /api/v1/is-leader on :7000 as YugabyteDB answers it
    (src/yb/master/master-path-handlers.cc, HandleCheckIfLeader): 200 and
    {"STATUS":"OK"} on the leader, 503 and the JSON object its writer
    started, "{", on the others; the leader is elected among the masters
    (elect_leader below), so a killed, frozen or cut-off leader is replaced;
  - with --webserver_certificate_file (and --webserver_private_key_file,
    else the key in the same file), every one of those web ports over
    HTTPS only, as YugabyteDB's webserver (webserver.cc, squeasel's
    ssl_certificate) and the servers built on it (master, tserver, YCQL's
    and YSQL's metrics) serve it;
  - YSQL on :5433 from PostgreSQL, role and database `yugabyte`, no
    password (YSQL's default). A real cluster serves one database from every
    tserver; here yb-tserver-1 keeps the data and the other tservers forward
    their YSQL port to it when YB_STANDIN_YSQL_UPSTREAM names it.
It logs where the real servers do under the same flags (glog's
--logtostderr, --alsologtostderr, --log_dir; the tserver's postgres
wrapper, pg_wrapper.cc): with --logtostderr, its own lines and YSQL's
(PostgreSQL's stderr) go to stderr only; without it, its own lines go to
<log_dir>/<server>.INFO (and to stderr too with --alsologtostderr), and YSQL
runs with logging_collector=on and log_directory=<log_dir>, so YSQL's ERROR
and FATAL lines land in postgresql-*.log files there and never on stderr.
log_dir defaults, as YugabyteDB's, to <first fs_data_dir>/yb-data/<server>/logs.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import socketserver
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CAPTURES = Path("/home/yugabyte/standin/captures")
ROLE = Path(sys.argv[0]).name  # yb-master or yb-tserver
PG_BIN = Path("/usr/lib/postgresql/15/bin")
_TIMESTAMP = re.compile(rb"^([^#].*\S)\s+[0-9]{13}$", re.M)


class _Log:
    """Where glog's lines go: stderr, a file, or both (configure())."""
    stderr = True
    file = None


def configure_logging(f: dict[str, str], log_dir: Path) -> bool:
    """As glog: --logtostderr sends everything to stderr and no file;
    otherwise lines go to the log dir's file, and also to stderr with
    --alsologtostderr. Returns whether YSQL logs to files (pg_wrapper.cc:
    not --logtostderr and a log dir)."""
    to_stderr_only = _true(f.get("logtostderr"))
    if to_stderr_only:
        _Log.stderr, _Log.file = True, None
        return False
    log_dir.mkdir(parents=True, exist_ok=True)
    _Log.file = open(log_dir / f"{ROLE}.INFO", "a", buffering=1)
    _Log.stderr = _true(f.get("alsologtostderr"))
    return True


def _true(value: str | None) -> bool:
    return value is not None and value.lower() in ("", "true", "1", "yes")


def log(msg: str, severity: str = "I") -> None:
    """A line in YugabyteDB's glog format, [IWEF]mmdd hh:mm:ss.uuuuuu
    threadid file:line] msg, which Promtail's pipeline reads the level from."""
    now = datetime.now()
    line = (f"{severity}{now:%m%d %H:%M:%S.%f} {threading.get_native_id():>5} yb_standin.py:"
            f"{sys._getframe(1).f_lineno}] {msg}")
    if _Log.file:
        print(line, file=_Log.file, flush=True)
    # glog's stderrthreshold: errors reach stderr whatever the flags say.
    if _Log.stderr or severity in "EF":
        print(line, file=sys.stderr, flush=True)


def flags(argv: list[str]) -> dict[str, str]:
    """gflags as YugabyteDB takes them: --name=value or --name (true)."""
    out = {}
    for a in argv:
        if a.startswith("--"):
            name, _, value = a[2:].partition("=")
            out[name] = value if _ else "true"
    return out


class _Server(ThreadingHTTPServer):
    def server_bind(self):
        # http.server names itself with socket.getfqdn(host): a reverse DNS
        # query, sent to the host's resolver for any address /etc/hosts does
        # not list (the monitoring bench's 127.x.y.z nodes). Nothing here
        # reads the name.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


# YugabyteDB's counters grow while it serves; a capture's stand still, so
# every rate panel would read 0. Served with advance > 0, every counter
# of a capture grows by advance x rate_of(its name) per second since the
# server started: a known amount the tests check rates against (n series
# of a metric summed: n x advance x rate_of(metric)). The counters that
# ybbench's dashboards, recording rules and report read each grow at a
# rate none of the others shares (READ_BY_YBBENCH: the n-th at n), so that
# a query reading one for another (index misses for hits) reads another
# number; tests/native/test_dashboards.py checks that list against what
# they read. The YSQL statement counters also add the statements PostgreSQL
# really executed (pg_stat_statements), so YSQL's panels show a run's
# statements while it runs.
ADVANCE_PER_S = 1.0
_HANDLER = "handler_latency_yb_"
READ_BY_YBBENCH = (
    # 1 and 2: YSQL's catalog cache misses come as 80 and 47 series, each
    # counting towards YSQL's ops/s: the slowest, so that a run's
    # statements stay most of what the ops/s panels show.
    f"{_HANDLER}ysqlserver_SQLProcessor_CatalogCacheMisses_count",
    f"{_HANDLER}ysqlserver_SQLProcessor_CatalogCacheTableMisses_count",
    "rocksdb_block_cache_hit", "rocksdb_block_cache_miss", "rocksdb_block_cache_data_miss",
    "rocksdb_block_cache_index_miss", "rocksdb_block_cache_filter_miss",
    "log_bytes_logged", "rocksdb_flush_write_bytes", "rocksdb_compact_read_bytes", "rocksdb_compact_write_bytes",
    *(f"{_HANDLER}tserver_TabletServerService_{m}_{s}" for m in ("Read", "Write") for s in ("count", "sum")),
    # YSQL's statement types, counts then sums (so that no two types' sum
    # over count are near).
    *(f"{_HANDLER}ysqlserver_SQLProcessor_{m}_{s}" for s in ("count", "sum")
      for m in ("SelectStmt", "InsertStmt", "UpdateStmt", "DeleteStmt", "BeginStmt", "CommitStmt", "RollbackStmt",
                "OtherStmts", "Transactions", "SingleShardTransactions", "AggregatePushdowns")),
)
_READ_RATE = {metric: n for n, metric in enumerate(READ_BY_YBBENCH, 1)}


# What a healthy server at rest never counts: overflowed or timed-out RPC
# queues, memory-pressure and SST-file rejections, write stalls, conflicts.
# They stay at the capture's value (0), as on a real server that nothing
# saturates; a test that wants one plants it (the limits analysis names any
# growth as the run's limit).
_STILL = re.compile(r"^(rpcs_queue_overflow|rpcs_timed_out_in_queue|\w+_memory_pressure_rejections"
                    r"|majority_sst_files_rejections|rocksdb_stall_micros|transaction_conflicts)$")


def rate_of(metric: str) -> int:
    """How many times ADVANCE_PER_S this metric's series grow: its place in
    READ_BY_YBBENCH (from 1), 0 for the saturation counters (_STILL), 1 to
    9 for the others."""
    if _STILL.match(metric):
        return 0
    return _READ_RATE.get(metric) or 1 + zlib.crc32(metric.encode()) % 9


# RocksDB's statistics tickers count up, but YugabyteDB exports them as
# gauges; its levels (SST sizes and files, open iterators) stay put.
_ROCKSDB_TICKER = re.compile(r"^rocksdb_(?!current_version_|total_sst_files_size$|num_iterators$)")
_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})?\s+(\S+)$")
_YSQL_STMT = re.compile(r"^handler_latency_yb_ysqlserver_SQLProcessor_(\w+Stmts?)_(count|sum)$")
# pg_stat_statements' first word of a statement, as YSQL's SQLProcessor counts it.
_VERBS = {"SELECT": "SelectStmt", "WITH": "SelectStmt", "INSERT": "InsertStmt", "UPDATE": "UpdateStmt",
          "DELETE": "DeleteStmt", "BEGIN": "BeginStmt", "START": "BeginStmt", "COMMIT": "CommitStmt",
          "END": "CommitStmt", "ROLLBACK": "RollbackStmt", "ABORT": "RollbackStmt"}
STATEMENTS_SQL = ("SELECT coalesce(upper(substring(query from '^\\s*([A-Za-z]+)')), ''), sum(calls), "
                  "sum(total_exec_time) FROM pg_stat_statements GROUP BY 1")


def statements_from(psql: list[str], env: dict | None = None):
    """A function returning {Stmt kind: (count, µs)} from PostgreSQL's
    pg_stat_statements, through `psql` (a command line that takes -Atc);
    the last good answer when PostgreSQL does not answer."""
    last: dict[str, tuple[float, float]] = {}

    def read() -> dict[str, tuple[float, float]]:
        nonlocal last
        try:
            out = subprocess.run([*psql, "-XAtF", "\t", "-c", STATEMENTS_SQL], capture_output=True, text=True,
                                 env=env, timeout=5, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            return last
        got: dict[str, tuple[float, float]] = {}
        for line in out.splitlines():
            verb, calls, ms = line.split("\t")  # one line each: the verb has no newline
            kind = _VERBS.get(verb, "OtherStmts")
            c, t = got.get(kind, (0.0, 0.0))
            got[kind] = (c + float(calls), t + float(ms) * 1000)
        last = got
        return got
    return read


class _Capture:
    """A capture's page, rendered fresh on each scrape."""

    def __init__(self, capture: Path, advance: float, statements, planted: dict[str, float] | None = None):
        text = _TIMESTAMP.sub(rb"\1", capture.read_bytes()).decode()
        counters = {name for name, kind in re.findall(r"^# TYPE (\S+) (counter|gauge)$", text, re.M)
                    if kind == "counter" or _ROCKSDB_TICKER.match(name)}
        # A test's planted growth: each series whose name and labels match a regex grows by its value a second.
        plants = [(re.compile(k), v) for k, v in (planted or {}).items()]
        self.static = advance == 0 and statements is None and not plants
        self.body = text.encode()
        # (text, None) for comments; (series, value, moves, YSQL statement (kind, count or sum)) for samples.
        self.lines: list[tuple] = []
        for line in text.splitlines():
            m = _SAMPLE.match(line)
            if not m:
                self.lines.append((line, None))
                continue
            stmt = _YSQL_STMT.match(m.group(1))
            head = m.group(1) + (m.group(2) or "")
            self.lines.append((head, float(m.group(3)),
                               rate_of(m.group(1)) if m.group(1) in counters else 0,
                               (stmt.group(1), 0 if stmt.group(2) == "count" else 1) if stmt else None,
                               sum(v for rx, v in plants if rx.match(head))))
        self.advance, self.statements, self.started = advance, statements, time.time()

    def render(self) -> bytes:
        """The page now. Moving samples carry the time their values are for
        (ms), as YugabyteDB's own do: a scrape that is answered late does not
        shift a counter against its timestamp."""
        if self.static:
            return self.body
        done = self.statements() if self.statements else {}
        now = time.time()
        grown, stamp = self.advance * (now - self.started), int(now * 1000)
        out = []
        for head, value, *more in self.lines:
            if value is None:
                out.append(head)
                continue
            rate, stmt, plant = more
            if rate:
                value += grown * rate + (done.get(stmt[0], (0.0, 0.0))[stmt[1]] if stmt else 0.0)
            value += plant * (now - self.started)
            out.append(f"{head} {value:.17g} {stamp}")
        return ("\n".join(out) + "\n").encode()


def metrics_server(capture: Path, host: str, port: int, path: str = "/prometheus-metrics", advance: float = 0.0,
                   statements=None, more: dict | None = None,
                   planted: dict[str, float] | None = None, tls: ssl.SSLContext | None = None) -> ThreadingHTTPServer:
    """Serves one capture at `path`, as one YugabyteDB endpoint would, from
    a background thread. The captures' samples carry 2025 timestamps, which
    Prometheus drops as too old: they go, as if scraped now. With advance
    or statements, its counters move (above). (The native test stack serves
    the captures with this too, and bench/monitoring_100_nodes.py a
    node_exporter capture at /metrics.) MORE: other paths, each a function
    returning (status, content type, body). PLANTED: {regex over a series'
    name and labels: growth a second}, a test's planted fault. TLS: a
    server context; then HTTPS only (a plain request fails its handshake)."""
    page = _Capture(capture, advance, statements, planted)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's naming
            other = (more or {}).get(self.path.split("?")[0])
            if other:
                code, ctype, body = other()
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            if self.path.split("?")[0] != path:
                self.send_error(404)
                return
            body = page.render()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = _Server((host, port), Handler)
    if tls is not None:
        # Handshake per connection in its handler thread, not in accept():
        # one client that never finishes it stalls no one else.
        server.socket = tls.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# The web ports' TLS, from the webserver flags (main); None: plain HTTP.
WEB_TLS: ssl.SSLContext | None = None


def web_tls(f: dict[str, str]) -> ssl.SSLContext | None:
    cert = f.get("webserver_certificate_file")
    if not cert:
        return None
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2  # --webserver_ssl_min_version's default, tlsv1.2
    ctx.load_cert_chain(cert, f.get("webserver_private_key_file") or None)
    return ctx


def serve_metrics(port: int, capture: str, statements=None, more: dict | None = None) -> None:
    metrics_server(CAPTURES / capture, "0.0.0.0", port, advance=ADVANCE_PER_S, statements=statements, more=more,
                   tls=WEB_TLS)
    log(f"serving {capture} on :{port}/prometheus-metrics over {'HTTPS' if WEB_TLS else 'HTTP'}, its counters moving")


# A master's election, standing in for Raft's: a follower that hears no
# leader for ELECTION_S (YugabyteDB: leader_failure_max_missed_heartbeat_periods
# 6 x raft_heartbeat_interval_ms 500) stands if it is the first listed of
# the masters it hears, a majority with itself; a leader steps down when it
# hears no majority, when another master leads, or when it wakes from a
# freeze longer than ELECTION_S (its lease ran out meanwhile). Each peer is
# asked by a thread of its own, so that one slow to answer (a stopped
# container's name takes Docker's DNS 10 s to fail) delays no decision: an
# answer older than HEARD_S is no answer.
ELECTION_S, HEARD_S = 3.0, 2.0


_PEER_TLS = ssl._create_unverified_context()  # noqa: S323 - the stand-in's own peers


class Election:
    def __init__(self, me: str, masters: list[str], web_port: int):
        self.me, self.masters, self.web_port = me, masters, web_port
        self.leader, self.term = False, 0
        self.heard: dict[str, tuple[float, bool]] = {}  # master -> (when, leads)

    def is_leader(self) -> tuple[int, str, bytes]:
        """HandleCheckIfLeader: the leader writes {"STATUS":"OK"}; a follower
        sets 503 after its JsonWriter has written the object's "{"."""
        if self.leader:
            return 200, "application/json", b'{"STATUS":"OK"}'
        return 503, "application/json", b"{"

    def _listen(self, master: str) -> None:
        host = master.rpartition(":")[0]
        while True:
            try:
                # The peers' web ports speak what ours does; their names are not checked here.
                scheme = "https" if WEB_TLS else "http"
                with urllib.request.urlopen(f"{scheme}://{host}:{self.web_port}/api/v1/is-leader", timeout=1,
                                            context=_PEER_TLS) as r:
                    self.heard[master] = (time.monotonic(), r.status == 200)
            except urllib.error.HTTPError:
                self.heard[master] = (time.monotonic(), False)
            except OSError:
                pass
            time.sleep(0.5)

    def run(self) -> None:
        for m in self.masters:
            if m != self.me:
                threading.Thread(target=self._listen, args=(m,), daemon=True).start()
        unheard = last = time.monotonic()
        while True:
            time.sleep(0.5)
            now = time.monotonic()
            fresh = {m: leads for m, (when, leads) in list(self.heard.items()) if now - when < HEARD_S}
            alive = [m for m in self.masters if m == self.me or m in fresh]
            quorum = len(alive) > len(self.masters) // 2
            others_lead = [m for m, leads in fresh.items() if leads]
            if self.leader and (now - last > ELECTION_S or not quorum or others_lead):
                self.leader = False
                log(f"T 00000000000000000000000000000000 P standin [term {self.term} LEADER]: Stepping down")
            last = now
            if others_lead or self.leader:
                unheard = now
            elif now - unheard > ELECTION_S and quorum and alive[0] == self.me:
                self.term += 1
                self.leader = True
                log(f"T 00000000000000000000000000000000 P standin [term {self.term} FOLLOWER]: "
                    "Becoming Leader. State: standin")


def accept_rpc(port: int) -> None:
    """The master RPC port: accepts and closes (yb-admin only connects)."""
    s = socket.create_server(("0.0.0.0", port), reuse_port=True)

    def loop():
        while True:
            conn, _ = s.accept()
            conn.close()

    threading.Thread(target=loop, daemon=True).start()
    log(f"master RPC stand-in on :{port}")


def forward_ysql(port: int, upstream: str) -> None:
    """YSQL of a tserver that keeps no data: a TCP forward to the one that does."""
    host, _, uport = upstream.partition(":")

    def pipe(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def handle(client):
        try:
            server = socket.create_connection((host, int(uport)), timeout=5)
            server.settimeout(None)
        except OSError as e:
            log(f"YSQL upstream {upstream} unreachable: {e}")
            client.close()
            return
        threading.Thread(target=pipe, args=(client, server), daemon=True).start()
        pipe(server, client)

    s = socket.create_server(("0.0.0.0", port), reuse_port=True)

    def loop():
        while True:
            threading.Thread(target=handle, args=(s.accept()[0],), daemon=True).start()

    threading.Thread(target=loop, daemon=True).start()
    log(f"YSQL on :{port} forwards to {upstream}")


def run_postgres(data_root: Path, port: int, max_connections: int, log_dir: Path | None) -> subprocess.Popen:
    """PostgreSQL as YSQL: trust auth for role yugabyte, database yugabyte.
    With log_dir, as YugabyteDB's postgres wrapper without --logtostderr:
    the logging collector writes postgresql-*.log files there, and nothing
    of YSQL's own log reaches stderr."""
    pgdata = data_root / "yb-data" / "tserver" / "standin-postgres"
    if not (pgdata / "PG_VERSION").exists():
        pgdata.mkdir(parents=True, exist_ok=True)
        os.chown(pgdata, *_postgres_ids())
        _as_postgres([str(PG_BIN / "initdb"), "-D", str(pgdata), "-U", "yugabyte", "-A", "trust", "--no-sync"])
        # YSQL's default: any host, no password (until --ysql_enable_auth).
        with open(pgdata / "pg_hba.conf", "a") as hba:
            hba.write("host all all all trust\n")
        log(f"initialised YSQL data in {pgdata}")
        first = True
    else:
        first = False
    logging = []
    if log_dir is not None:
        os.chown(log_dir, *_postgres_ids())  # YSQL's own files, next to the server's
        logging = ["-c", "logging_collector=on", "-c", f"log_directory={log_dir}"]
    proc = subprocess.Popen(
        ["runuser", "-u", "postgres", "--", str(PG_BIN / "postgres"), "-D", str(pgdata), "-p", str(port),
         "-c", "listen_addresses=*", "-c", "unix_socket_directories=/tmp", "-c", f"max_connections={max_connections}",
         "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "shared_buffers=128MB",
         "-c", "shared_preload_libraries=pg_stat_statements", *logging],
    )
    deadline = time.monotonic() + 60
    while subprocess.run([str(PG_BIN / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port), "-U", "yugabyte", "-d", "postgres"]).returncode != 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit("yb-standin: PostgreSQL (YSQL) did not start")
        time.sleep(0.2)
    if first:
        _as_postgres([str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "yugabyte", "-d", "postgres",
                      "-qc", "CREATE DATABASE yugabyte"])
        _as_postgres([str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(port), "-U", "yugabyte", "-d", "yugabyte",
                      "-qc", "CREATE EXTENSION pg_stat_statements"])
    log(f"YSQL (PostgreSQL) on :{port}")
    return proc


def _postgres_ids() -> tuple[int, int]:
    import pwd
    p = pwd.getpwnam("postgres")
    return p.pw_uid, p.pw_gid


def _as_postgres(cmd: list[str]) -> None:
    subprocess.run(["runuser", "-u", "postgres", "--", *cmd], check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    role = ROLE
    f = flags(sys.argv[1:])
    data_dirs = [Path(d) for d in f.get("fs_data_dirs", "/mnt/disk0").split(",")]
    data_root = data_dirs[0]
    for d in data_dirs:
        (d / "yb-data" / role.removeprefix("yb-")).mkdir(parents=True, exist_ok=True)
    log_dir = Path(f.get("log_dir") or data_root / "yb-data" / role.removeprefix("yb-") / "logs")
    ysql_to_files = configure_logging(f, log_dir)
    global WEB_TLS
    WEB_TLS = web_tls(f)
    log(f"{role} STAND-IN (not YugabyteDB) with flags {' '.join(sorted(f))}", "W")
    children: list[subprocess.Popen] = []
    if role == "yb-master":
        rpc = f.get("rpc_bind_addresses", ":7100")
        web_port = int(f.get("webserver_port", 7000))
        election = Election(rpc, f.get("master_addresses", rpc).split(","), web_port)
        serve_metrics(web_port, "master.txt", more={"/api/v1/is-leader": election.is_leader})
        accept_rpc(int(rpc.rpartition(":")[2]))
        log("Master server successfully started.")
        # The real masters elect a leader, and it says so as raft_consensus.cc does.
        threading.Thread(target=election.run, daemon=True).start()
    else:
        serve_metrics(int(f.get("webserver_port", 9000)), "tserver.txt")
        serve_metrics(12000, "ycql.txt")
        ysql_port = int(f.get("pgsql_proxy_bind_address", "0.0.0.0:5433").rpartition(":")[2])
        upstream = os.environ.get("YB_STANDIN_YSQL_UPSTREAM")
        # The statements the data-keeping tserver's PostgreSQL executes, also
        # those forwarded to it: the cluster's total is right, not its split.
        serve_metrics(13000, "ysql.txt", None if upstream else statements_from(
            [str(PG_BIN / "psql"), "-h", "127.0.0.1", "-p", str(ysql_port), "-U", "yugabyte", "-d", "yugabyte"]))
        if upstream:
            forward_ysql(ysql_port, upstream)
        else:
            # The tservers that forward here share this postgres: room for
            # each one's --ysql_max_connections (YugabyteDB's default 300).
            max_connections = 4 * int(f.get("ysql_max_connections") or 300)
            children.append(run_postgres(data_root, ysql_port, max_connections,
                                         log_dir if ysql_to_files else None))
        log("Tablet server successfully started.")

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1):
        if any(c.poll() is not None for c in children):
            sys.exit("yb-standin: PostgreSQL (YSQL) exited")
    log("stopping")
    for c in children:
        c.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
        c.wait(30)


if __name__ == "__main__":
    main()
