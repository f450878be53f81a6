"""Two-level fractional factorial designs: sign table, defining relation,
aliases and resolution (Jain, "The Art of Computer Systems Performance
Analysis", ch. 19; Montgomery, "Design and Analysis of Experiments", ch. 8).

A factor is a capital letter. A word is a product of factors (an effect:
"A", "BC", ...), kept as a string in the design's factor order; since every
column squares to the identity, multiplying words is the symmetric
difference of their letters. A generator `E = -BC` sets column E to minus
the product of columns B and C, so the design obeys I = -BCE.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np
from pyDOE3 import fracfact

from ybbench.core.errors import UserError

# `E = BC`, `F = -AB`, `E = B*C`, `E = B×C`, `E = B·C`: a factor, a sign, a product.
_GENERATOR = re.compile(r"^\s*([A-Z])\s*=\s*([+-]?)\s*([A-Z](?:\s*[*×·]?\s*[A-Z])*)\s*$")
MAX_FACTORS, MAX_BASE = 20, 12
ROMAN = {1: "I", 2: "II", 3: "III", 4: "IV", 5: "V", 6: "VI", 7: "VII", 8: "VIII"}


@dataclass(frozen=True)
class Generator:
    factor: str  # the generated factor, e.g. "E"
    sign: int  # +1 or -1
    word: str  # the product of base factors it equals, e.g. "BC"

    def __str__(self) -> str:
        return f"{self.factor} = {'-' if self.sign < 0 else ''}{self.word}"


@dataclass(frozen=True)
class Alias:
    sign: int
    word: str

    def __str__(self) -> str:
        return f"{'-' if self.sign < 0 else ''}{self.word}"


@dataclass
class Column:
    """One estimable contrast: named by its shortest alias (the leader); the
    chain says what else it estimates, signs relative to the leader."""

    name: str
    signs: np.ndarray  # +1/-1 per run
    chain: list[Alias] = field(default_factory=list)  # leader first, with sign +1

    def aliases(self, max_order: int | None = None) -> list[Alias]:
        return [a for a in self.chain[1:] if max_order is None or len(a.word) <= max_order]


def parse_generator(text: object, factors: list[str]) -> Generator:
    """One generator, checked against the design's factors."""
    if not isinstance(text, str):
        raise UserError(f"generator {text!r}: expected text such as 'E = BC'")
    m = _GENERATOR.match(text)
    if not m:
        raise UserError(f"generator {text!r}: expected FACTOR = [-]PRODUCT, e.g. 'E = BC' or 'F = -AB'")
    factor, sign, product = m.group(1), m.group(2), re.sub(r"[\s*×·]", "", m.group(3))
    for letter in factor + product:
        if letter not in factors:
            raise UserError(f"generator {text!r}: {letter} is not a factor (factors: {', '.join(factors)})")
    if factor in product:
        raise UserError(f"generator {text!r}: {factor} is defined by itself")
    if len(set(product)) != len(product):
        raise UserError(f"generator {text!r}: a letter repeats in {product} (each column squares to I)")
    if len(product) < 2:
        raise UserError(f"generator {text!r}: {factor} would be a copy of {product}; "
                        "a generator needs a product of two or more factors")
    return Generator(factor, -1 if sign == "-" else 1, order_word(product, factors))


def order_word(letters: str, factors: list[str]) -> str:
    return "".join(sorted(letters, key=factors.index))


class Design:
    """A 2^(k-p) design over `factors` (letters, in the file's order)."""

    def __init__(self, factors: list[str], generators: list[Generator]):
        self.factors = factors
        self.generators = generators
        generated = [g.factor for g in generators]
        if len(set(generated)) != len(generated):
            twice = sorted({f for f in generated if generated.count(f) > 1})
            raise UserError(f"generators: {', '.join(twice)} generated more than once")
        self.base = [f for f in factors if f not in generated]
        for g in generators:
            not_base = [x for x in g.word if x not in self.base]
            if not_base:
                raise UserError(f"generator '{g}': {', '.join(not_base)} is itself generated; "
                                "write the product in base factors only")
        if not self.base:
            raise UserError("generators: every factor is generated; at least one must be a base factor")
        # Every alias of every column is listed: 2^k words in all.
        if len(factors) > MAX_FACTORS or len(self.base) > MAX_BASE:
            raise UserError(f"{len(factors)} factors, {2 ** len(self.base)} runs: this command handles up to "
                            f"{MAX_FACTORS} factors and {2 ** MAX_BASE} runs")
        self.defining = self._defining_relation()
        short = [w for w in self.defining[1:] if len(w.word) <= 2]
        if short:
            what = "a main effect constant" if len(short[0].word) == 1 else "two main effects one column"
            raise UserError(f"generators {', '.join(map(str, generators))}: I = {short[0]} makes {what}; "
                            "choose products that differ")
        self.matrix = self._sign_table()
        self._columns: list[Column] | None = None

    @property
    def k(self) -> int:
        return len(self.factors)

    @property
    def p(self) -> int:
        return len(self.generators)

    @property
    def runs(self) -> int:
        return 2 ** len(self.base)

    @property
    def resolution(self) -> int | None:
        """Length of the shortest word in the defining relation (None: full factorial)."""
        return min((len(w.word) for w in self.defining[1:]), default=None)

    def resolution_text(self) -> str:
        r = self.resolution
        if r is None:
            return "full factorial (no aliasing)"
        return ROMAN.get(r, str(r))

    def multiply(self, a: str, b: str) -> str:
        return order_word("".join(set(a) ^ set(b)), self.factors)

    def _defining_relation(self) -> list[Alias]:
        """I and every product of the generators' words I = s·F·W."""
        words = [Alias(g.sign, self.multiply(g.factor, g.word)) for g in self.generators]
        group = [Alias(1, "")]
        for w in words:
            group += [Alias(a.sign * w.sign, self.multiply(a.word, w.word)) for a in group]
        identity, rest = group[0], group[1:]
        return [identity] + sorted(rest, key=lambda a: len(a.word))  # generators' words first

    def defining_text(self) -> str:
        return " = ".join(["I"] + [str(a) for a in self.defining[1:]])

    def _sign_table(self) -> np.ndarray:
        """pyDOE3's fracfact over the base factors renamed a, b, c, ...; then
        columns back in the file's order. Rows: the first base factor changes
        slowest (-1 first)."""
        letter = {f: chr(ord("a") + i) for i, f in enumerate(self.base)}
        gen = [letter[f] for f in self.base]
        gen += [("-" if g.sign < 0 else "") + "".join(letter[x] for x in g.word) for g in self.generators]
        table = fracfact(" ".join(gen)).astype(int)
        order = self.base + [g.factor for g in self.generators]
        return table[:, [order.index(f) for f in self.factors]]

    def column(self, word: str) -> np.ndarray:
        idx = [self.factors.index(x) for x in word]
        return np.prod(self.matrix[:, idx], axis=1) if idx else np.ones(self.runs, dtype=int)

    def chain(self, word: str) -> list[Alias]:
        """Everything `word`'s column also estimates: word·w for each word w
        of the defining relation, with the sign relative to `word`."""
        first, *rest = [Alias(d.sign, self.multiply(word, d.word)) for d in self.defining]
        return [first] + sorted(rest, key=lambda a: (len(a.word), [self.factors.index(x) for x in a.word]))

    def columns(self) -> list[Column]:
        """The 2^(k-p) - 1 contrasts, one per non-empty product of base
        factors, each named by its shortest alias (ties: factor order)."""
        if self._columns is None:
            self._columns = self._make_columns()
        return self._columns

    def _make_columns(self) -> list[Column]:
        out = []
        key = lambda w: (len(w), [self.factors.index(x) for x in w])  # noqa: E731
        for n in range(1, len(self.base) + 1):
            for combo in itertools.combinations(self.base, n):
                chain = self.chain("".join(combo))
                lead = min(chain, key=lambda a: key(a.word))
                rel = sorted((Alias(a.sign * lead.sign, a.word) for a in chain), key=lambda a: key(a.word))
                out.append(Column(lead.word, self.column(lead.word), rel))
        return sorted(out, key=lambda c: key(c.name))

    def find(self, word: str) -> tuple[Column, int]:
        """The column that estimates `word`, and the sign: col(word) = sign·col."""
        unknown = [x for x in word if x not in self.factors]
        if unknown or not word:
            raise UserError(f"effect {word!r}: not a product of the factors {', '.join(self.factors)}")
        w = order_word(word, self.factors)
        for c in self.columns():
            for a in c.chain:
                if a.word == w:
                    return c, a.sign
        raise UserError(f"effect {word!r}: not a product of the factors {', '.join(self.factors)}")
