// One connection per VU, VUs spread round-robin over the YSQL nodes, as
// yb-sample-apps spreads its threads over --nodes.
//
// Two drivers, both database/sql drivers under xk6-sql: lib/pq
// (xk6-sql-driver-postgres, an official k6 extension, what Grafana Cloud k6
// runs) by default, and pgx (our module, compose/k6/xk6-sql-driver-pgx;
// statement cache, one round trip per statement) with DB_DRIVER=pgx, which
// `ybbench run` and the compose k6 set where their k6 has it. Only the
// official modules are imported: static imports are what k6 reads as a
// script's extensions (`k6 deps`, Grafana Cloud's binary provisioning).
// pgx is loaded by require(), and only when asked for, so a k6 without it
// runs every workload.
import sql from "k6/x/sql";
import pq from "k6/x/sql/driver/postgres";
import { goHelpers, load, requireModule } from "./go_helpers.js";

export function dsn(conn, node) {
  return [
    `host=${node.host}`,
    `port=${node.port}`,
    `user=${conn.user}`,
    `dbname=${conn.database}`,
    `sslmode=${conn.sslmode}`,
    ...(conn.sslrootcert ? [`sslrootcert=${quoted(conn.sslrootcert)}`] : []),
    ...(conn.sslcert ? [`sslcert=${quoted(conn.sslcert)}`, `sslkey=${quoted(conn.sslkey)}`] : []),
    `connect_timeout=${conn.connectTimeout}`,
    // Both drivers pass unknown DSN keys to the server as startup
    // parameters: every (re)connection of the session gets the level.
    ...(conn.isolation === "default" ? [] : [`default_transaction_isolation='${conn.isolation.replace("_", " ")}'`]),
    // Only the load's VUs (1, 2, ...): setup and teardown run as VU 0, and
    // their DDL (a YugabyteDB CREATE TABLE takes seconds) keeps no deadline.
    ...(conn.statementTimeoutMs > 0 && __VU > 0 ? [`statement_timeout=${conn.statementTimeoutMs}`] : []),
  ].join(" ");
}

// A DSN value in single quotes, as lib/pq and pgx both read it: a path
// may hold spaces, quotes or backslashes.
function quoted(v) {
  return `'${v.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
}

// Where a load wrote, without the password: summary.json keeps it for
// `ybbench verify` (with the TLS files' paths, when given).
export function where(conn) {
  return {
    nodes: conn.nodes.map((n) => `${n.host}:${n.port}`),
    user: conn.user,
    database: conn.database,
    sslmode: conn.sslmode,
    ...(conn.sslrootcert ? { sslrootcert: conn.sslrootcert } : {}),
    ...(conn.sslcert ? { sslcert: conn.sslcert, sslkey: conn.sslkey } : {}),
  };
}

// The node a VU talks to. VU ids start at 1; the init context that only
// reads options runs as VU 0.
export function nodeFor(conn, vu) {
  return conn.nodes[Math.max(vu - 1, 0) % conn.nodes.length];
}

// In the init context: require() is not available later (setup, VU code).
// With DB_DRIVER=pgconn, setup and teardown use lib/pq: only the load's
// statements take k6/x/ybbench's own path (runners).
const drivers = { postgres: pq, pgconn: pq, ...(__ENV.DB_DRIVER === "pgx" ? { pgx: pgxDriver() } : {}) };
export const pgconnModule = __ENV.DB_DRIVER === "pgconn" ? goHelpers || load("DB_DRIVER=pgconn") : null;
// Whether runners() hands out our module's statement path: it takes bytes
// as ArrayBuffers at less cost than Go slices (lib/keys.js rowFiller).
export const pgconnStatements = pgconnModule !== null;

// A k6 without the module: say plainly what is missing (lib/go_helpers.js
// requireModule). A module's Symbol comes boxed: unbox it.
function pgxDriver() {
  return requireModule(
    "k6/x/sql/driver/pgx",
    (m) => typeof m.valueOf === "function" && typeof m.valueOf() === "symbol",
    "DB_DRIVER=pgx: this k6 has no k6/x/sql/driver/pgx module (our driver, compose/k6/xk6-sql-driver-pgx); " +
      "use DB_DRIVER=postgres (lib/pq) or a k6 built with it (compose/k6/Dockerfile, native/build.sh)",
  ).valueOf();
}

// lib/pq sends a statement with its parameters in one round trip only with
// binary_parameters (then []byte goes as binary, bytea's own format);
// without, it first asks the server for the parameter types: two round
// trips a statement, 86 -> 70 µs of client CPU per select (docs/client-efficiency.md).
// pgx would pass the key on to the server: only for lib/pq.
export function open(conn, node) {
  const driver = drivers[conn.driver];
  const extra = driver === pq ? " binary_parameters=yes" : "";
  return sql.open(driver, dsn(conn, node) + extra, { max_open_conns: 1, max_idle_conns: 1 });
}

// The load's query and exec of a VU: db.query and db.exec of its pool,
// looked up once (every property read on the Go object makes a new function
// object: ~2 µs and ~300 bytes a statement otherwise; plain functions, they
// stay bound to the pool). With DB_DRIVER=pgconn, those of a connection of
// our Go helpers module to the same node, which runs the same statements
// without xk6-sql and database/sql (compose/k6/xk6-ybbench/pgconn.go); it
// connects at its first statement.
export function runners(db, conn, node) {
  if (pgconnModule) {
    const session = pgconnModule.pgconnSession(dsn(conn, node));
    return { query: session.query, exec: session.exec };
  }
  return { query: db.query, exec: db.exec };
}

// Fail early with a message that says where and as whom, not just the
// driver's words, when a node cannot be reached or refuses us.
export function checkReachable(conn) {
  for (const node of conn.nodes) {
    const db = open(conn, node);
    try {
      db.query("SELECT 1 AS ok");
    } catch (e) {
      throw new Error(
        `cannot use database "${conn.database}" at ${node.host}:${node.port} as "${conn.user}": ${errorMessage(e)}` +
          tlsContext(conn, errorMessage(e)),
      );
    } finally {
      db.close();
    }
  }
}

// DDL that several k6 instances (execution segments, k6-operator runners)
// may run at the same moment: IF NOT EXISTS can still lose the race on the
// catalog (23505, 42P07, 42710), which means the object is there.
export function ensure(db, ddl) {
  try {
    db.exec(ddl);
  } catch (e) {
    if (!["23505", "42P07", "42710"].includes(sqlstate(e))) throw e;
  }
}

// Read workloads ask only for keys a load wrote: before any load, the table
// must hold the last of them, or the run stops saying what to check.
export function requireKey(db, table, select, k) {
  let rows;
  try {
    rows = db.query(select, k);
  } catch (e) {
    throw new Error(`cannot read ${table}: ${errorMessage(e)}`);
  }
  if (rows.length !== 1) {
    throw new Error(`key ${k} is not in ${table}: check KEY_PREFIX and MAX_WRITTEN_KEY against the run that wrote it`);
  }
}

// The drivers' TLS errors ("x509: certificate signed by unknown authority",
// "x509: cannot validate certificate for 10.0.0.1 because it doesn't
// contain any IP SANs") name no file: say which CA file and mode the
// server's certificate was checked with, and which client certificate was sent.
// PostgreSQL refuses a client certificate whose CN is not the user
// (clientcert=verify-full) with the password's words, 28P01.
function tlsContext(conn, message) {
  if (conn.sslcert && /28P01|authentication failed/.test(message)) {
    return ` (with the client certificate DB_SSLCERT=${conn.sslcert}: a server that checks it ` +
      `(clientcert=verify-full) refuses one whose CN is not DB_USER=${conn.user} with these words too)`;
  }
  if (conn.sslmode === "disable" || !/x509|certificate|tls|ssl/i.test(message)) return "";
  return ` (DB_SSLMODE=${conn.sslmode}, ` +
    (conn.sslrootcert ? `server certificate checked against DB_SSLROOTCERT=${conn.sslrootcert}` :
      "no DB_SSLROOTCERT") +
    (conn.sslcert ? `, client certificate DB_SSLCERT=${conn.sslcert} with DB_SSLKEY=${conn.sslkey})` : ")");
}

export function errorMessage(e) {
  return String((e && e.message) || e).replace(/^GoError: /, "");
}

// SQLSTATE of a failed statement: lib/pq ends its messages with "(23505)",
// pgx with "(SQLSTATE 23505)". Errors that never reached the server
// (network, timeouts) have none.
export function sqlstate(e) {
  const m = /\((?:SQLSTATE )?([0-9A-Z]{5})\)\s*$/.exec(errorMessage(e));
  return m ? m[1] : "none";
}
