"""The schedule space of SparseAuto (Dias et al. §5.1), built once per sub-problem and counted without
being listed.

A sub-problem is a statement to schedule below some loops already fixed (`bound`). Its schedules are
every legal loop order of the statement (a linear graph), and, for every way of splitting its factors
into a producer and a consumer, the producer's schedules × the consumer's, both unfused (the `where` at
the top, the temporary over all of `I_temp`) and fused over the longest prefix of some legal order
whose indices both sides use (Algorithm 1). Enumerating factor permutations and split positions, as the
paper does, reaches each producer subset many times; here each subset is taken once, so every schedule
is counted once. Two restrictions keep the space finite: a producer of one factor must sum an index out
(a copy of an operand into a dense temporary only costs memory, and a copy of a temporary would recur
forever), and each side keeps a loop of its own (a producer run once per iteration of the loops
around it only splits one product in two).

Each sub-problem keeps a histogram of its schedules by (loop depth, memory depth): both compose (a
split's loop depth is its fused loops plus the deeper side's, its memory depth the largest temporary's
order), so the counts after stage 1 and the (loop depth, memory depth) frontier of stage 2 come from
histograms, and only the schedules on that frontier are ever built.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations, permutations
from typing import Iterator, Mapping

from ...format import Format
from ...cin.ast import Forall, nest
from ...schedule.big import Compute, Factor, Node, Where, fresh_temporary, sparse_levels, storage_precedences


@dataclass(frozen=True)
class Problem:
    compute: Compute
    bound: tuple[str, ...]  # loops fixed above (sorted: only which matters)


@dataclass
class Split:
    temporary: Factor
    fused: tuple[str, ...]
    producer: "Space"
    consumer: "Space"

    def depths(self, producer: tuple[int, int], consumer: tuple[int, int]) -> tuple[int, int]:
        return (len(self.fused) + max(producer[0], consumer[0]),
                max(len(self.temporary.indices), producer[1], consumer[1]))


@dataclass
class Space:
    problem: Problem
    orders: list[tuple[str, ...]]
    splits: list[Split] = field(default_factory=list)
    histogram: Counter = field(default_factory=Counter)  # (loop depth, memory depth) -> schedules

    @property
    def count(self) -> int:
        return sum(self.histogram.values())


class SpaceBuilder:
    """Builds the space of each sub-problem once (`memo`), for tensors stored in `formats`."""

    def __init__(self, formats: Mapping[str, Format]):
        self.formats = formats
        self.memo: dict[Problem, Space] = {}
        self._levels: dict[Factor, tuple[str, ...]] = {}
        self._orders: dict[tuple, list[tuple[str, ...]]] = {}

    def space(self, compute: Compute, bound: tuple[str, ...] = ()) -> Space:
        problem = Problem(compute, tuple(sorted(set(bound) & set(compute.indices))))
        found = self.memo.get(problem)
        if found is None:
            found = self._build(problem)
            self.memo[problem] = found
        return found

    def sparse_levels(self, factor: Factor) -> tuple[str, ...]:
        """`schedule.big.sparse_levels` of `factor`, worked out once: the space asks it of the same
        factors tens of thousands of times."""
        found = self._levels.get(factor)
        if found is None:
            found = self._levels[factor] = sparse_levels(self.formats, factor)
        return found

    def legal_orders(self, compute: Compute, bound: tuple[str, ...]) -> list[tuple[str, ...]]:
        """The orders of the free loops that keep every storage precedence. They depend only on the
        free indices and the precedences among them, which sub-problems of different statements
        share, so each such pattern is enumerated once."""
        free = tuple(i for i in compute.indices if i not in bound)
        before = self._precedences(compute, free)
        pattern = (free, tuple(frozenset(before[i]).difference(bound) for i in free))
        found = self._orders.get(pattern)
        if found is None:
            inside = dict(zip(*pattern))
            found = self._orders[pattern] = [order for order in permutations(free)
                                             if all(inside[i] <= set(order[:n]) for n, i in enumerate(order))]
        return found

    def _precedences(self, compute: Compute, free: tuple[str, ...]) -> dict[str, set[str]]:
        """The loops each free index's loop must be nested in: those of the levels above it in every
        sparse factor, and, for a sparse result, those of its compressed levels above every index it
        does not have (a reduction loop above them would revisit appended coordinates)."""
        before = storage_precedences((compute.lhs, *compute.factors), self.formats, free)
        result = self.sparse_levels(compute.lhs)
        if result:
            for i in free:
                if i not in compute.lhs.indices:
                    before[i] |= set(result)
        return before

    def _build(self, problem: Problem) -> Space:
        compute, bound = problem.compute, problem.bound
        orders = self.legal_orders(compute, bound)
        space = Space(problem, orders)
        for order in orders:
            space.histogram[(len(order), 0)] += 1
        if not orders:
            return space
        factors = compute.factors
        name = fresh_temporary(f.tensor for f in (compute.lhs, *factors))
        for size in range(1, len(factors)):
            for chosen in combinations(range(len(factors)), size):
                producer = tuple(factors[n] for n in chosen)
                consumer = tuple(f for n, f in enumerate(factors) if n not in chosen)
                for split in self._splits(compute, bound, orders, producer, consumer, name):
                    space.splits.append(split)
                    for pd, pc in split.producer.histogram.items():
                        for cd, cc in split.consumer.histogram.items():
                            space.histogram[split.depths(pd, cd)] += pc * cc
        return space

    def _splits(self, compute, bound, orders, producer, consumer, name) -> Iterator[Split]:
        made = {i for f in producer for i in f.indices if i not in bound}
        needed = {i for f in (compute.lhs, *consumer) for i in f.indices}
        temp = made & needed
        if len(producer) == 1 and temp == made:
            return  # a copy, not a reduction
        if not self._shared_order_agrees(producer, consumer, temp):
            return
        prefixes = {(): None}
        for order in orders:
            prefix = []
            for i in order:
                if i not in temp:
                    break
                prefix.append(i)
            prefixes[tuple(prefix)] = None
        for fused in prefixes:
            if not made - set(fused) or not needed - set(bound) - set(fused):
                continue  # a side with no loops of its own: the statement split within one iteration
            inner = (*bound, *fused)
            shared = tuple(i for i in orders[0] if i in temp and i not in fused)
            t = Factor(name, shared)
            yield Split(t, fused, self.space(Compute(t, producer), inner),
                        self.space(Compute(compute.lhs, (t, *consumer)), inner))

    def _shared_order_agrees(self, producer, consumer, shared) -> bool:
        """Legality rule 2 (§4.4): some order of the shared indices suits both sides' sparse factors,
        i.e. the storage orders they impose on those indices do not conflict."""
        edges = set()
        for side in (producer, consumer):
            for factor in side:
                levels = [i for i in self.sparse_levels(factor) if i in shared]
                edges |= {(a, b) for n, a in enumerate(levels) for b in levels[n + 1:]}
        return not any((b, a) in edges for a, b in edges)

    def build(self, space: Space, wanted: set[tuple[int, int]]) -> Iterator[Node]:
        """The schedules of `space` whose (loop depth, memory depth) is in `wanted`."""
        for order in space.orders:
            if (len(order), 0) in wanted:
                yield nest(order, space.problem.compute)
        for split in space.splits:
            for pd in split.producer.histogram:
                for cd in split.consumer.histogram:
                    if split.depths(pd, cd) not in wanted:
                        continue
                    for consumer in self.build(split.consumer, {cd}):
                        for producer in self.build(split.producer, {pd}):
                            yield nest(split.fused, Where(split.temporary, consumer, producer))


def numbered(node: Node, taken: set[str], renames: dict[str, str] | None = None) -> Node:
    """`node` with its temporaries renamed t0, t1, … in the order met (producer first), each name used
    once in the whole graph: sub-problems name their temporaries on their own."""
    renames = dict(renames or {})

    def factor(f: Factor) -> Factor:
        return Factor(renames.get(f.tensor, f.tensor), f.indices)

    if isinstance(node, Compute):
        return Compute(factor(node.lhs), tuple(map(factor, node.factors)))
    if isinstance(node, Forall):
        return node.with_children((numbered(node.body, taken, renames),))
    name = next(f"t{n}" for n in range(len(taken) + 1) if f"t{n}" not in taken)
    taken.add(name)
    renames[node.temporary.tensor] = name
    producer = numbered(node.producer, taken, renames)
    consumer = numbered(node.consumer, taken, renames)
    return Where(factor(node.temporary), consumer, producer)

