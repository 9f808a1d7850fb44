"""Symbolic costs of a BIG (Dias et al. §5.2): iteration time, auxiliary memory, loop depth, memory depth.

Time is the number of times each statement runs, summed: the product of its loops' extents. A loop is
over positions of the first sparse factor below it whose levels above the loop's index are all bound
by enclosing loops; its extent is then nnz(levels down to it) / nnz(levels above it), so the extents
of a sparse factor's loops telescope to the nonzeros of the levels visited (nnz(B_ij) for `i, j′`,
wherever a dense loop sits between them). Any other loop visits its whole dimension. This is the rule
that reproduces the paper's Figure 2 and every cost in its text; zeroing a temporary is not counted (it
never exceeds the producer's own work in the paper's examples, and its formulas leave it out). Where
two sparse factors share a loop, the first drives it (none of the paper's kernels has such a loop: the
model has no intersection). Memory is the elements of every temporary, a scalar counting none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ...format import Format
from ...schedule.big import Compute, Factor, Loop, Node, Where, computes, level_order, temporaries
from .poly import ONE, ZERO, Poly, Symbol


@dataclass(frozen=True)
class Costs:
    time: Poly
    memory: Poly
    loop_depth: int
    memory_depth: int


def costs(big: Node, formats: Mapping[str, Format]) -> Costs:
    temps = list(temporaries(big))
    return Costs(time_cost(big, formats), memory_cost(temps), loop_depth(big),
                 max((len(t.indices) for t in temps), default=0))


def time_cost(node: Node, formats: Mapping[str, Format]) -> Poly:
    """How many times the statements run: the iterations of the loops right around them."""
    total = ONE if isinstance(node, Compute) else ZERO
    for loop in loops(node, formats):
        if isinstance(loop.body, Compute):
            total = total + loop.iterations
    return total


@dataclass(frozen=True)
class LoopCount:
    index: str
    driver: Factor | None  # the sparse factor whose positions the loop visits; None for a dense loop
    iterations: Poly  # how many times the loop's body runs, in all
    body: Node


def loops(node: Node, formats: Mapping[str, Format], bound: tuple[str, ...] = (), extent: Poly = ONE):
    """Every loop of `node` with its driver and total iterations (what an instrumented kernel counts)."""
    if isinstance(node, Loop):
        readers = [f for c in computes(node.body) for f in c.factors]
        driver, step = _loop_extent(node.index, bound, readers, formats)
        yield LoopCount(node.index, driver, extent * step, node.body)
        yield from loops(node.body, formats, (*bound, node.index), extent * step)
    elif isinstance(node, Where):
        yield from loops(node.producer, formats, bound, extent)
        yield from loops(node.consumer, formats, bound, extent)


def _loop_extent(index: str, bound: tuple[str, ...], readers: list[Factor], formats) -> tuple[Factor | None, Poly]:
    for factor in readers:
        fmt = formats.get(factor.tensor)
        if fmt is None or fmt.is_dense or index not in factor.indices:
            continue
        levels = level_order(fmt, factor)
        depth = levels.index(index)
        if all(i in bound for i in levels[:depth]):
            return factor, prefix_size(fmt, factor, depth + 1) * prefix_size(fmt, factor, depth, power=-1)
    return None, dimension(index)


def prefix_size(fmt: Format, factor: Factor, depth: int, power: int = 1) -> Poly:
    """The entries of `factor`'s first `depth` levels (raised to `power`): nnz of the levels down to
    the last compressed one, times the dimensions of the dense levels below it."""
    levels = level_order(fmt, factor)[:depth]
    compressed = [d for d, level in enumerate(fmt.levels[:depth]) if not level.properties.full]
    size = ONE
    if compressed:
        size = Poly.symbol(Symbol("nnz", factor.tensor, levels[:compressed[-1] + 1]), power)
    for index in levels[compressed[-1] + 1 if compressed else 0:]:
        size = size * dimension(index, power)
    return size


def dimension(index: str, power: int = 1) -> Poly:
    return Poly.symbol(Symbol("dim", index), power)


def memory_cost(temps) -> Poly:
    total = ZERO
    for t in temps:
        if t.indices:
            size = ONE
            for i in t.indices:
                size = size * dimension(i)
            total = total + size
    return total


def loop_depth(node: Node) -> int:
    if isinstance(node, Compute):
        return 0
    if isinstance(node, Loop):
        return 1 + loop_depth(node.body)
    return max(loop_depth(node.producer), loop_depth(node.consumer))
