// A module no k6 here has, asked for through the scripts' own loader
// (k6-scripts/lib/go_helpers.js requireModule): the run must stop at init with
// the scripts' message on every k6 (tests/native/test_k6_matrix.py).
import { requireModule } from "../../k6-scripts/lib/go_helpers.js";

requireModule("k6/x/nonexistent", (m) => typeof m.anything === "function",
  "WANTS_IT=1: this k6 has no k6/x/nonexistent module");

export default function () {}
