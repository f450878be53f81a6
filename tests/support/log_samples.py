"""Log lines as the stack's services write them, each with the level
Promtail's pipeline must give it (None: no level label). Lines quoted from
a source say which; the others follow the format documented next to them.
tests/native/test_log_levels.py checks the levels, tests/native/test_dashboards.py ships
the lines to Loki for the dashboards' LogQL queries."""

from __future__ import annotations

# --- YugabyteDB (yb-master, yb-tserver): glog ------------------------------
# Prefix "[IWEF]mmdd hh:mm:ss.uuuuuu threadid file:line] msg", the thread id
# space-padded: YugabyteDB's glog fork, github.com/yugabyte/glog,
# src/glog/logging.h.in ("LOG LINE PREFIX FORMAT"), and the header of every
# yb-master.INFO / yb-tserver.INFO ("Log line format: [IWEF]mmdd hh:mm:ss.uuuuuu
# threadid file:line] msg", docs/content/stable/troubleshoot/nodes/disk-full.md
# in github.com/yugabyte/yugabyte-db).
YB_MASTER = [
    # yb-master.INFO after start, docs/content/stable/deploy/manual-deployment/
    # start-masters.md (github.com/yugabyte/yugabyte-db): a follower, a leader.
    ("I0912 16:11:07.419591  8030 sys_catalog.cc:332] T 00000000000000000000000000000000 "
     "P bc42e1c52ffe4419896a816af48226bc [sys.catalog]: This master's current role is: FOLLOWER", "info"),
    ("I0912 16:11:06.899287 27220 raft_consensus.cc:738] T 00000000000000000000000000000000 "
     "P 21171528d28446c8ac0b1a3f489e8e4b [term 2 LEADER]: Becoming Leader. State: "
     "Replica: 21171528d28446c8ac0b1a3f489e8e4b, State: 1, Role: LEADER", "info"),
    # The message of src/yb/master/master_main.cc, in the prefix above.
    ("I0912 16:11:05.102344 27220 master_main.cc:147] Master server successfully started.", "info"),
    # github.com/yugabyte/yugabyte-db issue 5672: a master that cannot reach
    # its peers (the E line ends where the excerpt does).
    ("W0913 20:50:42.761972 218640 consensus_peers.cc:628] Error getting permanent uuid from config peer "
     "[tk.mydomain.com:7100]: Network error (yb/util/net/socket.cc:537): recvmsg error: Connection refused "
     "(system error 111)", "warn"),
    ("E0913 20:50:54.862272 218634 async_initializer.cc:93] Failed to initialize client: Timed out "
     "(yb/rpc/rpc.cc:211): Could not locate the leader master", "error"),
]
YB_TSERVER = [
    # A 2.1 tserver's start (github.com/aegershman/yugabyte-boshrelease issue
    # 152): thread id 6, padded to 5 characters.
    ("I0311 22:27:44.283848     6 rpc_server.cc:169] RPC server started. Bound to: 10.156.89.42:9101", "info"),
    # The message of src/yb/tserver/tablet_server_main_impl.cc, same prefix.
    ("I0311 22:27:44.331427     6 tablet_server_main_impl.cc:204] Tablet server successfully started.", "info"),
    # A tablet's replica winning an election (raft_consensus.cc, as above).
    ("I0311 22:31:02.017765    41 raft_consensus.cc:997] T 4a1c2e9d6f0b4f7b9b8f1b6c2d3e4f50 "
     "P 9a8b7c6d5e4f40312233445566778899 [term 3 LEADER]: Becoming Leader. State: "
     "Replica: 9a8b7c6d5e4f40312233445566778899, State: 1, Role: LEADER", "info"),
    # docs/content/stable/troubleshoot/nodes/disk-full.md: a tserver that
    # cannot start.
    ("F0119 04:08:47.225858 46656 tablet_server_main_impl.cc:241] Already present "
     "(yb/tserver/ts_tablet_manager.cc:1554): Could not init Tablet Manager: State transition of tablet "
     "d1e9c6c53fa9410c86d3505073305b41 already in progress:     {d1e9c6c53fa9410c86d3505073305b41, opening tablet}",
     "fatal"),
]

# --- PostgreSQL and YSQL ----------------------------------------------------
# log_line_prefix '%m [%p] ', the default of PostgreSQL 10+ and of YSQL
# (src/postgres/src/backend/utils/misc/postgresql.conf.sample in
# github.com/yugabyte/yugabyte-db); severities as elog.c's error_severity()
# spells them (DEBUG for DEBUG1-5). DETAIL, HINT, STATEMENT and CONTEXT
# lines continue the message above them and get no level of their own.
# tests/native/test_log_levels.py also runs the lines a real PostgreSQL 15 writes.
POSTGRES = [
    ("2025-06-15 12:00:00.123 UTC [1] LOG:  database system is ready to accept connections", "info"),
    ('2025-06-15 12:00:03.456 UTC [2201] ERROR:  duplicate key value violates unique constraint '
     '"postgresqlkeyvalue_pkey"', "error"),
    ("2025-06-15 12:00:03.456 UTC [2201] DETAIL:  Key (k)=(ins1:1) already exists.", None),
    ("2025-06-15 12:00:03.456 UTC [2201] STATEMENT:  INSERT INTO postgresqlkeyvalue (k, v) VALUES ($1, $2)", None),
    ("2025-06-15 12:00:04.001 UTC [2305] WARNING:  there is no transaction in progress", "warn"),
    ('2025-06-15 12:00:05.789 UTC [2310] FATAL:  password authentication failed for user "ybbench"', "fatal"),
    ('2025-06-15 12:00:06.000 UTC [1] PANIC:  could not write to file "pg_wal/xlogtemp.1": '
     "No space left on device", "fatal"),
    ("2025-06-15 12:00:07.000 UTC [1] DEBUG:  autovacuum: processing database \"ybbench\"", "debug"),
    ("PostgreSQL init process complete; ready for start up.", None),  # the image's entrypoint
]

# --- logfmt -------------------------------------------------------------------
K6 = [  # k6 (logrus): time="..." level=... msg="..."
    ('time="2025-06-15T12:00:01Z" level=info msg="sql-inserts: keys ins1:<n>" source=console', "info"),
    ('time="2025-06-15T12:00:02Z" level=warning msg="The test has generated metrics with 100125 unique time '
     'series, which is higher than the suggested limit of 100000 and could cause high memory usage."', "warn"),
    ("time=\"2025-06-15T12:01:00Z\" level=error msg=\"thresholds on metrics 'ybbench_errors' have been crossed\"",
     "error"),
    ("     iterations.....................: 1000   99.9/s", None),  # the end-of-test summary
]
PROMETHEUS = [  # Prometheus 3 (log/slog): level=INFO, WARN, ERROR
    ('time=2025-06-15T12:00:00.000Z level=INFO source=main.go:1423 msg="Server is ready to receive web requests."',
     "info"),
    ('time=2025-06-15T12:00:30.000Z level=WARN source=scrape.go:1878 msg="Error on ingesting out-of-order samples" '
     "component=\"scrape manager\" num_dropped=1", "warn"),
]
LOKI_AND_PROMTAIL = [  # go-kit log: level first
    ('level=warn ts=2026-11-22T13:12:43.694695852Z caller=client.go:419 component=client host=loki:3100 '
     'msg="error sending batch, will retry" status=-1 tenant= error="Post \\"http://loki:3100/loki/api/v1/push\\": '
     'dial tcp: lookup loki: no such host"', "warn"),
    ('level=debug ts=2025-06-15T12:00:00.000Z caller=grpc_logging.go:66 method=/logproto.Pusher/Push '
     'duration=1.2ms msg="gRPC (success)"', "debug"),
]
GRAFANA = [  # logger=... t=... level=...
    ('logger=http.server t=2025-06-15T12:00:00.000Z level=info msg="HTTP Server Listen" address=[::]:3000 '
     "protocol=http", "info"),
]

# What each compose service logs, for shipping to Loki as Promtail would.
BY_SERVICE = {
    "yb-master-1": YB_MASTER,
    "yb-tserver-1": YB_TSERVER,
    "postgres": POSTGRES,
    "k6": K6,
    "prometheus": PROMETHEUS,
    "loki": LOKI_AND_PROMTAIL,
    "grafana": GRAFANA,
}
ALL = [sample for samples in BY_SERVICE.values() for sample in samples]
