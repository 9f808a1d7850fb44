"""A forall, lowered (LOWERING.md §3): it chooses the loop a `∀i` becomes — a dense `for` over the
dimension that checks the sparse iterators at each coordinate, the merge loops of co-iteration, a loop
over derived variables, the body at a coordinate the loops around fixed, or (in the bound phase) no
loop at all, its trip count instead — and puts a hoisted reduction's register and a parallel region
around it. The loops themselves are in coiteration.py, derived.py and parallel.py.
"""

from __future__ import annotations

import operator
from contextlib import nullcontext
from functools import reduce

from ..cin.ast import Assign, Forall, unnest_loops
from ..codegen import names
from ..codegen.c_ast import Decl, Expr, Literal, SizeOf, Unroll, Var, as_expr, call, increment, lt
from ..coiterate import lattice as lat
from .coiteration import (Loop, advance, coiterate, declare_iterators, iterator_names, load,
                          parallel_sparse_loop, point_cases, require_ordered, sparse_iterators, survey)
from .context import Lowering, Scope
from .derived import blocked_loop, check_appends, derived_forall, fixed_forall, indexes_levels
from .outputs import bounded_target, hoisting
from .parallel import iteration, parallel_region, row_split


def forall(cx: Lowering, stmt: Forall, scope: Scope) -> None:
    if stmt.index in scope.fixed:
        fixed_forall(cx, stmt, scope)
        return
    bound = None
    relation = scope.provenance.defining(stmt.index)
    if relation is not None:
        if not indexes_levels(stmt):
            derived_forall(cx, stmt, scope)
            return
        stmt, scope, bound = blocked_loop(cx, stmt, relation, scope)
    loop = survey(cx, stmt, scope)
    check_appends(loop, scope)
    lattice = lat.loop_lattice(stmt.body, loop.stepped, {})
    bounded = bounded_target(cx, stmt, scope)
    if bounded is not None:
        _count_trips(cx, loop, lattice, bounded, scope)
        return
    with cx.b.block(), hoisting(cx, stmt, scope) as (stmt, scope):
        declare_iterators(cx, lattice, scope)
        if lat.dense_loop(lattice):
            _dense_loop(cx, stmt, loop, lattice, scope, bound)
        elif stmt.parallel is not None:
            parallel_sparse_loop(cx, stmt, loop, lattice, scope)
        else:
            coiterate(cx, stmt, loop, lattice, scope)


def _count_trips(cx: Lowering, loop: Loop, lattice: lat.Lattice, name: str, scope: Scope) -> None:
    """The bound phase's stand-in for a loop: its target gets as many entries as the loop would run
    iterations, at most. A merge runs at most the summed lengths of the lattice's bottom points (each
    coordinate it visits is in every iterator of some bottom point), the shortest iterator of each;
    every loop runs at most its dimension."""
    extent = Var(names.extent(loop.index))
    with cx.b.block():
        declare_iterators(cx, lattice, scope)
        if lat.dense_loop(lattice):
            trips = extent
        else:
            bottoms = [p for p in lattice if not any(q.sparse < p.sparse for q in lattice)]
            terms = [_smallest([Var(end) - Var(q) for q, end, _, _ in (iterator_names(cx, it)
                                                                      for it in sorted(point.sparse, key=str))])
                     for point in bottoms]
            trips = _smallest([sum(terms[1:], terms[0]), extent])
        trips = cx.b.decl("const int64_t", "trips", trips)
        cx.plan.targets[name].count_at_most(trips, cx.b)
        if scope.flags.get(name):
            with cx.b.if_(trips):
                cx.b.assign(Var(scope.flags[name]), 1)


def _smallest(terms: list[Expr]) -> Expr:
    smallest = terms[0]
    for term in terms[1:]:
        smallest = call("min64", smallest, term)
    return smallest


def _dense_loop(cx: Lowering, stmt: Forall, loop: Loop, lattice: lat.Lattice, scope: Scope,
                bound: Expr | None = None) -> None:
    """for (i = 0; i < N; i++) { if (A at i && B at i) {...} else if (A at i) {...} else {...}; advance }
    (to `bound` instead of the dimension, for a blocked loop)."""
    sparse = sparse_iterators(lattice)
    require_ordered(cx, sparse, loop)
    rows = row_split(cx, stmt, bound is None)
    zeroes = bound is None and not scope.loops and cx.plan.zeroed_rows == loop.index
    parallel = parallel_region(cx, stmt, sparse, scope, rows=rows) if stmt.parallel is not None else nullcontext(scope)
    with parallel as scope:
        if stmt.unroll:
            cx.b.pragma(Unroll(stmt.unroll))
        first, bound = (rows.first, rows.stop) if rows else (Literal(0), bound or Var(names.extent(loop.index)))
        zeroes_here = zeroes and not _assigned_row(cx, stmt, sparse, scope)
        _dense_for(cx, stmt, loop, lattice, sparse, scope, first, bound, zeroes_here)
    cx.logs.zeroed_rows |= zeroes


def _assigned_row(cx: Lowering, stmt: Forall, sparse: list, scope: Scope) -> bool:
    """Whether each iteration stores its one-entry row by assignment, so that zeroing it first is a dead
    store (which gcc keeps inside an OpenMP region): the body is a plain reduction nest into the row, which
    `hoisting` sums into a register and assigns once, whether or not the nest runs (SpMV over CSR)."""
    result = cx.plan.targets[cx.plan.result]
    loops, body = unnest_loops(stmt.body)
    return (not sparse and not result.dims[1:] and result.flag_free and result.overwrites and not scope.revisits
            and bool(loops) and all(scope.provenance.defining(loop.index) is None for loop in loops)
            and isinstance(body, Assign) and body.accumulate and body.lhs.tensor.name == result.name
            and body.lhs.indices == (stmt.index,))


def _dense_for(cx: Lowering, stmt: Forall, loop: Loop, lattice: lat.Lattice, sparse: list, scope: Scope,
               first: Expr, bound: Expr, zeroes: bool) -> None:
    index = Var(names.coordinate(loop.index))
    with cx.b.for_(Decl("int64_t", index.name, first), lt(index, bound), increment(index)), \
            iteration(cx, stmt, scope):
        cx.count(f"∀{loop.index} dense")
        if zeroes:
            _zero_row(cx, index)
        for it in sparse:
            load(cx, it, guard=True, index=index)
        point_cases(cx, stmt, loop, lattice, lattice, scope)
        for it in sparse:
            advance(cx, it, index)


def _zero_row(cx: Lowering, index: Var) -> None:
    """The result's row at `index`, zeroed by the iteration that owns it just before it writes the row: a
    pass the caller's zeroed allocation would make over the whole result, and, in a parallel loop, the
    row first touched by the thread that writes it. A row of one entry (a vector's) is a plain store."""
    result = cx.plan.targets[cx.plan.result]
    vals = Var(names.vals(result.name))
    if not result.dims[1:]:
        cx.b.assign(vals[index], 0)
        return
    row = reduce(operator.mul, [as_expr(dim) for dim in result.dims[1:]])
    cx.b.expr(call("memset", vals + index * row, 0, row * SizeOf(cx.plan.value_type)))
