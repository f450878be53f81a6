"""Helpers for the workload tests: run a workload through `ybbench run`,
read what it reported, and reimplement YCSB's key hashing independently."""

from __future__ import annotations

import json
import math
import uuid

from scipy.stats import binomtest, chi2, chisquare

from .ybbench_cli import ybbench_run

# YCSB's zipfian constant, and zeta(10^10, 0.99) as YCSB computes it for its item count
THETA = 0.99
YCSB_ZETAN = 26.46902820178302


def run_ok(workload: str, pg, tmp_path, _env: dict | None = None, _ok: bool = True, **knobs):
    """Runs a workload briefly; returns its handleSummary JSON and the run
    (with _ok=False, only the run, whatever its exit code)."""
    testid = f"w{uuid.uuid4().hex[:10]}"
    r = ybbench_run(workload, pg, tmp_path / "results", testid=testid, knobs={k: str(v) for k, v in knobs.items()},
                    extra_env=_env)
    if not _ok:
        return r
    assert r.code == 0, r.output + (r.folder / "k6.log").read_text() if (r.folder / "k6.log").exists() else r.output
    digest = json.loads((r.folder / "summary.json").read_text())
    return digest, r


def count(digest: dict, op: str) -> int:
    return digest["ops"].get(op, {}).get("count", 0)


def fnvhash64(n: int) -> int:
    """YCSB's Utils.fnvhash64: FNV-1a over 8 bytes, low first, then Math.abs."""
    h = 0xCBF29CE484222325
    for _ in range(8):
        h = ((h ^ (n & 0xFF)) * 0x100000001B3) % 2**64
        n >>= 8
    return abs(h - 2**64) if h >= 2**63 else h


def ycsb_key(keynum: int) -> str:
    return f"user{fnvhash64(keynum)}"


def n_tup_upd(pg, table: str) -> int:
    return int(pg.query(f"SELECT coalesce(n_tup_upd, 0) FROM pg_stat_user_tables WHERE relname = '{table}'") or 0)


def zeta(n: int, theta: float) -> float:
    return sum(i ** -theta for i in range(1, n + 1))


def within(observed: int, expected: float) -> bool:
    return abs(observed - expected) <= 5 * math.sqrt(expected) + 0.05 * expected


# A correct chooser fails a binomial check by chance once in this many runs.
BINOMIAL_FALSE_FAILURES = 10**6


def binomial(hits: int, trials: int, p: float) -> tuple[bool, str]:
    """Whether `hits` of `trials` independent draws, each a hit with
    probability p, is a count a correct chooser gives (two-sided exact test,
    failing once in BINOMIAL_FALSE_FAILURES runs). And why."""
    pvalue = float(binomtest(hits, trials, p).pvalue)
    return pvalue > 1 / BINOMIAL_FALSE_FAILURES, f"{hits} of {trials} where p = {p:.4f}: p-value {pvalue:.2g}"


def gray_zipfian_p(items: float, k: int, zetan: float | None = None) -> float:
    """P(k) of YCSB's ZipfianGenerator itself (Gray et al.'s method, which
    approximates 1/(k+1)^theta / zeta for k >= 2, ~20% high at k = 2): the
    share of u in [0, 1) that it maps to k."""
    zetan = zetan or zeta(int(items), THETA)
    alpha, second = 1 / (1 - THETA), 1 + 0.5**THETA
    eta = (1 - (2 / items) ** (1 - THETA)) / (1 - zeta(2, THETA) / zetan)
    if k < 2:
        return (1 if k == 0 else second - 1) / zetan
    u = lambda x: ((x / items) ** (1 / alpha) - 1 + eta) / eta  # noqa: E731 - u at which the draw reaches x
    return max(0.0, min(u(k + 1), 1) - max(u(k), second / zetan))


def scrambled_gray_p(records: int, head: int = 5000) -> dict[int, float]:
    """P(key number) of YCSB's ScrambledZipfianGenerator: rank r of the
    zipfian over 10^10 items lands on fnv(r) % (records + 1); ranks past
    `head` spread evenly; the number `records` is redrawn."""
    span, p, mass = records + 1, [0.0] * (records + 1), 0.0
    for r in range(head):
        q = gray_zipfian_p(1e10 + 1, r, YCSB_ZETAN)
        p[fnvhash64(r) % span] += q
        mass += q
    p = [x + (1 - mass) / span for x in p]
    return {k: p[k] / (1 - p[records]) for k in range(records)}


# A fair uniform chooser fails uniform() by chance once in this many runs.
UNIFORM_FALSE_FAILURES = 10**6


def uniform(counts: list[int]) -> tuple[bool, str]:
    """Whether counts over equally likely categories (5 or more expected in
    each) look uniform: Pearson's chi-square statistic under the bound a fair
    chooser exceeds with probability 1 / UNIFORM_FALSE_FAILURES. And why."""
    stat = float(chisquare(counts).statistic)
    bound = float(chi2.isf(1 / UNIFORM_FALSE_FAILURES, len(counts) - 1))
    return stat < bound, f"chi-square {stat:.1f} over {len(counts) - 1} degrees of freedom, bound {bound:.1f}"


PHI = 0.6180339887498949


def sql_updates_schedule(keys: int, write_percent: float):
    """k6-scripts/sql-updates.js's documented schedule: round r = i // keys
    sends position p = i % keys to key (a x p + r x b) mod keys, a the first
    number prime to keys from round(keys x 0.7549), b = round(keys x 0.5698);
    an update when frac(i x 0.618...) < write_percent / 100."""
    a = max(1, round(keys * 0.7548776662466927) % keys)
    while math.gcd(a, keys) != 1:
        a += 1
    b = round(keys * 0.5698402909980532) % keys

    def key(i: int) -> int:
        return (a * (i % keys) + (i // keys) * b) % keys

    def update(i: int) -> bool:
        return (i * PHI) % 1.0 < write_percent / 100

    return key, update
