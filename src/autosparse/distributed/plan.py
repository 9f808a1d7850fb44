"""Which index to split a kernel along, where to cut it, and how the chunks' results combine.

Chunks never share memory, so there are no races to avoid: splitting an index of the result gives each
chunk its own run of the result (joined in order), and splitting an index summed over the whole right
side gives each chunk a partial sum (added up). Both are exact. An index summed over only part of the right
side (a `Sum` node: `y(i) = sum(j, A(i,j) * x(j)) + z(i)`) is never split: every chunk would add the rest
(z) once more. What can stop a split is a tensor read twice with the index at different modes, since one chunk
of it cannot serve both reads; such reads are made separate operands first (`separate_reads`:
`A(i,k) * A(k,j)` cuts one A by rows and sends the other whole), except of a partitioned tensor. Among
the indices that can be split, the schedule's outermost working loop wins: its operands are stored with
it first, so their chunks are views, and each chunk's kernel runs only its own part of that loop.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from ..cin import Forall, Where
from ..errors import AutosparseError, ShapeError
from ..notation import Access, Assignment, IndexVar, Sum, accesses, walk
from ..tensor import Tensor
from ..tensor.slicing import cut
from .partitioned import Chunk, Partitioned, balanced_bounds, chunk_counts, entry_counts, loaded

#: Pieces per chunk when chunks are balanced on estimated work: the nonzero-balanced pieces are
#: regrouped, so a chunk's cost can be off its share by about one piece.
PIECES_PER_CHUNK = 4


class Combine(enum.Enum):
    JOIN = "join"  # the split index indexes the result: chunks' results one after another
    SUM = "sum"    # a summed index: partial results added (a tree of additions)


@dataclass(frozen=True)
class Plan:
    """How one evaluation is split: along `index`, into runs `bounds`; `cuts` names each operand's modes
    cut along it (the other operands, `broadcast`, go whole to every worker); `costs` is each chunk's
    expected work (`cost_model`: "estimate", the autoscheduler's estimate of the kernel's work on the
    chunk, or "nonzeros", the stored entries of the cut operands)."""

    index: IndexVar | None  # None: not split, one chunk
    combine: Combine
    result_mode: int | None
    cuts: Mapping[str, tuple[int, ...]]
    broadcast: tuple[str, ...]
    bounds: tuple[int, ...]
    costs: tuple[float, ...]
    cost_model: str

    @property
    def chunks(self) -> int:
        return len(self.bounds) - 1

    def chunk_operands(self, k: int, operands: Mapping[str, "Tensor | Partitioned"]) -> dict[str, Chunk]:
        """Chunk k's operands that are cut (views where the layout allows; files still unread)."""
        return {name: _chunk(operands[name], modes, k, self.bounds[k], self.bounds[k + 1])
                for name, modes in self.cuts.items()}

    def __str__(self) -> str:
        if self.index is None:
            return "not split: one task reads every operand whole"
        cuts = ", ".join(f"{n} along mode {'/'.join(map(str, m))}" for n, m in self.cuts.items())
        return (f"split {self.index} into {self.chunks} chunks at {list(self.bounds)} ({self.combine.value}); "
                f"cut {cuts}; broadcast {', '.join(self.broadcast) or 'nothing'}; costs ({self.cost_model}) "
                f"{[round(c) for c in self.costs]}")


def separate_reads(assignment: Assignment, operands: Mapping[str, "Tensor | Partitioned"]
                   ) -> tuple[Assignment, dict[str, "Tensor | Partitioned"]]:
    """The assignment with each further way a tensor is read (other indices) naming an operand of its
    own that is the same tensor, so each read can be cut or sent whole on its own."""
    taken = set(operands) | {assignment.lhs.tensor}
    names: dict[tuple[str, tuple], str] = {}
    operands = dict(operands)

    def rename(expr):
        if not isinstance(expr, Access):
            return expr.with_children(tuple(rename(c) for c in expr.children()))
        key = (expr.tensor, expr.indices)
        if key not in names:
            first = not any(tensor == expr.tensor for tensor, _ in names)
            name = expr.tensor if first else next(f"{expr.tensor}{k}" for k in range(1, len(taken) + 2)
                                                  if f"{expr.tensor}{k}" not in taken)
            taken.add(name)
            names[key] = name
            operands[name] = operands[expr.tensor]
        return Access(names[key], expr.indices)

    return Assignment(assignment.lhs, rename(assignment.rhs), assignment.accumulate), operands


def work_order(stmt) -> tuple[IndexVar, ...]:
    """The CIN's loop indices, outermost first, a `where`'s producer before its consumer: the loops
    that read the operands come before those that copy a workspace out."""
    if isinstance(stmt, Forall):
        return (stmt.index, *work_order(stmt.body))
    if isinstance(stmt, Where):
        return (*work_order(stmt.producer), *work_order(stmt.consumer))
    return tuple(i for child in stmt.children() for i in work_order(child))


def split_index(assignment: Assignment, loop_order: Sequence[IndexVar],
                operands: Mapping[str, "Tensor | Partitioned"], index: str | None = None) -> IndexVar | None:
    """The index to split along: the one `index` names, else the one the largest partitioned operand
    is partitioned along, else the outermost loop that a split keeps exact, else None (the whole
    evaluation is one task). A partitioned operand must then be partitioned along it, or not read
    with it at all (its chunks are joined on a worker and read whole)."""
    reads = accesses(assignment.rhs)
    indexed = {i for a in reads for i in a.indices}
    scoped = {node.index for node in walk(assignment.rhs) if isinstance(node, Sum)}
    along = {a: a.indices[operands[a.tensor].mode] for a in reads if isinstance(operands.get(a.tensor), Partitioned)}
    if index is not None:
        candidates = [IndexVar(index)]
    elif along:
        candidates = [along[max(along, key=lambda a: operands[a.tensor].nnz)]]
    else:
        candidates = [i for i in loop_order if i in indexed and i not in scoped]
    for candidate in candidates:
        if candidate not in indexed:
            raise AutosparseError(f"Expected to split along an index of the operands of {assignment}, "
                                  f"but {candidate} indexes none")
        if candidate in scoped:
            raise AutosparseError(f"Expected to split along an output index or one summed over all of "
                                  f"{assignment}, but {candidate} is summed over part of it: each chunk "
                                  f"would add the rest once more (partition another mode, or pass it whole)")
        crossing = [a for a, i in along.items() if i != candidate and candidate in a.indices]
        if crossing:
            raise ShapeError(f"Expected each partitioned operand to be partitioned along {candidate}, the index "
                             f"split, or not to read it, but {crossing[0]} is partitioned along "
                             f"{along[crossing[0]]}: repartition it, or pass it whole")
        if _cut_alike(reads, candidate):
            return candidate
    if index is None and not along:
        return None
    raise AutosparseError(f"Expected an index that splits {assignment}, but {candidates[0]} indexes different "
                          f"modes of a tensor read twice (one chunk of it cannot serve both reads)")


def make_plan(assignment: Assignment, index: IndexVar | None, operands: Mapping[str, "Tensor | Partitioned"],
              parts: int, estimate: Callable[[Mapping[str, Tensor]], float] | None = None) -> Plan:
    """The plan for splitting `index` into about `parts` chunks: the partitioned operands' own chunks,
    or runs balancing the cut operands' stored entries; with `estimate` (the autoscheduler's estimated
    work of the kernel on given operands), nonzero-balanced pieces regrouped into runs of equal
    estimated work. Without an index, one chunk that reads every operand whole."""
    reads = accesses(assignment.rhs)
    if index is None:
        names = tuple(dict.fromkeys(a.tensor for a in reads))
        return Plan(None, Combine.JOIN, None, {}, names, (0, 1), (0.0,), "nonzeros")
    cuts = {name: tuple(m for a in reads if a.tensor == name for m, i in enumerate(a.indices) if i == index)
            for name in dict.fromkeys(a.tensor for a in reads)}
    cuts = {name: tuple(dict.fromkeys(modes)) for name, modes in cuts.items() if modes}
    broadcast = tuple(name for name in dict.fromkeys(a.tensor for a in reads) if name not in cuts)
    extent = next(operands[n].shape[m[0]] for n, m in cuts.items())
    partitioned = [operands[n] for n in cuts if isinstance(operands[n], Partitioned)]
    bounds_given = {p.bounds for p in partitioned}
    if len(bounds_given) > 1:
        raise ShapeError(f"Expected the partitioned operands' chunks to line up, but their bounds are "
                         f"{' and '.join(map(str, sorted(bounds_given)))}")
    combine = Combine.JOIN if index in assignment.lhs.indices else Combine.SUM
    result_mode = assignment.lhs.indices.index(index) if combine is Combine.JOIN else None
    plan = Plan(index, combine, result_mode, cuts, broadcast, (), (), "nonzeros")
    if bounds_given:  # the partitioned operands' own chunks: neither moved nor read here to be estimated
        bounds = bounds_given.pop()
        counts = [sum(p.chunks[k].nnz for p in partitioned if not p.format.is_dense) for k in range(len(bounds) - 1)]
        return _with(plan, bounds, counts, "nonzeros")
    weights = _entries_along(operands, cuts)
    if estimate is None:
        bounds = balanced_bounds(*weights, extent, parts)
        return _with(plan, bounds, chunk_counts(bounds, *weights), "nonzeros")
    pieces = _with(plan, balanced_bounds(*weights, extent, parts * PIECES_PER_CHUNK), (), "")
    bounds, costs = _regrouped(pieces.bounds, [estimate(pieces.chunk_operands(k, operands))
                                               for k in range(pieces.chunks)], parts)
    return _with(plan, bounds, costs, "estimate")


def _with(plan: Plan, bounds, costs, model: str) -> Plan:
    return Plan(plan.index, plan.combine, plan.result_mode, plan.cuts, plan.broadcast, tuple(bounds),
                tuple(float(c) for c in costs), model)


def _regrouped(bounds: Sequence[int], costs: Sequence[float], parts: int) -> tuple[tuple[int, ...], list[float]]:
    """Consecutive pieces grouped into at most `parts` runs of about equal summed cost."""
    before = np.cumsum([0.0, *costs])
    total = before[-1]
    if total <= 0:
        total, before = len(costs), np.arange(len(costs) + 1, dtype=float)
    ends = sorted({int(np.searchsorted(before, total * k / parts, side="left")) for k in range(1, parts)}
                  | {0, len(costs)})
    return tuple(bounds[e] for e in ends), [float(before[b] - before[a]) for a, b in zip(ends, ends[1:])]


def _entries_along(operands: Mapping[str, Tensor], cuts) -> tuple[np.ndarray, np.ndarray]:
    """Stored entries per coordinate of the split index, summed over the cut sparse operands (dense
    ones cost the same per coordinate, and weigh in only where no sparse one is cut)."""
    sparse = [name for name in cuts if not operands[name].format.is_dense]
    found = [entry_counts(operands[name], cuts[name][0]) for name in sparse or cuts]
    if not found:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    coords = np.concatenate([c for c, _ in found])
    counts = np.concatenate([n for _, n in found])
    unique, inverse = np.unique(coords, return_inverse=True)
    return unique, np.bincount(inverse, weights=counts, minlength=len(unique)).astype(np.int64)


def _chunk(value: "Tensor | Partitioned", modes: tuple[int, ...], k: int, begin: int, end: int) -> Chunk:
    if isinstance(value, Partitioned):
        chunk = value.chunks[k]
        modes = tuple(m for m in modes if m != value.mode)
    else:
        chunk = value
    if modes:  # an index at two modes of one tensor (a diagonal): cut the others too
        chunk = loaded(chunk)
    for mode in modes:
        chunk = cut(chunk, mode, begin, end)
    return chunk


def _cut_alike(reads: Sequence[Access], index: IndexVar) -> bool:
    """Whether every read of each tensor has `index` at the same modes (one chunk serves them all)."""
    modes: dict[str, tuple[int, ...]] = {}
    for access in reads:
        here = tuple(m for m, i in enumerate(access.indices) if i == index)
        if modes.setdefault(access.tensor, here) != here:
            return False
    return True
