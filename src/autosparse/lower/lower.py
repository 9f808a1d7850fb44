"""CIN statement -> C statements (LOWERING.md §3-5): loops from iteration lattices, stores into targets.

`lower(stmt, plan, logs, scope, b)` is one pass over the statement. Everything a loop passes to the
loops inside it travels in the frozen `Scope` (which level of each access is reached, at which position;
which flag a store must raise; which register sums a hoisted reduction); the kernel-wide facts — each
access's read levels, each written tensor's target, the phase — are in the frozen `Plan`; the names and
labels the pass hands out are in `Logs` (context.py).

This module is only the dispatch on the kind of statement; each kind is lowered in the module of its
concern (loops.py, coiteration.py, derived.py, parallel.py, outputs.py), which reaches the statements
nested in it back through this dispatch, carried by the `Lowering` context.
"""

from __future__ import annotations

from dataclasses import replace

from ..cin.ast import Assign, Forall, Sequence, Stmt, Where
from ..cin.provenance import Provenance, SuchThat
from ..codegen.builder import CBuilder
from .context import Logs, Lowering, Plan, Scope
from .loops import forall
from .outputs import assign, where


def lower(stmt: Stmt, plan: Plan, logs: Logs, scope: Scope, b: CBuilder) -> None:
    statement(Lowering(plan, logs, b, statement), stmt, scope)


def statement(cx: Lowering, stmt: Stmt, scope: Scope) -> None:
    if isinstance(stmt, SuchThat):
        statement(cx, stmt.stmt, replace(scope, provenance=Provenance(stmt.relations)))
    elif isinstance(stmt, Forall):
        forall(cx, stmt, scope)
    elif isinstance(stmt, Assign):
        assign(cx, stmt, scope)
    elif isinstance(stmt, Where):
        where(cx, stmt, scope)
    elif isinstance(stmt, Sequence):
        statement(cx, stmt.first, scope)
        statement(cx, stmt.second, scope)
    else:
        raise TypeError(f"not a CIN statement: {stmt!r}")
