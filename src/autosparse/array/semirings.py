"""Semirings by name, for `autosparse.array.matmul(A, B, semiring=...)`: each a reduction ⊕ and a product ⊗,
operators of notation/operators.py, so that one matrix product spells shortest paths (`min_plus`),
reachability (`lor_land`) and the arithmetic product (`plus_times`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import AutosparseError


@dataclass(frozen=True, slots=True)
class Semiring:
    """`add` reduces the products `multiply` makes: `C(i,j) = ⊕_k A(i,k) ⊗ B(k,j)`."""

    name: str
    add: str
    multiply: str


SEMIRINGS = {s.name: s for s in (
    Semiring("plus_times", "add", "multiply"),
    Semiring("min_plus", "minimum", "add"),
    Semiring("max_plus", "maximum", "add"),
    Semiring("max_times", "maximum", "multiply"),
    Semiring("lor_land", "logical_or", "logical_and"),
)}

plus_times, min_plus, max_plus, max_times, lor_land = SEMIRINGS.values()


def semiring(value: str | Semiring) -> Semiring:
    """The semiring named `value` (or `value` itself); an AutosparseError naming the known ones otherwise."""
    if isinstance(value, Semiring):
        return value
    if value not in SEMIRINGS:
        raise AutosparseError(f"Expected a semiring among {sorted(SEMIRINGS)}, but found {value!r}")
    return SEMIRINGS[value]
