"""CIN statement -> C statements (LOWERING.md §3-5): loops from iteration lattices, stores into targets.

`lower(stmt, plan, scope, b)` is one pass over the statement; everything a loop passes to the loops
inside it travels in the frozen `Scope` (which level of each access is reached, at which position; which
flag a store must raise; which register sums a hoisted reduction). The kernel-wide facts — each access's
read levels, each written tensor's target — are in the `Plan`.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator, Mapping

from ..cin.ast import (Access, Assign, Forall, ParallelUnit, Protocol, Race, Sequence, Stmt, Strategy, Where,
                       accesses, assignments, nest, results, unnest, unnest_loops, walk)
from ..cin.provenance import Bound, BoundKind, Collapse, Pos, Provenance, Split, SuchThat
from ..cin.rewrite import without
from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import as_expr
from ..codegen.literals import c_literal
from ..errors import ScheduleError
from ..format.level import Capability
from ..notation.ast import Add, IndexVar, Literal, Mul, Neg, Sub, factors, product
from ..runtime.abi import ReturnCode
from . import finds
from . import lattice as lat
from .reads import ROOT, Position, ReadLevel, TensorLevel
from .writes import Target


@dataclass(frozen=True)
class Plan:
    read_levels: Callable[[Access], tuple[ReadLevel, ...]]
    targets: Mapping[str, Target]
    access_ids: Mapping[Access, str]
    value_types: Mapping[str, str]
    value_type: str  # the result's C value type, which its temporaries and the literals take
    fresh: names.Fresh
    counters: list[str] | None = None  # loop labels when instrumented (the one mutable log)
    #: The count phase of a two-phase assembly: the loops run for the pattern only, stores compute no
    #: values (a workspace store only marks its coordinate).
    counting: bool = False
    #: The bound phase, a count phase whose sizes may exceed the exact ones: a loop making at most one
    #: entry of a bounded target per iteration adds its trip count instead of running.
    bounding: bool = False
    num_threads: int | None = None  # the OpenMP thread count of parallel loops (None: OpenMP's default)
    #: The parallel loop whose threads assemble the result in chunks, inside a region the kernel opens
    #: around all phases (None: parallel loops open their own).
    region: IndexVar | None = None
    #: The tables that find-based co-iteration builds (finds.py), declared by the kernel around all phases.
    tables: finds.Tables = field(default_factory=dict)

    @property
    def phase(self) -> str:
        return "bound" if self.bounding else "count" if self.counting else "fill"

    def vals(self, access: Access) -> str:
        return names.vals(access.tensor.name)


@dataclass(frozen=True)
class Scope:
    reads: Mapping[tuple[Access, int], Position] = field(default_factory=dict)
    writes: Mapping[tuple[str, int], Position] = field(default_factory=dict)
    flags: Mapping[str, str | None] = field(default_factory=dict)
    accumulators: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    loops: tuple[IndexVar, ...] = ()  # the indices of the enclosing loops, outermost first
    bounded: frozenset[str] = frozenset()  # the targets whose loops the bound phase replaces
    atomic: bool = False  # sums into results and outer registers race (a parallel loop with atomics)
    provenance: Provenance = Provenance()
    derived: frozenset[IndexVar] = frozenset()  # the derived variables whose loops are around
    #: A position variable's [lo, hi) (and for collapsed levels, the first level's [lo, hi) after them).
    ranges: Mapping[IndexVar, tuple[str, ...]] = field(default_factory=dict)
    #: Indices whose coordinate (or position in an access) the loops around already fixed: a forall over
    #: one runs once, there.
    fixed: Mapping[IndexVar, "_Fixed"] = field(default_factory=dict)
    parallel: bool = False  # a parallel loop is around (its iterations share the kernel's own state)
    #: a loop around steps a non-unique unordered level (unsorted COO's rows): it may come back to a
    #: coordinate it left, so no store is the only one its position gets
    revisits: bool = False


def lower(stmt: Stmt, plan: Plan, scope: Scope, b: CBuilder) -> None:
    if isinstance(stmt, SuchThat):
        lower(stmt.stmt, plan, replace(scope, provenance=Provenance(stmt.relations)), b)
    elif isinstance(stmt, Forall):
        _forall(stmt, plan, scope, b)
    elif isinstance(stmt, Assign):
        _assign(stmt, plan, scope, b)
    elif isinstance(stmt, Where):
        _where(stmt, plan, scope, b)
    elif isinstance(stmt, Sequence):
        lower(stmt.first, plan, scope, b)
        lower(stmt.second, plan, scope, b)
    else:
        raise TypeError(f"not a CIN statement: {stmt!r}")


def _where(stmt: Where, plan: Plan, scope: Scope, b: CBuilder) -> None:
    """/* producer */ ...; sort or collect the temporaries; /* consumer */ ...; reset the temporaries."""
    temporaries = results(stmt.producer)
    copied = plan.counting and _copied_to_last_level(stmt.consumer)
    producing = replace(scope, atomic=False)  # the temporaries are this thread's own
    if copied and _bounded_target(stmt.consumer, plan, scope):
        # the consumer only counts the entries: the producer may count them at most too
        producing = replace(producing, bounded=scope.bounded | {n for n in temporaries if plan.targets[n].bounds})
    b.comment(f"produce {', '.join(temporaries)}")
    lower(stmt.producer, plan, producing, b)
    for name in temporaries:
        plan.targets[name].prepare_read(b, ordered=not copied)
    b.comment(f"consume {', '.join(temporaries)}")
    lower(stmt.consumer, plan, scope, b)
    for name in temporaries:
        plan.targets[name].reset(b, values=not plan.counting)


def _copied_to_last_level(consumer: Stmt) -> bool:
    """Whether the consumer only copies a one-index temporary into the result's last level
    (`∀j C(i,j) = w(j)`): counting its entries per row then needs them in no particular order."""
    if not isinstance(consumer, Forall) or not isinstance(consumer.body, Assign):
        return False
    rhs, lhs = consumer.body.rhs, consumer.body.lhs
    return (isinstance(rhs, Access) and rhs.tensor.temporary and rhs.indices == (consumer.index,)
            and lhs.level_indices[-1:] == (consumer.index,))


# --- assignments -------------------------------------------------------------------------------------

def _assign(stmt: Assign, plan: Plan, scope: Scope, b: CBuilder) -> None:
    """target[p] (op)= value; raise the flag of a tentative position; or add into a hoisted register.
    Counting, no value is computed: the store only marks where it goes."""
    name = stmt.lhs.tensor.name
    if name in scope.accumulators:
        register, stored = scope.accumulators[name]
        if not plan.counting:
            value = _expr(stmt.rhs, plan, scope, b)
            if scope.atomic:
                b.bridge_line("#pragma omp atomic")
            b.bridge_line(f"{register} += {value};")
        if stored:
            b.bridge_line(f"{stored} = 1;")
        return
    position = _target_position(stmt.lhs, plan, scope, b)
    if plan.counting:
        plan.targets[name].mark(position, b)
    else:
        value = _expr(stmt.rhs, plan, scope, b)
        _store(name, position, _operator(stmt.lhs, stmt.accumulate, plan, scope), value, plan, scope, b)
    if scope.flags.get(name):
        b.bridge_line(f"{scope.flags[name]} = 1;")


def _store(name: str, position: Position, op: str, value: str, plan: Plan, scope: Scope, b: CBuilder) -> None:
    """A store, atomic when iterations of a parallel loop add into the same position."""
    if scope.atomic and op == "+=":
        b.bridge_line("#pragma omp atomic")
    plan.targets[name].store(position, op, value, b)


def _operator(lhs: Access, accumulate: bool, plan: Plan, scope: Scope) -> str:
    """`+=` for a store that adds, unless it is the only one its position will get (no enclosing loop
    leaves the position unchanged, and the target is not written elsewhere): then `=`, which writes a
    fresh page without reading it first (LOWERING.md §4)."""
    around = {root for index in scope.loops for root in scope.provenance.roots(index)}
    once = plan.targets[lhs.tensor.name].overwrites and around <= set(lhs.indices) and not scope.revisits
    return "+=" if accumulate and not once else "="


def _target_position(lhs: Access, plan: Plan, scope: Scope, b: CBuilder) -> Position:
    """Where the store goes: for a target written at random, located from all its coordinates (in any
    loop order); for an appended one, the position its innermost level's loop entered."""
    target = plan.targets[lhs.tensor.name]
    if not target.random_access:
        return scope.writes.get((lhs.tensor.name, lhs.tensor.order - 1), ROOT)
    position = ROOT
    for level, index in enumerate(lhs.level_indices):
        position = target.enter(level, names.coordinate(index), position, scope.reads, b)
    return position


def _expr(expr, plan: Plan, scope: Scope, b: CBuilder) -> str:
    if isinstance(expr, _Register):
        return expr.name
    if isinstance(expr, Access):
        return _read(expr, plan, scope, b)
    if isinstance(expr, Literal):
        return c_literal(expr.value, plan.value_type)
    if isinstance(expr, Neg):
        return f"(-{_expr(expr.operand, plan, scope, b)})"
    symbol = {Add: "+", Sub: "-", Mul: "*"}[type(expr)]
    return f"({_expr(expr.left, plan, scope, b)} {symbol} {_expr(expr.right, plan, scope, b)})"


def _dense_operand(access: Access) -> bool:
    """A dense operand is read at random, from all its coordinates, in whatever order the loops bind
    them: it never limits the iteration space (it acts as the loop's whole range) nor the loop order.
    So is a dense temporary read by locating every coordinate (a SparseAuto temporary, read in the
    consumer's loop order, whatever order the producer wrote it in)."""
    if not access.tensor.format.is_dense:
        return False
    return not access.tensor.temporary or all(p is Protocol.LOCATE for p in access.protocols)


def _read(access: Access, plan: Plan, scope: Scope, b: CBuilder) -> str:
    """vals[p]; 0 when a locate found nothing; the sum over a non-unique leaf's segment (a COO vector)."""
    position = scope.reads.get((access, access.tensor.order - 1), ROOT)
    if _dense_operand(access):
        for level, (index, read_level) in enumerate(zip(access.level_indices, plan.read_levels(access))):
            position = read_level.locate(position, names.coordinate(index))
    vals = plan.vals(access)
    if position.end is not None:
        total = plan.fresh("v")
        b.bridge_line(f"{plan.value_types[access.tensor.name]} {total} = 0;")
        with b.bridge_block(f"for (int64_t q = {position.begin}; q < {position.end}; q++)"):
            b.bridge_line(f"{total} += {vals}[q];")
        return total
    if position.may_miss:
        return f"({position.begin} < 0 ? 0 : {vals}[{position.begin}])"
    return f"{vals}[{position.begin}]"


# --- loops -------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Loop:
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


def _survey(stmt: Forall, plan: Plan, scope: Scope) -> _Loop:
    index, stepped, located, written = stmt.index, {}, [], []
    for access in dict.fromkeys(accesses(stmt.body)):
        if _dense_operand(access):
            continue
        level = _next_level(access, scope)
        levels = access.level_indices
        if level < len(levels) and levels[level] == index:
            if access.level_protocols[level] is Protocol.STEP and plan.read_levels(access)[level].steppable:
                stepped[access] = lat.Iterator(access, level, plan.read_levels(access)[level].full)
            else:
                located.append((access, level))
        elif index in levels[level:]:
            raise ScheduleError(f"Expected {access} to be read in its storage order (format "
                                f"{access.tensor.format}), but loop {index} comes before {levels[level]}")
    for assign in dict.fromkeys(assignments(stmt.body)):
        name, levels = assign.lhs.tensor.name, assign.lhs.level_indices
        if plan.targets[name].random_access:
            continue
        level = next((k for k in range(len(levels)) if (name, k) not in scope.writes), len(levels))
        if level < len(levels) and levels[level] == index:
            written.append((name, level))
        elif index in levels[level:]:
            raise ScheduleError(f"Expected {assign.lhs} to be written in its storage order (format "
                                f"{assign.lhs.tensor.format}), but loop {index} comes before {levels[level]}")
    return _Loop(index, stepped, tuple(located), tuple(dict.fromkeys(written)))


def _lattice(stmt, loop: _Loop, produced: Mapping[str, lat.Lattice]) -> lat.Lattice:
    """The iteration lattice of `stmt` for the loop: a temporary read stands for its producer."""
    if isinstance(stmt, Access):
        if stmt in loop.stepped:
            return lat.single(loop.stepped[stmt])
        return produced.get(stmt.tensor.name, lat.universe()) if stmt.tensor.temporary else lat.universe()
    if isinstance(stmt, Literal):
        return lat.universe()
    if isinstance(stmt, (Assign, Forall, Neg)):
        return _lattice(stmt.children()[0], loop, produced)
    if isinstance(stmt, Mul):
        return lat.meet(_lattice(stmt.left, loop, produced), _lattice(stmt.right, loop, produced))
    if isinstance(stmt, (Add, Sub, Sequence)):
        first, second = stmt.children()
        return lat.join(_lattice(first, loop, produced), _lattice(second, loop, produced))
    if isinstance(stmt, Where):
        inner = _lattice(stmt.producer, loop, produced)
        made = dict.fromkeys(results(stmt.producer), inner)
        return _lattice(stmt.consumer, loop, {**produced, **made})
    raise TypeError(f"not CIN: {stmt!r}")


def _forall(stmt: Forall, plan: Plan, scope: Scope, b: CBuilder) -> None:
    if stmt.index in scope.fixed:
        _fixed_forall(stmt, plan, scope, b)
        return
    bound = None
    relation = scope.provenance.defining(stmt.index)
    if relation is not None:
        if not _indexes_levels(stmt):
            _derived_forall(stmt, plan, scope, b)
            return
        stmt, scope, bound = _blocked_loop(stmt, relation, plan, scope, b)
    loop = _survey(stmt, plan, scope)
    _check_appends(loop, scope)
    lattice = _lattice(stmt.body, loop, {})
    bounded = _bounded_target(stmt, plan, scope)
    if bounded is not None:
        _count_trips(loop, lattice, bounded, plan, scope, b)
        return
    with b.bridge_block(), _hoisting(stmt, plan, scope, b) as (stmt, scope):
        _declare_iterators(lattice, plan, scope, b)
        if lat.dense_loop(lattice):
            _dense_loop(stmt, loop, lattice, plan, scope, b, bound)
        elif stmt.parallel is not None:
            _parallel_sparse_loop(stmt, loop, lattice, plan, scope, b)
        else:
            command = f"coiterate({loop.index})"
            level_of = lambda it: plan.read_levels(it.access)[it.level]
            roles = finds.roles(stmt.coiterate, lattice, lambda it: _moved_by(it, scope), level_of, command)
            if roles is None:
                for point in lattice:
                    _sparse_loop(stmt, loop, lattice, point, plan, scope, b)
            else:
                finds.check(roles, lattice, level_of, bool(loop.written), command)
                for number in range(len(roles.drivers)):
                    _find_pass(stmt, loop, lattice, roles, number, plan, scope, b)


@contextmanager
def _hoisting(stmt: Forall, plan: Plan, scope: Scope, b: CBuilder) -> Iterator[tuple[Forall, Scope]]:
    """Around a reduction nest, a register that the nest sums into and that is stored once after it
    (LOWERING.md §6); yields the nest (its invariant factors taken out) and the scope of its body."""
    hoisted = _hoistable(stmt, plan, scope)
    if hoisted is None:
        yield stmt, scope
        return
    name, register, stored = hoisted
    stmt, invariant = _split_invariant(stmt, scope.provenance)
    if not plan.counting:
        b.bridge_line(f"{plan.value_types[name]} {register} = 0;")
    if stored:
        b.bridge_line(f"int {stored} = 0;")
    # the register is this block's own: only iterations of this very loop can race on it
    yield stmt, replace(scope, accumulators={**scope.accumulators, name: (register, stored)}, atomic=False)
    total = product([*invariant, _Register(register)]) if invariant else _Register(register)
    _store_hoisted(stmt, name, total, stored, plan, scope, b)


def _bounded_target(stmt: Forall, plan: Plan, scope: Scope) -> str | None:
    """In the bound phase, the target this loop makes at most one entry of per iteration, if it may be
    replaced by its trip count: every store below it goes to that target, at the coordinate of the loop
    as the target's last level (the loops inside reduce)."""
    if not plan.bounding:
        return None
    lhs = {a.lhs.tensor.name: a.lhs for a in assignments(stmt.body)}
    if len(lhs) != 1:
        return None
    (name, access), = lhs.items()
    if name not in scope.bounded or access.level_indices[-1:] != (stmt.index,):
        return None
    return name


def _count_trips(loop: _Loop, lattice: lat.Lattice, name: str, plan: Plan, scope: Scope, b: CBuilder) -> None:
    """The bound phase's stand-in for a loop: its target gets as many entries as the loop would run
    iterations, at most. A merge runs at most the summed lengths of the lattice's bottom points (each
    coordinate it visits is in every iterator of some bottom point), the shortest iterator of each;
    every loop runs at most its dimension."""
    extent = names.extent(loop.index)
    with b.bridge_block():
        _declare_iterators(lattice, plan, scope, b)
        if lat.dense_loop(lattice):
            trips = extent
        else:
            bottoms = [p for p in lattice if not any(q.sparse < p.sparse for q in lattice)]
            terms = [_smallest([f"({end} - {q})" for q, end, _, _ in (_iterator_names(it, plan)
                                                                       for it in sorted(point.sparse, key=str))])
                     for point in bottoms]
            trips = _smallest([" + ".join(terms), extent])
        b.bridge_line(f"const int64_t trips = {trips};")
        plan.targets[name].count_at_most("trips", b)
        if scope.flags.get(name):
            b.bridge_line(f"if (trips) {scope.flags[name]} = 1;")


def _smallest(terms: list[str]) -> str:
    smallest = terms[0]
    for term in terms[1:]:
        smallest = f"min64({smallest}, {term})"
    return smallest


def _hoistable(stmt: Forall, plan: Plan, scope: Scope) -> tuple[str, str, str | None] | None:
    """A reduction nest (foralls over indices the output lacks, around one `+=`) sums into a register
    (LOWERING.md §6): returns (tensor, register, stored-flag)."""
    loops, body = unnest(stmt)
    if not isinstance(body, Assign) or not body.accumulate:
        return None
    name = body.lhs.tensor.name
    if any(root in body.lhs.indices for index in loops for root in scope.provenance.roots(index)) \
            or name in scope.accumulators:
        return None
    dense = plan.targets[name].flag_free
    return name, plan.fresh("acc"), None if dense else plan.fresh("stored")


@dataclass(frozen=True)
class _Register:
    """A C variable standing in an expression: the sum a hoisted reduction leaves."""

    name: str


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


def _store_hoisted(stmt: Forall, name: str, total, stored: str | None, plan: Plan, scope: Scope,
                   b: CBuilder) -> None:
    lhs = next(a.lhs for a in assignments(stmt) if a.lhs.tensor.name == name)
    position = _target_position(lhs, plan, scope, b)
    with b.bridge_scope(f"if ({stored})" if stored else ""):
        if plan.counting:
            plan.targets[name].mark(position, b)
        else:
            _store(name, position, _operator(lhs, True, plan, scope), _expr(total, plan, scope, b), plan, scope, b)
        if scope.flags.get(name):
            b.bridge_line(f"{scope.flags[name]} = 1;")


def _iterator_names(it: lat.Iterator, plan: Plan) -> tuple[str, str, str, str]:
    ident = plan.access_ids[it.access]
    return (names.position(ident, it.level), names.position_end(ident, it.level),
            names.coordinate_of(ident, it.level), names.segment_end(ident, it.level))


def _sparse_iterators(lattice: lat.Lattice) -> list[lat.Iterator]:
    return list(dict.fromkeys(it for point in lattice for it in sorted(point.sparse, key=str)))


def _declare_iterators(lattice: lat.Lattice, plan: Plan, scope: Scope, b: CBuilder) -> None:
    for it in _sparse_iterators(lattice):
        q, end, _, _ = _iterator_names(it, plan)
        parent = scope.reads.get((it.access, it.level - 1), ROOT)
        level = plan.read_levels(it.access)[it.level]
        begin, last = level.range(parent)
        b.bridge_line(f"int64_t {q} = {begin};")
        b.bridge_line(f"const int64_t {end} = {last};")
        if level.base(parent):
            b.bridge_line("const int64_t {} = {};".format(*level.base(parent)))


def _load(it: lat.Iterator, plan: Plan, b: CBuilder, guard: bool, index: str | None = None) -> None:
    """Load the iterator's coordinate (-1 past its end when `guard`) and, for a non-unique level, find
    the end of the run of entries sharing it."""
    q, end, c, seg = _iterator_names(it, plan)
    level = plan.read_levels(it.access)[it.level]
    load = level.coordinate(q)
    b.bridge_line(f"const int64_t {c} = {f'{q} < {end} ? {load} : -1' if guard else load};")
    if not level.unique:
        b.bridge_line(f"int64_t {seg} = {q} + ({c} == {index or c});")
        with b.bridge_block(f"if ({c} == {index or c})"):
            b.bridge_line(f"while ({seg} < {end} && {level.coordinate(seg)} == {c}) {seg}++;")


def _advance(it: lat.Iterator, plan: Plan, index: str) -> str:
    q, _, c, seg = _iterator_names(it, plan)
    if not plan.read_levels(it.access)[it.level].unique:
        return f"{q} = {seg};"
    return f"{q} += ({c} == {index});"


def _indexes_levels(stmt: Forall) -> bool:
    """Whether some access stores a level by the loop's (derived) index: a blocked layout's block view."""
    return any(stmt.index in a.level_indices for a in accesses(stmt.body))


def _blocked_loop(stmt: Forall, relation, plan: Plan, scope: Scope, b: CBuilder) -> tuple[Forall, Scope, str]:
    """A loop over a variable of a split that an access's level is indexed by (a block row or a row
    within a block of BCSR's view): a loop like any other over that level, running to the split's bound
    (`min64(b, N - b·i0)` cuts the last block short), whose body, once both variables are around,
    recovers the original coordinate for the accesses indexed by it."""
    if not isinstance(relation, Split) or relation.divide:
        raise ScheduleError(f"Expected the loop over {stmt.index}, a level index of "
                            f"{next(a for a in accesses(stmt.body) if stmt.index in a.level_indices)}, to come from "
                            f"a split by a block size, but it comes from {relation}")
    scope, bound, recovered = _derived_range(relation, stmt.index, plan, scope, b)
    scope = replace(scope, derived=scope.derived | {stmt.index})
    if recovered is not None:
        parent, value = recovered
        scope = replace(scope, fixed={**scope.fixed, parent: _Fixed(value(names.coordinate(stmt.index)))})
        stmt = replace(stmt, body=Forall(parent, stmt.body))
    return stmt, scope, bound


def _dense_loop(stmt: Forall, loop: _Loop, lattice: lat.Lattice, plan: Plan, scope: Scope, b: CBuilder,
                bound: str | None = None) -> None:
    """for (i = 0; i < N; i++) { if (A at i && B at i) {...} else if (A at i) {...} else {...}; advance }
    (to `bound` instead of the dimension, for a blocked loop)."""
    sparse = _sparse_iterators(lattice)
    _require_ordered(sparse, loop, plan)
    parallel = _parallel(stmt, sparse, plan, scope, b) if stmt.parallel is not None else nullcontext(scope)
    with parallel as scope:
        if stmt.unroll:
            b.bridge_line(f"#pragma GCC unroll {stmt.unroll}")
        _dense_for(stmt, loop, lattice, sparse, plan, scope, b, bound or names.extent(loop.index))


def _dense_for(stmt: Forall, loop: _Loop, lattice: lat.Lattice, sparse: list, plan: Plan, scope: Scope,
               b: CBuilder, bound: str) -> None:
    index = names.coordinate(loop.index)
    with b.bridge_block(f"for (int64_t {index} = 0; {index} < {bound}; {index}++)"), \
            _iteration(stmt, plan, b):
        count_iteration(plan.counters, b, f"∀{loop.index} dense")
        for it in sparse:
            _load(it, plan, b, guard=True, index=index)
        _cases(stmt, loop, lattice, lattice, plan, scope, b)
        for it in sparse:
            b.bridge_line(_advance(it, plan, index))


@contextmanager
def _parallel(stmt: Forall, sparse: list, plan: Plan, scope: Scope, b: CBuilder,
              schedule: str = "schedule(static)") -> Iterator[Scope]:
    """Around a loop over a whole dimension run in parallel, the OpenMP code; yields the scope of its body.

    Iterations share what is declared outside the loop: the results, and the registers of reductions
    around it (this loop's own, when it is the reduction). `no_races` promises they do not race, so a
    register that every iteration adds into is refused; `ignore_races` leaves them alone;
    `atomics` makes every sum into them atomic; `temporary` gives each thread (or SIMD lane) zeroed
    copies, added up after the loop: registers by OpenMP (`reduction(+: ...)`), a dense result through
    one heap copy per thread, added into the result one thread at a time. The temporaries of `where`s
    inside are each thread's own, allocated when its region begins. A result assembled by appending is
    written in parallel only by the loop whose threads assemble it in chunks (`plan.region`; the kernel
    opens the region around all phases). Loops co-iterating a sparse operand (its position carries from iteration
    to iteration) are refused."""
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
    chunked = plan.region == stmt.index
    registers = {n: r for n, (r, _) in scope.accumulators.items()}
    written = dict.fromkeys(a.lhs.tensor.name for a in assignments(stmt.body) if a.lhs.tensor.name not in threaded)
    for name in written:
        if name not in registers and not plan.targets[name].parallel_safe() and not chunked:
            raise ScheduleError(f"{command}: {name} is assembled by appending, which threads assemble only in "
                                f"chunks of rows: the parallel loop must be the outermost one, over {name}'s first level, "
                                f"and that level dense (rows of CSR)")
    shared = [registers[n] for n in written if n in registers]
    if race is Race.NO_RACES and shared and not plan.counting:
        raise ScheduleError(f"{command}: every iteration over {stmt.index} adds into one register ({shared[0]}, "
                            f"a sum), so they would race: use atomics or temporary (ignore_races accepts a wrong sum)")
    # a count phase sums no values: its registers are not even declared
    summed = [registers[n] for n in written if n in registers] if race is Race.TEMPORARY and not plan.counting else []
    flags = [scope.accumulators[n][1] for n in written if n in registers and scope.accumulators[n][1]]
    clauses = ([f"reduction(+: {', '.join(summed)})"] if summed else []) + \
              ([f"reduction(|: {', '.join(flags)})"] if flags else [])
    copied = [n for n in written if n not in registers and plan.targets[n].reduction_size() is not None
              and race is Race.TEMPORARY]
    if unit is ParallelUnit.CPU_VECTOR:
        if copied:  # lanes, not threads: a copy per lane is OpenMP's to make
            sections = (f"{names.vals(n)}[0:{plan.targets[n].reduction_size()}]" for n in copied)
            clauses.append(f"reduction(+: {', '.join(sections)})")
        b.bridge_line(f"#pragma omp {' '.join(['simd', *clauses])}")
        yield replace(scope, parallel=True)
        return
    atomic = replace(scope, atomic=race is Race.ATOMICS, parallel=True)
    if chunked:  # inside the kernel's region, which made the temporaries
        b.bridge_line(f"#pragma omp {' '.join(['for schedule(static)', *clauses])}")
        yield atomic
        return
    threads = [f"num_threads({plan.num_threads})"] if plan.num_threads is not None else []
    if not copied and not threaded:
        b.bridge_line(f"#pragma omp {' '.join(['parallel for', schedule, *threads, *clauses])}")
        yield atomic
        return
    failed = plan.fresh("failed")
    with b.bridge_block():
        b.bridge_line(f"const int threads = {plan.num_threads or 'omp_get_max_threads()'};")
        b.bridge_line(f"int {failed} = 0;")
        for name in copied:
            vals, ctype, size = names.vals(name), plan.value_types[name], plan.targets[name].reduction_size()
            b.bridge_line(f"{ctype} *{_copies(name)} = calloc((size_t)threads * ({size}), sizeof({ctype}));")
            b.fail(f"!{_copies(name)}", ReturnCode.OUT_OF_MEMORY)
            b.bridge_line(f"{ctype} *restrict {_shared(name)} = {vals};")
        b.bridge_line(f"#pragma omp {' '.join(['parallel num_threads(threads)', *clauses])}")
        with b.bridge_block():
            for name in copied:  # shadows the result: the body stores into this thread's copy
                vals, ctype, size = names.vals(name), plan.value_types[name], plan.targets[name].reduction_size()
                b.bridge_line(f"{ctype} *restrict {vals} = {_copies(name)} + (size_t)omp_get_thread_num() * ({size});")
            with thread_temporaries([plan.targets[n] for n in threaded], failed, plan.fresh("allocated"), b):
                with b.bridge_block(f"if ({b.agreed(failed, plan.fresh('ready'))})"), \
                        b.failing_to(failed, plan.fresh("done")):
                    b.bridge_line(f"#pragma omp for {schedule}")
                    yield atomic
                if copied:
                    b.bridge_line("#pragma omp critical")
                    with b.bridge_block():
                        for name in copied:
                            vals, size = names.vals(name), plan.targets[name].reduction_size()
                            with b.bridge_block(f"for (int64_t p = 0; p < {size}; p++)"):
                                b.bridge_line(f"{_shared(name)}[p] += {vals}[p];")
        for name in copied:
            b.bridge_line(f"free({_copies(name)});")
        b.fail(failed, failed)


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
def _iteration(stmt: Forall, plan: Plan, b: CBuilder) -> Iterator[None]:
    """The body of a loop's iteration; a failure in a parallel one skips to its end (no code may leave
    an OpenMP region), the region's flag raised."""
    if stmt.parallel is None or stmt.parallel.unit is not ParallelUnit.CPU_THREAD or b.failure_flag is None:
        yield
        return
    with b.failing_to(b.failure_flag, plan.fresh(f"{plan.phase}next")):
        yield


def _require_ordered(iterators, loop: _Loop, plan: Plan, descending: bool = False) -> None:
    """Merging, or checking coordinates against a dense loop, needs iterators in increasing order (or a
    merge of iterators that all decrease: `descending`)."""
    for it in iterators:
        level = plan.read_levels(it.access)[it.level]
        if not (level.descending if descending else level.ordered):
            raise ScheduleError(f"Expected {'decreasing' if descending else 'increasing'} levels to co-iterate over "
                                f"{loop.index}, but {it.access} is stepped through a level whose siblings are "
                                f"{_order_word(level)}: locate it, or find it with coiterate({loop.index}, hash)")


def _order_word(level) -> str:
    return "increasing" if level.ordered else "decreasing" if level.descending else "unordered"


def _parallel_sparse_loop(stmt: Forall, loop: _Loop, lattice: lat.Lattice, plan: Plan, scope: Scope,
                          b: CBuilder) -> None:
    """A parallel loop over one operand's stored positions (TTM over a CSF tensor's slices): each
    iteration starts from its own position, so the positions need not carry from one to the next, as a
    merge's do."""
    command = f"parallelize({loop.index}, {stmt.parallel.unit.value}, {stmt.parallel.race.value})"
    point = lattice[0]
    if len(lattice) != 1 or len(point.sparse) != 1 or stmt.coiterate is not None:
        raise ScheduleError(f"{command}: the loop co-iterates {', '.join(str(a) for a in loop.stepped)}, whose "
                            f"positions carry from one iteration to the next; a parallel loop over sparse "
                            f"positions steps one operand alone")
    it, = point.sparse
    q = _iterator_names(it, plan)[0]
    if not plan.read_levels(it.access)[it.level].unique:
        raise ScheduleError(f"{command}: {it.access} repeats coordinates at this level, whose runs a thread must "
                            f"not split")
    end = _iterator_names(it, plan)[1]
    weight = lambda position: _entries_before(it, plan, position)
    b.bridge_line(f"const int64_t {q}_first = {q};")
    b.bridge_line(f"const int64_t {q}_parts = {plan.num_threads or 'omp_get_max_threads()'};")
    b.bridge_line(f"const int64_t {q}_entries = {weight(end)} - {weight(q + '_first')};")
    # Slices of a sparse operand differ in size, so each thread takes one run of consecutive slices
    # holding an equal share of the entries below: it writes one stretch of the result, and a skewed
    # tensor's heavy slices are spread out. (Chunks taken as threads finish were 10-20% slower on TTM.)
    with _parallel(stmt, [], plan, scope, b, "schedule(static, 1)") as inner, \
            b.bridge_block(f"for (int64_t {q}_part = 0; {q}_part < {q}_parts; {q}_part++)"):
        b.bridge_line(f"int64_t {q}_span[2];")
        with b.bridge_block("for (int side = 0; side < 2; side++)"):
            b.bridge_line(f"const int64_t share = {q}_part + side;")
            b.bridge_line(f"int64_t low = {q}_first, high = {end};")
            with b.bridge_block(f"while (share < {q}_parts && low < high)"):
                b.bridge_line("const int64_t middle = low + (high - low) / 2;")
                b.bridge_line(f"if ({weight('middle')} < {weight(q + '_first')} + {q}_entries * share / {q}_parts) "
                       f"low = middle + 1; else high = middle;")
            b.bridge_line(f"{q}_span[side] = share < {q}_parts ? low : {end};")
        _sparse_loop(stmt, loop, lattice, point, plan, inner, b, span=(f"{q}_span[0]", f"{q}_span[1]"))


def _entries_before(it: lat.Iterator, plan: Plan, position: str) -> str:
    """The entries an operand stores below the positions before `position` of the iterator's level,
    summed over the levels reached by following positions down (up to an offset; a dense suffix counts
    as one level): what visiting them costs, as a fiber of TTM's result costs a write besides its
    nonzeros' work. It increases with `position`, which is all that splitting evenly needs."""
    counts = []
    for level in plan.read_levels(it.access)[it.level + 1:]:
        if not (isinstance(level, TensorLevel) and Capability.POSITION_ITERATION in level.level.capabilities):
            break
        position = level.range(Position(as_expr(position)))[0]
        counts.append(position)
    if len(counts) < 2:
        return counts[0] if counts else position
    return f"({' + '.join(map(str, counts))})"


def _sparse_loop(stmt: Forall, loop: _Loop, lattice: lat.Lattice, point: lat.Point, plan: Plan, scope: Scope,
                 b: CBuilder, span: tuple[str, str] | None = None) -> None:
    """One loop per lattice point: a plain `for` over a lone iterator (over the positions [`span`) of
    a thread's share when the loop is parallel), else a merge `while`."""
    index = names.coordinate(loop.index)
    cases = lat.sub_points(lattice, point)
    iterators = sorted(point.sparse, key=str)
    if len(iterators) == 1 and len(cases) == 1:
        it = iterators[0]
        q, end, c, seg = _iterator_names(it, plan)
        level = plan.read_levels(it.access)[it.level]
        header = f"for (; {q} < {end}; {q}++)" if level.unique else f"while ({q} < {end})"
        if span is not None:
            header = f"for (int64_t {q} = {span[0]}; {q} < {span[1]}; {q}++)"
        if loop.written and not level.ordered:
            raise ScheduleError(f"Expected the loop over {loop.index}, which appends to "
                                f"{', '.join(n for n, _ in loop.written)}, to visit coordinates in increasing order, "
                                f"but it steps {it.access}, whose siblings are {_order_word(level)}: write into a "
                                f"dense result, or precompute into a workspace")
        if stmt.unroll:
            b.bridge_line(f"#pragma GCC unroll {stmt.unroll}")
        with b.bridge_block(header), _iteration(stmt, plan, b):
            count_iteration(plan.counters, b, f"∀{loop.index} over {it.access}")
            vacant = level.vacant(q)
            if vacant:
                b.bridge_line(f"if ({vacant}) continue;")
            _load(it, plan, b, guard=False)
            b.bridge_line(f"const int64_t {index} = {c};")
            _case_body(stmt, loop, point, plan, scope, b)
            if not level.unique:
                b.bridge_line(f"{q} = {seg};")
        return
    descending = all(plan.read_levels(it.access)[it.level].descending for it in iterators) and not loop.written
    _require_ordered(iterators, loop, plan, descending)
    running = " && ".join(f"{_iterator_names(it, plan)[0]} < {_iterator_names(it, plan)[1]}" for it in iterators)
    with b.bridge_block(f"while ({running})"):
        count_iteration(plan.counters, b, f"∀{loop.index} merge")
        coordinates = []
        for it in iterators:
            _load(it, plan, b, guard=False)
            coordinates.append(_iterator_names(it, plan)[2])
        smallest, sooner = coordinates[0], ">" if descending else "<"
        for c in coordinates[1:]:
            smallest = f"({c} {sooner} {smallest} ? {c} : {smallest})"
        b.bridge_line(f"const int64_t {index} = {smallest};")
        for it in iterators:
            if not plan.read_levels(it.access)[it.level].unique:
                _, _, c, seg = _iterator_names(it, plan)
                b.bridge_line(f"if ({c} != {index}) {seg} = {_iterator_names(it, plan)[0]};")
        _cases(stmt, loop, lattice, cases, plan, scope, b)
        for it in iterators:
            b.bridge_line(_advance(it, plan, index))


def _cases(stmt: Forall, loop: _Loop, lattice: lat.Lattice, cases: lat.Lattice, plan: Plan, scope: Scope,
           b: CBuilder, found: Mapping[lat.Iterator, str] | None = None) -> None:
    """if (the iterators of the first point are at the coordinate) ... else if (the next point's) ...:
    merged iterators are when their coordinate is the loop's; `found` ones when their position is found
    (the driver of a find loop always is)."""
    index = names.coordinate(loop.index)
    for number, point in enumerate(cases):
        present = [f"{found[it]} >= 0" if it in found else "" for it in sorted(point.sparse, key=str)] if found is not None \
            else [f"{_iterator_names(it, plan)[2]} == {index}" for it in sorted(point.sparse, key=str)]
        condition = " && ".join(filter(None, present))
        if found is None and len(cases) == 1 and len(point.sparse) <= 1 and not lat.dense_loop(lattice):
            header = ""
        elif condition:
            header = f"{'else ' if number else ''}if ({condition})"
        else:
            header = "else" if number else ""
        with b.bridge_scope(header):
            _case_body(stmt, loop, point, plan, scope, b, found or {})
        if found is not None and not condition:
            return  # the driver alone: the cases below are never reached


def _case_body(stmt: Forall, loop: _Loop, point: lat.Point, plan: Plan, scope: Scope, b: CBuilder,
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
            level = plan.read_levels(access)[it.level]
            parent = scope.reads.get((access, it.level - 1), ROOT)
            if it.full:
                reads[(access, it.level)] = level.locate(parent, index)
            elif it in found:
                reads[(access, it.level)] = Position(level.stepped(found[it], index),
                                                     None if level.unique else as_expr(f"{found[it]}_end"))
            else:
                q, _, c, seg = _iterator_names(it, plan)
                reads[(access, it.level)] = Position(level.stepped(q, c), None if level.unique else as_expr(seg))
    for access, level_number in loop.located:
        parent = scope.reads.get((access, level_number - 1), ROOT)
        reads[(access, level_number)] = plan.read_levels(access)[level_number].locate(parent, index)
    writes, flags, entered = dict(scope.writes), dict(scope.flags), []
    for name, level in loop.written:
        target = plan.targets[name]
        parent = scope.writes.get((name, level - 1), ROOT)
        target.bind(level, index, b)
        position = target.enter(level, index, parent, reads, b)
        writes[(name, level)] = position
        entered.append((name, level, parent, position, flags.get(name)))
        if target.flag(level):
            flags[name] = target.flag(level)
    revisits = scope.revisits or any(not level.unique and not level.ordered and not level.descending
                                     for level in (plan.read_levels(it.access)[it.level] for it in point.sparse))
    lower(body, plan, replace(scope, reads=reads, writes=writes, flags=flags, loops=(*scope.loops, loop.index),
                              revisits=revisits), b)
    for name, level, parent, position, parent_flag in reversed(entered):
        plan.targets[name].leave(level, parent, position, b, parent_flag)


def _moved_by(it: lat.Iterator, scope: Scope) -> int:
    """The depth of the innermost loop around that moves the iterator's segment (-1: none does)."""
    above = it.access.level_indices[:it.level]
    return max((depth for depth, index in enumerate(scope.loops) if index in above), default=-1)


def _find_pass(stmt: Forall, loop: _Loop, lattice: lat.Lattice, roles: finds.Roles, number: int, plan: Plan,
               scope: Scope, b: CBuilder) -> None:
    """One pass of a find loop (finds.py): walk the driver's segment; at each coordinate, skip it when an
    earlier pass's driver holds it, else find it in the other operands and run the case of those
    present."""
    index = names.coordinate(loop.index)
    driver = roles.drivers[number]
    q, end, c, seg = _iterator_names(driver, plan)
    level = plan.read_levels(driver.access)[driver.level]
    order = finds.order_of(level)
    with b.bridge_block():
        if number:  # an earlier pass may have searched through the driver
            b.bridge_line(f"{q} = {level.range(scope.reads.get((driver.access, driver.level - 1), ROOT))[0]};")
        finders = {it: _finder(it, roles.strategy[it], order, loop, plan, scope, b)
                   for it in finds.sought(roles, lattice, number)}
        for finder in finders.values():
            finder.prepare(plan.tables, scope.parallel, b)
        with b.bridge_block(f"while ({q} < {end})"):
            count_iteration(plan.counters, b, f"∀{loop.index} walk {driver.access}")
            vacant = level.vacant(q)
            if vacant:
                b.bridge_line(f"if ({vacant}) {{ {q}++; continue; }}")
            _load(driver, plan, b, guard=False)
            b.bridge_line(f"const int64_t {index} = {c};")
            earlier = roles.drivers[:number]
            found = {it: finders[it].find(index, b) for it in earlier}
            with b.bridge_scope(" && ".join(f"{found[it]} < 0" for it in earlier) and
                         f"if ({' && '.join(f'{found[it]} < 0' for it in earlier)})"):
                found.update((it, finder.find(index, b)) for it, finder in finders.items() if it not in found)
                _cases(stmt, loop, lattice, finds.cases(roles, lattice, number), plan, scope, b, found)
            b.bridge_line(f"{q} = {seg};" if not level.unique else f"{q}++;")


def _finder(it: lat.Iterator, strategy, driver_order: int, loop: _Loop, plan: Plan, scope: Scope,
            b: CBuilder) -> finds.Finder:
    q, end, _, _ = _iterator_names(it, plan)
    level = plan.read_levels(it.access)[it.level]
    begin, _ = level.range(scope.reads.get((it.access, it.level - 1), ROOT))
    return finds.Finder(strategy, level, q, begin, end, names.level_stem(plan.access_ids[it.access], it.level),
                        loop.index, driver_order,
                        lambda what: count_iteration(plan.counters, b, f"∀{loop.index} {what} {it.access}"), f"coiterate({loop.index})")


def count_iteration(counters: list[str] | None, b: CBuilder, label: str) -> None:
    """Instrumented kernels count every iteration of every loop (the loop's label names it)."""
    if counters is not None:
        b.bridge_line(f"counters[{len(counters)}]++;")
        counters.append(label)


# --- derived loops (Senanayake et al. §4.2) ----------------------------------------------------------

@dataclass(frozen=True)
class _Fixed:
    """Where the loops around put an index: at a coordinate, or (`access` given) at a position of the
    access's `level`. `in_order`: the loops visit its values increasing; `repeats`: consecutive
    iterations may fix the same value (the outer index of a collapse)."""

    value: str
    access: Access | None = None
    level: int = -1
    in_order: bool = True
    repeats: bool = False


def _derived_forall(stmt: Forall, plan: Plan, scope: Scope, b: CBuilder) -> None:
    """for (v = 0; v < its extent; v++) over a derived variable. Once the loops over every variable made
    alongside it are around, the variable they came from is recovered, and so on up to the tensors' own
    indices, which the body then sees fixed. Bounds, not guards, cut the last tile short."""
    with b.bridge_block(), _hoisting(stmt, plan, scope, b) as (stmt, scope):
        _derived_loop(stmt, plan, scope, b)


def _derived_loop(stmt: Forall, plan: Plan, scope: Scope, b: CBuilder) -> None:
    index, relation = stmt.index, scope.provenance.defining(stmt.index)
    var = names.coordinate(index)
    scope, upper, recovered = _derived_range(relation, index, plan, scope, b)
    inner = replace(scope, derived=scope.derived | {index}, loops=(*scope.loops, index))
    in_order = not (isinstance(relation, Split) and index == relation.outer)
    track = None
    if recovered is not None:
        made, value = recovered
        if _collapsed_pos(made, scope) and stmt.parallel is None:  # search once, then follow the rows
            track = _search_row(made, value("0"), plan, scope, b)
            if in_order:  # the loop runs over consecutive positions
                _row_segments(stmt, made, value("0"), upper, track, plan, inner, b)
                return
    parallel = _parallel(stmt, [], plan, inner, b) if stmt.parallel is not None else nullcontext(inner)
    with parallel as inner:
        if stmt.unroll:
            b.bridge_line(f"#pragma GCC unroll {stmt.unroll}")
        with b.bridge_block(f"for (int64_t {var} = 0; {var} < {upper}; {var}++)"), _iteration(stmt, plan, b):
            count_iteration(plan.counters, b, f"∀{index} {relation}")
            if recovered is None:
                lower(stmt.body, plan, inner, b)
            else:
                _recover(made, value(var), stmt.body, plan, inner, b, in_order, track)


def _row_segments(stmt: Forall, made: IndexVar, start: str, count: str, row: str, plan: Plan, scope: Scope,
                  b: CBuilder) -> None:
    """A loop over `count` consecutive positions of collapsed levels from `start`, run row by row (`row`
    is the first-level position, found by the caller's search): the hot loop is a plain one over the part
    of a row in range, as in the unscheduled kernel. When the body adds into a result at the row's
    coordinate alone, it sums the row in a register added into the result once, after it (the paper's
    flushed scalar temporary) — atomically only if another chunk may hold part of the row too."""
    relation = scope.provenance.defining(made)
    collapsed, access = scope.provenance.defining(relation.index), relation.access
    q, stop, segment, first = plan.fresh("q"), plan.fresh("stop"), plan.fresh("segment"), plan.fresh("first")
    register = _row_register(stmt.body, collapsed, plan, scope, b)
    body_scope = scope
    if register is not None:  # the register is this thread's own
        body_scope = replace(scope, accumulators={**scope.accumulators, stmt.body.lhs.tensor.name: (register, None)},
                             atomic=False)
    b.bridge_line(f"int64_t {q} = {scope.ranges[made][0]} + {start};")
    b.bridge_line(f"const int64_t {stop} = {q} + {count};")
    starts, ends = plan.read_levels(access)[1].range(Position(as_expr(row)))
    with b.bridge_block(f"while ({q} < {stop})"):
        b.bridge_line(f"while ({ends} <= {q}) {row}++;")
        b.bridge_line(f"const int64_t {segment} = min64({ends}, {stop}), {first} = {q};")
        if stmt.unroll:
            b.bridge_line(f"#pragma GCC unroll {stmt.unroll}")
        with b.bridge_block(f"for (; {q} < {segment}; {q}++)"):
            count_iteration(plan.counters, b, f"∀{stmt.index} {scope.provenance.defining(stmt.index)}")
            _at_row(collapsed, access, row, q, stmt.body, plan, body_scope, b)
        if register is None:
            return
        if scope.atomic:  # a row begun and ended within these positions is no other chunk's
            with b.bridge_block(f"if ({first} == {starts} && {segment} < {stop})"):
                _flush_row(collapsed, access, row, register, stmt.body, plan, replace(scope, atomic=False), b)
            with b.bridge_block("else"):
                _flush_row(collapsed, access, row, register, stmt.body, plan, scope, b)
        else:
            _flush_row(collapsed, access, row, register, stmt.body, plan, scope, b)
        b.bridge_line(f"{register} = 0;")


def _row_register(body: Stmt, collapsed: Collapse, plan: Plan, scope: Scope, b: CBuilder) -> str | None:
    """A register for a row's sum, declared here, when the body only adds into a dense result indexed by
    the row's coordinate."""
    if plan.counting or not isinstance(body, Assign) or not body.accumulate:
        return None
    name = body.lhs.tensor.name
    target = plan.targets[name]
    if body.lhs.indices != (collapsed.outer,) or not target.random_access or not target.flag_free \
            or name in scope.accumulators:
        return None
    register = plan.fresh("rowsum")
    b.bridge_line(f"{plan.value_types[name]} {register} = 0;")
    return register


def _flush_row(collapsed: Collapse, access: Access, row: str, register: str, body: Assign, plan: Plan,
               scope: Scope, b: CBuilder) -> None:
    """Add the row's register into the result at the row's coordinate."""
    first = plan.read_levels(access)[0]
    with b.bridge_block():
        b.bridge_line(f"const int64_t {names.coordinate(collapsed.outer)} = {row if first.full else first.coordinate(row)};")
        _store(body.lhs.tensor.name, _target_position(body.lhs, plan, scope, b), "+=", register, plan, scope, b)


def _at_row(collapsed: Collapse, access: Access, row: str, q: str, body: Stmt, plan: Plan, scope: Scope,
            b: CBuilder, in_order: bool = True) -> None:
    """The body at position `q` of the second collapsed level, in first-level position `row`."""
    fixed = {**scope.fixed, collapsed.outer: _Fixed(row, access, 0, in_order, repeats=True),
             collapsed.inner: _Fixed(q, access, 1, in_order)}
    lower(Forall(collapsed.outer, Forall(collapsed.inner, body)), plan, replace(scope, fixed=fixed), b)


def _derived_range(relation, index: IndexVar, plan: Plan, scope: Scope, b: CBuilder
                   ) -> tuple[Scope, str, tuple[IndexVar, Callable[[str], str]] | None]:
    """The loop's upper bound, and (when the loop completes a derivation) the variable it recovers with
    its value as a function of the loop's own variable."""
    if isinstance(relation, Split) and relation.offset:  # tiles start at stored coordinates
        scope, extent = _extent(relation.parent, plan, scope, b)
        outer = names.coordinate(relation.outer)
        if index == relation.outer:
            return scope, extent, None
        if relation.outer not in scope.derived:
            raise ScheduleError(f"{relation}: the loop over {relation.inner} needs the loop over {relation.outer}, "
                                f"which says where its tile starts, around it")
        return (scope, f"min64({relation.factor}, {extent} - {outer})",
                (relation.parent, lambda v: f"{outer} + {v}"))
    if isinstance(relation, Split):
        scope, extent = _extent(relation.parent, plan, scope, b)
        tiles, tile = ceil_div(extent, relation.factor), str(relation.factor)
        if relation.divide:
            tiles, tile = tile, tiles
        outer, inner = names.coordinate(relation.outer), names.coordinate(relation.inner)
        other = relation.inner if index == relation.outer else relation.outer
        if other not in scope.derived:
            return scope, tiles if index == relation.outer else f"min64({tile}, {extent})", None
        if index == relation.outer:
            return (scope, ceil_div(f"({extent} - {inner})", tile),
                    (relation.parent, lambda v: f"{v} * {tile} + {inner}"))
        return scope, f"min64({tile}, {extent} - {outer} * {tile})", (relation.parent, lambda v: f"{outer} * {tile} + {v}")
    if isinstance(relation, Bound):
        size = str(relation.size)
        upper = size if relation.kind is BoundKind.MAX_EXACT else f"min64({size}, {names.extent(relation.index)})"
        return scope, upper, (index, lambda v: v)
    scope, extent = _extent(index, plan, scope, b)
    return scope, extent, (index, lambda v: v)


def ceil_div(numerator: str, denominator) -> str:
    """⌈numerator / denominator⌉ for a positive denominator, in C that cannot overflow: the usual
    `(a + b - 1) / b` passes int64 (and wraps) for a tile size near 2⁶³, which a schedule may give."""
    return f"({numerator} / {denominator} + ({numerator} % {denominator} > 0))"


def _extent(index: IndexVar, plan: Plan, scope: Scope, b: CBuilder) -> tuple[Scope, str]:
    """The number of values of `index`: a dimension, a product of dimensions, or a position range
    (declared here, where the loops first need it)."""
    relation = scope.provenance.defining(index)
    if relation is None:
        return scope, names.extent(index)
    if isinstance(relation, Collapse):
        return scope, f"({names.extent(relation.outer)} * {names.extent(relation.inner)})"
    if index not in scope.ranges:
        scope = replace(scope, ranges={**scope.ranges, index: _declare_positions(relation, plan, scope, b)})
    lo, hi = scope.ranges[index][:2]
    return scope, f"({hi} - {lo})"


def _declare_positions(relation: Pos, plan: Plan, scope: Scope, b: CBuilder) -> tuple[str, ...]:
    """[lo, hi) of the positions `relation` runs over: one level's, below the position the loops around
    reached in the access above it; for a collapsed index, those of the second level below the whole first
    (whose own range follows, for the row search)."""
    access, roots = relation.access, scope.provenance.roots(relation.index)
    depth = access.level_indices.index(roots[0])
    if depth and (access, depth - 1) not in scope.reads:
        raise ScheduleError(f"{relation}: the loop over {relation.position} runs before {access} reaches its level "
                            f"for {access.level_indices[depth - 1]}; put it inside that loop")
    levels = plan.read_levels(access)
    parent = scope.reads.get((access, depth - 1), ROOT)
    if any(level.base(parent) for level in levels[depth:depth + len(roots)]):
        raise ScheduleError(f"{relation}: a position of {access}'s level for {roots[0]} does not tell its coordinate "
                            f"without its segment (a packed triangle): loop over the coordinates instead")
    lo, hi = plan.fresh("lo"), plan.fresh("hi")
    if len(roots) == 1:
        begin, end = levels[depth].range(parent)
        b.bridge_line(f"const int64_t {lo} = {begin}, {hi} = {end};")
        return lo, hi
    first_lo, first_hi = plan.fresh("lo"), plan.fresh("hi")
    first = ("0", names.extent(roots[0])) if levels[0].full else levels[0].range(ROOT)
    b.bridge_line(f"const int64_t {first_lo} = {first[0]}, {first_hi} = {first[1]};")
    begin, end = levels[1].range(Position(as_expr(first_lo), end=as_expr(first_hi)))
    b.bridge_line(f"const int64_t {lo} = {begin}, {hi} = {end};")
    return lo, hi, first_lo, first_hi


def _collapsed_pos(index: IndexVar, scope: Scope) -> bool:
    relation = scope.provenance.defining(index)
    return isinstance(relation, Pos) and isinstance(scope.provenance.defining(relation.index), Collapse)


def _search_row(index: IndexVar, offset: str, plan: Plan, scope: Scope, b: CBuilder) -> str:
    """Binary search for the first-level position holding position `lo + offset` of the second level:
    the last row whose segment starts at or before it."""
    relation = scope.provenance.defining(index)
    lo, _, first_lo, first_hi = scope.ranges[index]
    row, high, mid = plan.fresh("row"), plan.fresh("high"), plan.fresh("mid")
    starts = plan.read_levels(relation.access)[1]
    b.bridge_line(f"int64_t {row} = {first_lo};")
    with b.bridge_block():
        b.bridge_line(f"int64_t {high} = {first_hi};")
        with b.bridge_block(f"while ({high} - {row} > 1)"):
            b.bridge_line(f"const int64_t {mid} = {row} + ({high} - {row}) / 2;")
            b.bridge_line(f"if ({starts.range(Position(as_expr(mid)))[0]} <= {lo} + {offset}) {row} = {mid}; else {high} = {mid};")
    return row


def _recover(index: IndexVar, value: str, body: Stmt, plan: Plan, scope: Scope, b: CBuilder, in_order: bool,
             track: str | None) -> None:
    """`index` is `value` here: recover what it was derived from, then lower the body with the tensors'
    own indices fixed."""
    relation = scope.provenance.defining(index)
    fixed = dict(scope.fixed)
    if relation is None or isinstance(relation, Bound):
        original = index if relation is None else relation.index
        fixed[original] = _Fixed(value, in_order=in_order)
        lower(Forall(original, body), plan, replace(scope, fixed=fixed), b)
        return
    if isinstance(relation, Collapse):
        fixed[relation.outer] = _Fixed(f"({value}) / {names.extent(relation.inner)}", in_order=in_order, repeats=True)
        fixed[relation.inner] = _Fixed(f"({value}) % {names.extent(relation.inner)}", in_order=in_order)
        lower(Forall(relation.outer, Forall(relation.inner, body)), plan, replace(scope, fixed=fixed), b)
        return
    # a position of the access: read its coordinates back
    q = plan.fresh("q")
    b.bridge_line(f"const int64_t {q} = {scope.ranges[index][0]} + {value};")
    collapsed = scope.provenance.defining(relation.index)
    access = relation.access
    if not isinstance(collapsed, Collapse):
        depth = access.level_indices.index(relation.index)
        fixed[relation.index] = _Fixed(q, access, depth, in_order)
        lower(Forall(relation.index, body), plan, replace(scope, fixed=fixed), b)
        return
    row = track or _search_row(index, value, plan, scope, b)
    ends = plan.read_levels(access)[1].range(Position(as_expr(row)))[1]
    b.bridge_line(f"while ({ends} <= {q}) {row}++;")
    _at_row(collapsed, access, row, q, body, plan, scope, b, in_order)


def _fixed_forall(stmt: Forall, plan: Plan, scope: Scope, b: CBuilder) -> None:
    """The body of a forall whose index the derived loops around have fixed, at that coordinate (the
    loop may then only locate and read dense operands) or at that position of an access (which then
    must be the only one it steps, at every point of its lattice)."""
    fixed = scope.fixed[stmt.index]
    scope = replace(scope, fixed={k: v for k, v in scope.fixed.items() if k != stmt.index})
    rule = scope.provenance.deriving(stmt.index)
    loop = _survey(stmt, plan, scope)
    lattice = _lattice(stmt.body, loop, {})
    _check_fixed_writes(stmt.index, rule, fixed, loop, plan, scope)
    index = names.coordinate(stmt.index)
    sparse = _sparse_iterators(lattice)
    with b.bridge_block():
        if fixed.access is None:
            b.bridge_line(f"const int64_t {index} = {fixed.value};")
            _cases(stmt, loop, lattice, lattice, plan, scope, b, _found_at(sparse, stmt, rule, plan, scope, b))
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
            b.bridge_line(f"const int64_t {index} = {fixed.value};")
        else:
            q, _, c, _ = _iterator_names(it, plan)
            b.bridge_line(f"const int64_t {q} = {fixed.value};")
            _load(it, plan, b, guard=False)
            b.bridge_line(f"const int64_t {index} = {c};")
        _case_body(stmt, loop, lattice[0], plan, scope, b)


def _found_at(sparse: list[lat.Iterator], stmt: Forall, rule, plan: Plan, scope: Scope,
              b: CBuilder) -> dict[lat.Iterator, str]:
    """At a coordinate the derived loops fixed, the position of each sparse level that holds it, found by
    binary search of the level's segment (a non-unique level: the first of its run, `{found}_end` past
    the last)."""
    if not sparse:
        return {}
    _declare_iterators(tuple(lat.Point(frozenset({it})) for it in sparse), plan, scope, b)
    found = {}
    for it in sparse:
        level = plan.read_levels(it.access)[it.level]
        if finds.order_of(level) == 0:
            raise ScheduleError(f"{rule}: the loop over {stmt.index} reaches {it.access} at a coordinate the derived "
                                f"loops fixed, and its level there has no order to search")
        q, end, _, _ = _iterator_names(it, plan)
        begin, _ = level.range(scope.reads.get((it.access, it.level - 1), ROOT))
        finder = finds.Finder(Strategy.BINARY, level, q, begin, end, names.level_stem(plan.access_ids[it.access], it.level),
                              stmt.index, 1, lambda what: count_iteration(plan.counters, b, f"∀{stmt.index} {what} {it.access}"),
                              str(rule))
        finder.prepare(plan.tables, scope.parallel, b)
        found[it] = finder.find(names.coordinate(stmt.index), b)
        if not level.unique:
            b.bridge_line(f"int64_t {found[it]}_end = {found[it]};")
            b.bridge_line(f"if ({found[it]} >= 0) while ({found[it]}_end < {end} && "
                   f"{level.coordinate(f'{found[it]}_end')} == {names.coordinate(stmt.index)}) {found[it]}_end++;")
    return found


def _half_derived(scope: Scope) -> list[IndexVar]:
    """The derived variables around whose originals are not yet recovered (tiles of an index whose loop
    over the rest of it is still to come)."""
    return [v for v in scope.derived
            if not all(set(scope.provenance.leaves(root)) <= scope.derived for root in scope.provenance.roots(v))]


def _check_appends(loop: _Loop, scope: Scope) -> None:
    """A loop appending to a result must not run inside the tiles of another index: each tile would
    append the loop's coordinates again (`split(k, ...)` around the loop over j of a CSR result)."""
    half = _half_derived(scope)
    if loop.written and half:
        name = loop.written[0][0]
        raise ScheduleError(f"{scope.provenance.defining(half[0])}: {name} is assembled by appending in order, but the "
                            f"loop over {half[0]} around the loop over {loop.index} interleaves its entries; put the "
                            f"tiles' loops inside, or precompute into a workspace")


def _check_fixed_writes(index: IndexVar, rule, fixed: _Fixed, loop: _Loop, plan: Plan, scope: Scope) -> None:
    """A result assembled by appending takes its entries in storage order: the derived loops must fix
    the index in increasing order, with no loop over a half-derived index around it (tiles of another
    index would interleave its rows), and repeat it only where the result's level is dense."""
    for name, level in loop.written:
        target = plan.targets[name]
        half = _half_derived(scope)
        if not fixed.in_order or half:
            why = f"the loop over {half[0]} interleaves" if half else "the loops visit it out of order, which mixes"
            raise ScheduleError(f"{rule}: {name} is assembled by appending in order, but at {index} {why} its "
                                f"entries; put the tiles' outer loops first, or precompute into a workspace")
        if fixed.repeats and not target.levels[level].properties.full:
            raise ScheduleError(f"{rule}: {name}'s level for {index} is sparse, and the collapsed loop would "
                                f"append {index} once per entry below it")
