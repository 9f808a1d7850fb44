"""Stage 6 of the enumeration (Ahrens et al. §7.6): a protocol for every mode of every access.

Reads of sparse inputs and of workspaces step or locate on each mode; dense inputs are always located
(an array supports nothing else, and the cost model does not track them). Writes are not chosen: a
write appends when the written tensor's indices are the outermost loops of its scope (they arrive in
order once its format is made concordant), and inserts otherwise.
TACO mode keeps what TACO can run without densifying an input: each sparse input is stepped on every
mode, or located on the first of its indices the loops quantify and stepped on the rest; a workspace
(a vector at most) is located. `taco_runs` keeps the programs TACO can lower: a sparse result written
in order but for at most its last mode (one insert needs TACO's one workspace, so no where besides), and
no where whose producer is a bare assignment.
"""

from __future__ import annotations

from itertools import product
from math import prod
from typing import Iterator

from ...cin.ast import Assign, Forall, Protocol, Where
from ...cin.rewrite import postwalk
from .sketch import Access, Stmt, reads


def protocolised(stmt: Stmt, sparse: set[str], workspaces: set[str], taco: bool) -> Iterator[Stmt]:
    """Every protocol assignment of `stmt` (reads in program order, each occurrence on its own), those
    that locate fewest modes of sparse inputs first: a located mode of an input is a hash level built
    per call, so a search cut short takes the assignments its picks use first, workspaces' either way."""
    slots: list[list[tuple[str, ...]]] = []
    _collect(stmt, (), sparse, workspaces, taco, slots)
    of_inputs = [n for n, access in enumerate(_reads_of(stmt)) if access.tensor in sparse]
    others = [n for n in range(len(slots)) if n not in of_inputs]
    # Only the inputs' choices are sorted (SpMTTKRP has thousands of choices a shape, mostly workspaces').
    by_located = sorted(product(*(slots[n] for n in of_inputs)),
                        key=lambda inputs: sum(options.count(Protocol.LOCATE) for options in inputs))
    for inputs in by_located:
        for rest in product(*(slots[n] for n in others)):
            choice = dict(zip(of_inputs, inputs)) | dict(zip(others, rest))
            yield _apply(stmt, (choice[n] for n in range(len(slots))), (), ())


def protocol_choices(stmt: Stmt, sparse: set[str], workspaces: set[str], taco: bool) -> int:
    """How many programs `protocolised` yields, without building them or their options (stage 6
    counts every shape's before any program is costed)."""
    return prod(_option_count(access, sparse, workspaces, taco) for access in _reads_of(stmt))


def _option_count(access: Access, sparse: set[str], workspaces: set[str], taco: bool) -> int:
    """How many options `_read_options` gives `access`."""
    if access.tensor in workspaces:
        return 1 if taco else 2 ** len(access.indices)
    if access.tensor not in sparse:
        return 1
    return 2 if taco else 2 ** len(access.indices)


def _read_options(access: Access, loops: tuple[str, ...], sparse, workspaces, taco):
    n = len(access.indices)
    if access.tensor in workspaces:
        return [(Protocol.LOCATE,) * n] if taco else list(product((Protocol.STEP, Protocol.LOCATE), repeat=n))
    if access.tensor not in sparse:
        return [(Protocol.LOCATE,) * n]
    if not taco:
        return list(product((Protocol.STEP, Protocol.LOCATE), repeat=n))
    first = min(access.indices, key=loops.index)
    return [(Protocol.STEP,) * n, tuple(Protocol.LOCATE if i == first else Protocol.STEP for i in access.indices)]


def taco_runs(stmt: Stmt, result: str, sparse_result: bool) -> bool:
    """Whether TACO can lower `stmt` (see the module docstring)."""
    wheres: list[Where] = []
    inserts: list[int] = []  # per write of a sparse result: how many of its last modes arrive out of order

    def visit(node, loops: tuple[str, ...]) -> bool:
        if isinstance(node, Forall):
            return visit(node.body, (*loops, node.index))
        if isinstance(node, Where):
            wheres.append(node)
            return not isinstance(node.producer, Assign) and visit(node.consumer, loops) and visit(node.producer, loops)
        if node.lhs.tensor == result and sparse_result:
            ordered = sorted(node.lhs.indices, key=loops.index)
            in_order = next((n for n, index in enumerate(ordered) if loops[n] != index), len(ordered))
            inserts.append(len(ordered) - in_order)
        return True

    return visit(stmt, ()) and max(inserts, default=0) <= 1 and not (any(inserts) and wheres)


def _reads_of(stmt: Stmt) -> list[Access]:
    """The reads of `stmt` in `_collect`'s order (a where's consumer before its producer)."""
    if isinstance(stmt, Forall):
        return _reads_of(stmt.body)
    if isinstance(stmt, Where):
        return _reads_of(stmt.consumer) + _reads_of(stmt.producer)
    return list(reads(stmt.rhs))


def _collect(stmt, loops, sparse, workspaces, taco, slots) -> None:
    if isinstance(stmt, Forall):
        _collect(stmt.body, (*loops, stmt.index), sparse, workspaces, taco, slots)
    elif isinstance(stmt, Where):
        _collect(stmt.consumer, loops, sparse, workspaces, taco, slots)
        _collect(stmt.producer, loops, sparse, workspaces, taco, slots)
    else:
        for access in reads(stmt.rhs):
            slots.append(_read_options(access, loops, sparse, workspaces, taco))


def _apply(stmt, choice, scope: tuple[str, ...], loops: tuple[str, ...]):
    """`stmt` with the chosen read protocols (in `_collect`'s order) and the derived write protocols;
    `scope` holds the loops since the written tensor's scope began (a where starts its producer's)."""
    if isinstance(stmt, Forall):
        return Forall(stmt.index, _apply(stmt.body, choice, (*scope, stmt.index), (*loops, stmt.index)))
    if isinstance(stmt, Where):
        consumer = _apply(stmt.consumer, choice, scope, loops)
        return Where(consumer, _apply(stmt.producer, choice, (), loops))
    rhs = _with_protocols(stmt.rhs, choice)
    lhs = stmt.lhs
    in_order = set(scope[:len(lhs.indices)]) == set(lhs.indices)
    write = Protocol.APPEND if in_order else Protocol.INSERT
    return Assign(Access(lhs.tensor, lhs.indices, (write,) * len(lhs.indices)), rhs, stmt.accumulate)


def _with_protocols(expr, choice):
    return postwalk(expr, lambda node: Access(node.tensor, node.indices, next(choice)) if isinstance(node, Access) else node)
