"""Scheduling commands (Senanayake et al. §4): pure functions from a CIN statement to a new one.

Each command checks its preconditions and raises `ScheduleError` naming the command, the index variable
and the rule it breaks. Storage-order violations that only lowering can see (a sparse operand stepped
against its storage order) are reported by lowering, also as `ScheduleError`.

    reorder(i, k, j)                     the directly nested loops over these indices, in this order
    precompute(expr, i, iw[, format])    expr into a temporary indexed by iw, read at i by the rest
    parallelize(i, unit, race)           OpenMP threads or SIMD lanes over loop i, races handled by `race`
    unroll(i, n)                         ask the C compiler to unroll loop i n times
    coiterate(i, strategy[, tensor])     how loop i meets its operands: merge, gallop, binary, hash, bitmap, auto
"""

from __future__ import annotations

from dataclasses import replace

from ..cin.ast import (MAX_UNROLL, Access, Assign, Coiteration, Forall, Parallel, ParallelUnit, Race, Sequence, Stmt,
                       Strategy, TensorVar, Where, accesses, assignments, default_access, nest, tensors, unnest_loops,
                       walk)
from ..cin.provenance import Provenance
from ..cin.rewrite import rebuild_expr
from ..errors import ScheduleError
from ..format import Capability, Format
from ..format.spec import as_format
from ..notation import ast as notation
from ..notation.ast import IndexVar, factors, product


def _fail(command: str, index, rule: str) -> ScheduleError:
    return ScheduleError(f"{command}({index}): {rule}")


def _count(value, most: int, command: str, index, what: str) -> int:
    """A schedule's integer (a tile size, an unroll factor), checked before C is written: it lands in
    the kernel as a constant, where one past `most` would wrap or be rejected by the compiler."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise _fail(command, index, f"the {what} must be a positive integer of at most {most}, not {value!r}")
    return value


# --- reorder -------------------------------------------------------------------------------------------

def reorder(stmt: Stmt, order: tuple[IndexVar, ...]) -> Stmt:
    """The chain of directly nested foralls over exactly `order`'s indices, put in that order (each loop
    keeps its marks). Swapping perfectly nested loops around one statement reorders a sum, which is
    always allowed; a loop cannot move across a `where` or `sequence`, which would change what the
    temporary holds or what runs first."""
    name = f"reorder({', '.join(map(str, order))})"
    if len(set(order)) != len(order) or len(order) < 2:
        raise ScheduleError(f"{name}: expected two or more distinct index variables")
    found = _find_chain(stmt, set(order))
    if found is None:
        loops = {n.index for n in walk(stmt) if isinstance(n, Forall)}
        missing = [i for i in order if i not in loops]
        if missing:
            raise ScheduleError(f"{name}: there is no loop over {', '.join(map(str, missing))}")
        raise ScheduleError(f"{name}: the loops over {', '.join(map(str, order))} are not directly nested "
                            f"(a loop cannot move across a where, a sequence or another loop)")
    if any(loop.parallel for loop in found[0]):
        raise ScheduleError(f"{name}: no command may follow parallelize on the loops it reorders")
    loops, body = found
    _check_storage_order(name, order, body)
    by_index = {loop.index: loop for loop in loops}
    return _replace_chain(stmt, loops[0], nest(tuple(by_index[i] for i in order), body))


def _check_storage_order(command: str, order: tuple[IndexVar, ...], body: Stmt) -> None:
    """A sparse operand is reached level by level, each level from its parent's position, so the loops
    over its indices must follow its storage order (dense operands are read at random, and an output
    written out of order gets a workspace from legalisation)."""
    for access in dict.fromkeys(a for a in accesses(body) if not a.tensor.temporary):
        if access.tensor.format.is_dense or any(access is a.lhs for a in assignments(body)):
            continue
        stored = [i for i in access.level_indices if i in order]
        wanted = [i for i in order if i in stored]
        if stored != wanted:
            raise ScheduleError(f"{command}: {access} is stored in the order {', '.join(map(str, stored))} "
                                f"(format {access.tensor.format}), so loop {wanted[0]} cannot come first")


def _find_chain(stmt: Stmt, indices: set[IndexVar]) -> tuple[tuple[Forall, ...], Stmt] | None:
    """The first chain of directly nested foralls whose indices are exactly `indices` (outermost first),
    and what it encloses."""
    for node in walk(stmt):
        if isinstance(node, Forall) and node.index in indices:
            loops, body = unnest_loops(node)
            loops = loops[:len(indices)]
            if {loop.index for loop in loops} == indices:
                return loops, loops[-1].body
            return None
    return None


def _replace_chain(stmt: Stmt, old: Stmt, new: Stmt) -> Stmt:
    """`stmt` with the node `old` (found by identity) replaced by `new`."""
    if stmt is old:
        return new
    children = stmt.children()
    if not any(isinstance(c, (Forall, Where, Sequence, Assign)) for c in children):
        return stmt
    return stmt.with_children(tuple(_replace_chain(c, old, new) if isinstance(c, (Forall, Where, Sequence, Assign))
                                    else c for c in children))


# --- parallelize and unroll ----------------------------------------------------------------------------

def parallelize(stmt: Stmt, index: IndexVar, unit: ParallelUnit, race: Race,
                provenance: Provenance = Provenance()) -> Stmt:
    """Mark the loop over `index` parallel. The race strategy must fit what the loop writes:
    `no_races` needs every result position written inside to depend on `index` (no reduction over
    it; a derived `index` stands for the coordinates it was derived from, and a position over collapsed
    levels for all of them); `atomics` and `temporary` need the writes to be sums. The temporaries of
    `where`s inside a thread loop are each thread's own; SIMD lanes cannot have their own, and a second
    level of threads is not supported."""
    command = f"parallelize({index}, {unit.value}, {race.value})"
    loop = _loop(stmt, index, command)
    if loop.parallel is not None:
        raise _fail("parallelize", index, "the loop is already parallel")
    if loop.unroll:
        raise _fail("parallelize", index, "the loop is unrolled, and OpenMP's pragma must directly precede its loop: "
                                          "split it and unroll the inner part")
    if unit is ParallelUnit.CPU_THREAD and any(isinstance(n, Forall) and n.parallel is not None
                                               and n.parallel.unit is ParallelUnit.CPU_THREAD
                                               for n in walk(stmt) if _encloses(n, loop) or _encloses(loop, n)):
        raise _fail("parallelize", index, "threads inside threads: a loop around or inside it is already "
                                          "parallel over cpu_thread")
    if unit is ParallelUnit.CPU_VECTOR and any(isinstance(n, Where) for n in walk(loop.body)):
        raise _fail("parallelize", index, "a where inside a SIMD loop would share its temporary between lanes "
                                          "(threads get one each: parallelize over cpu_thread)")
    written = [a for a in assignments(loop.body) if not a.lhs.tensor.temporary]
    reduced = [a for a in written if not provenance.writes_apart(index, a.lhs.indices)]
    if race is Race.NO_RACES and reduced:
        raise _fail("parallelize", index, f"no_races over a reduction: {reduced[0].lhs} is summed over {index}, "
                                          f"so iterations write the same place (use atomics or temporary)")
    if race in (Race.ATOMICS, Race.TEMPORARY) and any(not a.accumulate for a in reduced):
        raise _fail("parallelize", index, f"{race.value} needs the racing writes to be sums (+=)")
    if unit is ParallelUnit.CPU_VECTOR and race is Race.ATOMICS:
        raise _fail("parallelize", index, "SIMD lanes have no atomics: use temporary (a sum per lane, added "
                                          "after the loop) or parallelize over cpu_thread")
    return _replace_chain(stmt, loop, replace(loop, parallel=Parallel(unit, race)))


def unroll(stmt: Stmt, index: IndexVar, factor: int) -> Stmt:
    _count(factor, MAX_UNROLL, "unroll", index, "factor")
    loop = _loop(stmt, index, f"unroll({index}, {factor})")
    return _replace_chain(stmt, loop, replace(loop, unroll=factor))


def coiterate(stmt: Stmt, index: IndexVar, strategy: Strategy, tensor: str | None = None) -> Stmt:
    """How the loop over `index` meets its operands (Zhao et al.): `strategy` for all of them, or for
    `tensor`'s alone. Whether the operands' levels allow it is checked when the kernel is generated,
    where the loop's driver and found operands are known."""
    command = f"coiterate({index}, {strategy.value}{f', {tensor}' if tensor else ''})"
    loop = _loop(stmt, index, command)
    if tensor is not None and tensor not in {a.tensor.name for a in accesses(loop.body)}:
        raise ScheduleError(f"{command}: {tensor} is not read inside the loop over {index}")
    current = loop.coiterate or Coiteration()
    return _replace_chain(stmt, loop, replace(loop, coiterate=current.with_strategy(strategy, tensor)))


def _loop(stmt: Stmt, index: IndexVar, command: str) -> Forall:
    loops = [n for n in walk(stmt) if isinstance(n, Forall) and n.index == index]
    if not loops:
        raise ScheduleError(f"{command}: there is no loop over {index}")
    if len(loops) > 1:
        raise ScheduleError(f"{command}: {len(loops)} loops are over {index}; rename one (precompute's iw)")
    return loops[0]


def _encloses(outer: Stmt, inner: Stmt) -> bool:
    return outer is not inner and any(n is inner for n in walk(outer))


# --- precompute ----------------------------------------------------------------------------------------

def precompute(stmt: Stmt, expr, index: IndexVar, workspace_index: IndexVar, fmt: "str | Format | None" = None,
               provenance: Provenance = Provenance()) -> Stmt:
    """Compute `expr` (a factor of a product, or the whole right-hand side) into a temporary w over
    `workspace_index` that the rest of the statement reads at `index` (Kjolstad et al. 2019):

        ∀i ∀k ∀j C(i,j) += A(i,k) * B(k,j)      precompute(A(i,k) * B(k,j), j, j)
        ∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))

    The `where` goes above the outermost loop, among those around the statement, over `index` or over an
    index that only `expr` uses (a reduction inside it, k above), or over variables split from one:
    the producer runs those loops of `expr`, and the consumer keeps the loops of the rest. `fmt` is the temporary's format (dense by
    default; "h" for hashed). Every other index of `expr` the result keeps must be fixed by the loops
    around the `where` (all the loops derived from it, under `provenance`)."""
    command = f"precompute({expr}, {index}, {workspace_index})"
    expr = _as_cin(expr, stmt, command)
    target = next((a for a in assignments(stmt) if _rest(a.rhs, expr) is not None), None)
    if target is None:
        raise ScheduleError(f"{command}: no statement computes {expr} (as a factor of a product, or its whole "
                            f"right-hand side)")
    chain = _enclosing_chain(stmt, target)
    indices = [loop.index for loop in chain]
    if index not in indices:
        raise _fail("precompute", index, f"the statement computing {expr} is not inside a loop over {index}")
    own = _indices(expr)
    if index not in own:
        raise _fail("precompute", index, f"{expr} does not vary with {index}")
    rest = _rest(target.rhs, expr)
    kept = set(target.lhs.indices) | (set().union(*(_indices(r) for r in rest)) if rest else set())
    reductions = {i for i in own if i not in kept and i != index}
    # a loop over variables split or fused from indices stands for those indices (its roots)
    roots = {loop.index: set(provenance.roots(loop.index)) for loop in chain}
    at = min(n for n, loop in enumerate(chain) if roots[loop.index] & (reductions | {index}))
    outer, inner = chain[:at], chain[at:]
    mixed = [loop.index for loop in inner if roots[loop.index] & reductions and not roots[loop.index] <= own]
    if mixed:
        raise _fail("precompute", index, f"the loop over {mixed[0]} runs over {', '.join(map(str, roots[mixed[0]]))} "
                                         f"at once, which the temporary's producer and its consumer would share")
    around = {loop.index for loop in outer}
    escaped = sorted(str(i) for i in own if i != index and i in kept and not set(provenance.leaves(i)) <= around)
    if escaped:
        raise _fail("precompute", index, f"{expr} also varies with {', '.join(escaped)}, which the result keeps "
                                         f"but no loop around the temporary fixes: a temporary over {index} alone "
                                         f"would sum it away")
    if any(loop.parallel for loop in inner):
        raise _fail("precompute", index, "no command may follow parallelize on the loops it moves")
    workspace = _temporary(stmt, fmt, command)
    rename = {index: workspace_index}
    producer_loops = tuple(replace(loop, index=rename.get(loop.index, loop.index)) for loop in inner
                           if roots[loop.index] <= own)
    write = default_access(workspace, (workspace_index,), write=True)
    produced = _rename(expr, rename)
    producer = nest(producer_loops, Assign(write, produced, accumulate=bool(reductions)))
    consumer_loops = tuple(loop for loop in inner if not roots[loop.index] & reductions)
    read = default_access(workspace, (index,), write=False)
    rhs = product([*rest, read]) if rest else read
    enclosing = set().union(*(roots[loop.index] for loop in (*outer, *consumer_loops)))
    consumer = nest(consumer_loops, Assign(target.lhs, rhs, accumulate=target.accumulate and not enclosing <= set(
        target.lhs.indices)))
    return _replace_chain(stmt, inner[0], Where(consumer, producer))


def _as_cin(expr, stmt: Stmt, command: str):
    """The index-notation `expr` over the statement's own accesses (with their formats and protocols)."""
    if not isinstance(expr, notation.Expr):
        raise ScheduleError(f"{command}: expected an expression, but found the {type(expr).__name__} {expr}")
    known = {(a.tensor.name, a.indices): a for a in accesses(stmt)}

    def access(read: notation.Access) -> Access:
        found = known.get((read.tensor, read.indices))
        if found is None:
            raise ScheduleError(f"{command}: the statement reads no {read}")
        return found
    return rebuild_expr(expr, access)


def _rest(rhs, expr) -> list | None:
    """The factors of `rhs` left when those of `expr` are taken out ([] when `expr` is all of it), or None
    when `expr` is neither `rhs` nor a sub-product of it."""
    if rhs == expr:
        return []
    left = list(factors(rhs))
    for factor in factors(expr):
        if factor not in left:
            return None
        left.remove(factor)
    return left if len(factors(expr)) > 1 else None


def _indices(expr) -> set[IndexVar]:
    return {i for a in accesses(expr) for i in a.indices}


def _enclosing_chain(stmt: Stmt, target: Assign) -> tuple[Forall, ...]:
    """The foralls directly around `target`, outermost first (stopping at a where or sequence)."""
    def search(node, chain):
        if node is target:
            return chain
        if isinstance(node, Forall):
            return search(node.body, (*chain, node))
        if isinstance(node, (Where, Sequence)):
            return next((found for child in node.children() if (found := search(child, ())) is not None), None)
        return None
    return search(stmt, ())


def _temporary(stmt: Stmt, fmt, command: str) -> TensorVar:
    taken = set(tensors(stmt))
    name = next(n for n in (f"w{k or ''}" for k in range(len(taken) + 1)) if n not in taken)
    try:
        chosen = as_format(fmt or "d", 1)
    except Exception as error:
        raise ScheduleError(f"{command}: the temporary's format {fmt!r} is not one of order 1: {error}") from None
    if not all(Capability.INSERT in level.capabilities for level in chosen.levels):
        raise ScheduleError(f"{command}: a temporary is dense or hashed, not {chosen}")
    return TensorVar(name, chosen, temporary=True)


def _rename(expr, rename: dict[IndexVar, IndexVar]):
    return rebuild_expr(expr, lambda a: replace(a, indices=tuple(rename.get(i, i) for i in a.indices)))
