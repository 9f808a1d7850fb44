"""Pure rewrites of CIN shared by concretize, the parser and lowering.

Each returns the very same object when nothing changed, so callers can test `is` to see whether a rewrite
did anything.
"""

from __future__ import annotations

from typing import Callable, Collection

from ..format import Format
from ..notation.ast import Add, Literal, Mul, Neg, Sub, Sum
from .ast import Access, Assign, Forall, Sequence, Stmt, TensorVar, Where


def fresh_name(stem: str, taken: set[str]) -> str:
    """`stem`, `stem1`, `stem2`, … — the first not in `taken`, which it joins."""
    name = next(n for n in (f"{stem}{k or ''}" for k in range(len(taken) + 1)) if n not in taken)
    taken.add(name)
    return name


def rebuild_expr(expr, leaf: Callable):
    """`expr` with every access leaf replaced by `leaf(access)` (leaves of any access class)."""
    children = expr.children()
    if not children:
        return expr if isinstance(expr, Literal) else leaf(expr)
    return expr.with_children(tuple(rebuild_expr(child, leaf) for child in children))


def is_zero(expr) -> bool:
    return isinstance(expr, Literal) and expr.value == 0


def simplify(expr):
    """`expr` with zeros folded away (x*0 -> 0, x+0 -> x, 0-x -> -x, -0 -> 0); an all-zero expression
    becomes Literal(0). This is where an absent operand's NaN or Inf is taken to be 0 (the contract)."""
    children = tuple(simplify(child) for child in expr.children())
    zero = tuple(is_zero(child) for child in children)
    if isinstance(expr, Mul) and any(zero):
        return Literal(0)
    if isinstance(expr, Neg) and zero[0]:
        return Literal(0)
    if isinstance(expr, (Add, Sub)):
        left, right = children
        if zero[1]:
            return left
        if zero[0]:
            return right if isinstance(expr, Add) else Neg(right)
    return expr.with_children(children)


def without(stmt: Stmt, absent: Collection[Access]) -> Stmt | None:
    """`stmt` where the accesses in `absent` read zero and zeros are folded away: assignments of nothing
    disappear (outputs and temporaries start at zero), and so do loops and statements left empty. None
    when all of it goes."""
    if isinstance(stmt, Assign):
        rhs = simplify(rebuild_expr(stmt.rhs, lambda a: Literal(0) if a in absent else a))
        return None if is_zero(rhs) else stmt.with_children((rhs,))
    if isinstance(stmt, Forall):
        body = without(stmt.body, absent)
        return None if body is None else stmt.with_children((body,))
    if isinstance(stmt, Where):
        consumer, producer = without(stmt.consumer, absent), without(stmt.producer, absent)
        if consumer is None:
            return None
        return consumer if producer is None else stmt.with_children((consumer, producer))
    if isinstance(stmt, Sequence):
        first, second = without(stmt.first, absent), without(stmt.second, absent)
        if first is None or second is None:
            return first if second is None else second
        return stmt.with_children((first, second))
    raise TypeError(f"not a CIN statement: {stmt!r}")


def sums_to_wheres(stmt: Stmt, taken: Collection[str]) -> Stmt:
    """`stmt` with each `∑j e` in an assignment computed first into a scalar temporary by a `where`
    producer looping over j (`y(i) = ∑j A(i,j) * x(j) + z(i)` -> `where(y(i) = t() + z(i), ∀j t() +=
    A(i,j) * x(j))`), as TACO lowers reduction nodes; `taken` are the names the temporaries avoid."""
    taken = set(taken)

    def rewrite(node: Stmt) -> Stmt:
        if not isinstance(node, Assign):
            return node.with_children(tuple(rewrite(child) for child in node.children()))
        producers = []

        def lift(expr):
            if isinstance(expr, Sum):
                temporary = TensorVar(fresh_name("t", taken), Format(""), temporary=True)  # sums in the body: rewrite() below
                producers.append(Forall(expr.index, Assign(Access(temporary, (), ()), expr.body, accumulate=True)))
                return Access(temporary, (), ())
            children = tuple(lift(child) for child in expr.children())
            return expr.with_children(children) if children else expr
        out: Stmt = node.with_children((lift(node.rhs),))
        for producer in producers:
            out = Where(out, rewrite(producer))
        return out
    return rewrite(stmt)
