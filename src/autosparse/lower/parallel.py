"""OpenMP regions around parallel loops (`parallelize(i, unit, race)`): the pragma and its clauses,
the per-thread copies a `temporary` race strategy sums after the loop, each thread's own `where`
temporaries, and the failure protocol inside a region (no code may leave one, so a failure raises the
region's flag and skips to the end of the iteration).

It decides only what surrounds a loop; the loop itself is emitted by its caller inside the yielded scope,
over the rows `row_split` deals the running thread where it gives a split.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from ..cin.ast import Access, Forall, ParallelUnit, Race, Where, accesses, assignments, identity, walk
from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import (Decl, Expr, Literal, OmpCritical, OmpFor, OmpParallel, OmpSimd, Reduction, Schedule,
                             Section, SizeOf, Var, and_, call, cast, gt, increment, lt, not_)
from ..errors import ScheduleError
from ..notation.ast import IndexVar
from ..runtime.abi import ReturnCode
from .context import Lowering, Scope
from .reads import ROOT, ReadLevel
from .writes import Target, combine, combiner, start_value


@dataclass(frozen=True)
class RowSplit:
    """A parallel loop over a run of rows dealt to threads as contiguous runs of about equal work, thread t
    the t-th run, instead of equal counts of rows (OpenMP's static schedule). The rows are a whole
    dimension, a row's work one plus its stored entries in the CSR-like operands the loop drives; or they
    are one operand's positions [`begin`, `end`) (TTV, TTM over a CSF tensor's first level), a position's
    work one plus the entries stored below it. Power-law rows defeat the static split (R-MAT SpMV at 2
    threads: 53.2 ms static, 41.9 ms split by entries on an idle 2-core run, docs/notes/perf30-parallel-2.md);
    contiguous runs in thread order keep what the chunked assembly of a sparse result relies on, in
    every phase alike."""

    index: IndexVar
    work_before: Callable[[Expr], Expr]  # the work before a row, given its C expression (increasing with it)
    begin: Expr
    end: Expr
    # given a position, whether it repeats the coordinate of the one before (sorted COO's rows): a run of
    # one coordinate is one iteration, so each thread's bounds move on to the end of the run they fall in
    continues_run: Callable[[Expr], Expr] | None = None

    @property
    def whole_dimension(self) -> bool:
        """Whether the rows are a whole dimension, whose bounds the kernel knows before any loop runs (one
        operand's positions are bounded by a loop's position variables, declared in each phase)."""
        return self.begin == Literal(0) and self.end == Var(names.extent(self.index))

    @property
    def first(self) -> Var:
        return Var(names.user(self.index, "first"))

    @property
    def stop(self) -> Var:
        return Var(names.user(self.index, "stop"))

    def deal(self, b: CBuilder, thread: Expr, team: Expr) -> None:
        """Declare the first and stop rows of thread `thread` of `team`: the rows before which that
        thread's and the next one's shares of the work begin (binary searches in the operands' pos)."""
        start = b.decl("const int64_t", names.user(self.index, "work0"), self.work_before(self.begin))
        total = b.decl("const int64_t", names.user(self.index, "work"), self.work_before(self.end) - start)
        part = b.decl("const int64_t", names.user(self.index, "part"), thread)
        parts = b.decl("const int64_t", names.user(self.index, "parts"), team)
        for bound, share in ((self.first, part), (self.stop, part + 1)):
            b.decl("int64_t", bound.name, self.begin)
            with b.block():
                goal = b.decl("const int64_t", "goal", start + total * share // parts)
                high = b.decl("int64_t", "high", self.end)
                with b.while_(lt(bound, high)):
                    middle = b.decl("const int64_t", "middle", bound + (high - bound) // Literal(2))
                    with b.if_(lt(self.work_before(middle), goal)):
                        b.assign(bound, middle + Literal(1))
                    with b.else_():
                        b.assign(high, middle)
                if self.continues_run is not None:
                    with b.while_(and_(gt(bound, self.begin), lt(bound, self.end), self.continues_run(bound))):
                        b.expr(increment(bound))


def row_split(cx: Lowering, stmt: Forall, whole: bool) -> RowSplit | None:
    """How a parallel loop over a whole dimension (`whole`) deals its rows: by work when it drives CSR-like
    operands (a dense level over one that is not: its pos ascends with the rows), else None (OpenMP's schedule)."""
    if not whole or stmt.parallel is None or stmt.parallel.unit is not ParallelUnit.CPU_THREAD:
        return None
    written = {a.lhs.tensor.name for a in assignments(stmt)}
    found = (_rows_and_entries(cx, read, stmt) for read in accesses(stmt.body) if read.tensor.name not in written)
    drivers = tuple(levels for levels in found if levels is not None)
    if not drivers:
        return None
    return RowSplit(stmt.index, lambda row: sum((entries.range(rows.locate(ROOT, row))[0] for rows, entries in drivers),
                                                row),
                    Literal(0), Var(names.extent(stmt.index)))


def _rows_and_entries(cx: Lowering, read: Access, stmt: Forall) -> tuple[ReadLevel, ReadLevel] | None:
    if read.level_indices[:1] != (stmt.index,):
        return None
    levels = cx.plan.read_levels(read)
    if len(levels) < 2 or not levels[0].full or levels[1].full or not levels[1].steppable:
        return None
    return levels[0], levels[1]


#: The OpenMP reduction of each reduction operator: each thread's copy starts at the identity.
OMP_REDUCTIONS = {"add": "+", "multiply": "*", "minimum": "min", "maximum": "max", "logical_and": "&&",
                  "logical_or": "||"}


@contextmanager
def parallel_region(cx: Lowering, stmt: Forall, sparse: list, scope: Scope,
                    schedule: Schedule = Schedule(), rows: RowSplit | None = None) -> Iterator[Scope]:
    """Around a loop over a whole dimension (or one operand's positions) run in parallel, the OpenMP code;
    yields the scope of its body.

    Iterations share what is declared outside the loop: the results, and the registers of reductions
    around it (this loop's own, when it is the reduction). `no_races` promises they do not race, so a
    register that every iteration adds into is refused; `ignore_races` leaves them alone;
    `atomics` makes every sum into them atomic (a reduction other than the sum is refused); `temporary`
    gives each thread (or SIMD lane) copies starting at the reduction's identity (zeroed for a sum),
    combined by its operator after the loop: registers by OpenMP (`reduction(+: ...)`, `reduction(min:
    ...)`), a dense result through one heap copy per thread, combined into the result one thread at a
    time. The temporaries of `where`s
    inside are each thread's own, allocated when its region begins. A result assembled by appending is
    written in parallel only by the loop whose threads assemble it in chunks (`cx.plan.region`; the kernel
    opens the region around all phases). Loops co-iterating a sparse operand (its position carries from iteration
    to iteration) are refused. Given `rows`, the caller's loop runs from `rows.first` to `rows.stop`, which
    the region declares: the running thread's rows where no OpenMP clause needs a worksharing loop, else
    all of them, shared by `omp for`."""
    command = f"parallelize({stmt.index}, {stmt.parallel.unit.value}, {stmt.parallel.race.value})"
    unit, race = stmt.parallel.unit, stmt.parallel.race
    if unit is ParallelUnit.CPU_VECTOR and race is Race.ATOMICS:
        raise ScheduleError(f"{command}: SIMD lanes have no atomics (use temporary)")
    if sparse:
        raise ScheduleError(f"{command}: the loop co-iterates {sparse[0].access}, whose position carries from one "
                            f"iteration to the next")
    threaded = temporaries_inside(stmt)
    if threaded and unit is ParallelUnit.CPU_VECTOR:
        raise ScheduleError(f"{command}: a where inside a SIMD loop would share its temporary between lanes")
    chunked = cx.plan.region == stmt.index
    registers = {n: r for n, (r, _) in scope.accumulators.items()}
    written = dict.fromkeys(a.lhs.tensor.name for a in assignments(stmt.body) if a.lhs.tensor.name not in threaded)
    for name in written:
        if name not in registers and not cx.plan.targets[name].parallel_safe() and not chunked:
            raise ScheduleError(f"{command}: {name} is assembled by appending, which threads assemble only in "
                                f"chunks of rows: the parallel loop must be the outermost one, over {name}'s first "
                                f"level, and that level dense (rows of CSR)")
    shared = [registers[n] for n in written if n in registers]
    if race is Race.NO_RACES and shared and not cx.plan.counting:
        raise ScheduleError(f"{command}: every iteration over {stmt.index} adds into one register ({shared[0]}, "
                            f"a sum), so they would race: use atomics or temporary (ignore_races accepts a wrong sum)")
    # a count phase sums no values: its registers are not even declared
    summing = race is Race.TEMPORARY and not cx.plan.counting
    reduces = {a.lhs.tensor.name: a.reduce for a in assignments(stmt.body)}
    summed = [n for n in written if n in registers] if summing else []
    flags = [scope.accumulators[n][1] for n in written if n in registers and scope.accumulators[n][1]]
    clauses = [Reduction(OMP_REDUCTIONS[op], tuple(Var(registers[n]) for n in summed if reduces[n] == op))
               for op in dict.fromkeys(reduces[n] for n in summed)] + \
              ([Reduction("|", tuple(map(Var, flags)))] if flags else [])
    copied = [n for n in written if n not in registers and cx.plan.targets[n].reduction_size() is not None
              and race is Race.TEMPORARY]
    checked = _loads_checked(cx, stmt)
    if checked and (chunked or rows is None or unit is ParallelUnit.CPU_VECTOR):
        raise ScheduleError(f"{command}: the loop reads coordinates it checks (`Types.checked`), which fail the "
                            f"call from a thread only where it runs rows of its own")
    if unit is ParallelUnit.CPU_VECTOR:
        if copied:  # lanes, not threads: a copy per lane is OpenMP's to make
            sections = {n: Section(Var(names.vals(n)), cx.plan.targets[n].reduction_size()) for n in copied}
            clauses += [Reduction(OMP_REDUCTIONS[op], tuple(sections[n] for n in copied if reduces[n] == op))
                        for op in dict.fromkeys(reduces[n] for n in copied)]
        cx.b.pragma(OmpSimd(tuple(clauses)))
        yield replace(scope, parallel=True, stops=frozenset())
        return
    # no `break` out of a worksharing or SIMD loop (OpenMP): the registers around stop nowhere inside
    atomic = replace(scope, atomic=race is Race.ATOMICS, parallel=True, dealt=False, stops=frozenset())
    if chunked:  # inside the kernel's region, which made the temporaries and deals the rows once for all phases
        if rows is not None and not clauses and rows.whole_dimension:
            cx.logs.region_rows = rows
        else:
            _shared_loop(cx.b, rows, Schedule(), tuple(clauses))
        yield atomic
        return
    if not copied and not threaded:
        threads = None if cx.plan.num_threads is None else Literal(cx.plan.num_threads)
        if rows is None:
            cx.b.pragma(OmpParallel(threads, schedule, tuple(clauses)))
            yield atomic
            return
        if not checked:
            cx.b.pragma(OmpParallel(threads, None, tuple(clauses)))
            with cx.b.block():
                rows.deal(cx.b, call("omp_get_thread_num"), call("omp_get_num_threads"))
                yield atomic
            return
        failed = cx.fresh("failed")  # a thread that finds a coordinate out leaves its rows, the call fails after
        with cx.b.block():
            cx.b.decl("int", failed, 0)
            cx.b.pragma(OmpParallel(threads, None, tuple(clauses)))
            with cx.b.block(), cx.b.failing_to(failed, cx.fresh("done")):
                rows.deal(cx.b, call("omp_get_thread_num"), call("omp_get_num_threads"))
                yield replace(atomic, dealt=True)
            cx.b.fail(Var(failed), Var(failed))
        return
    failed = cx.fresh("failed")
    with cx.b.block():
        threads = cx.b.decl("const int", "threads", cx.plan.num_threads or call("omp_get_max_threads"))
        cx.b.decl("int", failed, 0)
        for name in copied:  # each thread's copy starts at the reduction's identity: zeroed for a sum
            ctype, size = cx.plan.value_types[name], cx.plan.targets[name].reduction_size()
            length = cast("size_t", threads) * size
            copies = cx.b.decl(ctype.pointer(), _copies(name), call("calloc", length, SizeOf(ctype))
                               if reduces[name] == "add" else call("malloc", length * SizeOf(ctype)))
            cx.b.fail(not_(copies), ReturnCode.OUT_OF_MEMORY)
            if reduces[name] != "add":
                with cx.b.for_range("p", 0, length):
                    cx.b.assign(copies[Var("p")], start_value(identity(reduces[name]), ctype))
            cx.b.decl(ctype.pointer(restrict=True), _shared(name), Var(names.vals(name)))
        cx.b.pragma(OmpParallel(threads, None, tuple(clauses)))
        with cx.b.block():
            for name in copied:  # shadows the result: the body stores into this thread's copy
                ctype, size = cx.plan.value_types[name], cx.plan.targets[name].reduction_size()
                cx.b.decl(ctype.pointer(restrict=True), names.vals(name),
                          Var(_copies(name)) + cast("size_t", call("omp_get_thread_num")) * size)
            with thread_temporaries([cx.plan.targets[n] for n in threaded], failed, cx.fresh("allocated"), cx.b):
                with cx.b.if_(cx.b.agreed(failed, cx.fresh("ready"))), cx.b.failing_to(failed, cx.fresh("done")):
                    _shared_loop(cx.b, rows, schedule, ())
                    yield replace(atomic, dealt=rows is not None)
                if copied:
                    cx.b.pragma(OmpCritical())
                    with cx.b.block():
                        for name in copied:
                            p, size = Var("p"), cx.plan.targets[name].reduction_size()
                            with cx.b.for_(Decl("int64_t", p.name, Literal(0)), lt(p, size), increment(p)):
                                combine(cx.b, Var(_shared(name))[p], Var(names.vals(name))[p],
                                        combiner(reduces[name], cx.plan.value_types[name]))
        for name in copied:
            cx.b.expr(call("free", Var(_copies(name))))
        cx.b.fail(Var(failed), Var(failed))


def _loads_checked(cx: Lowering, stmt: Forall) -> bool:
    """Whether the loop, or one inside it, loads coordinates the kernel checks (`Types.checked`)."""
    inside = {node.index for node in walk(stmt) if isinstance(node, Forall)}
    return any(level.checked and index in inside for read in accesses(stmt) for level, index in
               zip(cx.plan.read_levels(read), read.level_indices))


def _shared_loop(b: CBuilder, rows: RowSplit | None, schedule: Schedule, clauses: tuple) -> None:
    """Inside a region, before the loop its threads share: each thread's rows (`rows`, no clause), or
    `omp for` over all of them."""
    if rows is not None and not clauses:
        rows.deal(b, call("omp_get_thread_num"), call("omp_get_num_threads"))
        return
    if rows is not None and rows.continues_run is not None:
        raise ScheduleError(f"a parallel loop over repeated coordinates ({rows.index}) cannot share a reduction "
                            f"among threads: OpenMP would split a run of one coordinate")
    if rows is not None:
        b.decl("const int64_t", rows.first.name, rows.begin)
        b.decl("const int64_t", rows.stop.name, rows.end)
    b.pragma(OmpFor(schedule, clauses))


def _copies(result: str) -> str:
    """The threads' zeroed copies of a dense result (parallelize with `temporary`)."""
    return names.user(result, "copies")


def _shared(result: str) -> str:
    """The result itself, while its name holds the running thread's copy."""
    return names.user(result, "shared")


@contextmanager
def thread_temporaries(workspaces: list[Target], flag: str, label: str, b: CBuilder) -> Iterator[None]:
    """Inside a parallel region: each thread's own temporaries, allocated before the body (a failure
    raising `flag`) and released after it."""
    with b.failing_to(flag, label):
        for workspace in workspaces:
            workspace.allocate(b)
    yield
    for workspace in workspaces:
        workspace.release(b)


def temporaries_inside(stmt: Forall) -> tuple[str, ...]:
    """The temporaries of the `where`s inside a loop: a parallel loop gives each thread its own."""
    return tuple(dict.fromkeys(a.lhs.tensor.name for node in walk(stmt.body) if isinstance(node, Where)
                               for a in assignments(node.producer)))


@contextmanager
def iteration(cx: Lowering, stmt: Forall, scope: Scope) -> Iterator[None]:
    """The body of a loop's iteration; a failure in a parallel one skips to its end (no code may leave
    an OpenMP region, nor a worksharing loop), the region's flag raised. A thread running rows of its own
    (`Scope.dealt`) leaves them for the region's end instead: a loop whose step is in its body (a run's end
    in COO) would otherwise never end."""
    if stmt.parallel is None or stmt.parallel.unit is not ParallelUnit.CPU_THREAD or cx.b.failure_flag is None \
            or scope.dealt:
        yield
        return
    with cx.b.failing_to(cx.b.failure_flag, cx.fresh(names.generated(cx.plan.phase.value, "next"))):
        yield
