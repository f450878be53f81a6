// Every knob of every workload is an environment variable with a default,
// parsed and validated here. A bad value throws in the init context, which
// stops k6 before setup() and before any load, naming the variable.

export class ConfigError extends Error {}

function fail(name, value, why) {
  throw new ConfigError(`invalid ${name}=${JSON.stringify(value)}: ${why}`);
}

// The raw value of a variable, or undefined when unset or empty.
function raw(name) {
  const v = __ENV[name];
  return v === undefined || v === "" ? undefined : v;
}

export function int(name, dflt, { min = 0, max = Number.MAX_SAFE_INTEGER } = {}) {
  const v = raw(name);
  if (v === undefined) return dflt;
  if (!/^[0-9]+$/.test(v.replace(/_/g, ""))) fail(name, v, "not a whole number");
  const n = Number(v.replace(/_/g, ""));
  if (!Number.isSafeInteger(n) || n < min || n > max) fail(name, v, `must be between ${min} and ${max}`);
  return n;
}

// A decimal number such as 0.5 (percentages, rates, the zipfian constant).
export function number(name, dflt, { min = 0, max = Number.MAX_VALUE, above } = {}) {
  const v = raw(name);
  if (v === undefined) return dflt;
  if (!/^[0-9]+(\.[0-9]+)?$/.test(v)) fail(name, v, "not a decimal number");
  const n = Number(v);
  if (n < min || n > max || (above !== undefined && n <= above)) {
    fail(name, v, above !== undefined ? `must be above ${above} and at most ${max}` : `must be between ${min} and ${max}`);
  }
  return n;
}

// maxLength apart from the pattern: k6 before v1.4.2 refuses a regex
// repeat count over 1000 (`{1,4096}`) when it loads the script.
export function str(name, dflt, { pattern, maxLength, hint } = {}) {
  const v = raw(name);
  if (v === undefined) return dflt;
  if ((pattern && !pattern.test(v)) || (maxLength !== undefined && v.length > maxLength)) {
    fail(name, v, hint || `must match ${pattern}${maxLength !== undefined ? ` and be at most ${maxLength} characters` : ""}`);
  }
  return v;
}

export function oneOf(name, dflt, choices) {
  const v = raw(name);
  if (v === undefined) return dflt;
  if (!choices.includes(v)) fail(name, v, `must be one of ${choices.join(", ")}`);
  return v;
}

// A k6 duration such as 30s, 5m, 1h30m.
export function duration(name, dflt) {
  return str(name, dflt, { pattern: /^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$/, hint: "a duration such as 30s, 5m or 1h30m" });
}

export function required(name, value) {
  if (value === undefined) throw new ConfigError(`${name} is required and not set`);
  return value;
}

const hostPort = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/;

// YSQL_NODES: host:port,host:port,... as yb-sample-apps' --nodes.
export function nodes(name, dflt) {
  const v = str(name, dflt);
  const list = v.split(",").map((s) => s.trim()).filter((s) => s !== "");
  if (list.length === 0) fail(name, v, "no host:port in the list");
  return list.map((hp) => {
    const m = hostPort.exec(hp);
    if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) fail(name, v, `"${hp}" is not host:port`);
    return { host: m[1].replace(/^\[|\]$/g, ""), port: Number(m[2]) };
  });
}

// A SQL identifier we interpolate into statements: plain names only.
export function identifier(name, dflt) {
  return str(name, dflt, { pattern: /^[a-z_][a-z0-9_]{0,62}$/, hint: "a lower-case SQL name (letters, digits, _)" });
}

// The connection settings shared by every workload. The password is never
// read here: the driver takes it from PGPASSWORD or PGPASSFILE, so that it
// never passes through the script, its logs or the command line.
export function connection() {
  const sslmode = oneOf("DB_SSLMODE", "disable", ["disable", "require", "verify-ca", "verify-full"]);
  return {
    driver: oneOf("DB_DRIVER", "postgres", ["postgres", "pgx", "pgconn"]),
    nodes: nodes("YSQL_NODES", "127.0.0.1:5433"),
    user: str("DB_USER", "yugabyte", { pattern: /^[A-Za-z0-9_.@-]+$/, hint: "a plain role name" }),
    database: str("DB_NAME", "yugabyte", { pattern: /^[A-Za-z0-9_.-]+$/, hint: "a plain database name" }),
    sslmode,
    sslrootcert: tlsFile("DB_SSLROOTCERT", sslmode),
    ...clientCert(sslmode),
    connectTimeout: int("DB_CONNECT_TIMEOUT", 10, { min: 1, max: 600 }),
    // The server's statement_timeout for the load's sessions (0: the
    // server's own): a statement stuck behind a partition or a paused node
    // fails as 57014 (class 57) instead of waiting out the fault.
    statementTimeoutMs: int("DB_STATEMENT_TIMEOUT_MS", 0, { min: 0, max: 86400000 }),
    // Per session (seed 002's consistency factor): "default" keeps the
    // server's; repeatable_read is YugabyteDB's snapshot isolation.
    isolation: oneOf("ISOLATION", "default", ["default", "read_committed", "repeatable_read", "serializable"]),
  };
}

// DB_SSLROOTCERT: the CA file (PEM) the server's certificate is checked
// against (the drivers' sslrootcert); DB_SSLCERT and DB_SSLKEY: a client
// certificate and its key (sslcert, sslkey), for a cluster that asks for
// one (ysql_hba_conf_csv's `hostssl ... cert`). "" for none. Only over
// TLS: with DB_SSLMODE=disable the drivers would ignore them, and a run the
// user meant to check the server's certificate would go in plain text.
// `ybbench run` has checked that the files read, and the key's mode
// (ybbench/core/tls_files.py); a k6 run without it learns of a missing
// file from the driver, at setup.
function tlsFile(name, sslmode) {
  const v = str(name, "", { pattern: /^[^\0\n\r]+$/, hint: "a file's path" });
  if (v !== "" && sslmode === "disable") {
    fail(name, v, "TLS files are used only over TLS; set DB_SSLMODE=verify-full (or verify-ca, require)");
  }
  return v;
}

function clientCert(sslmode) {
  const sslcert = tlsFile("DB_SSLCERT", sslmode);
  const sslkey = tlsFile("DB_SSLKEY", sslmode);
  if ((sslcert === "") !== (sslkey === "")) {
    const [have, lack] = sslcert ? ["DB_SSLCERT", "DB_SSLKEY"] : ["DB_SSLKEY", "DB_SSLCERT"];
    fail(have, sslcert || sslkey, `a client certificate needs its key, and the key its certificate: set ${lack} too`);
  }
  return sslcert ? { sslcert, sslkey } : {};
}
