"""Pure rewrites of CIN shared by concretize, the parser, scheduling, lowering and the autoschedulers.

Each returns the very same object when nothing changed, so callers can test `is` to see whether a rewrite
did anything. `prewalk` and `postwalk` are the one generic rewriter (Finch's `Prewalk`/`Postwalk`): they
serve any node that has `children()` and `with_children()` — index notation, CIN, and the
autoschedulers' nodes — so a pass states only what it does to the nodes it cares about.
"""

from __future__ import annotations

import functools
from functools import singledispatch
from typing import Callable, Collection

import numpy as np

from ..format import Format
from ..notation.ast import Add, Apply, Div, Literal, Neg, Reduce, Sub, Sum, operator_of
from ..notation.operators import REGISTRY, fold
from .ast import Access, Assign, Forall, Sequence, Stmt, TensorVar, Where, identity, walk


def fresh_name(stem: str, taken: set[str]) -> str:
    """`stem`, `stem1`, `stem2`, … — the first not in `taken`, which it joins."""
    name = next(n for n in (f"{stem}{k or ''}" for k in range(len(taken) + 1)) if n not in taken)
    taken.add(name)
    return name


def postwalk(node, rewrite: Callable):
    """`node` rebuilt bottom-up: each node, its children already rewritten, replaced by `rewrite(node)`
    (which returns the node itself to keep it)."""
    children = node.children()
    if children:
        node = node.with_children(tuple(postwalk(child, rewrite) for child in children))
    return rewrite(node)


def prewalk(node, rewrite: Callable):
    """`node` rebuilt top-down: each node replaced by `rewrite(node)` first, then the children of what
    it became rewritten in turn."""
    node = rewrite(node)
    children = node.children()
    return node.with_children(tuple(prewalk(child, rewrite) for child in children)) if children else node


def rebuild_expr(expr, leaf: Callable):
    """`expr` with every access leaf replaced by `leaf(access)` (leaves of any access class)."""
    return postwalk(expr, lambda node: node if node.children() or isinstance(node, Literal) else leaf(node))


def bounded(expr, bounds: Callable) -> bool:
    """Whether a loop computing `expr` need visit only the entries of the leaves `bounds` holds for: one of
    a product's factors, both terms of a sum or difference. Any other node counts as bounded where any of
    its operands is, so a caller that cannot tell keeps what it would do for a bounded loop."""
    if isinstance(expr, (Add, Sub)):
        return bounded(expr.left, bounds) and bounded(expr.right, bounds)
    children = expr.children()
    return any(bounded(child, bounds) for child in children) if children else bounds(expr)


def is_zero(expr) -> bool:
    return isinstance(expr, Literal) and expr.value == 0


@singledispatch
def adds(node) -> bool:
    """Whether `node` adds up its children, so that an absent (zero) child drops out and the rest stay
    (a sum, a sequence of statements); other nodes with an absent child are absent themselves (a
    product, a negation, an assignment of zero, a loop of nothing). Node families beyond CIN's (the
    autoschedulers' n-ary sums) register here."""
    return False


@adds.register(Add)
@adds.register(Sequence)
def _(node) -> bool:
    return True


def without(node, absent: Collection):
    """`node` where the accesses in `absent` read their tensor's fill, folded away through the operators'
    laws (notation/operators.py): an annihilating fill decides its parent, an identity drops out of it,
    a fill that does neither stays as a literal, and a node of constants is folded. None stands for 0:
    assignments of nothing disappear, and so do assignments of the value their target already holds
    (its fill: outputs start at theirs, temporaries at their reduction's identity), loops and statements
    left empty, and the temporaries of a `where` whose producer is left empty are read as their fill.
    None when all of it goes. This is where an absent operand's NaN or Inf is taken to be its fill (the
    contract). It serves any node family with `children()`/`with_children()` whose leaves are accesses
    and literals."""
    children = node.children()
    if not children:
        if node in absent:
            return _literal(_fill(node))
        return None if is_zero(node) else node
    if isinstance(node, Where):
        return _where_without(node, absent)
    kept = tuple(without(child, absent) for child in children)
    if all(k is c for k, c in zip(kept, children)):
        return node
    op = operator_of(node)
    if op is not None:
        return _folded(node, op, children, kept)
    if isinstance(node, Assign) and (kept[0] is None or isinstance(kept[0], Literal)):
        value = 0 if kept[0] is None else kept[0].value
        if _leaves_as_is(node, value):
            return None
        return node.with_children((Literal(value),))
    if None not in kept:
        return node.with_children(kept)
    present = tuple(child for child in kept if child is not None)
    if not adds(node) or not present:
        return None
    return present[0] if len(present) == 1 else node.with_children(present)


def _leaves_as_is(assign: Assign, value) -> bool:
    """Whether storing `value` by `assign` leaves its target as it is: a plain store of the target's fill (what
    it starts at), an accumulation of its operator's identity, or of the fill under an idempotent operator
    (min, max, and, or only move a target away from its start in one direction). `y(i) += inf` over a target
    of fill inf changes what earlier terms summed, `y(i) *= 0` over a target of fill 0 what they multiplied."""
    op = REGISTRY[assign.reduce]
    if assign.accumulate and not op.idempotent:
        return op.is_identity(value)
    return _same(value, _fill(assign.lhs)) or assign.accumulate and op.is_identity(value)


def _folded(node, op, children: tuple, kept: tuple):
    """An operator's node whose children became `kept` (None: 0) once absent accesses read their fills: a
    child turned constant that annihilates decides it, one that is the identity leaves the other child;
    constants alone fold into one. `a - absent` keeps its sign as `-a`, and a divisor that reads 0 still
    divides (x / 0 is inf or nan)."""
    values = tuple(Literal(0) if k is None else k for k in kept)
    turned = [side for side, (k, c) in enumerate(zip(kept, children))
              if k is not c and isinstance(values[side], Literal)]
    for side in turned:
        if op.is_annihilator(values[side].value, side):
            return kept[side]
    for side in turned:
        if len(values) == 2 and op.is_identity(values[side].value, side) and not _boolean(op.name):
            return kept[1 - side]
    if isinstance(node, Sub) and kept[0] is None:
        return Neg(kept[1])
    if isinstance(node, Div) and kept[0] is not None and kept[1] is None:
        return node.with_children((kept[0], node.right))
    if isinstance(node, Apply) and node.op == "where" and isinstance(values[0], Literal):
        return kept[1] if values[0].value else kept[2]
    if all(isinstance(value, Literal) for value in values):
        return _literal(fold(op, *(value.value for value in values)))
    return node.with_children(values)


@functools.lru_cache(maxsize=None)
def _boolean(name: str) -> bool:
    """Whether the operator `name` gives bool: its identity then leaves bool(x), not x (`x or False`), so
    the node stays (`a || 0`)."""
    return REGISTRY[name].result_dtype(np.dtype(np.float64), np.dtype(np.float64)).kind == "b"


def _fill(leaf):
    """An access's fill: its tensor's (a CIN TensorVar's); 0 for node families without fills (the autoschedulers')."""
    return getattr(getattr(leaf, "tensor", None), "fill", 0)


def _literal(value):
    """The literal of a value (a numpy scalar as Python's, as the notation's literals are), None for 0 (the
    zero that folds away)."""
    return None if _same(value, 0) else Literal(value.item() if isinstance(value, np.generic) else value)


def _same(value, other) -> bool:
    return bool(value == other)


def _where_without(node: Where, absent: Collection):
    producer = without(node.producer, absent)
    if producer is None:
        written = {assign.lhs.tensor for assign in walk(node.producer) if isinstance(assign, Assign)}
        temporaries = {leaf for leaf in walk(node.consumer)
                       if not leaf.children() and not isinstance(leaf, Literal) and leaf.tensor in written}
        return without(node.consumer, {*absent, *temporaries})
    consumer = without(node.consumer, absent)
    return None if consumer is None else node.with_children((consumer, producer))


def sums_to_wheres(stmt: Stmt, taken: Collection[str]) -> Stmt:
    """`stmt` with each `∑j e` (or other reduction, `min(j, e)`) in an assignment computed first into a scalar
    temporary by a `where` producer looping over j (`y(i) = ∑j A(i,j) * x(j) + z(i)` -> `where(y(i) = t() + z(i),
    ∀j t() += A(i,j) * x(j))`), as TACO lowers reduction nodes; `taken` are the names the temporaries avoid."""
    taken = set(taken)

    def rewrite(node: Stmt) -> Stmt:
        if not isinstance(node, Assign):
            return node.with_children(tuple(rewrite(child) for child in node.children()))
        producers = []

        def lift(expr):
            if not isinstance(expr, (Sum, Reduce)):
                return expr
            reduce = "add" if isinstance(expr, Sum) else expr.op  # sums in the body: rewrite() below
            temporary = TensorVar(fresh_name("t", taken), Format(""), temporary=True, fill=identity(reduce))
            producers.append(Forall(expr.index, Assign(Access(temporary, (), ()), expr.body, True, reduce)))
            return Access(temporary, (), ())
        out: Stmt = node.with_children((prewalk(node.rhs, lift),))
        for producer in producers:
            out = Where(out, rewrite(producer))
        return out
    return rewrite(stmt)
