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

For the anytime search a sub-problem may also limit how deep its `where`s nest. A space the limit
did not cut is the whole space and is shared by every limit, so deepening the root one nesting at a
time rebuilds only the sub-problems the last depth cut (`deepened`). Sub-problems are keyed by the
statement and the bound loops it uses: a loop bound above that the statement does not index changes
nothing below it.
"""

from __future__ import annotations

import time
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
    nesting: int | None = None  # how deep `where`s may nest below; None: without limit


@dataclass
class Split:
    temporary: Factor
    fused: tuple[str, ...]
    producer: "Space"
    consumer: "Space"

    def depths(self, producer: tuple[int, int], consumer: tuple[int, int]) -> tuple[int, int]:
        return (len(self.fused) + max(producer[0], consumer[0]),
                max(len(self.temporary.indices), producer[1], consumer[1]))


@dataclass(frozen=True)
class Part:
    """A split before its sides' spaces are built: the statement below `bound` and `fused` loops as a
    `producer` filling `temporary` and a `consumer` reading it."""

    temporary: Factor
    fused: tuple[str, ...]
    bound: tuple[str, ...]
    producer: Compute
    consumer: Compute


@dataclass
class Space:
    problem: Problem
    orders: list[tuple[str, ...]]
    splits: list[Split] = field(default_factory=list)
    histogram: Counter = field(default_factory=Counter)  # (loop depth, memory depth) -> schedules
    complete: bool = True  # False: the nesting limit left out some schedules

    @property
    def count(self) -> int:
        return sum(self.histogram.values())


class OutOfTime(Exception):
    """The builder's deadline passed; what it built so far stays memoised."""


@dataclass
class Statement:
    """What the schedules of one statement depend on besides the loops bound above it, worked out
    once (sub-problems meet the same statement below many sets of loops), and its spaces so far."""

    indices: tuple[str, ...]
    before: dict[str, frozenset[str]]  # the loops each index's loop must be nested in
    spaces: dict[tuple[tuple[str, ...], int | None], Space] = field(default_factory=dict)  # (bound, nesting)


class SpaceBuilder:
    """Builds the space of each sub-problem once, for tensors stored in `formats`."""

    def __init__(self, formats: Mapping[str, Format]):
        self.formats = formats
        self._sparse = {name: fmt for name, fmt in formats.items() if not fmt.is_dense}
        self.deadline: float | None = None  # perf_counter() past which building a sub-problem raises OutOfTime
        self._statements: dict[Compute, Statement] = {}
        self._levels: dict[Factor, tuple[str, ...]] = {}
        self._orders: dict[tuple, list[tuple[str, ...]]] = {}
        self.built = 0  # sub-problems built (each once for every nesting that cuts it, once if none does)

    def space(self, compute: Compute, bound: tuple[str, ...] = (), nesting: int | None = None) -> Space:
        """The schedules of `compute` below the loops `bound` whose `where`s nest at most `nesting`
        deep (all of them where None). A space the limit did not cut is the whole space, and serves
        every limit."""
        statement = self.statement(compute)
        bound = tuple(sorted(set(bound).intersection(statement.indices)))
        found = statement.spaces.get((bound, None)) or statement.spaces.get((bound, nesting))
        if found is None:
            found = self._build(Problem(compute, bound, nesting), statement)
            statement.spaces[bound, None if found.complete else nesting] = found
        return found

    def statement(self, compute: Compute) -> Statement:
        found = self._statements.get(compute)
        if found is None:
            indices = compute.indices
            found = self._statements[compute] = Statement(indices, self._precedences(compute, indices))
        return found

    def sparse_levels(self, factor: Factor) -> tuple[str, ...]:
        """`schedule.big.sparse_levels` of `factor`, worked out once: the space asks it of the same
        factors tens of thousands of times."""
        found = self._levels.get(factor)
        if found is None:
            found = self._levels[factor] = sparse_levels(self._sparse, factor)
        return found

    def legal_orders(self, statement: Statement, bound: tuple[str, ...]) -> list[tuple[str, ...]]:
        """The orders of the free loops that keep every storage precedence. They depend only on the
        free indices and the precedences among them, which sub-problems of different statements
        share, so each such pattern is enumerated once."""
        free = tuple(i for i in statement.indices if i not in bound)
        outside = frozenset(bound)
        pattern = (free, tuple(statement.before[i] - outside for i in free))
        found = self._orders.get(pattern)
        if found is None:
            inside = dict(zip(*pattern))
            found = self._orders[pattern] = [order for order in permutations(free)
                                             if all(inside[i] <= set(order[:n]) for n, i in enumerate(order))]
        return found

    def _precedences(self, compute: Compute, indices: tuple[str, ...]) -> dict[str, frozenset[str]]:
        """The loops each of the statement's `indices` must be nested in: those of the levels above it
        in every sparse factor, and, for a sparse result, those of its compressed levels above every
        index it does not have (a reduction loop above them would revisit appended coordinates)."""
        before = storage_precedences((compute.lhs, *compute.factors), self._sparse, indices)
        result = self.sparse_levels(compute.lhs)
        if result:
            for i in indices:
                if i not in compute.lhs.indices:
                    before[i] |= set(result)
        return {i: frozenset(loops) for i, loops in before.items()}

    def _build(self, problem: Problem, statement: Statement) -> Space:
        if self.deadline is not None and time.perf_counter() > self.deadline:
            raise OutOfTime
        self.built += 1
        space = self._linear(problem, statement)
        for part in self._parts(problem, space.orders):
            if problem.nesting == 0:
                space.complete = False
                break
            self._add(space, self._split(part, None if problem.nesting is None else problem.nesting - 1))
        return space

    def deepened(self, compute: Compute, nesting: int) -> Space:
        """The space of the root statement with `where`s nested at most `nesting` (>= 1) deep, as far
        as the deadline allows. Its splits are built those with the most factors in the producer first
        (the best schedules of the paper's kernels produce most of the product before consuming the
        rest). Each split the deadline stops keeps its sub-spaces of one nesting less, which a search
        deepening one nesting at a time has built already; at nesting 1 such a split is left out. The
        splits stay in the order of the whole space. Past the deadline the builder only looks up what
        it built (the deadline is cleared), and the space is incomplete."""
        problem = Problem(compute, (), nesting)
        space = self._linear(problem, self.statement(compute))
        parts = list(self._parts(problem, space.orders))
        built: dict[int, Split] = {}
        in_time = True
        for n in sorted(range(len(parts)), key=lambda n: -len(parts[n].producer.factors)):
            if in_time:
                try:
                    built[n] = self._split(parts[n], nesting - 1)
                    continue
                except OutOfTime:
                    in_time, self.deadline = False, None
            space.complete = False
            if nesting > 1:
                built[n] = self._split(parts[n], nesting - 2)
        for n in sorted(built):
            self._add(space, built[n])
        return space

    def _linear(self, problem: Problem, statement: Statement) -> Space:
        """The space of `problem` with its loop orders only."""
        orders = self.legal_orders(statement, problem.bound)
        space = Space(problem, orders)
        for order in orders:
            space.histogram[(len(order), 0)] += 1
        return space

    def _parts(self, problem: Problem, orders) -> Iterator[Part]:
        """Each split of `problem`'s statement as its temporary, fused loops, producer and consumer."""
        if not orders:
            return
        compute = problem.compute
        factors = compute.factors
        name = fresh_temporary(f.tensor for f in (compute.lhs, *factors))
        for size in range(1, len(factors)):
            for chosen in combinations(range(len(factors)), size):
                producer = tuple(factors[n] for n in chosen)
                consumer = tuple(f for n, f in enumerate(factors) if n not in chosen)
                for temporary, fused in self._splits(problem, orders, producer, consumer, name):
                    yield Part(temporary, fused, problem.bound, Compute(temporary, producer),
                               Compute(compute.lhs, (temporary, *consumer)))

    def _split(self, part: Part, nesting: int | None) -> Split:
        inner = (*part.bound, *part.fused)
        return Split(part.temporary, part.fused, self.space(part.producer, inner, nesting),
                     self.space(part.consumer, inner, nesting))

    @staticmethod
    def _add(space: Space, split: Split) -> None:
        space.splits.append(split)
        space.complete &= split.producer.complete and split.consumer.complete
        for pd, pc in split.producer.histogram.items():
            for cd, cc in split.consumer.histogram.items():
                space.histogram[split.depths(pd, cd)] += pc * cc

    def _splits(self, problem, orders, producer, consumer, name) -> Iterator[tuple[Factor, tuple[str, ...]]]:
        """The temporary and the fused loops of each way to split `problem`'s statement into
        `producer` and `consumer`."""
        compute, bound = problem.compute, problem.bound
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
            shared = tuple(i for i in orders[0] if i in temp and i not in fused)
            yield Factor(name, shared), fused

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

