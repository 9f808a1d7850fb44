"""Pure rewrites of CIN shared by concretize, the parser, scheduling, lowering and the autoschedulers.

Each returns the very same object when nothing changed, so callers can test `is` to see whether a rewrite
did anything. `prewalk` and `postwalk` are the one generic rewriter (Finch's `Prewalk`/`Postwalk`): they
serve any node that has `children()` and `with_children()` — index notation, CIN, and the
autoschedulers' nodes — so a pass states only what it does to the nodes it cares about.
"""

from __future__ import annotations

from functools import singledispatch
from typing import Callable, Collection

from ..format import Format
from ..notation.ast import Add, Div, Literal, Neg, Sub, Sum
from .ast import Access, Assign, Forall, Sequence, Stmt, TensorVar, Where, walk


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
    """`node` where the accesses in `absent` read zero and zeros are folded away: assignments of nothing
    disappear (outputs and temporaries start at zero), and so do loops and statements left empty, and
    the temporaries of a `where` whose producer is left empty are read as zero. None when all of it
    goes. This is where an absent operand's NaN or Inf is taken to be 0 (the contract). It serves any
    node family with `children()`/`with_children()` whose leaves are accesses and literals."""
    children = node.children()
    if not children:
        return None if node in absent or is_zero(node) else node
    if isinstance(node, Where):
        return _where_without(node, absent)
    kept = tuple(without(child, absent) for child in children)
    if None not in kept:
        return node.with_children(kept)
    if isinstance(node, Sub):
        left, right = kept
        return left if right is None else Neg(right)
    if isinstance(node, Div) and kept[0] is not None:  # a zero divisor still divides: x / 0 is inf or nan
        return node.with_children((kept[0], node.right))
    present = tuple(child for child in kept if child is not None)
    if not adds(node) or not present:
        return None
    return present[0] if len(present) == 1 else node.with_children(present)


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
    """`stmt` with each `∑j e` in an assignment computed first into a scalar temporary by a `where`
    producer looping over j (`y(i) = ∑j A(i,j) * x(j) + z(i)` -> `where(y(i) = t() + z(i), ∀j t() +=
    A(i,j) * x(j))`), as TACO lowers reduction nodes; `taken` are the names the temporaries avoid."""
    taken = set(taken)

    def rewrite(node: Stmt) -> Stmt:
        if not isinstance(node, Assign):
            return node.with_children(tuple(rewrite(child) for child in node.children()))
        producers = []

        def lift(expr):
            if not isinstance(expr, Sum):
                return expr
            temporary = TensorVar(fresh_name("t", taken), Format(""), temporary=True)  # sums in the body: rewrite() below
            producers.append(Forall(expr.index, Assign(Access(temporary, (), ()), expr.body, accumulate=True)))
            return Access(temporary, (), ())
        out: Stmt = node.with_children((prewalk(node.rhs, lift),))
        for producer in producers:
            out = Where(out, rewrite(producer))
        return out
    return rewrite(stmt)
