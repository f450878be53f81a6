"""Checking a study's stated conclusions (the design file's `claims:`)
against the effects its own numbers give. A claim names effects by any
word; the word's column says what the design can actually tell, so a claim
about an aliased effect is checked on its column and the aliasing is said.
"""

from __future__ import annotations

from dataclasses import dataclass

from ybbench.experiments.doe.effects import Effects
from ybbench.experiments.doe.file import Claim, DesignFile


@dataclass
class Verdict:
    claim: Claim
    holds: bool
    detail: str
    caveats: list[str]


def check(df: DesignFile, eff: Effects, columns) -> list[Verdict]:
    index = {c.name: i for i, c in enumerate(columns)}
    rank = {i: n + 1 for n, i in enumerate(sorted(range(len(columns)), key=lambda i: -abs(eff.q[i])))}
    sig = eff.significant()

    def desc(i: int) -> str:
        return f"{columns[i].name} (q = {eff.q[i]:+.2f}, {100 * eff.share[i]:.2f}%, #{rank[i]})"

    def col(word: str) -> tuple[int, int]:
        c, s = df.design.find(word)
        return index[c.name], s

    out = []
    for cl in df.claims:
        caveats = []
        picked = [col(w) for w in cl.words]
        for w, (i, _) in zip(cl.words, picked):
            # what else w's column carries, up to three-factor interactions
            others = [str(a) for a in df.design.chain(w)[1:] if len(a.word) <= 3]
            if others:
                caveats.append(f"{w} is aliased: {' = '.join([w] + others)}")
            if eff.margin is not None and not sig[i]:
                caveats.append(f"the {columns[i].name} column is not significant at alpha = {eff.alpha:g} "
                               f"(|q| = {abs(eff.q[i]):.2f} <= {eff.margin:.2f})")
        if cl.kind == "largest":
            top = sorted(range(len(columns)), key=lambda i: -abs(eff.q[i]))[:len(picked)]
            holds = {i for i, _ in picked} == set(top)
            detail = (f"largest: {', '.join(desc(i) for i in top)}; "
                      f"claimed: {', '.join(desc(i) for i, _ in picked)}")
        elif cl.kind == "smallest":
            mains = [i for i, c in enumerate(columns) if len(c.name) == 1]
            low = min(mains, key=lambda i: abs(eff.q[i]))
            holds = picked[0][0] == low
            order = sorted(mains, key=lambda i: -abs(eff.q[i]))
            ranked = ", ".join(f"{columns[i].name} {abs(eff.q[i]):.2f}" for i in order)
            detail = f"main effects by |q|, largest first: {ranked}"
        elif cl.kind in ("positive", "negative"):
            want = 1 if cl.kind == "positive" else -1
            parts, holds = [], True
            for w, (i, s) in zip(cl.words, picked):
                v = s * eff.q[i]
                holds &= v * want > 0
                parts.append(f"q_{w} = {v:+.2f}: {_meaning(df, w, v)}")
            detail = "; ".join(parts)
        else:  # larger
            (i, _), (j, _) = picked
            holds = abs(eff.q[i]) > abs(eff.q[j])
            detail = f"|q| {cl.words[0]}: {abs(eff.q[i]):.2f}, {cl.words[1]}: {abs(eff.q[j]):.2f}"
        out.append(Verdict(cl, bool(holds), detail, caveats))
    return out


def _meaning(df: DesignFile, word: str, q: float) -> str:
    """What an effect's sign says, in the factors' levels."""
    if len(word) == 1:
        lv = df.factor(word).levels
        return f"from {lv[0]} to {lv[1]} the response changes by {2 * q:+.2f}"
    if len(word) == 2:
        # The change of X at each level of Y, from the run means.
        x, y = (df.design.factors.index(c) for c in word)
        m, ybar = df.design.matrix, df.y.mean(axis=1)
        fx, fy = df.factor(word[0]), df.factor(word[1])
        change = [ybar[(m[:, x] == 1) & (m[:, y] == sy)].mean() - ybar[(m[:, x] == -1) & (m[:, y] == sy)].mean()
                  for sy in (-1, 1)]
        return (f"{fx.name} from {fx.levels[0]} to {fx.levels[1]} changes the response by {change[0]:+.2f} "
                f"at {fy.letter} = {fy.levels[0]}, by {change[1]:+.2f} at {fy.levels[1]}")
    return f"the interaction's contrast is {'positive' if q > 0 else 'negative'}"
