// What tpcc-load.js and tpcc.js share: TPC-C v5.11's table names under
// TABLE_PREFIX, its cardinalities, NURand and C_LAST's syllables.
import { str } from "./config.js";

export const NAMES = ["warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock"];
// "order_line" is the longest name: prefix + name stays a 63-byte SQL name.
export const tablePrefix = str("TABLE_PREFIX", "", { pattern: /^[a-z_][a-z0-9_]{0,52}$/, hint: "a lower-case SQL name prefix (letters, digits, _; at most 53)" });
export const T = Object.fromEntries(NAMES.map((n) => [n, tablePrefix + n]));

// Clause 4.3.3.1.
export const ITEMS = 100000, DISTRICTS = 10, CUSTOMERS = 3000, ORDERS = 3000;

export function randInt(lo, hi) {
  return lo + Math.floor(Math.random() * (hi - lo + 1));
}

// Fisher-Yates, in place: every order alike.
export function shuffle(a) {
  for (let i = a.length - 1; i > 0; i--) {
    const j = randInt(0, i);
    const t = a[i];
    a[i] = a[j];
    a[j] = t;
  }
  return a;
}

// NURand(A, x, y) (clause 2.1.6).
export function nurand(a, x, y, c) {
  return (((randInt(0, a) | randInt(x, y)) + c) % (y - x + 1)) + x;
}

// C_LAST (clause 4.3.2.3): three syllables by the digits of a number 0..999.
const SYLLABLES = ["BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"];
export function lastName(n) {
  return SYLLABLES[Math.floor(n / 100)] + SYLLABLES[Math.floor(n / 10) % 10] + SYLLABLES[n % 10];
}

// The secondary indexes the transactions read by (clause 1.4 allows them):
// customers by last name (Payment, Order-Status), a customer's newest
// order (Order-Status). Short suffixes: the 53-byte prefix + name + suffix
// stays a 63-byte SQL name.
export const INDEXES = [
  `CREATE INDEX IF NOT EXISTS ${T.customer}_n ON ${T.customer} (c_w_id, c_d_id, c_last, c_first)`,
  `CREATE INDEX IF NOT EXISTS ${T.orders}_c ON ${T.orders} (o_w_id, o_d_id, o_c_id, o_id)`,
];
