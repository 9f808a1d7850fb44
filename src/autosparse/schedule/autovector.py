"""The default schedule's innermost sums over contiguous dense data marked `parallelize(i, cpu_vector,
temporary)`: a sum per SIMD lane, the lanes added after the loop.

Why: C's `+` is not associative, so a compiler keeps a sum's additions in the source's order: one add
after another, each waiting for the last (four cycles apiece here), and no SIMD. A dot product of two
490,000-entry vectors took 410 µs against BLAS's 30-42 µs (CG on a 700² stencil spent a fifth of each
iteration in its two dot products). OpenMP's `simd reduction(+:acc)` lets the compiler keep a sum per lane.
The sum's terms are then added in another order, as numpy's pairwise sums and BLAS's blocked ones are: a
rounding's difference, no less accurate.

A loop is marked only where nothing but that order changes:
- it is innermost, sequential, not unrolled, with no temporary inside (`where`);
- every assignment in it adds (`+=`) into a place the loop does not index, a register lowering keeps;
- every operand it indexes is dense at its last level and indexed there by the loop, so a lane reads
  contiguous values (a column's strided values, or a gather through coordinates, is often slower in
  lanes than one at a time: the AVX-512 gathers of an int64 SpMV row ran 1.4x slower on this machine);
- no loop around it steps a sparse level: a sum per stored entry (SDDMM's dot products) is left to
  codegen/jam.py, which runs several side by side. Measured on a 4,000² SDDMM of density 0.005: lanes took
  0.37 against jam's 0.27 ms at K = 8, but 0.71 against 0.95 ms at K = 32 and 1.27 against 1.82 at K = 64;
  nothing yet chooses by K, so the tuned jam is kept.
Element-wise loops need no mark: the compiler vectorises them by itself, their order unchanged. With
floating-point contraction off (`config.fp_contract`), which promises every sum as the plain loop's, bit
for bit, no loop is marked.
"""

from __future__ import annotations

from ..cin.ast import Forall, ParallelUnit, Race, Stmt, Where, accesses, assignments, walk
from ..cin.provenance import split_relations
from ..config import fp_contract
from ..errors import ScheduleError
from ..format import Layout
from .commands.parallel import Parallelize


def vectorized(stmt: Stmt) -> Stmt:
    """`stmt` with each of its innermost contiguous dense sums over SIMD lanes (the module's rule)."""
    loop, relations = split_relations(stmt)
    if relations or not fp_contract():  # split or fused loops: a schedule's, not the default's
        return stmt
    for inner in list(_under_dense_loops(loop)):
        try:
            loop, _ = Parallelize(inner.index, ParallelUnit.CPU_VECTOR, Race.TEMPORARY).apply(loop, ())
        except ScheduleError:
            continue
    return loop


def _under_dense_loops(node):
    """The loops at or below `node` that `_lanes_sum` marks, none below a loop that steps a sparse level."""
    if isinstance(node, Forall):
        if _lanes_sum(node):
            yield node
            return
        if _steps_sparse(node):
            return
    for child in node.children():
        yield from _under_dense_loops(child)


def _steps_sparse(loop: Forall) -> bool:
    """Whether some operand stores `loop`'s coordinates in a level that is not full (a compressed row)."""
    return any(not read.level_of_mode(read.indices.index(loop.index)).properties.full
               for read in accesses(loop.body) if loop.index in read.indices)


def _lanes_sum(loop: Forall) -> bool:
    if loop.parallel is not None or loop.unroll or any(isinstance(n, (Forall, Where)) for n in walk(loop.body)):
        return False
    written = list(assignments(loop.body))
    if not written or any(not a.accumulate or a.reduce != "add" or loop.index in a.lhs.indices for a in written):
        return False
    read = [a for a in accesses(loop.body) if loop.index in a.indices]
    return bool(read) and all(_contiguous(a, loop) for a in read)


def _contiguous(read, loop: Forall) -> bool:
    fmt = read.tensor.format
    return (not isinstance(fmt, Layout) and read.level_indices[-1] == loop.index
            and loop.index not in read.level_indices[:-1] and fmt.levels[-1].properties.full)
