// OPS_PER_ITERATION: N operations per k6 iteration, run by our Go module's
// inner loop (compose/k6/xk6-ybbench/innerloop.go) without returning to
// JavaScript between them: k6's work around an iteration and the script's
// own JavaScript are paid once per N statements (docs/client-efficiency.md).
// Each operation is still one statement, timed, retried and counted as on
// the JavaScript path (its own iterations{op} and iteration_duration{op});
// k6's own sample of the whole iteration is tagged op=loop, which the
// summary leaves out of its ops and `ybbench verify` reads as the number of
// loops. Only for the closed model (in the open model one iteration is one
// arrival), only on our statement path (DB_DRIVER=pgconn), only for the
// workloads below; anything else refuses the knob before any load.
import { ConfigError, duration, int } from "./config.js";
import { dsn, pgconnModule } from "./db.js";
import { maxRetries, tagIteration } from "./metrics.js";

export const opsPerIteration = int("OPS_PER_ITERATION", 1, { min: 1, max: 1000000 });
export const LOOP_OP = "loop";
const LOOPED = ["sql-inserts", "sql-selects", "sql-updates", "ycsb"];

// From lib/run.js options(), in the init context: a combination the loop
// cannot run stops k6 there, naming what to change.
export function checkLoop(workload, model) {
  if (opsPerIteration === 1) return;
  const knob = `OPS_PER_ITERATION=${opsPerIteration}`;
  if (!LOOPED.includes(workload)) {
    throw new ConfigError(`${knob}: ${workload} has no inner loop in Go (only ${LOOPED.join(", ")}); unset OPS_PER_ITERATION`);
  }
  if (model !== "closed") {
    throw new ConfigError(`${knob} needs the closed model (constant VUs): with LOAD_MODEL=${model} one iteration is ` +
      "one arrival; unset OPS_PER_ITERATION or use LOAD_MODEL=closed");
  }
  if (!pgconnModule) {
    throw new ConfigError(`${knob} runs its statements on our Go module's statement path: set DB_DRIVER=pgconn ` +
      `(not ${__ENV.DB_DRIVER || "postgres"})`);
  }
}

// A function (param) that runs one iteration's N operations in Go (param:
// sql-inserts' key prefix, sql-updates' and ycsb's run tag), or null with
// OPS_PER_ITERATION=1 (the workload's own JavaScript). In the init context.
export function innerLoop(workload, conn, node, spec) {
  if (opsPerIteration === 1) return null;
  // Iteration n writes keys n x N .. n x N + N - 1, and `ybbench verify`
  // takes whole iterations as attempted: a bound they end on.
  if (spec.bound && spec.bound % opsPerIteration !== 0) {
    throw new ConfigError(`${spec.boundName || "NUM_UNIQUE_KEYS"}=${spec.bound} is not a multiple of OPS_PER_ITERATION=${opsPerIteration}`);
  }
  const run = pgconnModule.innerLoop(dsn(conn, node), {
    workload, ops: opsPerIteration, maxRetries, duration: duration("DURATION", "30s"), ...spec,
  });
  // An iteration that ran nothing (started after DURATION) is tagged idle,
  // as a load's iterations past its key bound are (lib/metrics.js).
  return (param) => {
    tagIteration(LOOP_OP);
    if (!run(param)) tagIteration("idle");
  };
}
