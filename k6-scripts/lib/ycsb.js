import { randomBytes } from "k6/crypto";
import { goHelpers } from "./go_helpers.js";

// YCSB's key names and request distributions, reimplemented from its
// CoreWorkload, Utils.fnvhash64, ZipfianGenerator, ScrambledZipfianGenerator
// and SkewedLatestGenerator, so that a k6 run asks for the keys YCSB would.
// Everything here is O(1) memory: no key lists, whatever RECORD_COUNT.
// Where k6 has our Go module (lib/go_helpers.js), keyName, keyChooser and
// fieldMaker are its Go versions of the same arithmetic: a key name costs
// under 1 µs there, ~16 µs here (docs/client-efficiency.md "What keeps the workloads cheap").

// FNV-1a 64 of a key number's 8 bytes, low byte first, as YCSB hashes key
// numbers, in two 32-bit halves of plain numbers (sobek's BigInt is ~10x
// slower, and every operation counts: this runs for every request, ~9 µs
// in k6's interpreter). The result stays in hHi/hLo to avoid an allocation.
let hHi = 0, hLo = 0;
const TWO32 = 4294967296;
const P4HI = 2684005384, P4LO = 1446362257; // (2^40 + 0x1b3)^4 mod 2^64
const P4LO1 = P4LO >>> 16, P4LO0 = P4LO & 0xffff;

function fnv(n) {
  let hi = 0xcbf29ce4, lo = 0x84222325; // offset basis
  let nLo = n % TWO32, nHi = (n - nLo) / TWO32;
  // h * prime mod 2^64, prime = 2^40 + 0x1b3: x * 0x1b3 is exact in a
  // double (< 2^41), so is hi * 0x1b3; x << 40 lands in the high half as
  // x << 8. Plain arithmetic, no Math.* calls: each costs a call into Go.
  // Key numbers below 2^32 have four zero high bytes, and xor with zero is
  // nothing: those four steps are one multiplication by prime^4 below.
  const steps = nHi === 0 ? 4 : 8;
  for (let i = 0; i < steps; i++) {
    let b;
    if (i < 4) { b = nLo & 0xff; nLo >>>= 8; } else { b = nHi & 0xff; nHi >>>= 8; }
    const x = (lo ^ b) >>> 0;
    const m = x * 0x1b3;
    lo = m >>> 0;
    hi = (hi * 0x1b3 + (m - lo) / TWO32 + (x << 8)) >>> 0;
  }
  if (steps === 4) {
    // h * prime^4 mod 2^64 (= P4HI * 2^32 + P4LO), lo * P4LO in 16-bit limbs.
    const a1 = lo >>> 16, a0 = lo & 0xffff;
    const mid = a1 * P4LO0 + a0 * P4LO1;
    const midLo = mid % 65536;
    const low = a0 * P4LO0 + midLo * 65536;
    const newLo = low >>> 0;
    const carry = (low - newLo) / TWO32 + (mid - midLo) / 65536 + a1 * P4LO1;
    hi = (carry + Math.imul(lo, P4HI) + Math.imul(hi, P4LO)) >>> 0;
    lo = newLo;
  }
  // Java's Math.abs of the signed 64-bit result.
  if (hi & 0x80000000) {
    lo = (~lo + 1) >>> 0;
    hi = (~hi + (lo === 0 ? 1 : 0)) >>> 0;
  }
  hHi = hi;
  hLo = lo;
}

// The hash in decimal, as Long.toString: base-100000 digits by long
// division of the two halves (every intermediate stays below 2^53).
function hashDecimal() {
  let hi = hHi, lo = hLo;
  let out = "";
  while (hi) {
    const q1 = Math.floor(hi / 100000);
    const t = (hi - q1 * 100000) * TWO32 + lo;
    const q0 = Math.floor(t / 100000);
    const r = t - q0 * 100000;
    out = (r < 10 ? "0000" : r < 100 ? "000" : r < 1000 ? "00" : r < 10000 ? "0" : "") + r + out;
    hi = q1;
    lo = q0;
  }
  return lo + out;
}

// YCSB's key name (insertorder=hashed, zeropadding=1): "user" + hash.
function jsKeyName(keynum) {
  fnv(keynum);
  return "user" + hashDecimal();
}
export const keyName = goHelpers ? goHelpers.ycsbKeyName : jsKeyName;

// fnvhash64(n) % m, for m below 2^37 (products stay exact in doubles).
export function hashMod(n, m) {
  fnv(n);
  const r = ((hHi % m) * 65536 + (hLo >>> 16)) % m;
  return (r * 65536 + (hLo & 0xffff)) % m;
}

// zeta(n, theta) = sum of 1/i^theta for i in 1..n: summed up to 1000, then
// Euler-Maclaurin (error below 1e-12), so that init costs O(1), not O(n).
export function zeta(n, theta) {
  const m = Math.min(n, 1000);
  let s = 0;
  for (let i = 1; i <= m; i++) s += Math.pow(i, -theta);
  if (n <= m) return s;
  s -= Math.pow(m, -theta); // the integral and end corrections start at m
  s += (Math.pow(n, 1 - theta) - Math.pow(m, 1 - theta)) / (1 - theta);
  s += (Math.pow(m, -theta) + Math.pow(n, -theta)) / 2;
  s += (theta / 12) * (Math.pow(m, -theta - 1) - Math.pow(n, -theta - 1));
  return s;
}

// Zipfian over [0, items): item 0 the most popular (Gray et al., as in
// YCSB's ZipfianGenerator with a fixed item count).
export function zipfian(items, theta, zetan = zeta(items, theta)) {
  const alpha = 1 / (1 - theta);
  const eta = (1 - Math.pow(2 / items, 1 - theta)) / (1 - zeta(2, theta) / zetan);
  const second = 1 + Math.pow(0.5, theta);
  return () => {
    const u = Math.random();
    const uz = u * zetan;
    if (uz < 1) return 0;
    if (uz < second) return 1;
    return Math.floor(items * Math.pow(eta * u - eta + 1, alpha));
  };
}

// YCSB's ScrambledZipfianGenerator: a zipfian over 10^10 items (zeta
// precomputed by YCSB for 0.99), hashed into the key space so that the
// popular keys are spread over it. YCSB sizes it recordcount + 1 and redraws
// the one number past the last record; so do we.
const SCRAMBLED_ITEMS = 1e10 + 1;
const YCSB_ZETAN_099 = 26.46902820178302;

export function scrambledZipfian(recordCount, theta) {
  const z = zipfian(SCRAMBLED_ITEMS, theta, theta === 0.99 ? YCSB_ZETAN_099 : zeta(SCRAMBLED_ITEMS, theta));
  const span = recordCount + 1;
  return () => {
    for (;;) {
      const k = hashMod(z(), span);
      if (k < recordCount) return k;
    }
  };
}

// YCSB's "latest" (SkewedLatestGenerator): the last inserted record is the
// most popular, then the one before, zipfian in insertion order.
export function latest(recordCount, theta) {
  const last = recordCount - 1;
  const z = zipfian(last, theta);
  return () => last - z();
}

export function uniform(recordCount) {
  return () => Math.floor(Math.random() * recordCount);
}

export function chooser(distribution, recordCount, theta) {
  if (distribution === "zipfian") return scrambledZipfian(recordCount, theta);
  if (distribution === "latest") return latest(recordCount, theta);
  return uniform(recordCount);
}

// A function returning the key name of the next request: one call into Go.
export function keyChooser(distribution, recordCount, theta) {
  if (goHelpers) return goHelpers.ycsbKeyChooser(distribution, recordCount, theta);
  const next = chooser(distribution, recordCount, theta);
  return () => jsKeyName(next());
}

// Field values: random printable ASCII (YCSB's RandomByteIterator makes
// characters from ' ' upwards). One pool per VU, values cut from it. The
// pool is made with typed arrays and one call into Go: a JS call per
// character made each VU's first update take seconds. field(stamp) starts
// the value with a stamp, its length unchanged.
function jsFieldMaker(length, poolChars = 16384) {
  const bytes = new Uint8Array(randomBytes(poolChars + length)); // lib/keys.js: why not getRandomValues
  for (let i = 0; i < bytes.length; i++) bytes[i] = 32 + (bytes[i] % 95);
  const parts = [];
  for (let off = 0; off < bytes.length; off += 4096) {
    parts.push(String.fromCharCode.apply(null, bytes.subarray(off, off + 4096)));
  }
  const pool = parts.join("");
  return (stamp) => {
    const off = Math.floor(Math.random() * poolChars);
    if (!stamp) return pool.substring(off, off + length);
    return stamp.length >= length ? stamp : stamp + pool.substring(off + stamp.length, off + length);
  };
}
export const fieldMaker = goHelpers ? goHelpers.ycsbFieldMaker : jsFieldMaker;

// A function (array, from, count[, head]) that sets count fields of a
// record from index from: one call into Go per record. With head, field f
// starts with `<head><f>:` (ybbench verify's stamps), its length unchanged.
export function fieldFiller(length) {
  if (goHelpers) return goHelpers.ycsbFieldFiller(length);
  const field = jsFieldMaker(length);
  return (a, from, count, head) => {
    for (let f = 0; f < count; f++) a[from + f] = field(head ? `${head}${f}:` : undefined);
  };
}

// The usertable of YCSB's JDBC binding, and the knobs every YCSB phase shares.
export function usertable({ identifier, int }) {
  const t = {
    table: identifier("TABLE", "usertable"),
    recordCount: int("RECORD_COUNT", 1000, { min: 2, max: 2 ** 36 }),
    fieldCount: int("FIELD_COUNT", 10, { min: 1, max: 100 }),
    fieldLength: int("FIELD_LENGTH", 100, { min: 1, max: 65536 }),
  };
  t.fields = Array.from({ length: t.fieldCount }, (_, i) => `field${i}`);
  t.ddl = `CREATE TABLE IF NOT EXISTS ${t.table} (ycsb_key varchar(255) PRIMARY KEY, ${t.fields.map((f) => `${f} text`).join(", ")})`;
  return t;
}
