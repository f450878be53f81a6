// The large-dataset key-value workloads of seeds 001 and 004 (yb-sample-apps
// CassandraKeyValue with --value_size 256, over YSQL), and seed 002's ESLE
// factors: OP_SIZE rows per statement and ISOLATION per session.
//
// Table (k text PRIMARY KEY, v bytea); keys `<prefix>:<index>` zero-padded to
// KEY_BYTES; values VALUE_BYTES random bytes, the first 6 the index.
// The load writes indexes 0.. in order; the read workloads read (and update)
// indexes of [0, MAX_WRITTEN_KEY) that a load run wrote under KEY_PREFIX.
import { ConfigError, identifier, int, number, oneOf, required, str, connection } from "./config.js";
import { open, runners, nodeFor, checkReachable, ensure, requireKey, where, pgconnStatements } from "./db.js";
import { paddedKeyMaker, rowFiller, uniformKeys } from "./keys.js";
import { attempt, attemptRows, tagIteration, pastBound, keysMissing, unacknowledged } from "./metrics.js";
import { options as runOptions, testid, iterationInTest } from "./run.js";
import { summaryHandler } from "./summary.js";

const PREFIX = { pattern: /^[A-Za-z0-9_.-]{1,64}$/, hint: "1-64 letters, digits, . _ -" };

// `load`: write new keys. Otherwise read uniformly over the loaded keys, or
// over the most recent RECENT_KEYS of them (`recent`), updating WRITE_PERCENT
// of the time.
export function kvWorkload(name, { load = false, recent = false, writePercent = 0, vus = 16 } = {}) {
  const conn = connection();
  const table = identifier("TABLE", "keyvalue");
  const keyBytes = int("KEY_BYTES", 50, { min: 8, max: 1024 });
  const valueBytes = int("VALUE_BYTES", 256, { min: 8, max: 1048576 });
  const opSize = int("OP_SIZE", 1, { min: 1, max: 1000 });
  const readShape = oneOf("READ_SHAPE", "in", ["in", "range"]);
  if (opSize * valueBytes > 64 * 1048576) throw new ConfigError(`invalid OP_SIZE=${opSize}: OP_SIZE x VALUE_BYTES above 64 MB per statement`);
  let keyPrefix, numKeys, maxWrittenKey, recentKeys, writes;
  if (load) {
    keyPrefix = str("KEY_PREFIX", undefined, PREFIX);
    numKeys = int("NUM_UNIQUE_KEYS", 0, { min: 0 });
    if (numKeys % opSize) throw new ConfigError(`invalid NUM_UNIQUE_KEYS=${numKeys}: must be a multiple of OP_SIZE=${opSize}`);
  } else {
    keyPrefix = required("KEY_PREFIX", str("KEY_PREFIX", undefined, PREFIX));
    maxWrittenKey = required("MAX_WRITTEN_KEY", int("MAX_WRITTEN_KEY", undefined, { min: 1 }));
    writes = number("WRITE_PERCENT", writePercent, { min: 0, max: 100 });
    recentKeys = recent ? int("RECENT_KEYS", Math.max(1, Math.floor(maxWrittenKey / 100)), { min: 1, max: maxWrittenKey }) : maxWrittenKey;
    if (opSize > recentKeys) throw new ConfigError(`invalid OP_SIZE=${opSize}: more than the ${recentKeys} keys read`);
  }
  const ops = load ? ["insert"] : writes > 0 ? ["select", "update"] : ["select"];
  const bound = load && numKeys ? numKeys / opSize : 0;
  const options = runOptions(name, { ops, bound, vus });

  // Per VU, once: its connection, its statements, its value pool.
  const db = open(conn, nodeFor(conn, __VU));
  const placeholders = (n, f) => Array.from({ length: n }, (_, i) => f(i)).join(", ");
  const insert = `INSERT INTO ${table} (k, v) VALUES ${placeholders(opSize, (i) => `($${2 * i + 1}, $${2 * i + 2})`)}`;
  const update = opSize === 1
    ? `UPDATE ${table} SET v = $2 WHERE k = $1`
    : `UPDATE ${table} AS t SET v = x.v FROM (VALUES ${placeholders(opSize, (i) => `($${2 * i + 1}, $${2 * i + 2}::bytea)`)}) AS x(k, v) WHERE t.k = x.k`;
  const select = opSize === 1
    ? `SELECT k, v FROM ${table} WHERE k = $1`
    : readShape === "in"
      ? `SELECT k, v FROM ${table} WHERE k IN (${placeholders(opSize, (i) => `$${i + 1}`)})`
      : `SELECT k, v FROM ${table} WHERE k >= $1 AND k <= $2`;
  const sql = runners(db, conn, nodeFor(conn, __VU));
  // Statement text, then its parameters (lib/metrics.js attempt).
  const writeArgs = new Array(1 + 2 * opSize);
  const ranged = readShape === "range" && opSize > 1;
  const readArgs = [select, ...new Array(ranged ? 2 : opSize)];
  // Reads and updates pick a window of opSize consecutive keys inside the
  // keys read: its first index is uniform over [lowest, lowest + windows).
  const lowest = load ? 0 : maxWrittenKey - recentKeys;
  const windows = load ? 0 : recentKeys - opSize + 1;
  let key, fill, oneKey;

  function setup() {
    checkReachable(conn);
    const prefix = keyPrefix || testid();
    paddedKeyMaker(prefix, keyBytes); // refuses a KEY_BYTES too short for the prefix
    if (load) {
      ensure(db, `CREATE TABLE IF NOT EXISTS ${table} (k text PRIMARY KEY, v bytea)`);
    } else {
      // Read workloads need the load's table and its last key.
      requireKey(db, table, `SELECT 1 AS found FROM ${table} WHERE k = $1`, paddedKeyMaker(prefix, keyBytes)(maxWrittenKey - 1));
    }
    const iso = db.query("SELECT current_setting('transaction_isolation') AS level")[0].level;
    console.log(`${name}: keys ${prefix}:<n> (${keyBytes} bytes) in ${table}, ${opSize} row(s) per statement, isolation ${iso}`);
    // What a load wrote, for summary.json and `ybbench verify`: iteration n
    // writes indexes [n x OP_SIZE, (n + 1) x OP_SIZE), keys and values as
    // paddedKeyMaker and randomValueMaker make them (lib/keys.js).
    const written = load ? { scheme: "kv", table, prefix, key_bytes: keyBytes, value_bytes: valueBytes, rows_per_iteration: opSize, ...where(conn) } : undefined;
    return { prefix, written };
  }

  // Rows [first, first + opSize) in one statement.
  function write(op, stmt, first) {
    writeArgs[0] = stmt;
    fill(writeArgs, 1, first, opSize);
    const r = attempt(op, sql.exec, writeArgs);
    if (r === undefined && op === "insert") unacknowledged(first, opSize);
    // A multi-row INSERT writes all its rows or fails; an UPDATE may not
    // find some (rowsWritten in lib/summary.js subtracts them).
    if (r === undefined || op === "insert") return;
    const n = r.rowsAffected();
    if (n < opSize) keysMissing.add(opSize - n, { op });
  }

  function read() {
    // One key: drawn and made in Go where k6 has our module (lib/keys.js).
    if (opSize === 1) {
      readArgs[1] = oneKey();
      // No rows is a key missing (an error before the first row throws).
      const rows = attempt("select", sql.query, readArgs);
      if (rows !== undefined && rows.length !== 1) keysMissing.add(1, { op: "select" });
      return;
    }
    const first = lowest + Math.floor(Math.random() * windows);
    if (ranged) {
      readArgs[1] = key(first);
      readArgs[2] = key(first + opSize - 1);
    } else {
      for (let i = 0; i < opSize; i++) readArgs[i + 1] = key(first + i);
    }
    // A short result may be an error (lib/metrics.js).
    attemptRows("select", sql.query, readArgs, opSize);
  }

  function run(data) {
    if (!key) {
      key = paddedKeyMaker(data.prefix, keyBytes);
      fill = rowFiller(data.prefix, keyBytes, valueBytes, pgconnStatements);
      if (!load) oneKey = uniformKeys(data.prefix, windows, keyBytes, lowest);
    }
    if (load) {
      // iterationInTest is unique across VUs and execution segments: no two
      // iterations write one key. In the open model the bound is checked here.
      const n = iterationInTest();
      if (pastBound(n, bound)) return;
      tagIteration("insert");
      write("insert", insert, n * opSize);
      return;
    }
    if (writes > 0 && Math.random() * 100 < writes) {
      tagIteration("update");
      write("update", update, lowest + Math.floor(Math.random() * windows));
    } else {
      tagIteration("select");
      read();
    }
  }

  return { options, setup, run, teardown: () => db.close(), handleSummary: summaryHandler(name, { rowsPerWrite: opSize }) };
}
