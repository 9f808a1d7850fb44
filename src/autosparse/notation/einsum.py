"""numpy-style einsum subscripts -> index notation: "ij,jk->ik" is `out(i,k) = T0(i,j) * T1(j,k)`.

Without "->", the output holds the indices that appear exactly once, in alphabetical order (numpy's rule).
Repeated indices within one operand (diagonals) and ellipses are not supported and say so.
"""

from __future__ import annotations

from functools import reduce

from ..errors import ParseError
from .ast import Access, Assignment, IndexVar, Mul
from .parser import parse

OUTPUT = "out"


def operand_name(position: int) -> str:
    return f"T{position}"


def einsum_assignment(subscripts: str, count: int) -> Assignment:
    """The assignment of `subscripts` for `count` operands."""
    text = subscripts.replace(" ", "")
    if "." in text:
        raise ParseError("Expected explicit indices, but found an ellipsis (not supported)", subscripts,
                         subscripts.index(".") + 1)
    inputs, arrow, output = text.partition("->")
    terms = inputs.split(",")
    if len(terms) != count:
        raise ParseError(f"Expected {count} operand subscripts for {count} operands, but found {len(terms)}",
                         subscripts, 1)
    for term in (*terms, output):
        bad = next((c for c in term if not c.isalpha()), None)
        if bad is not None:
            raise ParseError(f"Expected letters as einsum indices, but found {bad!r}", subscripts,
                             subscripts.index(bad) + 1)
    if not arrow:
        letters = "".join(terms)
        output = "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    rhs = reduce(Mul, (Access(operand_name(k), tuple(IndexVar(c) for c in term)) for k, term in enumerate(terms)))
    statement = f"{OUTPUT}({','.join(output)}) = {rhs}"
    try:
        return parse(statement)
    except ParseError as error:
        raise ParseError(f"Expected valid einsum subscripts ({str(error).splitlines()[0]} of {statement!r})",
                         subscripts, 1) from None
