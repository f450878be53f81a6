// TPC-C's terminals (clause 5.2.5) for tpcc.js: the mix as a deck of
// cards, and spec mode's terminals, with their keying and think times.
// A spec-mode VU is many terminals: each waits out its keying and think
// times as a due time, and the VU, one connection, runs whichever terminal
// is due next (1,000 warehouses are 10,000 terminals, never 10,000 VUs).
import { DISTRICTS, shuffle } from "./tpcc.js";

// A deck of `counts` cards of each op, shuffled and dealt one a transaction,
// then shuffled again (clause 5.2.4.2): over every whole deck each op has
// exactly its share.
export function deck(counts) {
  const cards = Object.entries(counts).flatMap(([op, n]) => Array(n).fill(op));
  let dealt = cards.length;
  return () => {
    if (dealt === cards.length) {
      shuffle(cards);
      dealt = 0;
    }
    return cards[dealt++];
  };
}

// Throughput mode: the specification's own example deck (10/10/1/1/1), at
// or above clause 5.2.3's minimums (Payment 43%, the others 4%) over every
// 23 transactions, where drawing each at 45/43/4/4/4 falls under them about
// half the time.
export const THROUGHPUT_DECK = { new_order: 10, payment: 10, order_status: 1, delivery: 1, stock_level: 1 };
// Spec mode: 45/43/4/4/4, the mix the 12.86 tpmC a warehouse (and so the
// efficiency YugabyteDB and BenchBase report) is worked out from.
export const SPEC_DECK = { new_order: 45, payment: 43, order_status: 4, delivery: 4, stock_level: 4 };

// Clause 5.2.5.7: keying times (s); clause 5.2.5.4: think times' means (s).
export const KEYING_S = { new_order: 18, payment: 3, order_status: 2, delivery: 2, stock_level: 2 };
export const THINK_MEAN_S = { new_order: 12, payment: 12, order_status: 10, delivery: 5, stock_level: 5 };
// A terminal's cycle at SPEC_DECK's mix is 20.99 s of keying and think time
// on average, 0.45 of them New-Orders: 60 x 0.45 / 20.99 x 10 terminals =
// 12.86 New-Orders a minute per warehouse, at zero response time.
export const TERMINALS_PER_WAREHOUSE = 10;
export const MAX_TPMC_PER_WAREHOUSE = 12.86;

// Negative exponential with the op's mean, cut at 10 means (clause 5.2.5.4).
export function thinkS(op) {
  return Math.min(-Math.log(1 - Math.random()), 10) * THINK_MEAN_S[op];
}

// How long a terminal is taken to have been running before the run starts:
// about 30 of its cycles, so that its next due time is drawn as in a
// steady run (a run that started every terminal at once would begin with
// 18 s of keying and no New-Order, and understate tpmC over a short run).
const WARM_S = 600;

// The terminals VU v (of the whole test's `vus`) runs: terminal t (0 ..
// 10 x warehouses - 1) is warehouse floor(t / 10) + 1's, Stock-Level
// district (t mod 10) + 1 its own (clause 2.8.1.1); VU v has those with
// t mod vus = v - 1. Each is {w, d, op: its next transaction, due: when it
// submits it, ms}.
export function terminalsOf(v, vus, warehouses, pick, nowMs) {
  const out = [];
  for (let t = v - 1; t < TERMINALS_PER_WAREHOUSE * warehouses; t += vus) {
    let x = -WARM_S;
    let op = pick();
    let due = x + KEYING_S[op];
    while (due < 0) {
      x = due + thinkS(op);
      op = pick();
      due = x + KEYING_S[op];
    }
    out.push({ w: Math.floor(t / TERMINALS_PER_WAREHOUSE) + 1, d: (t % DISTRICTS) + 1, op, due: nowMs + due * 1000 });
  }
  return out;
}

// The terminal due first.
export function nextDue(terms) {
  let first = terms[0];
  for (const t of terms) if (t.due < first.due) first = t;
  return first;
}

// After its transaction ended at endMs: the terminal thinks, then keys its
// next transaction.
export function advance(term, pick, endMs) {
  const next = pick();
  term.due = endMs + (thinkS(term.op) + KEYING_S[next]) * 1000;
  term.op = next;
}
