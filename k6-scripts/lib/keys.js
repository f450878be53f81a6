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

// A uniform random index in [0, max).
export function uniformIndex(max) {
  return Math.floor(Math.random() * max);
}
