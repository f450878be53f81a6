// The xk6-sql JavaScript API as the scripts use it, against a real
// PostgreSQL: on the real xk6-sql v1.0.5 (the tests' k6 v1.8.1 and k6
// v1.1.0) and on the v1.2 stand-in of the k6 v2 build (native/k6-v2), so
// the stand-in is held to what the real extension does
// (tests/native/test_sql_extension.py). Every check must pass.
import sql from "k6/x/sql";
import pq from "k6/x/sql/driver/postgres";
import { check } from "k6";

export const options = { iterations: 1, vus: 1, thresholds: { checks: ["rate==1"] } };

const name = __ENV.DRIVER;
// pgx only where asked: the k6 v1.1.0 build has lib/pq only.
const driver = name === "pgx" ? require("k6/x/sql/driver/pgx").valueOf() : pq;
const dsn = `host=127.0.0.1 port=${__ENV.PGPORT} user=${__ENV.PGUSER} dbname=${__ENV.PGDATABASE} sslmode=disable`;
const db = sql.open(driver, dsn, { max_open_conns: 1, max_idle_conns: 1, conn_max_lifetime: "1m", conn_max_idle_time: "30s" });

function throws(fn) {
  try { fn(); return ""; } catch (e) { return String(e.message || e); }
}

export default function () {
  db.exec("DROP TABLE IF EXISTS api_t");
  db.exec("CREATE TABLE api_t (k text PRIMARY KEY, b bytea, i int, n bigint, d numeric, z text)");
  const r = db.exec("INSERT INTO api_t VALUES ($1, $2, $3, $4, $5, NULL), ($6, $7, $8, $9, $10, NULL)",
    "a", "xyz", 7, 9007199254740991, "1.5", "b", "", -1, 0, "0");
  check(r, { "exec reports rows affected": (x) => x.rowsAffected() === 2 });

  const rows = db.query("SELECT k, b, i, n, d, z FROM api_t WHERE k = $1", "a");
  check(rows, {
    "query returns one object per row": (x) => Array.isArray(x) && x.length === 1,
    "text is a string": (x) => x[0].k === "a",
    "int is a number": (x) => x[0].i === 7,
    "bigint is a number": (x) => x[0].n === 9007199254740991,
    "bytea is bytes": (x) => x[0].b.length === 3 && x[0].b[0] === 120,
    // Types without a JS counterpart: lib/pq gives bytes, pgx a string.
    "numeric is not a number": (x) =>
      name === "postgres" ? String.fromCharCode(...x[0].d) === "1.5" : x[0].d === "1.5",
    "NULL is null": (x) => x[0].z === null,
  });
  check(db.query("SELECT k FROM api_t WHERE k = $1", "nope"), { "no rows is an empty array": (x) => x.length === 0 });
  check(db.query("SELECT d::float8 AS f FROM api_t WHERE k = 'a'"), { "cast in SQL to read a number": (x) => x[0].f === 1.5 });

  check(throws(() => db.exec("INSERT INTO api_t (k) VALUES ($1)", "a")), {
    "a failed statement throws with its SQLSTATE": (m) => /duplicate key/.test(m) && /\((SQLSTATE )?23505\)\s*$/.test(m),
  });
  let code;
  try { db.exec("INSERT INTO api_t (k) VALUES ($1)", "a"); } catch (e) { code = e.value && e.value.code; }
  check(code, { "its SQLSTATE is also the Go error's code, e.value.code": (c) => String(c) === "23505" });
  check(throws(() => db.queryWithTimeout("50ms", "SELECT pg_sleep(2)")), {
    "queryWithTimeout gives up": (m) => m !== "",
  });
  check(db.execWithTimeout("5s", "UPDATE api_t SET i = i + 1"), { "execWithTimeout runs": (x) => x.rowsAffected() === 2 });
  check(throws(() => sql.open("postgres", dsn)), { "a driver name instead of its module is refused": (m) => /unsupported database/.test(m) });

  // As the real xk6-sql (REFERENCE.md): rows.Err() is not checked, so an
  // error after the first rows comes back as a short result, no exception;
  // an error before the first row throws.
  check(db.query("SELECT 1 / (3 - g) AS x FROM generate_series(1, 5) g"), {
    "an error after two rows returns those two rows": (x) => x.length === 2 && x[1].x === 1,
  });
  check(throws(() => db.query("SELECT 1 / (1 - g) AS x FROM generate_series(1, 5) g")), {
    "an error at the first row throws": (m) => /division by zero/.test(m),
  });

  // open() options apply whenever they are named, whatever their value.
  const pid = (pool) => pool.query("SELECT pg_backend_pid() AS p")[0].p;
  const none = sql.open(driver, dsn, { max_idle_conns: 0 });
  check([pid(none), pid(none)], { "max_idle_conns: 0 opens a connection per statement": (p) => p[0] !== p[1] });
  none.close();
  const empty = sql.open(driver, dsn, {});
  check([pid(empty), pid(empty)], { "empty options keep database/sql's idle pool": (p) => p[0] === p[1] });
  empty.close();
  check(throws(() => sql.open(driver, dsn, { conn_max_lifetime: undefined })), {
    "an option set to undefined is applied, and fails": (m) => /invalid duration "undefined"/.test(m),
  });
  db.exec("DROP TABLE api_t");
}

export function teardown() {
  db.close();
}
