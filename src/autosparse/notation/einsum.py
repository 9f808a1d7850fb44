"""numpy-style einsum subscripts -> index notation: "ij,jk->ik" is `out(i,k) = T0(i,j) * T1(j,k)`.

Without "->", the output holds the indices that appear exactly once, in alphabetical order (numpy's rule).
An ellipsis stands for an operand's modes that its letters leave over, aligned from the right as numpy
broadcasts them ("...ij,...jk->...ik" over (2,3,4) and (4,5) is a (2,3,5) batch of products); those
modes are indices named `dots0`, `dots1`, … (no letter can be one), first in an implicit output.
Broadcasting stops at equal extents: a size-1 mode against a longer one is a ShapeError that says so.
"""

from __future__ import annotations

from functools import reduce
from typing import Sequence

from ..errors import ParseError, ShapeError
from .ast import Access, Assignment, IndexVar, Mul
from .parser import parse

OUTPUT = "out"
ELLIPSIS = "..."


def operand_name(position: int) -> str:
    return f"T{position}"


def einsum_assignment(subscripts: str, shapes: Sequence[tuple[int, ...]]) -> Assignment:
    """The assignment of `subscripts` for operands of `shapes` (their orders, and an ellipsis' extents)."""
    text = subscripts.replace(" ", "")
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != len(shapes):
        raise ParseError(f"Expected {len(shapes)} operand subscripts for {len(shapes)} operands, but found "
                         f"{len(terms)}", subscripts, 1)
    for term in (*terms, output):
        _check_letters(term, subscripts)
    spans = [_ellipsis_span(term, len(shape), position, subscripts)
             for position, (term, shape) in enumerate(zip(terms, shapes))]
    _check_broadcast([shape[term.find(ELLIPSIS):][:span] for term, shape, span in zip(terms, shapes, spans)])
    dots = tuple(f"dots{k}" for k in range(max(spans, default=0)))
    if not arrow:
        letters = "".join(terms).replace(ELLIPSIS, "")
        output = ELLIPSIS + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    elif dots and ELLIPSIS not in output:
        raise ParseError(f"Expected '...' in the output {output!r} to keep the modes the ellipsis stands for "
                         f"({len(dots)}), as numpy.einsum does, but found none", subscripts, text.index("->") + 3)
    operands = (Access(operand_name(k), _indices(term, dots[len(dots) - span:]))
                for k, (term, span) in enumerate(zip(terms, spans)))
    statement = f"{OUTPUT}({','.join(map(str, _indices(output, dots)))}) = {reduce(Mul, operands)}"
    try:
        return parse(statement)
    except ParseError as error:
        raise ParseError(f"Expected valid einsum subscripts ({str(error).splitlines()[0]} of {statement!r})",
                         subscripts, 1) from None


def _check_letters(term: str, subscripts: str) -> None:
    """Letters, and at most one ellipsis."""
    start = term.find(ELLIPSIS)
    ellipsis = range(start, start + len(ELLIPSIS)) if start >= 0 else range(0)
    bad = next((k for k, c in enumerate(term) if not c.isalpha() and k not in ellipsis), None)
    if bad is None:
        return
    what = "at most one ellipsis '...'" if term[bad:].startswith(ELLIPSIS) else "letters as einsum indices"
    raise ParseError(f"Expected {what}, but found {term[bad]!r}", subscripts, subscripts.index(term) + bad + 1)


def _check_broadcast(extents: list[tuple[int, ...]]) -> None:
    """The modes an ellipsis stands for, aligned from the right, agree exactly (no size-1 stretching)."""
    width = max(map(len, extents), default=0)
    for mode in range(1, width + 1):
        found = {e[-mode] for e in extents if len(e) >= mode}
        if len(found) > 1:
            aligned = [("…",) * (width - len(e)) + tuple(e) for e in extents if e]
            raise ShapeError(f"Expected the modes of '...' to agree across operands (broadcasting between equal "
                             f"extents only; stretch size-1 modes with numpy.broadcast_to first), but found "
                             f"{', '.join(map(str, aligned))}")


def _ellipsis_span(term: str, order: int, position: int, subscripts: str) -> int:
    """How many of the operand's modes its ellipsis stands for (none without one)."""
    if ELLIPSIS not in term:
        return 0
    letters = len(term) - len(ELLIPSIS)
    if letters > order:
        raise ParseError(f"Expected at most {order} letters for operand {position} (its order), but "
                         f"{term!r} has {letters}", subscripts, subscripts.index(term) + 1)
    return order - letters


def _indices(term: str, dots: tuple[str, ...]) -> tuple[IndexVar, ...]:
    before, _, after = term.partition(ELLIPSIS)
    names = (*before, *(dots if ELLIPSIS in term else ()), *after)
    return tuple(IndexVar(name) for name in names)
