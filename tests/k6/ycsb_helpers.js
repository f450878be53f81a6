// What lib/ycsb.js hands the YCSB workloads, on whichever path
// YBBENCH_NATIVE selects (lib/native.js): key names of KEYNUMS, DRAWS key
// draws of each request distribution over RECORDS records, and field values;
// written as JSON to OUT (tests/test_native_helpers.py).
import { keyName, keyChooser, fieldMaker, fieldFiller } from "../../k6-scripts/lib/ycsb.js";
import { native } from "../../k6-scripts/lib/native.js";

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
  const field = fieldMaker(100);
  const made = Array.from({ length: 500 }, () => field());
  const record = ["statement", "key", ...new Array(10).fill("")];
  fieldFiller(100)(record, 2, 10);
  return {
    [__ENV.OUT]: JSON.stringify({
      native: native !== null,
      keys: __ENV.KEYNUMS.split(",").map((n) => keyName(Number(n))),
      counts,
      fields: made,
      record,
    }),
  };
}
