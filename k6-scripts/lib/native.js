// k6/x/ybbench, our Go native module (compose/k6/xk6-ybbench). Its helpers:
// YCSB keys, field values and key-value rows made in Go instead of k6's
// interpreter, and an end-of-test latency summary of fixed size; `native`
// is the module with YBBENCH_NATIVE=1, which `ybbench run` and the compose
// k6 set where their k6 has it, otherwise null, and every workload computes
// the same in JavaScript (what Grafana Cloud k6's official extensions run).
// Its statement path (DB_DRIVER=pgconn) loads it too (lib/db.js).
// require(), not import: a static import is what k6 reads as a script's
// extensions (lib/db.js).
import { oneOf } from "./config.js";

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

export const native = oneOf("YBBENCH_NATIVE", "0", ["0", "1"]) === "1" ? load("YBBENCH_NATIVE=1") : null;
