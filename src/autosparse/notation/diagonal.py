"""Diagonal accesses -> accesses with distinct indices filtered by identity tensors.

`d(i) = A(i,i)` is `d(i) = A(i,i_1) * I(i,i_1)`: the repeated index becomes a fresh one, and the
product with an identity matrix over the two keeps only the entries where they are equal. The identity is
an operand like any other (its one stored entry per row intersects A's row, so a sparse A is read
entry by entry, a dense one located), which lets every format and schedule read a diagonal with no
lowering of its own; whoever calls the kernel supplies it (`pipeline/diagonals.py`). Each repetition
of an index in an access is one `Diagonal`: `A(i,i,i)` pairs mode 0 with modes 1 and 2.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ast import Access, Assignment, IndexVar, accesses, product, walk
from .scope import scope_reductions

IDENTITY = "I"


@dataclass(frozen=True, slots=True)
class Diagonal:
    """The identity `identity` pairs mode `modes[0]` of `source` (the first use of the index) with mode
    `modes[1]` (its repetition, now read at a fresh index)."""

    identity: str
    source: str
    modes: tuple[int, int]


def split_diagonals(assignment: Assignment) -> tuple[Assignment, tuple[Diagonal, ...]]:
    """`assignment` with every repeated index in a right-hand access replaced by a fresh index and a
    factor of an identity (reductions scoped again), and the identities it introduced."""
    if not any(_repeats(a) for a in accesses(assignment.rhs)):
        return assignment, ()
    tensors = {a.tensor for a in (assignment.lhs, *accesses(assignment.rhs))}
    indices = {i.name for node in walk(assignment.rhs)
               for i in (*getattr(node, "indices", ()), *filter(None, [getattr(node, "index", None)]))}
    found: list[Diagonal] = []

    def rewrite(node):
        children = node.children()
        if children:
            return node.with_children(tuple(rewrite(child) for child in children))
        if not isinstance(node, Access) or not _repeats(node):
            return node
        factors, names = [], list(node.indices)
        for mode, index in enumerate(node.indices):
            first = node.indices.index(index)
            if first == mode:
                continue
            names[mode] = IndexVar(_fresh(f"{index.name}_", indices))
            identity = _fresh(IDENTITY, tensors)
            found.append(Diagonal(identity, node.tensor, (first, mode)))
            factors.append(Access(identity, (index, names[mode]), node.column))
        return product([Access(node.tensor, tuple(names), node.column, node.index_columns), *factors])

    rhs = rewrite(assignment.rhs)
    return scope_reductions(Assignment(assignment.lhs, rhs, assignment.accumulate)), tuple(found)


def _repeats(access: Access) -> bool:
    return len(set(access.indices)) < len(access.indices)


def _fresh(stem: str, taken: set[str]) -> str:
    """`stem1`, `stem2`, … — the first not in `taken`, which it joins."""
    name = next(f"{stem}{k}" for k in range(1, len(taken) + 2) if f"{stem}{k}" not in taken)
    taken.add(name)
    return name
