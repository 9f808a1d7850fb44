"""What `asp.autoschedule` returns: the frontier's candidates, each a schedule `compile` accepts.

    front = asp.autoschedule("A(i,j) = B(i,k) * C(j,k)", formats={"B": "csr", "C": "csr", "A": "csr"})
    for cand in front: print(cand.cin, cand.cost)
    best = front.select(B=B, C=C)
    k = asp.compile("A(i,j) = B(i,k) * C(j,k)", formats={...}, schedule=best)

A candidate carries the formats its CIN needs its operands in (concordant with its loops); the kernel
converts operands given in other formats when it is called, and `cand.transposes` names them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping

from ..cin import ast as cin_ast
from ..format import Format
from ..notation import ast as notation
from .asymptotic.analysis import tasks
from .asymptotic.cost import Cost, CostModel
from .asymptotic.pipeline import Search
from .asymptotic.query import Query, disjuncts, folded
from .asymptotic.realise import realise
from .asymptotic.sketch import Stmt, reads
from .candidate import Candidates, KernelFactory, ScheduleCandidate


@dataclass(frozen=True)
class Candidate(ScheduleCandidate):
    """One frontier program: its sketch (protocolized CIN before formats), cost, CIN and formats."""

    sketch: Stmt
    cost: Cost
    assignment: notation.Assignment = field(repr=False)
    user_formats: Mapping[str, Format] = field(repr=False, compare=False)
    model: CostModel = field(repr=False, compare=False)

    found_by = "asymptotic"

    @cached_property
    def _realised(self):
        return realise(self.sketch, self.user_formats, self.assignment.lhs.tensor)

    @property
    def cin(self) -> cin_ast.Stmt:
        return self._realised.cin

    @property
    def formats(self) -> dict[str, Format]:
        """The format of every operand and temporary the CIN reads (the result keeps the user's)."""
        return dict(self._realised.formats)

    @property
    def runs_as(self) -> tuple:
        """What the kernel runs: the sketch as stored (a step through a dense level is a locate) and the
        formats. Candidates that differ only in protocols their formats ignore run alike, so timing one
        of them times them all."""
        return self._realised.running, tuple(sorted((name, str(fmt)) for name, fmt in self.formats.items()))

    @cached_property
    def running_cost(self) -> Cost:
        """The cost of the program as its CIN runs (see `Realised.running`), which selection compares:
        it exceeds `cost` where a mode the sketch steps is stored dense."""
        return self.model.cost(self._realised.running)

    @cached_property
    def table_cost(self) -> Cost:
        """The part of `running_cost` that builds or reads hash-table temporaries (each access one or
        two orders of magnitude dearer than an array's: selection weighs it in)."""
        return self.model.cost_touching(self._realised.running, self._realised.tables)

    @cached_property
    def probe_cost(self) -> Cost:
        """The part of `running_cost` that reads operands stored with hashed levels (a hash and a probe
        into a table only as large as one slice)."""
        return self.model.cost_touching(self._realised.running, self._realised.probed)

    @cached_property
    def scattered_costs(self) -> dict[str, Cost]:
        """For each dense operand or result accessed out of stride — its innermost loop runs over a mode
        other than the last one stored (a row-major C(k,j) inside a loop over k), or over the last one
        but only at a sparse operand's coordinates (a gather) — the part of `running_cost` that
        accesses it: where the tensor outgrows the cache, each such access fetches a cache line, where
        a loop over the whole last mode streams through the line in use."""
        running = self._realised.running
        return {name: self.model.cost_touching(running, frozenset({name}))
                for name in dict.fromkeys(_scattered(running, self.user_formats))}

    @cached_property
    def dense_workspaces(self) -> tuple[tuple[Cost, tuple[str, ...]], ...]:
        """Every temporary stored as a dense array of two or more dimensions, as (how often its `where`
        runs: the iterations of the loops around it, as a cost; its indices). The lowering clears the
        whole array after each consumer, so each run costs the product of the extents, however few
        entries it wrote, and the array must fit in memory: a task set sees only the entries written."""
        found = []
        for loops, where in _wheres(self.sketch, ()):
            for assign in cin_ast.assignments(where.producer):
                fmt = self.formats.get(assign.lhs.tensor)
                if assign.lhs.tensor in self.temporaries and fmt.order >= 2 and fmt.is_dense:
                    found.append((self._iterations(loops), tuple(assign.lhs.indices)))
        return tuple(found)

    def _iterations(self, loops: tuple[str, ...]) -> Cost:
        """The iterations of the loop nest `loops` (outermost first) as the CIN runs it: the task sets at
        exactly those indices (an empty cost for no loops: once)."""
        if not loops:
            return Cost(())
        found = tasks(self._realised.running, {name: len(ix) for name, ix in self.model.sparse.items()},
                      self.model.scoped)
        assumed = self.model.assumptions
        return Cost.of(Query.of(((i, i) for i in task.head), folded(task.head, conjunction | assumed))
                       for task in found if task.head == loops for conjunction in disjuncts(task.guard))

    @property
    def transposes(self) -> dict[str, Format]:
        """Operands the kernel reads in a format other than the one they were given in."""
        return {name: fmt for name, fmt in self.formats.items()
                if name in self.user_formats and fmt != self.user_formats[name]}

    @property
    def temporaries(self) -> list[str]:
        """The workspaces and staged results the CIN introduces."""
        return [name for name in self.formats if name not in self.user_formats]

    def kernel_schedule(self) -> tuple[cin_ast.Stmt, dict[str, Format]]:
        """The CIN and the formats `compile` reads the operands in (temporaries' are the CIN's own)."""
        return self.cin, {name: fmt for name, fmt in self.formats.items() if name in self.user_formats}

    def __str__(self) -> str:
        return str(self.sketch)


def _wheres(stmt: Stmt, loops: tuple[str, ...]):
    """Every `where` of `stmt` with the loops around it, outermost first."""
    if isinstance(stmt, cin_ast.Forall):
        yield from _wheres(stmt.body, (*loops, stmt.index))
    elif isinstance(stmt, cin_ast.Where):
        yield loops, stmt
        yield from _wheres(stmt.consumer, loops)
        yield from _wheres(stmt.producer, loops)


def _scattered(stmt: Stmt, formats: Mapping[str, Format], loops: tuple[tuple[str, bool], ...] = ()):
    """The dense tensors `stmt` accesses out of stride; `loops` are the loops around it, each with
    whether it visits its whole range (steps through no sparse operand)."""
    if isinstance(stmt, cin_ast.Forall):
        whole = all(a.protocol_of(stmt.index) != cin_ast.Protocol.STEP for a in reads(stmt.body))
        yield from _scattered(stmt.body, formats, (*loops, (stmt.index, whole)))
    elif isinstance(stmt, cin_ast.Where):
        yield from _scattered(stmt.consumer, formats, loops)
        yield from _scattered(stmt.producer, formats, loops)
    else:
        for access in (stmt.lhs, *reads(stmt.rhs)):
            fmt = formats.get(access.tensor)
            inner = [(i, whole) for i, whole in loops if i in access.indices]
            if fmt is not None and fmt.is_dense and inner and not (
                    inner[-1][1] and access.indices.index(inner[-1][0]) == fmt.mode_order[-1]):
                yield access.tensor


class Front(Candidates):
    """The undominated candidates of an expression, with the search's statistics and witnesses."""

    def __init__(self, assignment: notation.Assignment, formats: Mapping[str, Format], found: Search,
                 kernel_factory: KernelFactory):
        self.assignment, self.formats, self.search = assignment, dict(formats), found
        self.kernel_factory = kernel_factory
        self.candidates = [Candidate(sketch, cost, assignment, self.formats, found.model)
                           for sketch, cost in found.frontier]

    @property
    def complete(self) -> bool:
        return self.search.complete

    def witness(self, program: Stmt) -> Stmt | None:
        """The frontier program that dominates `program` (None for a frontier program)."""
        return self.search.witnesses.get(program)

    def select(self, tune: int = 0, **tensors):
        """The candidate expected to run fastest on these operands (see `select.py`); `tune=n` times
        the n best estimated candidates on them and returns the fastest instead."""
        from .select import select
        return select(self, tensors, tune)
