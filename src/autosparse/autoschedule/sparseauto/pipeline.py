"""SparseAuto's compile-time stages end to end (Dias et al. Fig. 8): the space, stages 1–3, with the
count, the number of distinct (time, memory) groups where it is known, and the time of each.

With a time limit the search is anytime. The space is built with `where`s nested at most 1, 2, …
deep, each depth reusing every sub-space the shallower ones built whole, until a depth leaves nothing
out or `GENERATION_SHARE` of the limit is spent; stages 1–3 then run on the deepest space built.
Shallow schedules come first because every final set of the paper's kernels nests `where`s at most
two deep, and the depth frontier of stage 2 is already the whole space's from depth 2 on
(docs/notes/autoschedule-sparseauto-speed.md). Past the limit, stage 3 compares groups only term by
term (no solver), so it keeps a superset of what the solver would keep."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ...errors import AutosparseError, ScheduleError
from ...format import Format
from ...notation import ast as notation
from ...notation.operators import Value
from ...notation.scope import sums_normalised
from ...schedule.big import Compute, Factor, Node
from ..algebra import as_products, semiring_of
from .cost import Costs, costs
from .prune import Solver, dominated, one_placement, pareto_depths
from .space import Space, SpaceBuilder, numbered

#: The share of a time limit the space may take; stages 2 and 3 have the rest.
GENERATION_SHARE = 0.6


@dataclass
class Stage:
    name: str
    count: int
    groups: int | None  # distinct (time, memory) pairs, None where not computed
    seconds: float


@dataclass
class Search:
    """The final schedules (stage 3's survivors) with their costs, and every stage's statistics."""

    compute: Compute
    schedules: list[tuple[Node, Costs]]
    stages: list[Stage] = field(default_factory=list)
    solver_queries: int = 0
    solver_unknown: int = 0
    complete: bool = True  # False: the time limit cut the space's nesting or stage 3's solver short


def as_compute(assignment: notation.Assignment, fills: Mapping[str, Value] = {},
               formats: Mapping[str, Format] = {}) -> Compute:
    """The assignment as one statement `lhs += f1 * … * fn`; SparseAuto schedules products only (§3), in
    a semiring (⊕, ⊗) (`min(j, A(i,j) + d(j))`: algebra.py) whose ⊗ distributes over its ⊕ (fission and
    fusion move reductions), every sparse factor (per `formats`; each one where not given) of a fill
    that is its zero (its cost and its kernels read absent entries as that zero): a ScheduleError
    names the semiring or the operand otherwise, which the asymptotic model may still schedule.
    A sum scoped to some factors of a product (`sum(j, A(i,j)) * x(i)`) is drawn out over the whole
    product, which means the same; a sum scoped to part of a sum (`A(i,j) * x(j) + z(i)`) is refused,
    as every sum of terms is: its candidates could not compute that meaning."""
    factors = []
    semiring = semiring_of(assignment)
    if not semiring.distributes:
        raise ScheduleError(f"Expected a semiring whose ⊗ distributes over its ⊕ for the sparseauto model, but "
                            f"{assignment} reduces by {semiring.add} products of {semiring.multiply}: use "
                            f"model='asymptotic'")
    _, rhs = notation.peeled(sums_normalised(as_products(assignment.rhs, semiring)))

    def collect(expr) -> None:
        if isinstance(expr, notation.Mul):
            collect(expr.left)
            collect(expr.right)
        elif isinstance(expr, notation.Access):
            factors.append(Factor(expr.tensor, tuple(i.name for i in expr.indices)))
        else:
            raise AutosparseError(f"Expected a product of tensors for the sparseauto model (Dias et al. §3), but "
                                  f"{assignment} has {expr}: use model='asymptotic'")

    collect(rhs)
    for factor in factors:
        fill = fills.get(factor.tensor, 0)
        fmt = formats.get(factor.tensor)
        if (fmt is None or not fmt.is_dense) and not semiring.has_zero(fill):
            raise ScheduleError(f"Expected sparse operands of fill {semiring.zero} (the zero of {semiring.add} and "
                                f"{semiring.multiply}) for the sparseauto model, but {factor.tensor} has fill {fill} "
                                f"in {assignment}: use model='asymptotic'")
    lhs = assignment.lhs
    return Compute(Factor(lhs.tensor, tuple(i.name for i in lhs.indices)), tuple(factors))


def search(assignment: notation.Assignment, formats: Mapping[str, Format], constraints: Sequence[str] = (),
           rule: str = "everywhere", max_memory_depth: int = 2, stage1_groups: bool = False, timeout_ms: int = 2000,
           time_limit: float | None = None, progress: Callable[[int, int], None] | None = None,
           fills: Mapping[str, Value] = {}) -> Search:
    """Stages 1–3 for `assignment` with its tensors stored in `formats`. `stage1_groups` also costs
    every schedule stage 1 keeps, only to report how many distinct costs they have (Table 3).
    `time_limit` (seconds) makes the search anytime; `progress(done, total)` hears of each nesting
    depth built under a time limit, then of each group stage 3 compares."""
    compute = as_compute(assignment, fills, formats)
    began = clock = time.perf_counter()
    deadline = None if time_limit is None else began + time_limit
    stages: list[Stage] = []

    def stage(name: str, count: int, groups: int | None) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages.append(Stage(name, count, groups, now - clock))
        clock = now

    sparse = {f.tensor: f for f in compute.factors if not formats[f.tensor].is_dense}
    solver = Solver(sparse, formats, compute.indices, constraints, timeout_ms)
    generation_deadline = None if time_limit is None else began + GENERATION_SHARE * time_limit
    builder = SpaceBuilder(formats)
    space = _space(builder, compute, generation_deadline, progress)
    stage("generation" if space.complete else f"generation (wheres nested <= {space.problem.nesting}: cut short)",
          space.count, None)
    shallow = {d for d in space.histogram if d[1] <= max_memory_depth}
    groups = None
    if stage1_groups:
        found = (costs(big, formats) for big in builder.build(space, shallow))
        groups = len({(cost.time, cost.memory) for cost in found})
    stage(f"1 memory depth <= {max_memory_depth}", sum(space.histogram[d] for d in shallow), groups)
    taken = {f.tensor for f in (compute.lhs, *compute.factors)}
    survivors = [numbered(big, set(taken)) for big in builder.build(space, pareto_depths(space.histogram,
                                                                                          max_memory_depth))]
    by_cost: dict[tuple, list[tuple[Node, Costs]]] = {}
    for big in survivors:
        found = costs(big, formats)
        by_cost.setdefault((found.time, found.memory), []).append((big, found))
    stage("2 depth poset", len(survivors), len(by_cost))
    keys = list(by_cost)
    solver.deadline = deadline
    removed = dominated(keys, solver, rule, progress)
    decided = not solver.skipped
    final = [entry for n, key in enumerate(keys) if n not in removed for entry in by_cost[key]]
    if rule == "literal":
        final = one_placement(final, {f.tensor for f in compute.factors})
    stage(f"3 SMT ({rule})" if decided else f"3 SMT ({rule}; solver cut short)", len(final), len(keys) - len(removed))
    return Search(compute, final, stages, solver.queries, solver.unknown, space.complete and decided)


def _space(builder: SpaceBuilder, compute: Compute, deadline: float | None,
           progress: Callable[[int, int], None] | None) -> Space:
    """The whole space where there is no deadline; otherwise the space with `where`s nested one
    deeper at a time, until one leaves nothing out or the deadline passes (`SpaceBuilder.deepened`)."""
    if deadline is None:
        return builder.space(compute)
    builder.deadline = deadline
    space = None
    while space is None or (not space.complete and builder.deadline is not None and time.perf_counter() < deadline):
        space = builder.deepened(compute, 1 if space is None else space.problem.nesting + 1)
        if progress is not None:  # the total grows while a deeper nesting may follow
            progress(space.problem.nesting, space.problem.nesting + (not space.complete))
    builder.deadline = None
    return space
