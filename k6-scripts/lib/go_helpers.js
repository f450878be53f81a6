// k6/x/ybbench, our Go helpers module (compose/k6/xk6-ybbench). Its helpers:
// YCSB keys, field values and key-value rows made in Go instead of k6's
// interpreter, and an end-of-test latency summary of fixed size; `goHelpers`
// is the module with YBBENCH_GO_HELPERS=1, which `ybbench run` and the
// compose k6 set where their k6 has it, otherwise null, and every workload
// computes the same in JavaScript (what Grafana Cloud k6's official
// extensions run).
// Its statement path (DB_DRIVER=pgconn) loads it too (lib/db.js).
// require(), not import: a static import is what k6 reads as a script's
// extensions (lib/db.js).
import { ConfigError, oneOf } from "./config.js";

// An extension module asked for by a setting, or an error that says which
// setting wants which module, and what to do (`missing`). A k6 without the
// module throws at require() ("GoError: unknown module: ...", k6 v1.1.0)
// or hands over a placeholder that fails only after init (later k6s):
// `isIt` tells the module from a placeholder.
export function requireModule(path, isIt, missing) {
  let m;
  try {
    m = require(path);
  } catch (e) {
    throw new Error(`${missing} (k6: ${String((e && e.message) || e)})`);
  }
  if (!isIt(m)) throw new Error(missing);
  return m;
}

// `why` names the setting that asked for it, for the error without it.
export function load(why) {
  return requireModule(
    "k6/x/ybbench",
    (m) => typeof m.ycsbKeyName === "function",
    `${why}: this k6 has no k6/x/ybbench module (compose/k6/xk6-ybbench); ` +
      "unset it or use a k6 built with the module (compose/k6/Dockerfile, native/build.sh)",
  );
}

// YBBENCH_GO_HELPERS, else YBBENCH_NATIVE, its old name, still accepted;
// both set, they must agree. The setting that asks for the module, as its
// error names it, or null.
function wanted() {
  const now = oneOf("YBBENCH_GO_HELPERS", undefined, ["0", "1"]);
  const old = oneOf("YBBENCH_NATIVE", undefined, ["0", "1"]);
  if (now !== undefined && old !== undefined && now !== old) {
    throw new ConfigError(
      `YBBENCH_GO_HELPERS=${now} and YBBENCH_NATIVE=${old} disagree: YBBENCH_NATIVE is the old name of ` +
        "YBBENCH_GO_HELPERS; set only YBBENCH_GO_HELPERS",
    );
  }
  if (now === "1") return "YBBENCH_GO_HELPERS=1";
  return now === undefined && old === "1" ? "YBBENCH_GO_HELPERS=1 (set as YBBENCH_NATIVE=1, its old name)" : null;
}

const asked = wanted();
export const goHelpers = asked ? load(asked) : null;
