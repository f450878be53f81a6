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
