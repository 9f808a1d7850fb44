"""SparseAuto's directives as scheduling commands on CIN: the statement is read as a branched
iteration graph (`big.py`, through `big_cin.py`), transformed there (`loopfuse.py`) and written back.

Each function takes the statement and the command's arguments, and `command` (the command as the user
wrote it) for the messages of the errors it raises.
"""

from __future__ import annotations

from ..cin.ast import Stmt
from . import loopfuse as directives
from .big_cin import formats_of, to_big, to_cin


def loopfuse(stmt: Stmt, loc: int, pol: bool, path: tuple[int, ...], command: str) -> Stmt:
    """`loopfuse(loc, pol, path)`: the linear section at `path` split after its `loc`-th factor into a
    producer filling a temporary and a consumer reading it (the producer on the left when `pol`)."""
    big, accesses = to_big(stmt, command)
    return to_cin(directives.loopfuse(big, loc, pol, path), accesses)


def reorder(stmt: Stmt, order: tuple[str, ...], path: tuple[int, ...], command: str) -> Stmt:
    """`reorder(..., path=[...])`: the loops of the linear section at `path` in `order`."""
    big, accesses = to_big(stmt, command)
    return to_cin(directives.reorder(big, order, path, formats_of(accesses)), accesses)
