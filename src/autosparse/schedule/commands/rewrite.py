"""What the commands share to find their target in a CIN statement, check it and replace it."""

from __future__ import annotations

from ...cin.ast import Access, Assign, Forall, Sequence, Stmt, Where, accesses, walk
from ...cin.rewrite import rebuild_expr
from ...errors import ScheduleError
from ...notation import ast as notation
from ...notation.ast import IndexVar


def failure(command: str, index, rule: str) -> ScheduleError:
    """The error of a command that breaks `rule` at `index`: `split(i): ...`."""
    return ScheduleError(f"{command}({index}): {rule}")


def checked_count(value, most: int, command: str, index, what: str) -> int:
    """A schedule's integer (a tile size, an unroll factor), checked before C is written: it lands in
    the kernel as a constant, where one past `most` would wrap or be rejected by the compiler."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise failure(command, index, f"the {what} must be a positive integer of at most {most}, not {value!r}")
    return value


def find_loop(stmt: Stmt, index: IndexVar, command: str) -> Forall:
    """The one loop over `index`."""
    loops = [n for n in walk(stmt) if isinstance(n, Forall) and n.index == index]
    if not loops:
        raise ScheduleError(f"{command}: there is no loop over {index}")
    if len(loops) > 1:
        raise ScheduleError(f"{command}: {len(loops)} loops are over {index}; rename one (precompute's iw)")
    return loops[0]


def replace_node(stmt: Stmt, old: Stmt, new: Stmt) -> Stmt:
    """`stmt` with the node `old` (found by identity) replaced by `new`."""
    if stmt is old:
        return new
    children = stmt.children()
    if not any(isinstance(c, (Forall, Where, Sequence, Assign)) for c in children):
        return stmt
    return stmt.with_children(tuple(replace_node(c, old, new) if isinstance(c, (Forall, Where, Sequence, Assign))
                                    else c for c in children))


def as_cin(expr, stmt: Stmt, command: str):
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
