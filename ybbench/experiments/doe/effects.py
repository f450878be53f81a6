"""Effects of a two-level design, the allocation of variation and the
confidence intervals (Jain, "The Art of Computer Systems Performance
Analysis", ch. 18-19), or Lenth's pseudo standard error when there is one
replication (R. V. Lenth, "Quick and Easy Analysis of Unreplicated
Factorials", Technometrics 31(4):469-473, 1989).

Input: a sign matrix (runs x contrasts, +1/-1, orthogonal columns) and the
responses (runs x r). Nothing here knows the factors' names.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats


@dataclass
class Effects:
    mean: float  # q0, the grand mean
    q: np.ndarray  # q_i = (1/n) sum_j s_ij ybar_j, one per contrast
    sst: float  # sum of squares total, around the grand mean
    ss: np.ndarray  # n r q_i^2, each contrast's share of SST
    sse: float  # within-run (replication) variation; 0 when r = 1
    runs: int  # n = 2^(k-p)
    replications: int  # r
    method: str  # "replications" or "lenth"
    alpha: float
    se: float | None  # s_q (replications) or PSE (Lenth): the scale of one effect
    df: float  # degrees of freedom of the t quantile
    t: float  # t[1 - alpha/2; df]
    margin: float | None  # half width of each CI: t * se
    lenth: dict | None = None  # s0, PSE, d, ME, SME

    @property
    def share(self) -> np.ndarray:
        return self.ss / self.sst if self.sst > 0 else np.zeros_like(self.ss)

    @property
    def error_share(self) -> float | None:
        if self.replications < 2:
            return None
        return self.sse / self.sst if self.sst > 0 else 0.0

    @property
    def standardized(self) -> np.ndarray:
        """q_i in units of its standard error: what the Pareto chart plots."""
        if not self.se:
            return np.full_like(self.q, np.nan)
        return self.q / self.se

    def ci(self) -> np.ndarray:
        """(low, high) per contrast."""
        m = self.margin if self.margin is not None else np.nan
        return np.column_stack([self.q - m, self.q + m])

    def significant(self) -> np.ndarray:
        """True where the CI excludes zero."""
        if self.margin is None:
            return np.zeros(len(self.q), dtype=bool)
        return np.abs(self.q) > self.margin


def lenth(q: np.ndarray, alpha: float) -> dict:
    """Lenth's PSE over the m contrasts: s0 = 1.5 median|q|; PSE = 1.5
    median of the |q| < 2.5 s0 (trimming the likely active effects); the
    margin of error ME = t[1-alpha/2; m/3]·PSE, and the simultaneous
    margin SME = t[gamma; m/3]·PSE, gamma = (1 + (1-alpha)^(1/m))/2."""
    a = np.abs(np.asarray(q, dtype=float))
    m = len(a)
    s0 = 1.5 * float(np.median(a))
    kept = a[a < 2.5 * s0]
    pse = 1.5 * float(np.median(kept)) if len(kept) else 0.0
    d = m / 3
    t = float(stats.t.ppf(1 - alpha / 2, d))
    gamma = (1 + (1 - alpha) ** (1 / m)) / 2
    t_sme = float(stats.t.ppf(gamma, d))
    return {"s0": s0, "pse": pse, "d": d, "t": t, "me": t * pse, "t_sme": t_sme, "sme": t_sme * pse,
            "trimmed": int(m - len(kept))}


def analyse(signs: np.ndarray, y: np.ndarray, alpha: float = 0.05) -> Effects:
    """signs: n x m (+1/-1), y: n x r."""
    signs = np.asarray(signs, dtype=float)
    y = np.asarray(y, dtype=float)
    n, r = y.shape
    ybar = y.mean(axis=1)
    q = signs.T @ ybar / n
    grand = float(y.mean())
    sst = float(((y - grand) ** 2).sum())
    ss = n * r * q ** 2
    sse = float(((y - ybar[:, None]) ** 2).sum())
    if r > 1:
        df = n * (r - 1)
        s_e = np.sqrt(sse / df)
        s_q = float(s_e / np.sqrt(n * r))
        t = float(stats.t.ppf(1 - alpha / 2, df))
        return Effects(grand, q, sst, ss, sse, n, r, "replications", alpha, s_q, df, t, t * s_q)
    le = lenth(q, alpha)
    return Effects(grand, q, sst, ss, sse, n, r, "lenth", alpha, le["pse"], le["d"], le["t"], le["me"], le)
