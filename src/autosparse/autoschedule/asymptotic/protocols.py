"""Stage 6 of the enumeration (Ahrens et al. §7.6): a protocol for every mode of every access.

Reads of sparse inputs and of workspaces step or locate on each mode; dense inputs are always located
(an array supports nothing else, and the cost model does not track them). Writes are not chosen: a
write appends when the written tensor's indices are the outermost loops of its scope (they arrive in
order once its format is made concordant), and inserts otherwise.
TACO mode keeps what TACO can run without densifying an input: each sparse input is stepped on every
mode, or located on the mode of the outermost loop around it and stepped on the rest; a workspace is
stepped when it is the only tensor its assignment reads, and located otherwise.
"""

from __future__ import annotations

from itertools import product
from math import prod
from typing import Iterator

from .sketch import APPEND, INSERT, LOCATE, STEP, Access, Assign, Call, Loop, Stmt, Where, reads


def protocolised(stmt: Stmt, sparse: set[str], workspaces: set[str], taco: bool) -> Iterator[Stmt]:
    """Every protocol assignment of `stmt` (reads in program order, each occurrence on its own)."""
    slots: list[list[tuple[str, ...]]] = []
    _collect(stmt, (), None, sparse, workspaces, taco, slots)
    for choice in product(*slots):
        yield _apply(stmt, iter(choice), (), ())


def protocol_choices(stmt: Stmt, sparse: set[str], workspaces: set[str], taco: bool) -> int:
    """How many programs `protocolised` yields, without building them."""
    slots: list[list[tuple[str, ...]]] = []
    _collect(stmt, (), None, sparse, workspaces, taco, slots)
    return prod(len(options) for options in slots)


def _read_options(access: Access, outermost: str | None, sparse, workspaces, taco, only_read: bool):
    n = len(access.indices)
    if access.tensor in workspaces:
        if taco:
            return [(STEP if only_read else LOCATE,) * n]
        return list(product((STEP, LOCATE), repeat=n))
    if access.tensor not in sparse:
        return [(LOCATE,) * n]
    if not taco:
        return list(product((STEP, LOCATE), repeat=n))
    options = [(STEP,) * n]
    if outermost in access.indices:
        options.append(tuple(LOCATE if i == outermost else STEP for i in access.indices))
    return options


def _collect(stmt, loops, outermost, sparse, workspaces, taco, slots) -> None:
    if isinstance(stmt, Loop):
        _collect(stmt.body, (*loops, stmt.index), outermost or stmt.index, sparse, workspaces, taco, slots)
    elif isinstance(stmt, Where):
        _collect(stmt.consumer, loops, outermost, sparse, workspaces, taco, slots)
        _collect(stmt.producer, loops, outermost, sparse, workspaces, taco, slots)
    else:
        operands = list(reads(stmt.rhs))
        for access in operands:
            slots.append(_read_options(access, outermost, sparse, workspaces, taco, len(operands) == 1))


def _apply(stmt, choice, scope: tuple[str, ...], loops: tuple[str, ...]):
    """`stmt` with the chosen read protocols (in `_collect`'s order) and the derived write protocols;
    `scope` holds the loops since the written tensor's scope began (a where starts its producer's)."""
    if isinstance(stmt, Loop):
        return Loop(stmt.index, _apply(stmt.body, choice, (*scope, stmt.index), (*loops, stmt.index)))
    if isinstance(stmt, Where):
        consumer = _apply(stmt.consumer, choice, scope, loops)
        return Where(consumer, _apply(stmt.producer, choice, (), loops))
    rhs = _with_protocols(stmt.rhs, choice)
    lhs = stmt.lhs
    in_order = set(scope[:len(lhs.indices)]) == set(lhs.indices)
    write = APPEND if in_order else INSERT
    return Assign(Access(lhs.tensor, lhs.indices, (write,) * len(lhs.indices)), rhs, stmt.reduce)


def _with_protocols(expr, choice):
    if isinstance(expr, Access):
        return Access(expr.tensor, expr.indices, next(choice))
    if expr.op == "literal":
        return expr
    return Call(expr.op, tuple(_with_protocols(a, choice) for a in expr.args))
