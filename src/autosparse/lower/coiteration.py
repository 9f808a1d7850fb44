"""Lattice-driven co-iteration (LOWERING.md §3): which iterators a forall steps, locates and writes
(`survey`), its iteration lattice, and the merge loops that walk the lattice's points:

    while (pA < pA_end && pB < pB_end) { i = min(iA, iB); if (iA == i && iB == i) {...; pA++; pB++} else if ... }

with the find loops of `coiterate(i, binary|hash|bitmap)` (finds.py) and the parallel loop over one
operand's positions split among threads. The body of each case is lowered through `cx.lower` with the
scope of that point (its stepped levels positioned, its written levels entered).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from ..cin.ast import Access, Forall, Protocol, Race, Sequence, accesses, assignments
from ..cin.rewrite import without
from ..codegen import names
from ..codegen.c_ast import (Continue, Decl, Expr, Unroll, Var, and_, cast, eq, ge, gt, increment, lt, ne,
                             ternary)
from ..coiterate import lattice as lat
from ..errors import ScheduleError
from ..format.level import Capability
from ..notation.ast import IndexVar
from ..runtime.abi import ReturnCode
from . import finds
from .context import Lowering, Scope, count_iteration
from .outputs import dense_operand
from .parallel import RowSplit, iteration, parallel_region
from .reads import ROOT, Position, TensorLevel


def coiterate(cx: Lowering, stmt: Forall, loop: Loop, lattice: lat.Lattice, scope: Scope) -> None:
    """The loops of a sparse forall: one merge loop per lattice point, or (the schedule asking to find
    some operands' coordinates in others') the passes of a find loop."""
    command = f"coiterate({loop.index})"
    level_of = lambda it: cx.plan.read_levels(it.access)[it.level]
    roles = finds.roles(stmt.coiterate, lattice, lambda it: moved_by(it, scope), level_of, command)
    if roles is None:
        for point in lattice:
            sparse_loop(cx, stmt, loop, lattice, point, scope)
    else:
        finds.check(roles, lattice, level_of, bool(loop.written), command)
        for number in range(len(roles.drivers)):
            find_pass(cx, stmt, loop, lattice, roles, number, scope)


@dataclass(frozen=True)
class Loop:
    """What one forall touches: the iterators it steps, the levels it locates, the levels it writes."""

    index: IndexVar
    stepped: Mapping[Access, lat.Iterator]
    located: tuple[tuple[Access, int], ...]
    written: tuple[tuple[str, int], ...]


def _next_level(access: Access, scope: Scope) -> int:
    level = 0
    while (access, level) in scope.reads:
        level += 1
    return level


def survey(cx: Lowering, stmt: Forall, scope: Scope) -> Loop:
    index, stepped, located, written = stmt.index, {}, [], []
    for access in dict.fromkeys(accesses(stmt.body)):
        if dense_operand(access):
            continue
        level = _next_level(access, scope)
        levels = access.level_indices
        if level < len(levels) and levels[level] == index:
            if access.level_protocols[level] is Protocol.STEP and cx.plan.read_levels(access)[level].steppable:
                stepped[access] = lat.Iterator(access, level, cx.plan.read_levels(access)[level].full)
            else:
                located.append((access, level))
        elif index in levels[level:]:
            raise ScheduleError(f"Expected {access} to be read in its storage order (format "
                                f"{access.tensor.format}), but loop {index} comes before {levels[level]}")
    for assign in dict.fromkeys(assignments(stmt.body)):
        name, levels = assign.lhs.tensor.name, assign.lhs.level_indices
        if cx.plan.targets[name].random_access:
            continue
        level = next((k for k in range(len(levels)) if (name, k) not in scope.writes), len(levels))
        if level < len(levels) and levels[level] == index:
            written.append((name, level))
        elif index in levels[level:]:
            raise ScheduleError(f"Expected {assign.lhs} to be written in its storage order (format "
                                f"{assign.lhs.tensor.format}), but loop {index} comes before {levels[level]}")
    return Loop(index, stepped, tuple(located), tuple(dict.fromkeys(written)))


def iterator_names(cx: Lowering, it: lat.Iterator) -> tuple[str, str, str, str]:
    ident = cx.plan.access_ids[it.access]
    return (names.position(ident, it.level), names.position_end(ident, it.level),
            names.coordinate_of(ident, it.level), names.segment_end(ident, it.level))


def sparse_iterators(lattice: lat.Lattice) -> list[lat.Iterator]:
    return list(dict.fromkeys(it for point in lattice for it in sorted(point.sparse, key=str)))


def declare_iterators(cx: Lowering, lattice: lat.Lattice, scope: Scope) -> None:
    for it in sparse_iterators(lattice):
        q, end, _, _ = iterator_names(cx, it)
        parent = scope.reads.get((it.access, it.level - 1), ROOT)
        level = cx.plan.read_levels(it.access)[it.level]
        begin, last = level.range(parent)
        cx.b.decl("int64_t", q, begin)
        cx.b.decl("const int64_t", end, last)
        if level.base(parent):
            base, value = level.base(parent)
            cx.b.decl("const int64_t", base, value)


def load(cx: Lowering, it: lat.Iterator, guard: bool, index: Expr | None = None) -> None:
    """Load the iterator's coordinate (-1 past its end when `guard`) and, for a non-unique level, find
    the end of the run of entries sharing it."""
    q, end, c, seg = (Var(name) for name in iterator_names(cx, it))
    level = cx.plan.read_levels(it.access)[it.level]
    coordinate = level.coordinate(q)
    cx.b.decl("const int64_t", c.name, ternary(lt(q, end), coordinate, -1) if guard else coordinate)
    if level.checked:  # one unsigned compare: a negative coordinate counts as too large
        out = ge(cast("uint64_t", c), cast("uint64_t", Var(level.dim)))
        cx.b.fail(and_(lt(q, end), out) if guard else out, ReturnCode.COORDINATE_OUT)
    if not level.unique:
        at = eq(c, c if index is None else index)
        cx.b.decl("int64_t", seg.name, q + at)
        with cx.b.if_(at):
            with cx.b.while_(and_(lt(seg, end), eq(level.coordinate(seg), c))):
                cx.b.expr(increment(seg))
            if level.checked and level.ordered:
                _check_next_run(cx, level, seg, end, c)


def _check_next_run(cx: Lowering, level: TensorLevel, seg: Var, end: Var, c: Var) -> None:
    """Where a level that promises increasing runs (sorted COO's rows) has not been checked, compare the
    run after the one just taken with it: a decrease fails the call (ReturnCode.OUT_OF_ORDER). A loop
    stepping the level alone, or against a dense loop, takes runs from the first on, each after the one
    before, up to one that goes wrong; a thread's share ends where the next one's starts, and the run
    after it is compared all the same. So every pair of neighbours is compared, across threads' shares
    too, and no entry is left behind unread (merges, which may stop early, refuse such levels)."""
    cx.b.fail(and_(lt(seg, end), lt(level.coordinate(seg), c)), ReturnCode.OUT_OF_ORDER)


def advance(cx: Lowering, it: lat.Iterator, index: Expr) -> None:
    q, _, c, seg = (Var(name) for name in iterator_names(cx, it))
    if not cx.plan.read_levels(it.access)[it.level].unique:
        cx.b.assign(q, seg)
    else:
        cx.b.assign(q, eq(c, index), "+=")


def require_ordered(cx: Lowering, iterators, loop: Loop, descending: bool = False) -> None:
    """Merging, or checking coordinates against a dense loop, needs iterators in increasing order (or a
    merge of iterators that all decrease: `descending`)."""
    for it in iterators:
        level = cx.plan.read_levels(it.access)[it.level]
        if level.unique:  # `load` compares only the runs of a non-unique level with the runs after them
            level.searched(f"a dense loop over {loop.index}")
        if not (level.descending if descending else level.ordered):
            raise ScheduleError(f"Expected {'decreasing' if descending else 'increasing'} levels to co-iterate over "
                                f"{loop.index}, but {it.access} is stepped through a level whose siblings are "
                                f"{_order_word(level)}: locate it, or find it with coiterate({loop.index}, hash)")


def _order_word(level) -> str:
    return "increasing" if level.ordered else "decreasing" if level.descending else "unordered"


def sparse_loop(cx: Lowering, stmt: Forall, loop: Loop, lattice: lat.Lattice, point: lat.Point, scope: Scope,
                span: tuple[Expr, Expr] | None = None) -> None:
    """One loop per lattice point: a plain `for` over a lone iterator (over the positions [`span`) of
    a thread's share when the loop is parallel), else a merge `while`."""
    index = Var(names.coordinate(loop.index))
    cases = lat.sub_points(lattice, point)
    iterators = sorted(point.sparse, key=str)
    if len(iterators) == 1 and len(cases) == 1:
        it = iterators[0]
        q, end, c, seg = (Var(name) for name in iterator_names(cx, it))
        level = cx.plan.read_levels(it.access)[it.level]
        # a result level in no order itself (`ds~`) takes the coordinates in the order they come
        in_order = [n for n, k in loop.written if cx.plan.targets[n].levels[k].properties.ordered]
        if in_order and not level.ordered:
            raise ScheduleError(f"Expected the loop over {loop.index}, which appends to "
                                f"{', '.join(in_order)}, to visit coordinates in increasing order, "
                                f"but it steps {it.access}, whose siblings are {_order_word(level)}: write into a "
                                f"dense result, or precompute into a workspace")
        if span is not None:
            step = increment(q) if level.unique else None  # a run's end is the next position (`seg`)
            header = cx.b.for_(Decl("int64_t", q.name, span[0]), lt(q, span[1]), step)
        else:
            header = cx.b.for_(None, lt(q, end), increment(q)) if level.unique else cx.b.while_(lt(q, end))
        if stmt.unroll:
            cx.b.pragma(Unroll(stmt.unroll))
        with header, iteration(cx, stmt, scope):
            cx.count(f"∀{loop.index} over {it.access}")
            vacant = level.vacant(q)
            if vacant:
                with cx.b.if_(vacant):
                    cx.b.add(Continue())
            load(cx, it, guard=False)
            cx.b.decl("const int64_t", index.name, c)
            case_body(cx, stmt, loop, point, scope)
            if not level.unique:
                cx.b.assign(q, seg)
        return
    descending = all(cx.plan.read_levels(it.access)[it.level].descending for it in iterators) and not loop.written
    for it in iterators:  # a merge stops where one iterator ends: the others' rest would go unchecked
        cx.plan.read_levels(it.access)[it.level].searched(f"a merge over {loop.index}")
    require_ordered(cx, iterators, loop, descending)
    running = and_(*(lt(Var(iterator_names(cx, it)[0]), Var(iterator_names(cx, it)[1])) for it in iterators))
    with cx.b.while_(running):
        cx.count(f"∀{loop.index} merge")
        coordinates = []
        for it in iterators:
            load(cx, it, guard=False)
            coordinates.append(Var(iterator_names(cx, it)[2]))
        smallest, sooner = coordinates[0], gt if descending else lt
        for c in coordinates[1:]:
            smallest = ternary(sooner(c, smallest), c, smallest)
        cx.b.decl("const int64_t", index.name, smallest)
        for it in iterators:
            if not cx.plan.read_levels(it.access)[it.level].unique:
                q, _, c, seg = (Var(name) for name in iterator_names(cx, it))
                with cx.b.if_(ne(c, index)):
                    cx.b.assign(seg, q)
        unique = [it for it in iterators if cx.plan.read_levels(it.access)[it.level].unique]
        point_cases(cx, stmt, loop, lattice, cases, scope, advanced=unique)
        for it in iterators:
            if it not in unique:
                advance(cx, it, index)


def point_cases(cx: Lowering, stmt: Forall, loop: Loop, lattice: lat.Lattice, cases: lat.Lattice, scope: Scope,
                found: Mapping[lat.Iterator, str] | None = None, advanced: Sequence[lat.Iterator] = ()) -> None:
    """if (the iterators of the first point are at the coordinate) ... else if (the next point's) ...:
    merged iterators are when their coordinate is the loop's; `found` ones when their position is found
    (the driver of a find loop always is). The `advanced` iterators (unique levels of a merge) step
    past the coordinate inside each case (see `_advance_in_case`)."""
    index = Var(names.coordinate(loop.index))
    conditions = []
    for point in cases:
        iterators = sorted(point.sparse, key=str)
        present = [ge(Var(found[it]), 0) for it in iterators if it in found] if found is not None \
            else [eq(Var(iterator_names(cx, it)[2]), index) for it in iterators]
        conditions.append(and_(*present) if present else None)
    if found is None and len(cases) == 1 and len(cases[0].sparse) <= 1 and not lat.dense_loop(lattice):
        conditions = [None]  # the loop visits only this point's coordinates
    _branches(cx, stmt, loop, list(zip(conditions, cases)), scope, found or {}, tuple(advanced), ())


def _branches(cx: Lowering, stmt: Forall, loop: Loop, branches: list[tuple[Expr | None, lat.Point]], scope: Scope,
              found: Mapping[lat.Iterator, str], advanced: tuple[lat.Iterator, ...], earlier: lat.Lattice) -> None:
    """if (first condition) {first body} else if (second) ... ; a branch without a condition is the last
    reached (the else, or the driver alone of a find loop). When no case takes the coordinates some
    advanced iterators may hold alone (a product's), a last else steps them."""
    (condition, point), rest = branches[0], branches[1:]
    if condition is None:
        case_body(cx, stmt, loop, point, scope, found)
        _advance_in_case(cx, advanced, point.sparse, earlier, loop)
        return
    with cx.b.if_(condition):
        case_body(cx, stmt, loop, point, scope, found)
        _advance_in_case(cx, advanced, point.sparse, earlier, loop, at=point.sparse)
    if rest:
        with cx.b.else_():
            _branches(cx, stmt, loop, rest, scope, found, advanced, (*earlier, point))
    elif any(not _absent(it, frozenset(), (*earlier, point)) for it in advanced):
        with cx.b.else_():
            _advance_in_case(cx, advanced, frozenset(), (*earlier, point), loop)


def _advance_in_case(cx: Lowering, advanced: tuple[lat.Iterator, ...], present: frozenset[lat.Iterator],
                     earlier: lat.Lattice, loop: Loop, at: frozenset[lat.Iterator] = frozenset()) -> None:
    """Step the advanced iterators past the coordinate inside the case that handled it: `q++` for those the
    case's condition found `at` it, nothing for those an earlier case rules out, `q += (c == i)` for the
    rest. The branches are predictable where the operands' patterns agree (banded sums and products), and
    a position that follows a branch, unlike one computed from the loaded coordinates, does not make each
    iteration's loads wait for the previous ones: 2.2x on a banded sum."""
    index = Var(names.coordinate(loop.index))
    for it in advanced:
        if it in at:
            cx.b.expr(increment(Var(iterator_names(cx, it)[0])))
        elif not _absent(it, present, earlier):
            advance(cx, it, index)


def _absent(it: lat.Iterator, present: frozenset[lat.Iterator], earlier: lat.Lattice) -> bool:
    """Whether the iterator cannot be at the coordinate when the `present` ones are and the `earlier`
    cases' conditions failed: one of them needs only it besides those present."""
    return any(it in point.sparse and point.sparse <= present | {it} for point in earlier)


def case_body(cx: Lowering, stmt: Forall, loop: Loop, point: lat.Point, scope: Scope,
              found: Mapping[lat.Iterator, str] = {}) -> None:
    """The body with the iterators outside `point` absent (their accesses read zero), the stepped, found
    and located levels positioned, and the written levels entered (then committed)."""
    index = names.coordinate(loop.index)
    absent = [a for a, it in loop.stepped.items() if it not in point.iterators]
    body = without(stmt.body, absent)
    if body is None:
        return
    reads = dict(scope.reads)
    for access, it in loop.stepped.items():
        if it in point.iterators:
            level = cx.plan.read_levels(access)[it.level]
            parent = scope.reads.get((access, it.level - 1), ROOT)
            if it.full:
                reads[(access, it.level)] = level.locate(parent, Var(index))
            elif it in found:
                reads[(access, it.level)] = Position(level.stepped(Var(found[it]), Var(index)),
                                                     None if level.unique else Var(names.part(found[it], "end")))
            else:
                q, _, c, seg = iterator_names(cx, it)
                reads[(access, it.level)] = Position(level.stepped(Var(q), Var(c)), None if level.unique else Var(seg))
    for access, level_number in loop.located:
        parent = scope.reads.get((access, level_number - 1), ROOT)
        reads[(access, level_number)] = cx.plan.read_levels(access)[level_number].locate(parent, Var(index))
    writes, flags, entered = dict(scope.writes), dict(scope.flags), []
    for name, level in loop.written:
        target = cx.plan.targets[name]
        parent = scope.writes.get((name, level - 1), ROOT)
        target.bind(level, Var(index), cx.b)
        position = target.enter(level, Var(index), parent, reads, cx.b)
        writes[(name, level)] = position
        entered.append((name, level, parent, position, flags.get(name)))
        if target.flag(level):
            flags[name] = target.flag(level)
    revisits = scope.revisits or any(not level.unique and not level.ordered and not level.descending
                                     for level in (cx.plan.read_levels(it.access)[it.level] for it in point.sparse))
    cx.lower(body, replace(scope, reads=reads, writes=writes, flags=flags, loops=(*scope.loops, loop.index),
                              revisits=revisits))
    for name, level, parent, position, parent_flag in reversed(entered):
        cx.plan.targets[name].leave(level, parent, position, cx.b, parent_flag)


def moved_by(it: lat.Iterator, scope: Scope) -> int:
    """The depth of the innermost loop around that moves the iterator's segment (-1: none does)."""
    above = it.access.level_indices[:it.level]
    return max((depth for depth, index in enumerate(scope.loops) if index in above), default=-1)


def find_pass(cx: Lowering, stmt: Forall, loop: Loop, lattice: lat.Lattice, roles: finds.Roles, number: int,
              scope: Scope) -> None:
    """One pass of a find loop (finds.py): walk the driver's segment; at each coordinate, skip it when an
    earlier pass's driver holds it, else find it in the other operands and run the case of those
    present."""
    index = names.coordinate(loop.index)
    driver = roles.drivers[number]
    q, end, c, seg = (Var(name) for name in iterator_names(cx, driver))
    level = cx.plan.read_levels(driver.access)[driver.level]
    order = finds.order_of(level)
    with cx.b.block():
        if number:  # an earlier pass may have searched through the driver
            cx.b.assign(q, level.range(scope.reads.get((driver.access, driver.level - 1), ROOT))[0])
        finders = {it: _finder(cx, it, roles.strategy[it], order, loop, scope)
                   for it in finds.sought(roles, lattice, number)}
        for finder in finders.values():
            finder.prepare(cx.logs.tables, scope.parallel, cx.b)
        with cx.b.while_(lt(q, end)):
            cx.count(f"∀{loop.index} walk {driver.access}")
            vacant = level.vacant(q)
            if vacant:
                with cx.b.if_(vacant):
                    cx.b.expr(increment(q))
                    cx.b.add(Continue())
            load(cx, driver, guard=False)
            cx.b.decl("const int64_t", index, c)
            earlier = roles.drivers[:number]
            found = {it: finders[it].find(index, cx.b) for it in earlier}
            with cx.b.when(and_(*(lt(Var(found[it]), 0) for it in earlier)) if earlier else None):
                found.update((it, finder.find(index, cx.b)) for it, finder in finders.items() if it not in found)
                point_cases(cx, stmt, loop, lattice, finds.cases(roles, lattice, number), scope, found)
            if not level.unique:
                cx.b.assign(q, seg)
            else:
                cx.b.expr(increment(q))


def _finder(cx: Lowering, it: lat.Iterator, strategy, driver_order: int, loop: Loop, scope: Scope) -> finds.Finder:
    q, end, _, _ = iterator_names(cx, it)
    level = cx.plan.read_levels(it.access)[it.level]
    segment = level.range(scope.reads.get((it.access, it.level - 1), ROOT))
    return finds.Finder(strategy, level, q, segment[0], end,
                        names.level_stem(cx.plan.access_ids[it.access], it.level), loop.index, driver_order,
                        lambda what, b: count_iteration(cx.logs.counters, b, f"∀{loop.index} {what} {it.access}"),
                        f"coiterate({loop.index})", segment if it.level == 0 else None)


def parallel_sparse_loop(cx: Lowering, stmt: Forall, loop: Loop, lattice: lat.Lattice, scope: Scope) -> None:
    """A parallel loop over one operand's stored positions (TTM over a CSF tensor's slices): each
    iteration starts from its own position, so the positions need not carry from one to the next, as a
    merge's do. Over a level that repeats coordinates (COO's rows) a thread's share ends where a run of
    one coordinate ends; in any order, one coordinate's runs may fall to two threads, so their writes
    must be atomic or into copies (`temporary`)."""
    command = f"parallelize({loop.index}, {stmt.parallel.unit.value}, {stmt.parallel.race.value})"
    point = lattice[0]
    if len(lattice) != 1 or len(point.sparse) != 1 or stmt.coiterate is not None:
        raise ScheduleError(f"{command}: the loop co-iterates {', '.join(str(a) for a in loop.stepped)}, whose "
                            f"positions carry from one iteration to the next; a parallel loop over sparse "
                            f"positions steps one operand alone")
    it, = point.sparse
    q, end = (Var(name) for name in iterator_names(cx, it)[:2])
    level = cx.plan.read_levels(it.access)[it.level]
    if not (level.unique or level.ordered) and stmt.parallel.race is Race.NO_RACES:
        raise ScheduleError(f"{command}: {it.access} repeats coordinates at this level in any order, so two threads' "
                            f"runs may write one place: use atomics or temporary")
    # Slices of a sparse operand differ in size, so each thread takes one run of consecutive slices
    # holding an equal share of the entries below: it writes one stretch of the result (its rows, in every
    # phase of a CSR result's assembly), and a skewed tensor's heavy slices are spread out. (Chunks taken
    # as threads finish were 10-20% slower on TTM.) A run of one repeated coordinate is never cut.
    continues_run = None if level.unique else (lambda p: eq(level.coordinate(p), level.coordinate(p - 1)))
    slices = RowSplit(loop.index, lambda position: position + _entries_before(cx, it, position), q, end,
                      continues_run)
    with parallel_region(cx, stmt, [], scope, rows=slices) as inner:
        sparse_loop(cx, stmt, loop, lattice, point, inner, span=(slices.first, slices.stop))


def _entries_before(cx: Lowering, it: lat.Iterator, position: Expr) -> Expr:
    """The entries an operand stores below the positions before `position` of the iterator's level,
    summed over the levels reached by following positions down (up to an offset; a dense suffix counts
    as one level): what visiting them costs, as a fiber of TTM's result costs a write besides its
    nonzeros' work. It never decreases with `position` (with one per position added, it increases,
    which splitting evenly needs: no position lies beyond the last thread's share)."""
    counts = []
    for level in cx.plan.read_levels(it.access)[it.level + 1:]:
        if not (isinstance(level, TensorLevel) and Capability.POSITION_ITERATION in level.level.capabilities):
            break
        position = level.range(Position(position))[0]
        counts.append(position)
    return sum(counts[1:], counts[0]) if counts else position
