// YCSB's key names and request distributions, reimplemented from its
// CoreWorkload, Utils.fnvhash64, ZipfianGenerator, ScrambledZipfianGenerator
// and SkewedLatestGenerator, so that a k6 run asks for the keys YCSB would.
// Everything here is O(1) memory: no key lists, whatever RECORD_COUNT.

// FNV-1a 64 of a key number's 8 bytes, low byte first, as YCSB hashes key
// numbers. Four 16-bit limbs (low first) in plain numbers: sobek's BigInt
// is about 10x slower. The result stays in `h` to avoid an allocation.
const h = [0, 0, 0, 0];

function fnv(n) {
  let h0 = 0x2325, h1 = 0x8422, h2 = 0x9ce4, h3 = 0xcbf2; // offset basis 0xcbf29ce484222325
  for (let i = 0; i < 8; i++) {
    h0 ^= n % 256;
    n = Math.floor(n / 256);
    // h * prime (2^40 + 0x1b3) mod 2^64: h * 0x1b3 plus h shifted by 40 bits.
    const t0 = h0 * 0x1b3;
    const t1 = h1 * 0x1b3 + Math.floor(t0 / 65536);
    const t2 = h2 * 0x1b3 + Math.floor(t1 / 65536) + ((h0 & 0xff) << 8);
    const t3 = h3 * 0x1b3 + Math.floor(t2 / 65536) + (h0 >>> 8) + ((h1 & 0xff) << 8);
    h0 = t0 & 0xffff;
    h1 = t1 & 0xffff;
    h2 = t2 & 0xffff;
    h3 = t3 & 0xffff;
  }
  // Java's Math.abs of the signed 64-bit result.
  if (h3 & 0x8000) {
    let c = 1;
    let x = (~h0 & 0xffff) + c; h0 = x & 0xffff; c = x >>> 16;
    x = (~h1 & 0xffff) + c; h1 = x & 0xffff; c = x >>> 16;
    x = (~h2 & 0xffff) + c; h2 = x & 0xffff; c = x >>> 16;
    h3 = ((~h3 & 0xffff) + c) & 0xffff;
  }
  h[0] = h0; h[1] = h1; h[2] = h2; h[3] = h3;
}

// The hash in decimal, as Long.toString: base-10000 digits by long division.
function hashDecimal() {
  let a3 = h[3], a2 = h[2], a1 = h[1], a0 = h[0];
  let out = "";
  while (a3 || a2 || a1 || a0 >= 10000) {
    let r = a3 % 10000; a3 = Math.floor(a3 / 10000);
    r = r * 65536 + a2; a2 = Math.floor(r / 10000); r %= 10000;
    r = r * 65536 + a1; a1 = Math.floor(r / 10000); r %= 10000;
    r = r * 65536 + a0; a0 = Math.floor(r / 10000); r %= 10000;
    out = (r < 10 ? "000" : r < 100 ? "00" : r < 1000 ? "0" : "") + r + out;
  }
  return a0 + out;
}

// YCSB's key name (insertorder=hashed, zeropadding=1): "user" + hash.
export function keyName(keynum) {
  fnv(keynum);
  return "user" + hashDecimal();
}

// fnvhash64(n) % m, for m below 2^37 (products stay exact in doubles).
export function hashMod(n, m) {
  fnv(n);
  let r = h[3] % m;
  r = (r * 65536 + h[2]) % m;
  r = (r * 65536 + h[1]) % m;
  return (r * 65536 + h[0]) % m;
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

// Field values: random printable ASCII (YCSB's RandomByteIterator makes
// characters from ' ' upwards). One pool per VU, values cut from it.
export function fieldMaker(length, poolChars = 65536) {
  const bytes = new Uint8Array(poolChars + length);
  for (let off = 0; off < bytes.length; off += 65536) {
    crypto.getRandomValues(bytes.subarray(off, Math.min(off + 65536, bytes.length)));
  }
  const chars = [];
  for (let i = 0; i < bytes.length; i++) chars.push(String.fromCharCode(32 + (bytes[i] % 95)));
  const pool = chars.join("");
  return () => {
    const off = Math.floor(Math.random() * poolChars);
    return pool.substring(off, off + length);
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
