"""Iteration lattices (LOWERING.md §3): for one loop index, which operands' iterators must be stepped
together, and which combinations of them (points) the loop has to handle.

An `Iterator` stands for one storage level of one access stepped by the loop; `full` iterators (a dense
level, or the loop's own dimension `DIMENSION`) never run out. Lattices are tuples of points, top first;
`meet` is intersection (products), `join` is union (sums). Pure functions of frozen values. `loop_lattice`
reads a loop's lattice off its CIN, given which reads it steps: lowering walks it, and the default
schedule asks it whether a loop runs over one operand's positions or over its whole dimension.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Mapping

from ..cin.ast import Access, Assign, Forall, Sequence, Where, accesses, results
from ..cin.rewrite import without
from ..notation.ast import Add, Apply, Div, Literal, Mul, Neg, Sub, operator_of


@dataclass(frozen=True, slots=True)
class Iterator:
    access: Access | None  # None for DIMENSION
    level: int
    full: bool

    def __str__(self) -> str:
        return "dimension" if self.access is None else f"{self.access}@{self.level}"


#: The loop's own range: what an operand that does not vary with the index, or is located, needs.
DIMENSION = Iterator(None, -1, True)


@dataclass(frozen=True, slots=True)
class Point:
    iterators: frozenset[Iterator]

    @property
    def sparse(self) -> frozenset[Iterator]:
        return frozenset(it for it in self.iterators if not it.full)

    @property
    def full(self) -> bool:
        return any(it.full for it in self.iterators)

    def __str__(self) -> str:
        return "{" + ", ".join(sorted(map(str, self.iterators))) + "}"


Lattice = tuple[Point, ...]


def single(iterator: Iterator) -> Lattice:
    return (Point(frozenset({iterator})),)


def universe() -> Lattice:
    return single(DIMENSION)


def meet(a: Lattice, b: Lattice) -> Lattice:
    return _prune(tuple(Point(p.iterators | q.iterators) for p in a for q in b))


def join(a: Lattice, b: Lattice) -> Lattice:
    return _prune(meet(a, b) + a + b)


def _prune(points: Lattice) -> Lattice:
    """Drop a point when one above it steps the same sparse iterators: they differ only in full
    iterators, which never run out and match every coordinate, so the point above always takes its
    coordinates first (`A + D` with D dense needs no point for A alone)."""
    kept: list[Point] = []
    for point in points:
        if not any(above.sparse == point.sparse for above in kept):
            kept.append(point)
    return tuple(kept)


def sub_points(lattice: Lattice, point: Point) -> Lattice:
    """The points the loop of `point` must distinguish: those whose sparse iterators it also steps."""
    return tuple(q for q in lattice if q.sparse <= point.sparse)


def dense_loop(lattice: Lattice) -> bool:
    """Whether the index must run over its whole dimension: some point has only full iterators. Otherwise
    the sparse iterators drive and full ones are located."""
    return any(not p.sparse for p in lattice)


def loop_lattice(stmt, stepped: Mapping[Access, Iterator], produced: Mapping[str, Lattice]) -> Lattice:
    """The iteration lattice of `stmt` for the loop: a temporary read stands for its producer. An
    operator's node meets its children's lattices where an absent child annihilates it (`*` over fill 0,
    `+` over +inf), and joins them otherwise; an assignment that still writes something where every
    operand the loop steps is absent (`exp(A)` into a target of fill 0) runs over the whole dimension."""
    if isinstance(stmt, Access):
        if stmt in stepped:
            return single(stepped[stmt])
        return produced.get(stmt.tensor.name, universe()) if stmt.tensor.temporary else universe()
    if isinstance(stmt, Literal):
        return universe()
    if isinstance(stmt, Assign):
        inner = loop_lattice(stmt.rhs, stepped, produced)
        if dense_loop(inner) or without(stmt, _absent_in(stmt.rhs, stepped, produced)) is None:
            return inner
        return join(inner, universe())
    if isinstance(stmt, (Forall, Neg)):
        return loop_lattice(stmt.children()[0], stepped, produced)
    if isinstance(stmt, Div) and not _absent_in(stmt.right, stepped, produced):  # a divisor stored everywhere
        return loop_lattice(stmt.left, stepped, produced)
    if isinstance(stmt, (Add, Sub, Mul, Div, Apply)):
        return _operator_lattice(stmt, stepped, produced)
    if isinstance(stmt, Sequence):
        return join(*(loop_lattice(child, stepped, produced) for child in stmt.children()))
    if isinstance(stmt, Where):
        inner = loop_lattice(stmt.producer, stepped, produced)
        made = dict.fromkeys(results(stmt.producer), inner)
        return loop_lattice(stmt.consumer, stepped, {**produced, **made})
    raise TypeError(f"not CIN: {stmt!r}")


def _absent_in(expr, stepped: Mapping[Access, Iterator], produced: Mapping[str, Lattice]) -> list[Access]:
    """The reads in `expr` that can be absent in the loop: the operands it steps, the temporaries its
    producers leave unwritten."""
    return [a for a in accesses(expr) if a in stepped or a.tensor.temporary and a.tensor.name in produced]


def _operator_lattice(node, stepped: Mapping[Access, Iterator], produced: Mapping[str, Lattice]) -> Lattice:
    """An operator's node exists where every child that annihilates it when absent is present (`*` over
    fill 0, `+` over +inf: their meet); a child that does not (`T(j)` of fill -1 in `A(i,j) * T(j)`) only
    splits those points into cases, present or not. With no such annihilating child, the children's join."""
    op, children = operator_of(node), node.children()
    lattices = [loop_lattice(child, stepped, produced) for child in children]
    absent = [_absent_in(child, stepped, produced) for child in children]
    kills = [not absent[side] or _annihilates(op, side, without(child, absent[side]))
             for side, child in enumerate(children)]
    if not any(kill and absent[side] for side, kill in enumerate(kills)):
        return functools.reduce(join, lattices)
    return functools.reduce(meet, (lattice if kill else join(lattice, universe())
                                   for lattice, kill in zip(lattices, kills)))


def _annihilates(op, side: int, value) -> bool:
    """Whether a child that became `value` (None: 0) once its reads are absent decides the node alone:
    an annihilating constant, or any constant under a function of one operand."""
    if value is not None and not isinstance(value, Literal):
        return False
    return op.arity == 1 or op.is_annihilator(0 if value is None else value.value, side)
