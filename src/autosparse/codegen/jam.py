"""Unroll-and-jam of a sparse loop around a dense accumulation: C AST in, the same C AST out, with each
such loop preceded by a jammed copy handling `WIDE` or `NARROW` positions an iteration, chosen per row.

The shape it rewrites is SpMM's (`C(i,j) += A(i,k) * B(k,j)`, and MTTKRP's and TTM's innermost loops):
a loop over a sparse level's positions whose body names the position's coordinate and then runs one dense
loop adding into a row of the result that does not depend on the position:

    for (; p < end; p++) {                      for (; p < end - 3; p += 4) {
        const int64_t k = crd[p];                   const int64_t k = crd[p];  ... k_jam3 = crd[p + 3];
        for (int64_t j = 0; j < J; j++)     ->      for (int64_t j = 0; j < J; j++)
            C[i * J + j] += A[p] * B[k * J + j];        C[i * J + j] = C[i * J + j] + A[p] * B[k * J + j]
    }                                                                  + ... + A[p + 3] * B[k_jam3 * J + j];
                                                }
                                                for (; p < end; p++) { ...the loop as it was... }

(drawn for a factor of 4; each row takes a copy by `WIDE` or by `NARROW`: see `jam_loops`). The row of C
is loaded and stored once for several rows of B instead of once for each (SpMM's kernel 12-41% faster at
64 columns, docs/notes/perf30-inner.md). A second shape, one dot product per position (SDDMM), is jammed
into sums side by side in one dense loop (see `_Dots`). The sums are added in the order the plain loop
adds them (`((c + t0) + t1) + ...`), so with floating-point contraction off (`set_fp_contract(False)`)
results are the same bit for bit; with it on, the compiler fuses multiply-adds in either. Any other loop
is left as it is, and a block with nothing to rewrite is returned unchanged.
"""

from __future__ import annotations

import dataclasses
import itertools
from functools import reduce

from . import names
from .c_ast import (Assign, Binary, Block, Call, Decl, Directive, Expr, For, If, Index, Literal, Stmt, Unary, Var,
                    While, increment, lt, or_)

#: Positions an iteration of a jammed loop takes: the wide loop's on a long row, the narrow loop's on a short one.
WIDE, NARROW = 8, 4


def jam_loops(block: Block) -> Block:
    """`block` with every sparse loop of the shape above unrolled and jammed: each row (each run of the
    loop) takes a loop by `WIDE` when it has at least `WIDE` positions, else one by `NARROW`, and then the
    loop itself, which finishes the last positions. A dot-product loop also takes the narrow one when its
    dense extent (the length of each sum) is below `WIDE`. Real values only: gcc contracts a complex
    multiply into fused multiply-adds differently in a jammed loop than in the plain one, so the caller
    leaves complex kernels as they are.

    Why (a grid of SpMM, SDDMM, TTM and MTTKRP over dense extents 1-64 and the suite's families, factors
    1/2/4/8 and their cascades, docs/notes/perf30-inner-2.md): each jammed loop costs an exit branch per
    row that mispredicts on rows of varying length, so one jammed loop a row, not a cascade; the wide one
    wins on long rows (power-law, banded: 4-28% over 4 at extents up to 16), but never runs on a row of
    4-7 positions (stencils), which unjammed ran 1.05-1.7x slower. Eight sums of 4 terms each lose 10-15%
    to four: too little work per sum for their set-up.

    A loop under a directive (`#pragma GCC unroll`, from the schedule's `unroll`) is the user's to shape,
    and the directive must stay right above its loop, so it is not jammed."""
    directed = (False, *(isinstance(stmt, Directive) for stmt in block.body))
    body = tuple(out for stmt, under in zip(block.body, directed) for out in _rewrite(stmt, jam=not under))
    return block if all(a is b for a, b in zip(body, block.body)) and len(body) == len(block.body) else Block(body)


def _rewrite(stmt: Stmt, jam: bool) -> tuple[Stmt, ...]:
    """The statements `stmt` becomes: its jammed loops and itself as their remainder (where `jam`), or
    `stmt` with its blocks rewritten."""
    if isinstance(stmt, For):
        jammed = _jammed(stmt) if jam else ()
        if jammed:
            return *jammed, stmt
        return (_with_body(stmt, jam_loops(stmt.body)),)
    if isinstance(stmt, While):
        return (_with_body(stmt, jam_loops(stmt.body)),)
    if isinstance(stmt, Block):
        return (jam_loops(stmt),)
    if isinstance(stmt, If):
        otherwise = jam_loops(stmt.otherwise) if stmt.otherwise is not None else None
        then = jam_loops(stmt.then)
        if then is stmt.then and otherwise is stmt.otherwise:
            return (stmt,)
        return (If(stmt.condition, then, otherwise),)
    return (stmt,)


def _with_body(loop, body: Block):
    return loop if body is loop.body else dataclasses.replace(loop, body=body)


# --- the shape --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Shape:
    """A sparse loop's parts: position `p` up to `end`, the coordinates named from `p`, and the dense loop."""

    position: str
    end: Expr
    decls: tuple[Decl, ...]
    dense: For
    update: Assign


def _jammed(loop: For) -> tuple[Stmt, ...]:
    """The jammed copies of `loop` (to run before `loop` itself, which finishes the last positions), or none
    when `loop` is of neither shape. See `jam_loops` for the choice between them."""
    row = _shape(loop)
    shape, jam = (row, _row_jammed) if row is not None else (_dots(loop), _dots_jammed)
    if shape is None:
        return ()
    short = lt(shape.end - Var(shape.position), WIDE)
    if jam is _dots_jammed:
        short = or_(short, lt(shape.dense.condition.right, WIDE))
    return (If(short, Block((jam(shape, NARROW),)), Block((jam(shape, WIDE),))),)


def _row_jammed(shape: _Shape, factor: int) -> For:
    copies = [_renaming(shape.position, shape.decls, copy) for copy in range(factor)]
    target = shape.update.target
    total = reduce(lambda acc, renaming: Binary("+", acc, _substitute(shape.update.value, renaming)), copies, target)
    dense = dataclasses.replace(shape.dense, body=Block((Assign(target, total),)))
    return _stepping(shape.position, shape.end, factor, (*_copies(shape.decls, copies), dense))


def _stepping(position: str, end: Expr, factor: int, body: tuple[Stmt, ...]) -> For:
    """`for (; p < end - (factor - 1); p += factor) body`."""
    p = Var(position)
    return For(None, lt(p, end - (factor - 1)), Assign(p, Literal(factor), "+="), Block(body))


def _copies(stmts, copies: list[dict[str, Expr]]) -> tuple[Stmt, ...]:
    """Each of `stmts` (declarations and assignments) once per copy, copy by copy, renamed."""
    return tuple(_renamed(stmt, renaming) for renaming in copies for stmt in stmts)


def _renamed(stmt: Stmt, renaming: dict[str, Expr]) -> Stmt:
    if isinstance(stmt, Decl):
        return Decl(stmt.type, _name(renaming, stmt.name), _substitute(stmt.init, renaming), stmt.length)
    return Assign(_substitute(stmt.target, renaming), _substitute(stmt.value, renaming), stmt.op)


def _renaming(position: str, decls, copy: int) -> dict[str, Expr]:
    """The names of copy `copy`: the position advanced by `copy`, each declared name its own."""
    if copy == 0:
        return {}
    renaming: dict[str, Expr] = {position: Var(position) + copy}
    renaming.update((d.name, Var(names.part(d.name, f"jam{copy}"))) for d in decls)
    return renaming


def _name(renaming: dict[str, Expr], name: str) -> str:
    renamed = renaming.get(name)
    return renamed.name if isinstance(renamed, Var) else name


def _shape(loop: For) -> _Shape | None:
    """`loop`'s parts if it is `for (; p < end; p++) { const decls...; for (j = 0; j < n; j++) t += v; }`
    with `t`, `end` and `n` not depending on `p` or the decls, and the decls free of side effects."""
    position = _counter(loop)
    if position is None or not isinstance(loop.condition.right, (Var, Literal)):
        return None
    *decls, last = loop.body.body or (None,)
    dense = _only_loop(last)
    if dense is None or not all(_pure_decl(d) for d in decls):
        return None
    update = dense.body.body[0] if len(dense.body.body) == 1 else None
    if not isinstance(update, Assign) or update.op != "+=" or _counter(dense, dense=True) is None:
        return None
    varying = {position, *(d.name for d in decls)}
    invariant = (update.target, dense.condition.right, loop.condition.right)
    if any(_names(e) & varying for e in invariant) or not _row_entry(update.target, dense.init.name):
        return None
    if _array(update.target) in _names(update.value):
        return None
    return _Shape(position, loop.condition.right, tuple(decls), dense, update)


# --- the second shape: one dot product per position (SDDMM) -------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class _Dots:
    """A sparse loop whose positions each sum a dense loop into a register `sum`, then store from it:

        for (; p < end; p++) { const decls...; stores...; { T sum = 0; for (k...) sum += v; after... } }

    Jammed, a factor's worth of sums run side by side in one dense loop (each still adds its terms in
    order), sharing the loads that do not depend on the position (SDDMM's row of C) and overlapping the others'."""

    position: str
    end: Expr
    decls: tuple[Decl, ...]
    stores: tuple[Assign, ...]
    total: Decl
    dense: For
    after: tuple[Assign, ...]


def _dots_jammed(shape: _Dots, factor: int) -> For:
    copies = [_renaming(shape.position, (*shape.decls, shape.total), copy) for copy in range(factor)]
    update = shape.dense.body.body[0]
    dense = dataclasses.replace(shape.dense, body=Block(_copies((update,), copies)))
    head = _copies((*shape.decls, *shape.stores, shape.total), copies)
    return _stepping(shape.position, shape.end, factor, (*head, dense, *_copies(shape.after, copies)))


def _dots(loop: For) -> _Dots | None:
    """`loop`'s parts if it has the shape of `_Dots`, each copy free to run before the next: nothing it
    stores is read by the loop, the stores before the sum and those after it write different arrays, and
    nothing but `sum` is kept from one dense iteration to the next."""
    position = _counter(loop)
    if position is None or not isinstance(loop.condition.right, (Var, Literal)) or not loop.body.body:
        return None
    *head, last = loop.body.body
    decls = tuple(itertools.takewhile(_pure_decl, head))
    stores = tuple(head[len(decls):])
    if not isinstance(last, Block) or len(last.body) < 2 or not all(_plain_store(s) for s in stores):
        return None
    total, dense, *after = last.body
    if not (isinstance(total, Decl) and not total.type.const and total.type.pointers == 0 and total.length is None
            and total.init is not None and not _effects(total.init)):
        return None
    if not isinstance(dense, For) or _counter(dense, dense=True) is None or len(dense.body.body) != 1:
        return None
    update = dense.body.body[0]
    if not (isinstance(update, Assign) and update.op == "+=" and update.target == Var(total.name)
            and not _effects(update.value) and total.name not in _names(update.value)):
        return None
    if not all(_plain_store(a) and _array(a.target) != total.name for a in after):
        return None
    varying = {position, *(d.name for d in decls), total.name}
    if (_names(dense.condition.right) | _names(loop.condition.right)) & varying:
        return None
    written_before, written_after = ({_array(a.target) for a in group} for group in (stores, after))
    written = written_before | written_after
    read = _names_read(decls, stores, total, update, after)
    if None in written or written & (read | varying | {dense.init.name}) or written_before & written_after:
        return None  # (the jam moves each copy's stores before the previous copy's stores from its sum)
    return _Dots(position, loop.condition.right, decls, stores, total, dense, tuple(after))


def _plain_store(stmt: Stmt) -> bool:
    return (isinstance(stmt, Assign) and stmt.op == "=" and isinstance(stmt.target, Index)
            and not _effects(stmt.target) and not _effects(stmt.value))


def _names_read(decls, stores, total: Decl, update: Assign, after) -> set[str]:
    """Every name the loop body reads (an assignment's target's indices included)."""
    read = set().union(*(_names(d.init) for d in (*decls, total)), _names(update.value))
    for store in (*stores, *after):
        read |= _names(store.value) | _names(store.target.index)
        base = store.target.base
        while isinstance(base, Index):
            read |= _names(base.index)
            base = base.base
    return read


def _counter(loop: For, dense: bool = False) -> str | None:
    """The name `i` of a loop `for (; i < bound; i++)` (with `dense`: `for (int64_t i = 0; i < bound; i++)`)."""
    init, condition, step = loop.init, loop.condition, loop.step
    if not (isinstance(condition, Binary) and condition.op == "<" and isinstance(condition.left, Var)):
        return None
    name = condition.left.name
    if step != increment(Var(name)):
        return None
    if dense:
        started = isinstance(init, Decl) and init.name == name and init.init == Literal(0) and init.length is None
        return name if started and not _names(condition.right) & {name} else None
    return name if init is None else None


def _row_entry(target: Expr, column: str) -> bool:
    """Whether `target` is an array entry that moves with the dense loop's counter `column` (so that each
    entry still receives its terms in the plain loop's order)."""
    return isinstance(target, Index) and isinstance(_array(target), str) and column in _names(target.index)


def _array(target: Expr) -> str | None:
    """The array an entry `a[..][..]` belongs to."""
    while isinstance(target, Index):
        target = target.base
    return target.name if isinstance(target, Var) else None


def _only_loop(stmt: Stmt | None) -> For | None:
    """The loop `stmt` is, or the only statement of its blocks."""
    while isinstance(stmt, Block) and len(stmt.body) == 1:
        stmt = stmt.body[0]
    return stmt if isinstance(stmt, For) and isinstance(stmt.body, Block) else None


def _pure_decl(stmt: Stmt) -> bool:
    return (isinstance(stmt, Decl) and stmt.type.const and stmt.length is None and stmt.init is not None
            and not _effects(stmt.init))


# --- expressions --------------------------------------------------------------------------------------------


def _children(expr: Expr):
    for field in dataclasses.fields(expr):
        value = getattr(expr, field.name)
        if isinstance(value, Expr):
            yield value
        elif isinstance(value, tuple):
            yield from (v for v in value if isinstance(v, Expr))


def _names(expr: Expr) -> set[str]:
    if isinstance(expr, Var):
        return {expr.name}
    return set().union(*(_names(child) for child in _children(expr)))


def _effects(expr: Expr) -> bool:
    """Whether evaluating `expr` may do more than read (a call, `++`)."""
    if isinstance(expr, Call) or (isinstance(expr, Unary) and expr.op in ("++", "--")):
        return True
    return any(_effects(child) for child in _children(expr))


def _substitute(expr: Expr, renaming: dict[str, Expr]) -> Expr:
    if not renaming:
        return expr
    if isinstance(expr, Var):
        return renaming.get(expr.name, expr)
    changes = {}
    for field in dataclasses.fields(expr):
        value = getattr(expr, field.name)
        if isinstance(value, Expr):
            changes[field.name] = _substitute(value, renaming)
        elif isinstance(value, tuple) and any(isinstance(v, Expr) for v in value):
            changes[field.name] = tuple(_substitute(v, renaming) if isinstance(v, Expr) else v for v in value)
    return dataclasses.replace(expr, **changes) if changes else expr
