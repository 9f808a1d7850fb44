"""The leaves of lowering: stores into targets, the expressions they store, and the temporaries of
`where`s (CIN -> C: `target[p] (op)= value;`, LOWERING.md §4, §6).

A store goes to the position its target's levels were entered at (or located, for a target written at
random); a reduction nest sums into a register stored once after it (`hoisting`); counting phases only
mark where a store goes. Nothing here opens a loop: statements nested in a `where` are lowered through
`cx.lower`.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterator

import numpy as np

from ..cin.ast import (Access, Assign, Forall, Protocol, Stmt, Where, accesses, assignments, identity, nest, results,
                       unnest, unnest_loops)
from ..cin.provenance import Provenance
from ..codegen import names
from ..codegen.c_ast import Binary, Decl, Expr, OmpAtomic, Var, and_, cast, ctype, increment, lt, ne, not_, ternary
from ..codegen.literals import INT64, c_literal
from ..errors import ScheduleError
from ..notation.ast import Add, Apply, Div, Literal, Mul, Neg, Sub, factors, product
from ..notation.operators import REGISTRY
from .context import Lowering, Phase, Scope
from .guards import Guard, guards, saturates
from .reads import ROOT, Position
from .writes import Combine, combine, combiner, start_value


def where(cx: Lowering, stmt: Where, scope: Scope) -> None:
    """/* producer */ ...; sort or collect the temporaries; /* consumer */ ...; reset the temporaries."""
    temporaries = results(stmt.producer)
    copied = cx.plan.counting and _copied_to_last_level(stmt.consumer)
    ordered = not copied and not _copied_unordered(cx, stmt.consumer)
    producing = replace(scope, atomic=False)  # the temporaries are this thread's own
    if copied and bounded_target(cx, stmt.consumer, scope):
        # the consumer only counts the entries: the producer may count them at most too
        producing = replace(producing, bounded=scope.bounded | {n for n in temporaries if cx.plan.targets[n].bounds})
    cx.b.comment(f"produce {', '.join(temporaries)}")
    with cx.b.when(_needed(cx, stmt, temporaries, scope)):
        cx.lower(stmt.producer, producing)
    for name in temporaries:
        cx.plan.targets[name].prepare_read(cx.b, ordered=ordered)
    cx.b.comment(f"consume {', '.join(temporaries)}")
    cx.lower(stmt.consumer, scope)
    for name in temporaries:
        cx.plan.targets[name].reset(cx.b, values=not cx.plan.counting)


def _needed(cx: Lowering, stmt: Where, temporaries: tuple[str, ...], scope: Scope) -> Expr | None:
    """Where a consumer that stores `f(m, t)` needs its temporaries at all (`guards`): the C of `m` is
    not `f`'s annihilator; None where it always does."""
    if not isinstance(stmt.consumer, Assign):
        return None
    rhs = stmt.consumer.rhs
    integral = all(ctype(cx.plan.value_types[a.tensor.name]) == INT64 for a in accesses(rhs)) and \
        cx.plan.value_type == INT64
    found = guards(rhs, frozenset(temporaries), integral)
    return and_(*(_holds_not(cx, guard, scope) for guard in found)) if found else None


def _holds_not(cx: Lowering, guard: Guard, scope: Scope) -> Expr:
    """C that is true where the guard's operand is not its value (a truth value as C tests one)."""
    operand = _expr(cx, guard.operand, scope)
    if isinstance(guard.value, (bool, np.bool_)):
        return not_(operand) if guard.value else operand
    return ne(operand, start_value(guard.value, cx.plan.value_type))


def _copied_to_last_level(consumer: Stmt) -> bool:
    """Whether the consumer only copies a one-index temporary into the result's last level
    (`∀j C(i,j) = w(j)`): counting its entries per row then needs them in no particular order."""
    if not isinstance(consumer, Forall) or not isinstance(consumer.body, Assign):
        return False
    rhs, lhs = consumer.body.rhs, consumer.body.lhs
    return (isinstance(rhs, Access) and rhs.tensor.temporary and rhs.indices == (consumer.index,)
            and lhs.level_indices[-1:] == (consumer.index,))


def _copied_unordered(cx: Lowering, consumer: Stmt) -> bool:
    """Whether the consumer only copies a temporary into a result level that keeps no order (`ds~`): the
    temporary's entries then go in as they were touched, unsorted."""
    if not _copied_to_last_level(consumer):
        return False
    lhs = consumer.body.lhs
    return not cx.plan.targets[lhs.tensor.name].keeps_order(lhs.tensor.order - 1)


def assign(cx: Lowering, stmt: Assign, scope: Scope) -> None:
    """target[p] (op)= value; raise the flag of a tentative position; or add into a hoisted register.
    Counting, no value is computed: the store only marks where it goes."""
    name = stmt.lhs.tensor.name
    if name in scope.accumulators:
        register, stored = scope.accumulators[name]
        if not cx.plan.counting:
            value = _expr(cx, stmt.rhs, scope)
            op = _combine(cx, stmt.reduce)
            if scope.atomic:
                _atomic(op, stmt)
                cx.b.pragma(OmpAtomic())
            combine(cx.b, Var(register), value, op)
        if stored:
            cx.b.assign(Var(stored), 1)
        if name in scope.stops:  # decided: the rest of the loop could not change it
            with cx.b.if_(Var(register) if saturates(stmt.reduce) else not_(Var(register))):
                cx.b.break_()
        return
    position = target_position(cx, stmt.lhs, scope)
    if cx.plan.counting:
        cx.plan.targets[name].mark(position, cx.b)
    else:
        value = _expr(cx, stmt.rhs, scope)
        store(cx, name, position, _operator(cx, stmt, scope), value, scope, stmt)
    if scope.flags.get(name):
        cx.b.assign(Var(scope.flags[name]), 1)


def store(cx: Lowering, name: str, position: Position, op: Combine, value: Expr, scope: Scope,
          stmt: Assign | None = None) -> None:
    """A store, atomic when iterations of a parallel loop add into the same position."""
    if scope.atomic and op != "=":
        _atomic(op, stmt)
        cx.b.pragma(OmpAtomic())
    cx.plan.targets[name].store(position, op, value, cx.b)


def _atomic(op: Combine, stmt: Assign | None) -> None:
    """Refuse an atomic update other than `+=`: OpenMP's `atomic` has no minimum or logical or (OpenMP 5.1's
    `atomic compare` would), so such a reduction on threads needs `race=temporary` or no race."""
    if op != "+=":
        raise ScheduleError(f"Expected race=atomics only for sums, but {stmt} reduces by {stmt.reduce}: OpenMP has "
                            f"no atomic {stmt.reduce}; use race=temporary or a loop without races")


def _operator(cx: Lowering, stmt: Assign, scope: Scope) -> Combine:
    """How the assignment's store combines (`+=` for a sum, the reduction's operator otherwise), unless it
    is the only store its position will get (no enclosing loop leaves the position unchanged, and the
    target is not written elsewhere): then `=`, which writes a fresh page without reading it first
    (LOWERING.md §4)."""
    lhs = stmt.lhs
    around = {root for index in scope.loops for root in scope.provenance.roots(index)}
    once = cx.plan.targets[lhs.tensor.name].overwrites and around <= set(lhs.indices) and not scope.revisits
    return _combine(cx, stmt.reduce) if stmt.accumulate and not once else "="


def _combine(cx: Lowering, reduce: str) -> Combine:
    return combiner(reduce, cx.plan.value_type)


def target_position(cx: Lowering, lhs: Access, scope: Scope) -> Position:
    """Where the store goes: for a target written at random, located from all its coordinates (in any
    loop order); for an appended one, the position its innermost level's loop entered."""
    target = cx.plan.targets[lhs.tensor.name]
    if not target.random_access:
        return scope.writes.get((lhs.tensor.name, lhs.tensor.order - 1), ROOT)
    position = ROOT
    for level, index in enumerate(lhs.level_indices):
        position = target.enter(level, Var(names.coordinate(index)), position, scope.reads, cx.b)
    return position


def _expr(cx: Lowering, expr, scope: Scope) -> Expr:
    if isinstance(expr, _Register):
        return Var(expr.name)
    if isinstance(expr, Access):
        return _read(cx, expr, scope)
    if isinstance(expr, Literal):  # an infinite fill of an integer kernel is its type's bound
        return start_value(expr.value, cx.plan.value_type)
    if isinstance(expr, Apply):
        op = REGISTRY[expr.op]
        if not op.reads_values:  # pattern(M): 1 wherever M is stored, its value never loaded
            return c_literal(1, cx.plan.value_type)
        return op.c(cx.plan.value_type, *(_expr(cx, arg, scope) for arg in expr.args))
    if isinstance(expr, Neg):
        return -_expr(cx, expr.operand, scope)
    if isinstance(expr, Div):  # numpy's true division: int64 operands divide as the result's double
        return Binary("/", cast(cx.plan.value_type, _expr(cx, expr.left, scope)), _expr(cx, expr.right, scope))
    symbol = {Add: "+", Sub: "-", Mul: "*"}[type(expr)]
    return Binary(symbol, _expr(cx, expr.left, scope), _expr(cx, expr.right, scope))


def dense_operand(access: Access) -> bool:
    """A dense operand is read at random, from all its coordinates, in whatever order the loops bind
    them: it never limits the iteration space (it acts as the loop's whole range) nor the loop order.
    So is a dense temporary read by locating every coordinate (a SparseAuto temporary, read in the
    consumer's loop order, whatever order the producer wrote it in)."""
    if not access.tensor.format.is_dense:
        return False
    return not access.tensor.temporary or all(p is Protocol.LOCATE for p in access.protocols)


def _read(cx: Lowering, access: Access, scope: Scope) -> Expr:
    """vals[p]; 0 when a locate found nothing; the sum over a non-unique leaf's segment (a COO vector)."""
    position = scope.reads.get((access, access.tensor.order - 1), ROOT)
    if dense_operand(access):
        for level, (index, read_level) in enumerate(zip(access.level_indices, cx.plan.read_levels(access))):
            position = read_level.locate(position, Var(names.coordinate(index)))
    vals, begin = Var(cx.plan.vals(access)), position.begin
    if position.end is not None:
        total = cx.b.decl(cx.plan.value_types[access.tensor.name], cx.fresh("v"), 0)
        q = Var("q")
        with cx.b.for_(Decl("int64_t", q.name, begin), lt(q, position.end), increment(q)):
            cx.b.assign(total, vals[q], "+=")
        return total
    if position.may_miss:  # a located entry that is not stored is the tensor's fill
        fill = access.tensor.fill
        return ternary(lt(begin, 0), 0 if fill == 0 else start_value(fill, cx.plan.value_type), vals[begin])
    return vals[begin]


@dataclass(frozen=True)
class _Register:
    """A C variable standing in an expression: the sum a hoisted reduction leaves."""

    name: str


@contextmanager
def hoisting(cx: Lowering, stmt: Forall, scope: Scope) -> Iterator[tuple[Forall, Scope]]:
    """Around a reduction nest, a register that the nest sums into and that is stored once after it
    (LOWERING.md §6); yields the nest (its invariant factors taken out) and the scope of its body."""
    hoisted = _hoistable(cx, stmt, scope)
    if hoisted is None:
        yield stmt, scope
        return
    name, register, stored = hoisted
    reduce = next(a.reduce for a in assignments(stmt) if a.lhs.tensor.name == name)
    stmt, invariant = _split_invariant(stmt, scope.provenance) if reduce == "add" else (stmt, [])
    if not cx.plan.counting:  # the reduction's identity
        cx.b.decl(cx.plan.value_types[name], register, 0 if reduce == "add" else
                  start_value(identity(reduce), cx.plan.value_types[name]))
    if stored:
        cx.b.decl("int", stored, 0)
    # the register is this block's own: only iterations of this very loop can race on it
    stops = scope.stops | {name} if saturates(reduce) is not None and not cx.plan.counting else scope.stops
    yield stmt, replace(scope, accumulators={**scope.accumulators, name: (register, stored)}, atomic=False,
                        stops=stops)
    total = product([*invariant, _Register(register)]) if invariant else _Register(register)
    _store_hoisted(cx, stmt, name, total, stored, scope)


def bounded_target(cx: Lowering, stmt: Forall, scope: Scope) -> str | None:
    """In the bound phase, the target this loop makes at most one entry of per iteration, if it may be
    replaced by its trip count: every store below it goes to that target, at the coordinate of the loop
    as the target's last level (the loops inside reduce)."""
    if cx.plan.phase is not Phase.BOUND:
        return None
    lhs = {a.lhs.tensor.name: a.lhs for a in assignments(stmt.body)}
    if len(lhs) != 1:
        return None
    (name, access), = lhs.items()
    if name not in scope.bounded or access.level_indices[-1:] != (stmt.index,):
        return None
    return name


def _hoistable(cx: Lowering, stmt: Forall, scope: Scope) -> tuple[str, str, str | None] | None:
    """A reduction nest (foralls over indices the output lacks, around one `+=`) sums into a register
    (LOWERING.md §6): returns (tensor, register, stored-flag)."""
    loops, body = unnest(stmt)
    if not isinstance(body, Assign) or not body.accumulate:
        return None
    name = body.lhs.tensor.name
    if any(root in body.lhs.indices for index in loops for root in scope.provenance.roots(index)) \
            or name in scope.accumulators:
        return None
    dense = cx.plan.targets[name].flag_free
    return name, cx.fresh("acc"), None if dense else cx.fresh("stored")


def _split_invariant(stmt: Forall, provenance: Provenance) -> tuple[Forall, list]:
    """Take the factors of a reduced product that none of the reduction's loops changes out of it, to
    multiply the sum once: Σ_k b·c(k)·d(k) = b·Σ_k c(k)·d(k) (SDDMM's B(i,j)). At least one factor stays."""
    loops, body = unnest_loops(stmt)
    indices = {index for loop in loops for index in (loop.index, *provenance.roots(loop.index))}
    terms = factors(body.rhs)
    invariant = [t for t in terms
                 if isinstance(t, Literal) or isinstance(t, Access) and not set(t.indices) & indices]
    if not invariant or len(invariant) == len(terms):
        return stmt, []
    variant = [t for t in terms if not any(t is f for f in invariant)]
    return nest(loops, replace(body, rhs=product(variant))), invariant


def _store_hoisted(cx: Lowering, stmt: Forall, name: str, total, stored: str | None, scope: Scope) -> None:
    assign = next(a for a in assignments(stmt) if a.lhs.tensor.name == name)
    position = target_position(cx, assign.lhs, scope)
    with cx.b.when(Var(stored) if stored else None):
        if cx.plan.counting:
            cx.plan.targets[name].mark(position, cx.b)
        else:
            store(cx, name, position, _operator(cx, replace(assign, accumulate=True), scope), _expr(cx, total, scope),
                  scope, assign)
        if scope.flags.get(name):
            cx.b.assign(Var(scope.flags[name]), 1)
