"""SparseAuto's directives as scheduling commands on CIN: the statement is read as a branched
iteration graph, transformed there (`autoschedule/sparseauto/transform.py`) and written back."""

from __future__ import annotations

from ..autoschedule.sparseauto import transform
from ..autoschedule.sparseauto.bridge import formats_of, to_big, to_cin
from ..cin.ast import Stmt


def loopfuse(stmt: Stmt, loc: int, pol: bool, path: tuple[int, ...], command: str) -> Stmt:
    big, accesses = to_big(stmt, command)
    return to_cin(transform.loopfuse(big, loc, pol, path), accesses)


def reorder(stmt: Stmt, order: tuple[str, ...], path: tuple[int, ...], command: str) -> Stmt:
    big, accesses = to_big(stmt, command)
    return to_cin(transform.reorder(big, order, path, formats_of(accesses)), accesses)
