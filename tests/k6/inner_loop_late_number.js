// sql-inserts with its inner loop (OPS_PER_ITERATION), on two VUs whose
// iterations are held up by sleeps so that what a busy machine does by
// chance happens every time: k6 numbers an iteration (RunOnce) before the
// script calls the loop, so iteration n+1 can reach the loop's cut
// (compose/k6/xk6-ybbench/innerloop.go cutRuns) before n, both after
// DURATION. VU 1 loops fast, then takes number n 0.6 s before DURATION
// ends and holds it until 0.4 s after; VU 2 sleeps through its first
// iteration until 0.3 s before the end, takes number n+1 and holds it until
// 0.1 s after. Neither ran a statement after DURATION; neither may count
// as a loop.
import exec from "k6/execution";
import { sleep } from "k6";
import run, { handleSummary, options, setup, teardown } from "../../k6-scripts/sql-inserts.js";

export { handleSummary, options, setup, teardown };

const LENGTH_MS = 1000 * Number(__ENV.DURATION.replace(/s$/, ""));

function until(offsetMs) {
  const wait = exec.scenario.startTime + LENGTH_MS + offsetMs - Date.now();
  if (wait > 0) sleep(wait / 1000);
}

let first = true;

export default function (data) {
  const left = exec.scenario.startTime + LENGTH_MS - Date.now();
  if (exec.vu.idInTest === 1 && left <= 600) until(400);
  if (exec.vu.idInTest === 2) {
    if (first) until(-300);
    else until(100);
    first = false;
  }
  return run(data);
}
