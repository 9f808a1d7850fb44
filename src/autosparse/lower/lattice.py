"""Iteration lattices (LOWERING.md §3): for one loop index, which operands' iterators must be stepped
together, and which combinations of them (points) the loop has to handle.

An `Iterator` stands for one storage level of one access stepped by the loop; `full` iterators (a dense
level, or the loop's own dimension `DIMENSION`) never run out. Lattices are tuples of points, top first;
`meet` is intersection (products), `join` is union (sums). Pure functions of frozen values.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..cin.ast import Access


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
