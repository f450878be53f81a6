// What lib/ycsb.js and lib/keys.js hand the workloads, on whichever path
// YBBENCH_GO_HELPERS selects (lib/go_helpers.js): YCSB key names of KEYNUMS, DRAWS
// key draws of each request distribution over RECORDS records, field
// values (plain and stamped), key-value rows (keys, and values as hex), and sql-inserts' rows
// of SQL_INDEXES, and sql-selects' uniform keys; written as JSON to
// OUT (tests/native/test_go_helpers.py).
import { keyName, keyChooser, fieldMaker, fieldFiller } from "../../k6-scripts/lib/ycsb.js";
import { rowFiller, sqlRowFiller, uniformKeys, sqlUpdatesStep } from "../../k6-scripts/lib/keys.js";
import { goHelpers } from "../../k6-scripts/lib/go_helpers.js";

export const options = { vus: 1, iterations: 1 };

export default function () {}

export function handleSummary() {
  const records = Number(__ENV.RECORDS), draws = Number(__ENV.DRAWS);
  const counts = {};
  for (const d of ["zipfian", "latest", "uniform"]) {
    const next = keyChooser(d, records, 0.99);
    const c = (counts[d] = {});
    for (let i = 0; i < draws; i++) {
      const k = next();
      c[k] = (c[k] || 0) + 1;
    }
  }
  const nextKey = uniformKeys("uk-1", 7);
  const uniformKeyDraws = Array.from({ length: 7000 }, () => nextKey());
  // The key-value reads' keys: 12 bytes, indexes 1000..1004 (lib/kv.js).
  const nextPadded = uniformKeys("kvu", 5, 12, 1000);
  const paddedKeyDraws = Array.from({ length: 5000 }, () => nextPadded());
  // sql-updates' step for key counts on both sides of 2^26 (lib/keys.js
  // splits products there) at small and large iteration numbers: per i,
  // [what it returned, the read's key, the update's value and key].
  const updateSteps = {};
  for (const keys of __ENV.UPDATE_KEYS.split(",").map(Number)) {
    const step = sqlUpdatesStep("su", keys, 30, "tg");
    updateSteps[keys] = __ENV.UPDATE_ITERATIONS.split(",").map(Number).map((i) => {
      const read = ["r", "-"], update = ["u", "-", "-"];
      return [step(i, read, update), read[1], update[1], update[2]];
    });
  }
  const field = fieldMaker(100);
  const made = Array.from({ length: 500 }, () => field());
  const record = ["statement", "key", ...new Array(10).fill("")];
  fieldFiller(100)(record, 2, 10);
  // Stamped as ycsb-load and ycsb stamp them for ybbench verify.
  const stamped = ["statement", "key", ...new Array(10).fill("")];
  fieldFiller(100)(stamped, 2, 10, "Lq1:123456789012.");
  const stampedFields = [field("U9z:42.3:"), field("X".repeat(120))];
  // 600 rows of 256-byte values: more than one 64 KB pool.
  const rows = new Array(1 + 2 * 600);
  rowFiller("kvt", 50, 256)(rows, 1, 2 ** 40 - 3, 600);
  const sql = __ENV.SQL_INDEXES.split(",").map((n) => {
    const a = ["statement", "", ""];
    sqlRowFiller("sq-1", 24)(a, 1, Number(n));
    return a;
  });
  const hex = (v) => Array.from(new Uint8Array(v), (b) => b.toString(16).padStart(2, "0")).join("");
  return {
    [__ENV.OUT]: JSON.stringify({
      kv: { keys: rows.filter((_, i) => i % 2 === 1), values: rows.filter((_, i) => i > 0 && i % 2 === 0).map(hex) },
      sql,
      go_helpers: goHelpers !== null,
      keys: __ENV.KEYNUMS.split(",").map((n) => keyName(Number(n))),
      counts,
      fields: made,
      record,
      stamped,
      stampedFields,
      uniformKeyDraws,
      paddedKeyDraws,
      updateSteps,
    }),
  };
}
