// One connection over the workloads' own DSN (k6-scripts/lib/db.js dsn,
// with DB_SSLMODE and the TLS files from lib/config.js) on the statement
// path DB_DRIVER names: lib/pq or pgx under xk6-sql (through checkReachable,
// the workloads' setup check, whose message the user sees), or our Go
// helpers module's pgconn session (the load's path with DB_DRIVER=pgconn).
// What the server says of the session's TLS (pg_stat_ssl), or the error,
// goes to PROBE_OUT as JSON (tests/native/test_tls.py).
import { connection } from "../../k6-scripts/lib/config.js";
import { checkReachable, dsn, errorMessage, open, pgconnModule } from "../../k6-scripts/lib/db.js";

export const options = { vus: 1, iterations: 1 };

const conn = connection();
const SSL = "SELECT ssl, version, client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()";

export function setup() {
  const node = conn.nodes[0];
  try {
    if (pgconnModule) {
      const s = pgconnModule.pgconnSession(dsn(conn, node));
      try {
        return { ok: true, ...s.query(SSL)[0] };
      } finally {
        s.close();
      }
    }
    checkReachable(conn);
    const db = open(conn, node);
    try {
      return { ok: true, ...db.query(SSL)[0] };
    } finally {
      db.close();
    }
  } catch (e) {
    return { ok: false, error: errorMessage(e) };
  }
}

export default function () {}

export function handleSummary(data) {
  return { [__ENV.PROBE_OUT]: JSON.stringify(data.setup_data) };
}
