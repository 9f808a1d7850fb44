"""`coiterate(i, auto)`: each loop's co-iteration strategy chosen for the operands of one call, from their
stored structure alone (segment counts and lengths), with no trial runs.

A loop steps some operands through sparse levels. Each such operand has segments (one per parent
position) of lengths ℓ. The loop runs E times (the product of the trip counts of the loops around it,
estimated from the operands); an operand's segment stays the same for V consecutive runs (the trip
counts of the loops inside the innermost one that moves it). The driver, the operand whose segment
moves most often (as lowering picks it), walks its coordinates, and each strategy prices finding each
of them in the other operands, with ℓ_d the driver's segment length and ℓ_f the found one's:

    merge    both stepped through:           ℓ_d + ℓ_f steps, 2 min(ℓ_d, ℓ_f) of them mispredicted, per run
    gallop   leaps, then a bisection:        ℓ_d (1 + 2 log2(1 + ℓ_f / ℓ_d))  per run
    binary   a bisection of the segment:     ℓ_d log2(2 ℓ_f)                per run
    hash     a probe per coordinate:         ℓ_d per run, plus ℓ_f insertions whenever the segment changes
    bitmap   a load per coordinate:          ℓ_d per run, plus 2 ℓ_f writes whenever it changes

(the find strategies also walk the driver: ℓ_d per run), each step weighted by its time on this kind
of machine (WEIGHTS, from `autosparse bench coiteration`'s runs).
The driver's lengths are its actual segments' (a power-law row and a short row price differently);
the others' are their means. The cheapest strategy that lowering would accept wins (legality as
coiterate/findable.py decides it); a bitmap over the memory limit is not a candidate. A loop that adds
operands it steps runs a pass per term, each walking one operand and finding the others: a find strategy
must suit every pair, and into an appended (sparse) result, which takes one in-order pass, only a merge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import prod
from typing import Mapping

import numpy as np

from ..cin.ast import Access, Coiteration, Forall, Protocol, Stmt, Strategy, accesses, assignments, walk
from ..config import memory_limit
from ..cin.rewrite import without
from ..notation.ast import IndexVar, Literal, operator_of
from .findable import findable
from ..tensor import Tensor

#: Nanoseconds per step of each kind on this machine, from `autosparse bench coiteration`'s SpMSpV runs: a merge
#: step whose branch the CPU predicts (one operand runs ahead) and one it does not (the operands
#: interleave, about twice per entry of the shorter); a driver entry walked and multiplied; a gallop
#: leap; a bisection step; a hash lookup (probing, its branches unpredictable) and insertion; a bitmap
#: lookup and write.
WEIGHTS = {"run": 1.2, "switch": 3.0, "walk": 1.5, "leap": 1.5, "bisect": 3.2, "probe": 12.0, "insert": 12.0,
           "lookup": 1.5, "mark": 2.0}
CHOICES = (Strategy.MERGE, Strategy.GALLOP, Strategy.BINARY, Strategy.HASH, Strategy.BITMAP)


def resolve(stmt: Stmt, tensors: Mapping[str, Tensor], extents: Mapping[IndexVar, int]) -> Stmt:
    """`stmt` with every `auto` strategy replaced by the cheapest legal one for these operands."""
    def chosen(loop: Forall, around: tuple[Forall, ...]) -> Coiteration | None:
        if loop.coiterate is None or Strategy.AUTO not in loop.coiterate.strategies:
            return loop.coiterate
        return choose(loop, around, tensors, extents)
    return _marked(stmt, chosen, ())


def everywhere(stmt: Stmt) -> Stmt:
    """`stmt` with `auto` on every loop that says nothing of its co-iteration, except parallel ones: a
    parallel loop over sparse positions steps one operand alone, which no strategy changes (the default
    schedule on threads, chosen by `schedule="auto"`, would otherwise be refused)."""
    return _marked(stmt, lambda loop, around: loop.coiterate or (None if loop.parallel else Coiteration(Strategy.AUTO)),
                   ())


def has_auto(stmt: Stmt) -> bool:
    return any(isinstance(n, Forall) and n.coiterate is not None and Strategy.AUTO in n.coiterate.strategies
               for n in walk(stmt))


def _marked(stmt: Stmt, mark, around: tuple[Forall, ...]) -> Stmt:
    """`stmt` with each loop's co-iteration replaced by `mark(loop, the loops around it)`."""
    if isinstance(stmt, Access) or not hasattr(stmt, "with_children"):
        return stmt
    if isinstance(stmt, Forall):
        stmt = replace(stmt, coiterate=mark(stmt, around))
        return stmt.with_children((_marked(stmt.body, mark, (*around, stmt)),))
    return stmt.with_children(tuple(_marked(child, mark, around) for child in stmt.children()))


@dataclass(frozen=True)
class _Operand:
    """An operand the loop steps: its segment lengths, how its siblings are ordered, and how often the
    segment changes."""

    access: Access
    lengths: np.ndarray  # of every segment of its level
    order: int  # +1 increasing, -1 decreasing, 0 none
    unique: bool
    moved_by: int  # the depth of the innermost loop around that moves its segment (-1: none)
    first: bool  # stepped at its first level, whose one segment a table holds from before the loops

    @property
    def mean(self) -> float:
        return float(self.lengths.mean()) if len(self.lengths) else 0.0


def choose(loop: Forall, around: tuple[Forall, ...], tensors, extents) -> Coiteration:
    """The loop's co-iteration with `auto` resolved: the strategy whose estimated cost is least."""
    operands = _stepped(loop, around, tensors)
    coiteration = loop.coiterate
    adds = _adds(loop, operands)
    if len(operands) < 2 or (adds and _appends(loop)):
        return coiteration.resolved(lambda tensor: Strategy.MERGE)
    trips = [_trips(outer, around[:depth], tensors, extents) for depth, outer in enumerate(around)]
    costs = {}
    shared = any(outer.parallel is not None for outer in around)
    for strategy in CHOICES:
        candidate = coiteration.resolved(lambda tensor: strategy)
        cost = _cost(candidate, operands, trips, extents[loop.index], adds, shared)
        if cost is not None:
            costs[candidate] = cost
    return min(costs, key=costs.get) if costs else coiteration.resolved(lambda tensor: Strategy.MERGE)


def _appends(loop: Forall) -> bool:
    """Whether the loop appends coordinates to a sparse result, which takes them in increasing order."""
    return any(loop.index in a.lhs.level_indices
               and a.lhs.level_protocols[a.lhs.level_indices.index(loop.index)] is Protocol.APPEND
               for a in assignments(loop.body))


def _adds(loop: Forall, operands: list["_Operand"]) -> bool:
    """Whether the loop adds operands it steps (`B(i,j) + C(j,i)`), or a temporary (which may stand for
    operands its producer steps here): finding one term's operands in another's then takes a pass per
    term, out of order for an appended result (lowering refuses it), so only a merge is legal. Adding is
    any union (`unites`): `maximum(B, C)` over fill 0 adds, `B + C` over +inf does not."""
    stepped = {op.access for op in operands}

    def steps(side) -> bool:
        return any(a in stepped or a.tensor.temporary for a in accesses(side))
    return any(unites(node, steps) for a in assignments(loop.body) for node in walk(a.rhs))


def unites(node, counts=lambda child: True) -> bool:
    """Whether an operator's node needs each of two or more children that `counts` where the others are
    absent (a union): none of them decides the node when its reads are absent (an annihilator, through
    the registry: `*` over fill 0 and `+` over +inf intersect; `+`, `-` and `maximum` over 0 unite).
    Functions of one operand and reductions unite nothing."""
    op = operator_of(node)
    if op is None or op.arity < 2:
        return False
    sides = [side for side, child in enumerate(node.children()) if counts(child)]
    return len(sides) > 1 and not any(_annihilates(op, side, node.children()[side]) for side in sides)


def _annihilates(op, side: int, child) -> bool:
    """Whether `child` of `op`'s node, its reads absent, is a constant that decides the node alone."""
    value = without(child, set(accesses(child)))
    return (value is None or isinstance(value, Literal)) and op.is_annihilator(0 if value is None else value.value,
                                                                                 side)


def _cost(coiteration: Coiteration, operands: list[_Operand], trips: list[float], dim: int,
          adds: bool = False, shared: bool = False) -> float | None:
    """The estimated nanoseconds of the loop over all its runs, or None when lowering would refuse it.
    Where the loop `adds` operands, each term's pass may walk any of them and find the others, so each
    must be findable while any other drives. Under a parallel loop (`shared`) a table is every thread's
    at once: only one built before the loops, of an operand's first level, may be found in."""
    strategy = {op.access: coiteration.strategy(op.access.tensor.name) for op in operands}
    if adds and not all(strategy[op.access] is Strategy.MERGE
                        or findable(strategy[op.access], op.order, op.unique, by.order)
                        for op in operands for by in operands if by is not op):
        return None
    runs = prod(trips)
    driver = min(operands, key=lambda op: (strategy[op.access] is not Strategy.MERGE, op.unique, -op.moved_by,
                                           operands.index(op)))
    # each of the driver's segments is walked runs / (its count) times
    walked = driver.lengths.astype(np.float64)
    visits = runs / max(len(walked), 1)
    others = [op for op in operands if op is not driver]
    if all(s is Strategy.MERGE for s in strategy.values()):
        orders = {op.order for op in operands}
        if len(orders) != 1 or 0 in orders or not all(op.unique for op in operands):
            return None
        shortest = np.minimum.reduce([walked, *(np.full_like(walked, op.mean) for op in others)])
        steps = walked + sum(op.mean for op in others)
        return visits * float(np.sum(WEIGHTS["run"] * steps + 2 * WEIGHTS["switch"] * shortest))
    total = WEIGHTS["walk"] * visits * walked.sum()
    for op in others:
        chosen = strategy[op.access]
        if not findable(chosen, op.order, op.unique, driver.order):
            return None
        if shared and chosen in (Strategy.HASH, Strategy.BITMAP) and not op.first:
            return None
        if chosen is Strategy.BITMAP and (dim + 1) * 8 > memory_limit():
            return None
        length = op.mean
        changes = runs / max(prod(trips[op.moved_by + 1:]), 1.0)  # how often its segment is replaced
        if chosen is Strategy.MERGE:  # a resuming scan: its run, and a switch per driver entry
            total += visits * float(np.sum(WEIGHTS["run"] * length + WEIGHTS["switch"] * np.minimum(walked, length)))
        elif chosen is Strategy.GALLOP:
            leaps = 1 + 2 * np.log2(1 + length / np.maximum(walked, 1))
            total += WEIGHTS["leap"] * visits * float(np.sum(walked * leaps))
        elif chosen is Strategy.BINARY:
            total += WEIGHTS["bisect"] * visits * walked.sum() * np.log2(2 * length + 1)
        elif chosen is Strategy.HASH:
            total += WEIGHTS["probe"] * visits * walked.sum() + WEIGHTS["insert"] * changes * length
        else:
            total += WEIGHTS["lookup"] * visits * walked.sum() + WEIGHTS["mark"] * 2 * changes * length
    return total


def _stepped(loop: Forall, around: tuple[Forall, ...], tensors) -> list[_Operand]:
    """The operands the loop steps through sparse levels, in the order they appear."""
    outer = [f.index for f in around]
    operands = []
    for access in dict.fromkeys(accesses(loop.body)):
        tensor = tensors.get(access.tensor.name)
        if tensor is None or access.tensor.temporary or loop.index not in access.level_indices:
            continue
        level = access.level_indices.index(loop.index)
        properties = access.tensor.format.levels[level].properties
        if properties.full or access.level_protocols[level] is not Protocol.STEP:
            continue
        moved = max((depth for depth, index in enumerate(outer) if index in access.level_indices[:level]), default=-1)
        order = 1 if properties.ordered else -1 if properties.descending else 0
        operands.append(_Operand(access, _lengths(tensor, level), order, properties.unique, moved, level == 0))
    return operands


def _lengths(tensor: Tensor, level: int) -> np.ndarray:
    """The length of each segment of a tensor's level (one per parent position)."""
    arrays = tensor.levels[level]
    if "pos" in arrays:
        return np.diff(arrays["pos"])
    return np.ones(tensor.nnz, dtype=np.int64)


def _trips(loop: Forall, around: tuple[Forall, ...], tensors, extents) -> float:
    """A loop's estimated trip count: the mean segment length of the shortest operand it steps through
    a sparse level (the loop stops when that one runs out), or its dimension."""
    stepped = _stepped(loop, around, tensors)
    return min((op.mean for op in stepped), default=float(extents[loop.index]))
