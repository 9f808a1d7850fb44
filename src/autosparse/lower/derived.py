"""Loops over derived index variables (Senanayake et al. §4.2): the variables of `split`, `collapse`,
`pos` and bound relations. Each runs over its own range (`for (v = 0; v < its extent; v++)`, the last
tile cut short by its bound, not by a guard); once the loops over every variable made alongside it are
around, the variable it came from is recovered, up to the tensors' own indices, which the loops inside
then see fixed (`Scope.fixed`, lowered by `fixed_forall`). Also the block loops of a blocked layout's
view, and the checks that an appended result still gets its entries in order.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from typing import Callable

from ..cin.ast import Access, Assign, Forall, Stmt, Strategy, accesses
from ..cin.provenance import Bound, BoundKind, Collapse, Pos, Split
from ..codegen import names
from ..codegen.c_ast import Decl, Expr, Literal, Unroll, Var, and_, as_expr, call, eq, ge, gt, increment, le, lt
from ..coiterate import lattice as lat
from ..errors import ScheduleError
from ..notation.ast import IndexVar
from . import finds
from .coiteration import (Loop, case_body, declare_iterators, iterator_names, load, point_cases,
                          sparse_iterators, survey)
from .context import Fixed, Lowering, Scope, count_iteration
from .outputs import hoisting, store, target_position
from .parallel import iteration, parallel_region
from .reads import ROOT, Position


def derived_forall(cx: Lowering, stmt: Forall, scope: Scope) -> None:
    """for (v = 0; v < its extent; v++) over a derived variable. Once the loops over every variable made
    alongside it are around, the variable they came from is recovered, and so on up to the tensors' own
    indices, which the body then sees fixed. Bounds, not guards, cut the last tile short."""
    with cx.b.block(), hoisting(cx, stmt, scope) as (stmt, scope):
        _derived_loop(cx, stmt, scope)


def _derived_loop(cx: Lowering, stmt: Forall, scope: Scope) -> None:
    index, relation = stmt.index, scope.provenance.defining(stmt.index)
    var = Var(names.coordinate(index))
    scope, upper, recovered = _derived_range(cx, relation, index, scope)
    inner = replace(scope, derived=scope.derived | {index}, loops=(*scope.loops, index))
    in_order = not (isinstance(relation, Split) and index == relation.outer)
    track = None
    if recovered is not None:
        made, value = recovered
        if _collapsed_pos(made, scope) and stmt.parallel is None:  # search once, then follow the rows
            track = _search_row(cx, made, value(Literal(0)), scope)
            if in_order:  # the loop runs over consecutive positions
                _row_segments(cx, stmt, made, value(Literal(0)), upper, track, inner)
                return
    parallel = parallel_region(cx, stmt, [], inner) if stmt.parallel is not None else nullcontext(inner)
    with parallel as inner:
        if stmt.unroll:
            cx.b.pragma(Unroll(stmt.unroll))
        with cx.b.for_(Decl("int64_t", var.name, Literal(0)), lt(var, upper), increment(var)), \
                iteration(cx, stmt, inner):
            cx.count(f"∀{index} {relation}")
            if recovered is None:
                cx.lower(stmt.body, inner)
            else:
                _recover(cx, made, value(var), stmt.body, inner, in_order, track)


def _row_segments(cx: Lowering, stmt: Forall, made: IndexVar, start: Expr, count: Expr, row: str,
                  scope: Scope) -> None:
    """A loop over `count` consecutive positions of collapsed levels from `start`, run row by row (`row`
    is the first-level position, found by the caller's search): the hot loop is a plain one over the part
    of a row in range, as in the unscheduled kernel. When the body adds into a result at the row's
    coordinate alone, it sums the row in a register added into the result once, after it (the paper's
    flushed scalar temporary) — atomically only if another chunk may hold part of the row too."""
    relation = scope.provenance.defining(made)
    collapsed, access = scope.provenance.defining(relation.index), relation.access
    q, stop, segment, first = (Var(cx.fresh(stem)) for stem in ("q", "stop", "segment", "first"))
    register = _row_register(cx, stmt.body, collapsed, scope)
    body_scope = scope
    if register is not None:  # the register is this thread's own
        body_scope = replace(scope, accumulators={**scope.accumulators, stmt.body.lhs.tensor.name: (register, None)},
                             atomic=False)
    cx.b.decl("int64_t", q.name, Var(scope.ranges[made][0]) + start)
    cx.b.decl("const int64_t", stop.name, q + count)
    starts, ends = cx.plan.read_levels(access)[1].range(Position(Var(row)))
    with cx.b.while_(lt(q, stop)):
        with cx.b.while_(le(ends, q)):
            cx.b.expr(increment(Var(row)))
        cx.b.decl("const int64_t", segment.name, call("min64", ends, stop))
        cx.b.decl("const int64_t", first.name, q)
        if stmt.unroll:
            cx.b.pragma(Unroll(stmt.unroll))
        with cx.b.for_(None, lt(q, segment), increment(q)):
            cx.count(f"∀{stmt.index} {scope.provenance.defining(stmt.index)}")
            _at_row(cx, collapsed, access, row, q, stmt.body, body_scope)
        if register is None:
            return
        if scope.atomic:  # a row begun and ended within these positions is no other chunk's
            with cx.b.if_(and_(eq(first, starts), lt(segment, stop))):
                _flush_row(cx, collapsed, access, row, register, stmt.body, replace(scope, atomic=False))
            with cx.b.else_():
                _flush_row(cx, collapsed, access, row, register, stmt.body, scope)
        else:
            _flush_row(cx, collapsed, access, row, register, stmt.body, scope)
        cx.b.assign(Var(register), 0)


def _row_register(cx: Lowering, body: Stmt, collapsed: Collapse, scope: Scope) -> str | None:
    """A register for a row's sum, declared here, when the body only adds into a dense result indexed by
    the row's coordinate."""
    if cx.plan.counting or not isinstance(body, Assign) or not body.accumulate:
        return None
    name = body.lhs.tensor.name
    target = cx.plan.targets[name]
    if body.lhs.indices != (collapsed.outer,) or not target.random_access or not target.flag_free \
            or name in scope.accumulators:
        return None
    return cx.b.decl(cx.plan.value_types[name], cx.fresh("rowsum"), 0).name


def _flush_row(cx: Lowering, collapsed: Collapse, access: Access, row: str, register: str, body: Assign,
               scope: Scope) -> None:
    """Add the row's register into the result at the row's coordinate."""
    first = cx.plan.read_levels(access)[0]
    first.indexed_by(f"the result {body.lhs.tensor.name}")
    with cx.b.block():
        cx.b.decl("const int64_t", names.coordinate(collapsed.outer),
                  Var(row) if first.full else first.coordinate(Var(row)))
        store(cx, body.lhs.tensor.name, target_position(cx, body.lhs, scope), "+=", Var(register), scope)


def _at_row(cx: Lowering, collapsed: Collapse, access: Access, row: str, q: Expr, body: Stmt, scope: Scope,
            in_order: bool = True) -> None:
    """The body at position `q` of the second collapsed level, in first-level position `row`."""
    fixed = {**scope.fixed, collapsed.outer: Fixed(Var(row), access, 0, in_order, repeats=True),
             collapsed.inner: Fixed(q, access, 1, in_order)}
    cx.lower(Forall(collapsed.outer, Forall(collapsed.inner, body)), replace(scope, fixed=fixed))


def _derived_range(cx: Lowering, relation, index: IndexVar, scope: Scope
                   ) -> tuple[Scope, Expr, tuple[IndexVar, Callable[[Expr], Expr]] | None]:
    """The loop's upper bound, and (when the loop completes a derivation) the variable it recovers with
    its value as a function of the loop's own variable."""
    if isinstance(relation, Split) and relation.offset:  # tiles start at stored coordinates
        scope, extent = _extent(cx, relation.parent, scope)
        outer = Var(names.coordinate(relation.outer))
        if index == relation.outer:
            return scope, extent, None
        if relation.outer not in scope.derived:
            raise ScheduleError(f"{relation}: the loop over {relation.inner} needs the loop over {relation.outer}, "
                                f"which says where its tile starts, around it")
        return scope, call("min64", relation.factor, extent - outer), (relation.parent, lambda v: outer + v)
    if isinstance(relation, Split):
        scope, extent = _extent(cx, relation.parent, scope)
        tiles, tile = ceil_div(extent, relation.factor), as_expr(relation.factor)
        if relation.divide:
            tiles, tile = tile, tiles
        outer, inner = Var(names.coordinate(relation.outer)), Var(names.coordinate(relation.inner))
        other = relation.inner if index == relation.outer else relation.outer
        if other not in scope.derived:
            return scope, tiles if index == relation.outer else call("min64", tile, extent), None
        if index == relation.outer:
            return scope, ceil_div(extent - inner, tile), (relation.parent, lambda v: v * tile + inner)
        return scope, call("min64", tile, extent - outer * tile), (relation.parent, lambda v: outer * tile + v)
    if isinstance(relation, Bound):
        size = as_expr(relation.size)
        upper = size if relation.kind is BoundKind.MAX_EXACT else call("min64", size, Var(names.extent(relation.index)))
        return scope, upper, (index, lambda v: v)
    scope, extent = _extent(cx, index, scope)
    return scope, extent, (index, lambda v: v)


def ceil_div(numerator, denominator) -> Expr:
    """⌈numerator / denominator⌉ for a positive denominator, in C that cannot overflow: the usual
    `(a + b - 1) / b` passes int64 (and wraps) for a tile size near 2⁶³, which a schedule may give."""
    numerator, denominator = as_expr(numerator), as_expr(denominator)
    return numerator // denominator + gt(numerator % denominator, 0)


def _extent(cx: Lowering, index: IndexVar, scope: Scope) -> tuple[Scope, Expr]:
    """The number of values of `index`: a dimension, a product of dimensions, or a position range
    (declared here, where the loops first need it)."""
    relation = scope.provenance.defining(index)
    if relation is None:
        return scope, Var(names.extent(index))
    if isinstance(relation, Collapse):
        return scope, Var(names.extent(relation.outer)) * Var(names.extent(relation.inner))
    if index not in scope.ranges:
        scope = replace(scope, ranges={**scope.ranges, index: _declare_positions(cx, relation, scope)})
    lo, hi = scope.ranges[index][:2]
    return scope, Var(hi) - Var(lo)


def _declare_positions(cx: Lowering, relation: Pos, scope: Scope) -> tuple[str, ...]:
    """[lo, hi) of the positions `relation` runs over: one level's, below the position the loops around
    reached in the access above it; for a collapsed index, those of the second level below the whole first
    (whose own range follows, for the row search)."""
    access, roots = relation.access, scope.provenance.roots(relation.index)
    depth = access.level_indices.index(roots[0])
    if depth and (access, depth - 1) not in scope.reads:
        raise ScheduleError(f"{relation}: the loop over {relation.position} runs before {access} reaches its level "
                            f"for {access.level_indices[depth - 1]}; put it inside that loop")
    levels = cx.plan.read_levels(access)
    parent = scope.reads.get((access, depth - 1), ROOT)
    if any(level.base(parent) for level in levels[depth:depth + len(roots)]):
        raise ScheduleError(f"{relation}: a position of {access}'s level for {roots[0]} does not tell its coordinate "
                            f"without its segment (a packed triangle): loop over the coordinates instead")
    lo, hi = cx.fresh("lo"), cx.fresh("hi")
    if len(roots) == 1:
        _declare_range(cx, (lo, hi), levels[depth].range(parent))
        return lo, hi
    first_lo, first_hi = cx.fresh("lo"), cx.fresh("hi")
    _declare_range(cx, (first_lo, first_hi), (0, names.extent(roots[0])) if levels[0].full else levels[0].range(ROOT))
    _declare_range(cx, (lo, hi), levels[1].range(Position(Var(first_lo), end=Var(first_hi))))
    return lo, hi, first_lo, first_hi


def _declare_range(cx: Lowering, variables: tuple[str, str], bounds: tuple) -> None:
    for name, bound in zip(variables, bounds):
        cx.b.decl("const int64_t", name, as_expr(bound))


def _collapsed_pos(index: IndexVar, scope: Scope) -> bool:
    relation = scope.provenance.defining(index)
    return isinstance(relation, Pos) and isinstance(scope.provenance.defining(relation.index), Collapse)


def _search_row(cx: Lowering, index: IndexVar, offset: Expr, scope: Scope) -> str:
    """Binary search for the first-level position holding position `lo + offset` of the second level:
    the last row whose segment starts at or before it."""
    relation = scope.provenance.defining(index)
    lo, _, first_lo, first_hi = scope.ranges[index]
    row, high, mid = (Var(cx.fresh(stem)) for stem in ("row", "high", "mid"))
    starts = cx.plan.read_levels(relation.access)[1]
    cx.b.decl("int64_t", row.name, Var(first_lo))
    with cx.b.block():
        cx.b.decl("int64_t", high.name, Var(first_hi))
        with cx.b.while_(gt(high - row, 1)):
            cx.b.decl("const int64_t", mid.name, row + (high - row) // 2)
            with cx.b.if_(le(starts.range(Position(mid))[0], Var(lo) + offset)):
                cx.b.assign(row, mid)
            with cx.b.else_():
                cx.b.assign(high, mid)
    return row.name


def _recover(cx: Lowering, index: IndexVar, value: Expr, body: Stmt, scope: Scope, in_order: bool,
             track: str | None) -> None:
    """`index` is `value` here: recover what it was derived from, then lower the body with the tensors'
    own indices fixed."""
    relation = scope.provenance.defining(index)
    fixed = dict(scope.fixed)
    if relation is None or isinstance(relation, Bound):
        original = index if relation is None else relation.index
        fixed[original] = Fixed(value, in_order=in_order)
        cx.lower(Forall(original, body), replace(scope, fixed=fixed))
        return
    if isinstance(relation, Collapse):
        fixed[relation.outer] = Fixed(value // Var(names.extent(relation.inner)), in_order=in_order, repeats=True)
        fixed[relation.inner] = Fixed(value % Var(names.extent(relation.inner)), in_order=in_order)
        cx.lower(Forall(relation.outer, Forall(relation.inner, body)), replace(scope, fixed=fixed))
        return
    # a position of the access: read its coordinates back
    q = cx.b.decl("const int64_t", cx.fresh("q"), Var(scope.ranges[index][0]) + value)
    collapsed = scope.provenance.defining(relation.index)
    access = relation.access
    if not isinstance(collapsed, Collapse):
        depth = access.level_indices.index(relation.index)
        fixed[relation.index] = Fixed(q, access, depth, in_order)
        cx.lower(Forall(relation.index, body), replace(scope, fixed=fixed))
        return
    row = track or _search_row(cx, index, value, scope)
    ends = cx.plan.read_levels(access)[1].range(Position(Var(row)))[1]
    with cx.b.while_(le(ends, q)):
        cx.b.expr(increment(Var(row)))
    _at_row(cx, collapsed, access, row, q, body, scope, in_order)


def fixed_forall(cx: Lowering, stmt: Forall, scope: Scope) -> None:
    """The body of a forall whose index the derived loops around have fixed, at that coordinate (the
    loop may then only locate and read dense operands) or at that position of an access (which then
    must be the only one it steps, at every point of its lattice)."""
    fixed = scope.fixed[stmt.index]
    scope = replace(scope, fixed={k: v for k, v in scope.fixed.items() if k != stmt.index})
    rule = scope.provenance.deriving(stmt.index)
    loop = survey(cx, stmt, scope)
    lattice = lat.loop_lattice(stmt.body, loop.stepped, {})
    _check_fixed_writes(cx, stmt.index, rule, fixed, loop, scope)
    index = names.coordinate(stmt.index)
    sparse = sparse_iterators(lattice)
    with cx.b.block():
        if fixed.access is None:
            cx.b.decl("const int64_t", index, fixed.value)
            point_cases(cx, stmt, loop, lattice, lattice, scope, _found_at(cx, sparse, stmt, rule, scope))
            return
        it = loop.stepped.get(fixed.access)
        if it is None or it.level != fixed.level:
            raise ScheduleError(f"{rule}: {fixed.access} is not stepped at {stmt.index} (it is located, or the "
                                f"loops reach it out of its storage order)")
        others = [other for other in sparse if other != it]
        if others:
            raise ScheduleError(f"{rule}: the loop over {stmt.index} also steps {others[0].access}; the positions of "
                                f"{fixed.access} alone would skip its coordinates")
        if not all(it in point.iterators for point in lattice):
            raise ScheduleError(f"{rule}: the loop over {stmt.index} also covers coordinates that {fixed.access} "
                                f"lacks (a sum), which its positions never reach")
        if it.full:  # a dense first level: its position is its coordinate
            cx.b.decl("const int64_t", index, fixed.value)
        else:
            q, _, c, _ = iterator_names(cx, it)
            cx.b.decl("const int64_t", q, fixed.value)
            load(cx, it, guard=False)
            cx.b.decl("const int64_t", index, Var(c))
        case_body(cx, stmt, loop, lattice[0], scope)


def _found_at(cx: Lowering, sparse: list[lat.Iterator], stmt: Forall, rule,
              scope: Scope) -> dict[lat.Iterator, str]:
    """At a coordinate the derived loops fixed, the position of each sparse level that holds it, found by
    binary search of the level's segment (a non-unique level: the first of its run, `{found}_end` past
    the last)."""
    if not sparse:
        return {}
    declare_iterators(cx, tuple(lat.Point(frozenset({it})) for it in sparse), scope)
    found = {}
    for it in sparse:
        level = cx.plan.read_levels(it.access)[it.level]
        if finds.order_of(level) == 0:
            raise ScheduleError(f"{rule}: the loop over {stmt.index} reaches {it.access} at a coordinate the derived "
                                f"loops fixed, and its level there has no order to search")
        q, end, _, _ = iterator_names(cx, it)
        begin, _ = level.range(scope.reads.get((it.access, it.level - 1), ROOT))
        finder = finds.Finder(Strategy.BINARY, level, q, begin, end,
                              names.level_stem(cx.plan.access_ids[it.access], it.level), stmt.index, 1,
                              lambda what, b: count_iteration(cx.logs.counters, b,
                                                              f"∀{stmt.index} {what} {it.access}"), str(rule))
        finder.prepare(cx.logs.tables, scope.parallel, cx.b)
        found[it] = finder.find(names.coordinate(stmt.index), cx.b)
        if not level.unique:
            run_end = cx.b.decl("int64_t", names.part(found[it], "end"), Var(found[it]))
            at = eq(level.coordinate(run_end), Var(names.coordinate(stmt.index)))
            with cx.b.if_(ge(Var(found[it]), 0)), cx.b.while_(and_(lt(run_end, Var(end)), at)):
                cx.b.expr(increment(run_end))
    return found


def _half_derived(scope: Scope) -> list[IndexVar]:
    """The derived variables around whose originals are not yet recovered (tiles of an index whose loop
    over the rest of it is still to come)."""
    return [v for v in scope.derived
            if not all(set(scope.provenance.leaves(root)) <= scope.derived for root in scope.provenance.roots(v))]


def check_appends(loop: Loop, scope: Scope) -> None:
    """A loop appending to a result must not run inside the tiles of another index: each tile would
    append the loop's coordinates again (`split(k, ...)` around the loop over j of a CSR result)."""
    half = _half_derived(scope)
    if loop.written and half:
        name = loop.written[0][0]
        raise ScheduleError(f"{scope.provenance.defining(half[0])}: {name} is assembled by appending in order, but the "
                            f"loop over {half[0]} around the loop over {loop.index} interleaves its entries; put the "
                            f"tiles' loops inside, or precompute into a workspace")


def _check_fixed_writes(cx: Lowering, index: IndexVar, rule, fixed: Fixed, loop: Loop, scope: Scope) -> None:
    """A result assembled by appending takes its entries in storage order: the derived loops must fix
    the index in increasing order, with no loop over a half-derived index around it (tiles of another
    index would interleave its rows), and repeat it only where the result's level is dense."""
    for name, level in loop.written:
        target = cx.plan.targets[name]
        half = _half_derived(scope)
        if not fixed.in_order or half:
            why = f"the loop over {half[0]} interleaves" if half else "the loops visit it out of order, which mixes"
            raise ScheduleError(f"{rule}: {name} is assembled by appending in order, but at {index} {why} its "
                                f"entries; put the tiles' outer loops first, or precompute into a workspace")
        if fixed.repeats and not target.levels[level].properties.full:
            raise ScheduleError(f"{rule}: {name}'s level for {index} is sparse, and the collapsed loop would "
                                f"append {index} once per entry below it")


def blocked_loop(cx: Lowering, stmt: Forall, relation, scope: Scope) -> tuple[Forall, Scope, Expr]:
    """A loop over a variable of a split that an access's level is indexed by (a block row or a row
    within a block of BCSR's view): a loop like any other over that level, running to the split's bound
    (`min64(b, N - b·i0)` cuts the last block short), whose body, once both variables are around,
    recovers the original coordinate for the accesses indexed by it."""
    if not isinstance(relation, Split) or relation.divide:
        raise ScheduleError(f"Expected the loop over {stmt.index}, a level index of "
                            f"{next(a for a in accesses(stmt.body) if stmt.index in a.level_indices)}, to come from "
                            f"a split by a block size, but it comes from {relation}")
    scope, bound, recovered = _derived_range(cx, relation, stmt.index, scope)
    scope = replace(scope, derived=scope.derived | {stmt.index})
    if recovered is not None:
        parent, value = recovered
        scope = replace(scope, fixed={**scope.fixed, parent: Fixed(value(Var(names.coordinate(stmt.index))))})
        stmt = replace(stmt, body=Forall(parent, stmt.body))
    return stmt, scope, bound


def indexes_levels(stmt: Forall) -> bool:
    """Whether some access stores a level by the loop's (derived) index: a blocked layout's block view."""
    return any(stmt.index in a.level_indices for a in accesses(stmt.body))
