"""Cost polynomials over dimension sizes and nonzero counts, in a canonical form.

SparseAuto's costs are sums of products of sizes (`L·M·nnz(B) + L·M·N·K`): polynomials with positive
integer coefficients. The enumeration builds and compares hundreds of thousands of them, so they are a
frozen mapping from monomials to coefficients, equal exactly when equal as polynomials, hashable for
bucketing, and cheap to add and multiply; `z3` and numbers are what they are turned into.
A monomial may carry a negative exponent while a loop nest is costed level by level (the extent of a
position loop is a quotient of nonzero counts); a finished cost has none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True, order=True)
class Symbol:
    """A dimension's size (`kind` "dim", `name` the index) or the number of nonzeros in the first
    `len(indices)` levels of a sparse tensor (`kind` "nnz", `name` the tensor, `indices` those levels'
    indices)."""

    kind: str
    name: str
    indices: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind == "dim":
            return self.name.upper()
        return f"nnz({self.name}_{''.join(self.indices)})"


Monomial = tuple[tuple[Symbol, int], ...]  # sorted, no zero exponents


def _monomial(powers: Mapping[Symbol, int]) -> Monomial:
    return tuple(sorted((s, e) for s, e in powers.items() if e))


@dataclass(frozen=True)
class Poly:
    """A polynomial: `terms` maps each monomial to its (nonzero) coefficient."""

    terms: tuple[tuple[Monomial, int], ...] = ()

    @staticmethod
    def of(terms: Mapping[Monomial, int]) -> "Poly":
        return Poly(tuple(sorted((m, c) for m, c in terms.items() if c)))

    @staticmethod
    def constant(value: int) -> "Poly":
        return Poly.of({(): value})

    @staticmethod
    def symbol(symbol: Symbol, power: int = 1) -> "Poly":
        return Poly.of({_monomial({symbol: power}): 1})

    def __add__(self, other: "Poly") -> "Poly":
        found = dict(self.terms)
        for m, c in other.terms:
            found[m] = found.get(m, 0) + c
        return Poly.of(found)

    def __mul__(self, other: "Poly") -> "Poly":
        found: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                powers = dict(m1)
                for s, e in m2:
                    powers[s] = powers.get(s, 0) + e
                m = _monomial(powers)
                found[m] = found.get(m, 0) + c1 * c2
        return Poly.of(found)

    def __bool__(self) -> bool:
        return bool(self.terms)

    @property
    def symbols(self) -> frozenset[Symbol]:
        return frozenset(s for m, _ in self.terms for s, _ in m)

    def dominated_termwise_by(self, other: "Poly") -> bool:
        """`other - self` has no negative coefficient: then self <= other for all positive sizes (a
        sufficient test that needs no solver)."""
        theirs = dict(other.terms)
        return all(theirs.get(m, 0) >= c for m, c in self.terms)

    def evaluate(self, values: Mapping[Symbol, float]) -> float:
        total = 0.0
        for m, c in self.terms:
            term = float(c)
            for s, e in m:
                term *= float(values[s]) ** e
            total += term
        return total

    def to_z3(self, variables: Mapping[Symbol, object]):
        """The polynomial as a z3 arithmetic term over `variables` (a z3 Real per symbol)."""
        total = 0
        for m, c in self.terms:
            term = c
            for s, e in m:
                for _ in range(e):
                    term = term * variables[s]
            total = total + term
        return total

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for m, c in sorted(self.terms, key=lambda t: (-sum(e for _, e in t[0]), [str(s) for s, _ in t[0]])):
            factors = [str(s) if e == 1 else f"{s}^{e}" for s, e in m]
            parts.append("·".join(([str(c)] if c != 1 or not factors else []) + factors))
        return " + ".join(parts)


ZERO = Poly()
ONE = Poly.constant(1)
