import { randomBytes } from "k6/crypto";
import { goHelpers } from "./go_helpers.js";

// Keys and values as yb-sample-apps makes them: `<prefix>:<index>` and
// `val:<index>`, padded so that key + value take ROW_BYTES. Nothing is kept
// per key: memory per VU does not grow with the key count.

export function key(prefix, index) {
  return `${prefix}:${index}`;
}

// A value builder that pads `val:<index>` to fill the row to rowBytes.
export function valueMaker(prefix, rowBytes) {
  const pad = "x".repeat(rowBytes);
  return (index) => {
    const base = `val:${index}`;
    const missing = rowBytes - (prefix.length + 1 + String(index).length) - base.length;
    return missing > 0 ? base + pad.substring(0, missing) : base;
  };
}

// A function (array, from, index) that sets array[from] and array[from + 1]
// to sql-inserts' key and value of that index: its statement's parameters.
// With our Go module (lib/go_helpers.js), the same made in Go, in one call.
export function sqlRowFiller(prefix, rowBytes) {
  if (goHelpers) return goHelpers.sqlRowFiller(prefix, rowBytes);
  const value = valueMaker(prefix, rowBytes);
  return (a, from, index) => {
    a[from] = key(prefix, index);
    a[from + 1] = value(index);
  };
}

// A uniform random index in [0, max).
export function uniformIndex(max) {
  return Math.floor(Math.random() * max);
}

// A function returning the key of a uniform random index in
// [from, from + count), `<prefix>:<index>`, or zero-padded to width bytes
// (paddedKeyMaker) when width > 0: with our Go module, made in Go, one call.
export function uniformKeys(prefix, count, width = 0, from = 0) {
  if (goHelpers) return goHelpers.uniformKeys(prefix, count, width, from);
  const name = width > 0 ? paddedKeyMaker(prefix, width) : (index) => key(prefix, index);
  return () => name(from + uniformIndex(count));
}

// A 32-bit hash of a run's id (h x 33 + c): the same testid gives the
// same number in every generator of a split run.
export function runHash(id) {
  let h = 5381;
  for (let j = 0; j < id.length; j++) h = (h * 33 + id.charCodeAt(j)) % 4294967296;
  return h;
}

// A short tag of a run's id (runHash in base 36): stamped into the values
// an update writes, so that a value says which run wrote it.
export function runTag(id) {
  return runHash(id).toString(36);
}

// sql-updates' keys and ops as a function of the iteration number i, so that
// `ybbench verify` knows which iterations updated a key without a log of
// them. Round r = floor(i / keys) visits every key once: position p = i mod
// keys goes to key (multiplier x p + r x shift) mod keys, with the multiplier
// prime to keys (a permutation) near keys x 0.7549 and the shift near
// keys x 0.5698, so that consecutive iterations land far apart and each round
// in another order. Iteration i is an update when frac(i x 0.6180339887498949)
// < writePercent / 100: an even spread (a Weyl sequence), independent of the
// key (the multiplier's ratio is another irrational). Our Go module has the
// same arithmetic (compose/k6/xk6-ybbench/updates.go, sqlUpdatesStep).
export const PHI = 0.6180339887498949;
export function updateSchedule(keys, writePercent) {
  const gcd = (a, b) => (b === 0 ? a : gcd(b, a % b));
  let multiplier = Math.max(1, Math.round(keys * 0.7548776662466927) % keys);
  while (gcd(multiplier, keys) !== 1) multiplier++;
  const shift = Math.round(keys * 0.5698402909980532) % keys;
  const share = writePercent / 100;
  // multiplier x p stays below 2^53 up to 2^26 keys; above, in two parts.
  const hi = Math.floor(multiplier / 65536), lo = multiplier % 65536;
  const times = keys <= 67108864 ? (p) => multiplier * p : (p) => ((hi * p) % keys) * 65536 + lo * p;
  return {
    multiplier,
    shift,
    key(i) {
      const p = i % keys;
      return (times(p) + (((i - p) / keys) * shift) % keys) % keys;
    },
    isUpdate: (i) => (i * PHI) % 1 < share,
  };
}

// A function (i, readArgs, updateArgs) that sets the parameters of what
// sql-updates' iteration i sends (updateSchedule): an update's value
// `val:<n>:<tag>.<i>` and key in updateArgs[1] and [2], returning ""; or a
// read's key in readArgs[1], returning the prefix its value must start
// with, `val:<n>`. With our Go module, the same in one call into Go.
export function sqlUpdatesStep(prefix, keys, writePercent, tag) {
  if (goHelpers) return goHelpers.sqlUpdatesStep(prefix, keys, writePercent, tag);
  const schedule = updateSchedule(keys, writePercent);
  return (i, readArgs, updateArgs) => {
    const n = schedule.key(i);
    if (schedule.isUpdate(i)) {
      updateArgs[1] = `val:${n}:${tag}.${i}`;
      updateArgs[2] = key(prefix, n);
      return "";
    }
    readArgs[1] = key(prefix, n);
    return `val:${n}`;
  };
}

// Keys of `width` bytes, `<prefix>:<index>` with the index zero-padded, as
// the seeds' 50-byte keys: one string per call, nothing kept.
export function paddedKeyMaker(prefix, width) {
  const head = `${prefix}:`;
  const digits = width - head.length;
  if (digits < 1) throw new Error(`KEY_BYTES=${width} leaves no room for an index after the prefix "${head}"`);
  const zeros = "0".repeat(digits);
  return (index) => {
    const s = String(index);
    return s.length >= digits ? head + s : head + zeros.substring(s.length) + s;
  };
}

// Incompressible values of `size` bytes (yb-sample-apps --value_size: random
// bytes) without a random draw per write: each VU hands out consecutive
// views of a pool of random bytes, the first 6 bytes stamped with the row's
// index (big-endian) so that a value can be traced to its key. A used-up
// pool is replaced by a fresh one, never refilled in place, so no value
// repeats and views already handed out (a multi-row statement's) stay
// intact. The pool comes from k6/crypto's randomBytes, one call into Go per
// 64 KB: WebCrypto's getRandomValues sets the array one element at a time
// in k6 (~90 ns a byte, a third of kv-load's client CPU).
export function randomValueMaker(size, poolBytes = 65536) {
  const bytes = Math.max(poolBytes, size);
  let pool = new Uint8Array(randomBytes(bytes));
  let cursor = 0;
  return (index) => {
    if (cursor + size > bytes) {
      pool = new Uint8Array(randomBytes(bytes));
      cursor = 0;
    }
    const v = pool.subarray(cursor, cursor + size);
    cursor += size;
    let x = index;
    for (let i = Math.min(size, 6) - 1; i >= 0; i--) {
      v[i] = x % 256;
      x = Math.floor(x / 256);
    }
    return v;
  };
}

// A function (array, from, first, count) that sets array[from],
// array[from + 1], ... to the key and value of rows first .. first + count - 1:
// a write statement's parameters. With our Go module (lib/go_helpers.js), the
// same keys and values made in Go, in one call; as ArrayBuffers when
// `arrayBuffers` (our statement path's cheapest bytes, lib/db.js).
export function rowFiller(prefix, keyBytes, valueBytes, arrayBuffers = false) {
  if (goHelpers) return goHelpers.kvRowFiller(prefix, keyBytes, valueBytes, arrayBuffers);
  const key = paddedKeyMaker(prefix, keyBytes);
  const value = randomValueMaker(valueBytes);
  return (a, from, first, count) => {
    for (let i = 0; i < count; i++) {
      a[from + 2 * i] = key(first + i);
      a[from + 2 * i + 1] = value(first + i);
    }
  };
}
