"""The default schedule made parallel: a legalised default CIN -> the same CIN with its outermost loop
marked `parallelize(i, cpu_thread, no_races)`, when the kernel may run on more than one thread and the
loop is one that threads share well; otherwise the very same statement.

A loop is shared when every thread can write rows of its own and has work in each of them:
- it is the outermost loop and indexes the result's first stored level, which is dense (a dense result,
  or a CSR-like one, which threads assemble in chunks of rows), so no two iterations write one place;
- an iteration is worth a thread's time: a reduction runs inside it (the k of SpMV's row, of a Gustavson
  row, of an SDDMM dot product, the k, l of MTTKRP), or it is a row of an element-wise sum or product
  (memory-bound, but one thread does not draw all the bandwidth: a CSR add of 1.5 M entries a side ran
  1.1-1.2x faster on two threads of a loaded machine, docs/notes/perf30-calls.md) into a dense result or
  one whose levels below the first are all compressed (threads assemble rows of CSR; a dense level over a
  compressed one, `dds` from `dss`, shares the operand's positions, which threads cannot split); a loop
  over a vector's entries alone stays sequential;
- its iterations start on their own: every operand indexed by it is dense there, or one sparse operand
  alone is stepped (no sum beside it), whose positions the threads split into runs of equal entries
  below (TTV, MTTKRP, TTM over a CSF tensor's first level); a CSR-like result is then assembled by each
  thread in the rows of its run, the rows no iteration visits left empty (stored at the operand's
  positions where the result shares its pattern, else appended in chunks, phase by phase). Where that
  operand repeats coordinates (COO's rows), they must come in order, and the result be dense: threads
  split at rows; in any order (unsorted COO), the loop stays sequential, as scipy's `coo @ x` is.
- no hash or bitmap table inside is rebuilt as the loop runs (a table is every thread's at once): only
  the table of an operand's first level, whose one segment lowering builds before the loops, may be (the
  vector of SpMSpV under `coiterate(j, bitmap)`).
Whether the loop may be parallel at all is the `parallelize` command's to say: its checks are applied,
not repeated. Schedules written by hand come here only as commands that choose co-iteration strategies
alone (`pipeline.schedules.strategies_only`), which keep the default schedule's loops.
"""

from __future__ import annotations

from ..cin.ast import Access, Forall, ParallelUnit, Race, Stmt, Strategy, accesses, assignments, walk
from ..cin.provenance import split_relations
from ..coiterate.lattice import Iterator, dense_loop, loop_lattice
from ..errors import ScheduleError
from ..coiterate.choice import unites
from .autovector import vectorized
from .commands.parallel import Parallelize


def parallelized(stmt: Stmt, threads: int) -> Stmt:
    """`stmt` with its outermost loop parallel over `threads` threads where that pays, and its innermost
    contiguous sums over SIMD lanes (autovector.py)."""
    return vectorized(_threaded(stmt, threads))


def _threaded(stmt: Stmt, threads: int) -> Stmt:
    loop, relations = split_relations(stmt)
    if threads < 2 or relations or not _shares_well(loop):
        return stmt
    try:
        parallel, _ = Parallelize(loop.index, ParallelUnit.CPU_THREAD, Race.NO_RACES).apply(loop, relations)
    except ScheduleError:
        return stmt
    return parallel


def _shares_well(loop: Stmt) -> bool:
    if not isinstance(loop, Forall):
        return False
    result = next(a.lhs for a in assignments(loop) if not a.lhs.tensor.temporary)
    return (result.level_indices[:1] == (loop.index,) and result.tensor.format.levels[0].properties.full
            and _worth_a_thread(loop, result) and _starts_apart(loop, result) and not _tables_rebuilt(loop))


def _worth_a_thread(loop: Forall, result: Access) -> bool:
    """Work per iteration: a reduction inside, or a row of an element-wise kernel whose result threads
    can write row by row (dense below the first level, or compressed all the way down)."""
    inner = [n.index for n in walk(loop.body) if isinstance(n, Forall)]
    if any(index not in result.indices for index in inner):
        return True
    below = [level.properties.full for level in result.tensor.format.levels[1:]]
    return bool(inner) and (all(below) or not any(below))


def _tables_rebuilt(loop: Forall) -> bool:
    """Whether a loop inside finds an operand by a hash or bitmap table below the operand's first level,
    whose segment, and so its table, changes as the loops run. Of the operands a loop steps, lowering
    walks one (one asked to merge, if any) and finds the others: a table strategy below the first level is
    safe only on the one operand stepped there, with no other to walk."""
    for inner in walk(loop.body):
        if not isinstance(inner, Forall) or inner.coiterate is None:
            continue
        stepped = {read: read.level_indices.index(inner.index) for read in accesses(inner.body)
                   if inner.index in read.level_indices}
        stepped = {read: level for read, level in stepped.items()
                   if not read.tensor.format.levels[level].properties.full}
        strategy = {read: inner.coiterate.strategy(read.tensor.name) for read in stepped}
        deeper = [read for read, level in stepped.items() if level > 0]
        if (any(strategy[read] in (Strategy.HASH, Strategy.BITMAP) for read in deeper)
                and (len(deeper) > 1 or Strategy.MERGE in strategy.values())):
            return True
    return False


def _starts_apart(loop: Forall, result: Access) -> bool:
    """Each iteration can begin without the one before: no operand's position carries over `loop`, or
    one operand alone is stepped there, whose positions the threads split: with unique coordinates, or
    with coordinates repeated in order into a dense result (split at rows)."""
    levels = {read: _level_at(read, loop) for read in accesses(loop)}
    stepped = {read: level for read, level in levels.items() if level is not None and not level.properties.full}
    if not stepped:
        return True
    if len(stepped) != 1 or _sums(loop) or _whole_dimension(loop, *stepped):
        return False
    level = next(iter(stepped.values()))
    return level.properties.unique or (result.tensor.format.is_dense and not _repeated_in_any_order(level))


def _whole_dimension(loop: Forall, read: Access) -> bool:
    """Whether the loop visits coordinates where the one operand it steps stores nothing (`A < 0.5` gives
    true there, `minimum(A, 0.5)` is no product that A's absence decides): its lattice, as lowering reads
    it, is dense. Such a loop runs over the dimension and finds the operand's runs as it goes, carrying its
    position from one iteration to the next, which threads cannot split."""
    stepped = {read: Iterator(read, read.level_indices.index(loop.index), False)}
    return dense_loop(loop_lattice(loop.body, stepped, {}))


def _repeated_in_any_order(level) -> bool:
    """Coordinates repeated in any order (unsorted COO's rows): one row's runs may fall to two threads,
    which would have to add atomically or into copies of the result. On rows out of order at 2 threads
    (docs/notes/perf30-coo-3.md, section coo3), adding atomically (an atomic per entry) took 1.06-9.5x
    the sequential time; per-thread copies of y were 1.04-1.5x faster on a quiet machine but up to 2.2x
    slower under load (15 of 24 cases won), and cost a copy of y per thread. Undecided under load, such a
    loop stays sequential, as scipy's `coo @ x` is."""
    return not level.properties.unique and not level.properties.ordered


def _level_at(read: Access, loop: Forall):
    """The level of `read` that stores `loop`'s coordinates (None when it has none)."""
    return read.level_of_mode(read.indices.index(loop.index)) if loop.index in read.indices else None


def _sums(loop: Forall) -> bool:
    """Whether a sum, difference or other union (`coiterate.choice.unites`) is computed inside: beside the one
    stepped operand it would add a term the loop must visit where that operand stores nothing (a merge); an
    accumulation that adds something where its operands are absent (`max=` over fill 0) makes the loop's lattice
    dense, which `_whole_dimension` asks the lattice rule about. The terms may be written apart,
    each added into one workspace (a sum gathered from an unordered operand, `cin.concretize.unordered_merges`)."""
    added = [a.lhs.tensor.name for a in assignments(loop) if a.accumulate]
    return (any(unites(n) for a in assignments(loop) for n in walk(a.rhs))
            or len(added) != len(set(added)))
