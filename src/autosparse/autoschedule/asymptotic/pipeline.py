"""The enumeration pipeline of Ahrens et al. §7 end to end, with the count and time of every stage.

Costs are memoised: programs that cost the same (many protocol choices do not matter) are compared as
one, so the frontier algorithm runs over distinct costs (with the hash-table levels each program's
realisation needs as a second criterion, unless the paper's frontier is asked for). With a time limit
the search is anytime: it names loop nests for at most half of it (short of a counting search's
limit, or past `NAMED_IN_FULL` of them), then stops taking programs when time runs out and reports the
frontier of those it took (at least one), having taken the most promising first (order.py: shapes
that transpose no sparse input, access few operands out of stride and have small workspaces), in
doubling rounds that favour them, each shape's protocols locating fewest sparse modes first
(docs/notes/autoschedule-search.md: 1-2 s then picks what the whole search picks for MTTKRP, TTMc and
SDDMM). Hash levels are not counted for a cost that a frontier member without hash levels beats
(`_Beaten`). The minimum
depth is that of the valid nests (every access bound by its loops): with four factors or more the
shallowest nests can all be invalid (4-D MTTKRP), and filtering them afterwards left nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from itertools import repeat
from math import factorial
from typing import Callable, Mapping

from ...format import Format
from ...notation import ast as notation
from ...notation.operators import Value
from ..algebra import semiring_of, untracked
from .cost import Cost, CostModel
from .frontier import Frontier, Tradeoff
from .order import NAMED_AT_LEAST, favouring_first, interleaved, promise, stored_orders
from .protocols import protocol_choices, protocolised, taco_runs
from .realise import hashed_levels, reads_agree
from .shapes import Block, bound_everywhere, flatten, groupings, named, nestings, orders, placements, rewrites
from .sketch import Stmt, reads


#: Under a limit of 0 or of at least `COUNTED_PAST`, stage 5 names every minimum-depth loop nest of a
#: search with at most this many (under a second's work; every paper kernel and SparseAuto's kernels but
#: one have under 3,000), so stages 5-6 count exactly; past it (SparseAuto's kernel 8: 48,578, 4.4 s to
#: name; 4-D MTTKRP: 17 M), and under any other limit (`schedule="auto"`'s: TTMc's 2,568 took half a
#: second), it names nests of every shape in turn for half the limit, at least `order.NAMED_AT_LEAST`.
NAMED_IN_FULL = 10_000


#: Searches limited to fewer seconds than this (`schedule="auto"`'s) skip stage 3's count: a statistic
#: for the paper's tables, not needed to find programs.
COUNTED_PAST = 10.0


@dataclass(eq=False)
class _Shape:
    """A named loop nest (stage 5), kept as one record: a nest is a deep tree, and hashing it again for
    each of stages 5-7's lookups was a third of TTMc's work before its first program is costed."""

    program: Stmt
    workspaces: dict[str, tuple[str, ...]]  # each workspace's indices
    copies: int = 0  # how often it arises (the paper counts every copy)
    choices: int = 0  # its protocol assignments (stage 6)

    @property
    def reads_once(self) -> bool:
        """Whether no tensor is read twice: then every protocol assignment reads each tensor one way and
        `reads_agree` need not be asked per program (a tenth of a whole search's time)."""
        tensors = [access.tensor for access in reads(self.program)]
        return len(tensors) == len(set(tensors))


@dataclass
class Stage:
    name: str
    count: int
    seconds: float


@dataclass
class Search:
    """What the pipeline found: the frontier's programs with their costs, every other program's
    witness (a frontier program that dominates it), stage statistics, and how far it got."""

    frontier: list[tuple[Stmt, Cost]]
    witnesses: dict[Stmt, Stmt]
    costs: dict[Stmt, Cost]
    model: CostModel
    stages: list[Stage] = field(default_factory=list)
    processed: int = 0
    total: int = 0
    named_all: bool = True  # False: time ran out while stage 5 named the nests, `total` counts the named

    @property
    def complete(self) -> bool:
        return self.named_all and self.processed == self.total


def search(assignment: notation.Assignment, formats: Mapping[str, Format], taco: bool = False,
           sunk: bool = True, paper: bool = False, time_limit: float | None = None,
           progress: Callable[[int, int], None] | None = None, fills: Mapping[str, Value] = {}) -> Search:
    """The asymptotic frontier of `assignment` with its tensors stored in `formats` and its operands'
    absent entries `fills` (0 where not given), in the semiring its operators make (algebra.py)."""
    stages: list[Stage] = []
    began = clock = time.perf_counter()

    def stage(name: str, count: int) -> None:
        nonlocal clock
        now = time.perf_counter()
        stages.append(Stage(name, count, now - clock))
        clock = now

    operands = notation.accesses(assignment.rhs)
    sparse = {a.tensor: tuple(i.name for i in a.indices) for a in operands if not formats[a.tensor].is_dense}
    indices = tuple(dict.fromkeys(i.name for a in (assignment.lhs, *operands) for i in a.indices))
    semiring = semiring_of(assignment)
    costed_dense = untracked(assignment, semiring, formats, fills)
    tracked = {name: ix for name, ix in sparse.items() if name not in costed_dense}
    lhs, rhs = flatten(assignment.lhs, semiring), flatten(assignment.rhs, semiring)
    reduce = assignment.accumulate or bool(assignment.reduction_indices)
    stage("1 expression rewrites", len(rewrites(rhs, semiring.distributes)))
    nests, scopes = groupings(lhs, rhs, reduce, semiring.distributes, grouped=not costed_dense)
    stage("2 where groupings", len(nests))
    if time_limit is None or time_limit >= COUNTED_PAST:
        stage("3 forall nestings", nestings(nests, frozenset(indices), scopes))
    else:  # only a statistic, and a fifth of TTMc's work before its first program is costed
        stage("3 forall nestings (not counted under a short time limit)", 0)
    taken = {a.tensor for a in (assignment.lhs, *operands)}
    depth, shallow = _shallowest_valid(
        lambda limit: [p for nest in nests for p in placements(nest, frozenset(indices), scopes, limit=limit)],
        len(indices), lambda tree: bound_everywhere(named(next(orders(tree)), taken, reduce, scopes)[0]))
    orderings = sum(_orderings(tree) for tree in shallow)
    stage(f"4 minimum depth ({depth})", orderings)
    shapes: dict[Stmt, _Shape] = {}
    result, sparse_result = assignment.lhs.tensor, not formats[assignment.lhs.tensor].is_dense
    deadline = None if time_limit is None else began + time_limit
    in_full = time_limit is None or orderings <= NAMED_IN_FULL and not 0 < time_limit < COUNTED_PAST
    naming_deadline = None if in_full else began + time_limit / 2
    named_all = True
    for stmt in interleaved(map(orders, shallow)):
        if naming_deadline is not None and len(shapes) >= NAMED_AT_LEAST and time.perf_counter() > naming_deadline:
            named_all = False  # leave half the time to cost programs of every nest named so far
            break
        program, workspaces = named(stmt, taken, reduce, scopes)
        if taco and (len(workspaces) > 1 or any(len(ix) > 1 for ix in workspaces.values())
                     or not taco_runs(program, result, sparse_result)):
            continue
        shape = shapes.setdefault(program, _Shape(program, workspaces))
        # Pigeon.jl's TACO mode also offers a scalar workspace's read both protocols, two copies of
        # one program, and counts both.
        scalars = sum(not ix for ix in workspaces.values()) if taco else 0
        shape.copies += 2 ** scalars
    stage("5 named workspaces" + ("" if named_all else " (cut short)"), len(shapes))
    for shape in shapes.values():
        shape.choices = protocol_choices(shape.program, set(sparse), set(shape.workspaces), taco)
    total = sum(shape.choices for shape in shapes.values())
    stage("6 protocols (min-depth schedules)", total)
    stage("6 the same, counting each copy (the paper's count)", sum(shape.choices * shape.copies for shape in shapes.values()))

    model = CostModel(tracked, indices, sunk, scoped=not paper)
    by_cost: dict[Tradeoff, list[tuple[Stmt, int]]] = {}  # each program with its copies
    costs: dict[Stmt, Cost] = {}
    processed = 0
    frontier = Frontier()
    beaten = _Beaten()
    stored = stored_orders(formats)
    promising = sorted(shapes.values(), key=lambda shape: promise(shape.program, shape.workspaces, stored))
    streams = [zip(repeat(shape), protocolised(shape.program, set(sparse), set(shape.workspaces), taco))
               for shape in promising]
    agreeing = {shape: shape.reads_once for shape in promising}
    for shape, program in favouring_first(streams):
        if deadline is not None and by_cost and time.perf_counter() > deadline:
            break
        processed += 1
        if progress is not None:
            progress(processed, total)
        if not agreeing[shape] and not reads_agree(program):
            continue
        cost = costs[program] = model.cost_once(program)
        unhashed = paper or beaten(cost, frontier)
        key = Tradeoff(cost, 0 if unhashed else hashed_levels(program, formats, result))
        if key not in by_cost:
            by_cost[key] = []
            beaten.joined += frontier.offer(key, key)
        by_cost[key].append((program, shape.copies))
    members = [(program, key.cost, copies) for key in frontier.members for program, copies in by_cost[key]]
    witnesses = {program: by_cost[frontier.witness(key)][0][0]
                 for key, programs in by_cost.items() if key not in frontier.members for program, _ in programs}
    stage(f"7 asymptotic filter ({len({key.cost for key in by_cost})} distinct costs)", len(members))
    stage("7 the same, counting each copy (the paper's count)", sum(copies for _, _, copies in members))
    return Search([(program, cost) for program, cost, _ in members], witnesses, costs, model, stages, processed,
                  total, named_all)


class _Beaten:
    """Whether a frontier member that needs no hash table is asymptotically cheaper than a cost: then a
    program of this cost is dominated whatever hash levels it needs, and realising it to count them
    (a fifth of a program's time) is skipped. A beaten cost stays beaten (a member leaves only for one
    at least as good on both criteria), and an unbeaten one stays unbeaten until a member joins
    (`joined` counts them), so each answer is remembered: most programs share their cost with
    earlier ones, and asking the whole frontier again was a twentieth of a search."""

    def __init__(self):
        self.joined = 0
        self._beaten: set[Cost] = set()
        self._unbeaten: dict[Cost, int] = {}  # cost -> `joined` when it was found unbeaten

    def __call__(self, cost: Cost, frontier: Frontier) -> bool:
        if cost in self._beaten or self._unbeaten.get(cost) == self.joined:
            return cost in self._beaten
        if any(not member.hashed and cost.dominates(member.cost) for member in frontier.members.values()):
            self._beaten.add(cost)
            return True
        self._unbeaten[cost] = self.joined
        return False


def _shallowest_valid(placed: Callable[[int], list[tuple[Stmt, int]]], deepest: int,
                      valid: Callable[[Stmt], bool]) -> tuple[int, list[Stmt]]:
    """The least depth of a valid placement, and the valid placements of that depth (`placed(limit)`:
    those of depth at most `limit`). Validity does not depend on loop order, so one ordering decides;
    deeper placements are never built."""
    for depth in range(deepest + 1):
        shallow = [tree for tree, d in placed(depth) if d == depth and valid(tree)]
        if shallow:
            return depth, shallow
    raise AssertionError("the nest with every loop outside all statements is always valid")


def _orderings(tree) -> int:
    """How many statements a placement stands for (each block's loops in every order)."""
    if isinstance(tree, Block):
        return factorial(len(tree.indices)) * _orderings(tree.body)
    if hasattr(tree, "consumer"):
        return _orderings(tree.consumer) * _orderings(tree.producer)
    return 1
