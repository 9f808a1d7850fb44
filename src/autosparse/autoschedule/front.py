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
from .asymptotic.cost import Cost, CostModel
from .asymptotic.pipeline import Search
from .algebra import semiring_of
from .asymptotic.realise import realise
from .asymptotic.sketch import Stmt
from .candidate import Candidates, Costed, KernelFactory, ScheduleCandidate


@dataclass(frozen=True)
class Candidate(Costed, ScheduleCandidate):
    """One frontier program: its sketch (protocolized CIN before formats), cost, CIN and formats."""

    sketch: Stmt
    cost: Cost
    assignment: notation.Assignment = field(repr=False)
    user_formats: Mapping[str, Format] = field(repr=False, compare=False)
    model: CostModel = field(repr=False, compare=False)

    found_by = "asymptotic"

    @cached_property
    def _realised(self):
        return realise(self.sketch, self.user_formats, self.assignment.lhs.tensor, semiring_of(self.assignment))

    @cached_property
    def running_cost(self) -> Cost:
        """`Costed.running_cost`: the search's cost where the CIN runs the sketch as it is."""
        running = self._realised.running
        return self.cost if running == self.sketch else self.model.cost(running)

    @property
    def cin(self) -> cin_ast.Stmt:
        return self._realised.cin

    @property
    def formats(self) -> dict[str, Format]:
        """The format of every operand and temporary the CIN reads (the result keeps the user's)."""
        return dict(self._realised.formats)

    @property
    def temporaries(self) -> list[str]:
        """The workspaces and staged results the CIN introduces."""
        return [name for name in self.formats if name not in self.user_formats]

    def kernel_schedule(self) -> tuple[cin_ast.Stmt, dict[str, Format]]:
        """The CIN and the formats `compile` reads the operands in (temporaries' are the CIN's own)."""
        return self.cin, {name: fmt for name, fmt in self.formats.items() if name in self.user_formats}

    def __str__(self) -> str:
        return str(self.sketch)


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
