// The statement path of our Go helpers module (DB_DRIVER=pgconn,
// compose/k6/xk6-ybbench/pgconn.go) against a real PostgreSQL: what the
// workloads use of xk6-sql's API, with the same results. Every check must
// pass.
import { check } from "k6";
import { md5 } from "k6/crypto";

export const options = { iterations: 1, vus: 1, thresholds: { checks: ["rate==1"] } };

const ybbench = require("k6/x/ybbench");
const dsn = `host=127.0.0.1 port=${__ENV.PGPORT} user=${__ENV.PGUSER} dbname=${__ENV.PGDATABASE} sslmode=disable`;
const s = ybbench.pgconnSession(dsn);
const other = ybbench.pgconnSession(dsn);

function throws(fn) {
  try { fn(); return ""; } catch (e) { return String(e.message || e); }
}

const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");

export default function () {
  s.exec("DROP TABLE IF EXISTS pgconn_t");
  s.exec("CREATE TABLE pgconn_t (k text PRIMARY KEY, b bytea, i int, n bigint, d numeric, f float8, t bool, z text)");
  const r = s.exec("INSERT INTO pgconn_t VALUES ($1, $2, $3, $4, $5, $6, $7, NULL), ($8, $9, $10, $11, $12, $13, $14, NULL)",
    "a", "xyz", 7, 9007199254740991, "1.5", 0.25, true, "b", "", -1, 0, "0", -2, false);
  check(r, { "exec reports rows affected": (x) => x.rowsAffected() === 2 });

  const rows = s.query("SELECT k, b, i, n, d, f, t, z FROM pgconn_t WHERE k = $1", "a");
  check(rows, {
    "query returns one object per row": (x) => Array.isArray(x) && x.length === 1,
    "text is a string": (x) => x[0].k === "a",
    "int is a number": (x) => x[0].i === 7,
    "bigint is a number": (x) => x[0].n === 9007199254740991,
    "float is a number": (x) => x[0].f === 0.25,
    "bool is a boolean": (x) => x[0].t === true,
    "a string parameter is the text of a bytea": (x) => hex(x[0].b) === "78797a",
    "numeric is its text, as pgx gives it": (x) => x[0].d === "1.5",
    "NULL is null": (x) => x[0].z === null,
  });
  check(s.query("SELECT k FROM pgconn_t WHERE k = $1", "nope"), { "no rows is an empty array": (x) => x.length === 0 });

  // Rows are made from their bytes when read (pgrows.go), and behave as
  // the plain objects xk6-sql returns.
  const [a, b] = s.query("SELECT k, i AS x, t, k AS x, z FROM pgconn_t ORDER BY k");
  check(a, {
    "a row's keys are its columns in order, a repeated name once": (x) => JSON.stringify(Object.keys(x)) === '["k","x","t","z"]',
    "a repeated name has its last column's value": (x) => x.x === "a",
    "a row is JSON like a plain object": (x) => JSON.stringify(x) === '{"k":"a","x":"a","t":true,"z":null}',
    "a row spreads and has its own properties": (x) => ({ ...x }).t === true && x.hasOwnProperty("z") && !("nope" in x) && x.nope === undefined,
  });
  b.k = "changed";
  b.extra = 1;
  delete b.t;
  check(b, {
    "a row's values can be set, added and deleted": (x) =>
      JSON.stringify(x) === '{"k":"changed","x":"b","z":null,"extra":1}' && !("t" in x) && x.t === undefined,
  });
  const [one, two, oneAgain] = [s.exec("UPDATE pgconn_t SET i = i WHERE k = 'a'"), r, s.exec("UPDATE pgconn_t SET i = i WHERE k = 'b'")];
  check(one, {
    "results of equal counts are each right, and cannot be changed": (x) =>
      x.rowsAffected() === 1 && oneAgain.rowsAffected() === 1 && two.rowsAffected() === 2 && Object.isFrozen(x),
  });

  // The key-value workloads' values: Go byte slices from kvRowFiller, all
  // 256 byte values, written as they are.
  const row = new Array(2);
  ybbench.kvRowFiller("p", 12, 300)(row, 0, 42, 1);
  s.exec("INSERT INTO pgconn_t (k, b) VALUES ($1, $2::bytea)", row[0], row[1]);
  check(s.query("SELECT length(b) AS n, md5(b) AS m FROM pgconn_t WHERE k = $1", row[0]), {
    "bytes are written as they are": (x) => x[0].n === 300 && x[0].m === other.query("SELECT md5($1::bytea) AS m", row[1])[0].m,
  });
  // As ArrayBuffers (kv.js on this path): the same bytes, the row's index
  // first.
  const abRow = new Array(2);
  ybbench.kvRowFiller("p", 12, 300, true)(abRow, 0, 2 ** 40 + 7, 1);
  s.exec("INSERT INTO pgconn_t (k, b) VALUES ($1, $2)", abRow[0], abRow[1]);
  check(s.query("SELECT length(b) AS n, encode(substring(b from 1 for 6), 'hex') AS head, md5(b) AS m FROM pgconn_t WHERE k = $1", abRow[0]), {
    "ArrayBuffer values are written as they are": (x) =>
      abRow[1] instanceof ArrayBuffer && x[0].n === 300 && x[0].head === "010000000007" && x[0].m === md5(abRow[1], "hex"),
  });
  s.exec("DELETE FROM pgconn_t WHERE k = $1", abRow[0]);
  const bytes = new Uint8Array([0, 1, 92, 120, 255]).buffer;
  s.exec("UPDATE pgconn_t SET b = $2 WHERE k = $1", "b", bytes);
  check(s.query("SELECT b FROM pgconn_t WHERE k = 'b'")[0].b, { "an ArrayBuffer is bytes, and bytea reads back": (b) => hex(b) === "00015c78ff" });
  check(s.query("SELECT $1::int + 1 AS x, $2::text AS y, $3::float8 AS z", 41, null, 1.5), {
    "numbers and null as parameters": (x) => x[0].x === 42 && x[0].y === null && x[0].z === 1.5,
  });
  check(s.query("SELECT $1::text AS e, $2::text AS u, $3::text AS long, $4::bool AS b", "", undefined, "é".repeat(900), false), {
    "an empty string is empty, undefined NULL, long text and booleans as they are": (x) =>
      x[0].e === "" && x[0].u === null && x[0].long === "é".repeat(900) && x[0].b === false,
  });

  check(throws(() => s.exec("INSERT INTO pgconn_t (k) VALUES ($1)", "a")), {
    "a failed statement throws with its SQLSTATE": (m) => /duplicate key/.test(m) && /\(SQLSTATE 23505\)\s*$/.test(m),
  });
  check(s.query("SELECT count(*) AS n FROM pgconn_t"), { "the session goes on after an error": (x) => x[0].n === 3 });
  check(throws(() => s.query("SELECT $1::int AS x")), { "a missing parameter is refused": (m) => /expected 1 arguments, got 0/.test(m) });
  // Unlike xk6-sql, an error after the first rows throws (lib/metrics.js
  // retries it as it would a short result).
  check(throws(() => s.query("SELECT 1 / (3 - g) AS x FROM generate_series(1, 5) g")), {
    "an error after two rows throws": (m) => /division by zero/.test(m) && /\(SQLSTATE 22012\)/.test(m),
  });

  // Each statement text is prepared once per connection.
  for (let i = 0; i < 3; i++) s.query("SELECT k FROM pgconn_t WHERE k = $1", "a");
  check(s.query("SELECT count(*) AS n FROM pg_prepared_statements WHERE statement = 'SELECT k FROM pgconn_t WHERE k = $1'"), {
    "a statement is prepared once": (x) => x[0].n === 1,
  });

  // A connection that breaks is replaced at the next statement.
  const pid = s.query("SELECT pg_backend_pid() AS pid")[0].pid;
  other.exec("SELECT pg_terminate_backend($1, 5000)", pid); // waits for it to end
  check(throws(() => s.query("SELECT 1 AS x")), { "a statement on a terminated connection throws": (m) => m !== "" });
  check(s.query("SELECT pg_backend_pid() AS pid, count(*) AS n FROM pgconn_t"), {
    "the next one runs on a new connection": (x) => x[0].pid !== pid && x[0].n === 3,
  });
  s.exec("DROP TABLE pgconn_t");
  s.close();
  other.close();
  check(throws(() => ybbench.pgconnSession("host=127.0.0.1 port=notaport")), { "a bad DSN is refused": (m) => /port/.test(m) });
}
