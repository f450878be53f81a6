// An open-model run that cannot keep up: 40 iterations/s offered to one VU
// whose iteration takes 100 ms, so k6 drops about 30/s and reports them as
// dropped_iterations, the series the k6 dashboard's panel plots.
import { sleep } from "k6";

export const options = {
  scenarios: {
    open: {
      executor: "constant-arrival-rate",
      rate: 40,
      timeUnit: "1s",
      duration: "4s",
      preAllocatedVUs: 1,
      maxVUs: 1,
    },
  },
};

export default function () {
  sleep(0.1);
}
