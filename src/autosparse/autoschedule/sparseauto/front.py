"""What `asp.autoschedule(..., model="sparseauto")` returns: stage 3's schedules, each one `compile`
accepts, and `select` (stages 4 and 5) for the operands at hand.

    front = asp.autoschedule("A(i,l) = B(i,j) * C(j,k) * D(k,l)", formats={"B": "csr"}, model="sparseauto",
                             constraints=["j <= 1e5"])
    for cand in front: print(cand, cand.cost.time, cand.cost.memory)
    best = front.select(B=B, C=C, D=D)

SparseAuto never changes a tensor's format: its candidates read operands as given.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Mapping

from ...cin import ast as cin_ast
from ...errors import AutosparseError, ShapeError
from ...format import Format
from ...notation import ast as notation
from ...schedule.big import Node, cin_text, show, temporaries
from ...schedule.big_cin import operand_accesses, to_cin
from ...tensor import as_tensor
from ..algebra import PLUS_TIMES, Semiring, in_semiring, semiring_of
from ..asymptotic.cost import CostModel
from ..candidate import Candidates, CostedByCin, KernelFactory, ScheduleCandidate, cost_model
from .cost import Costs
from .pipeline import Search
from .runtime import choose, default_budget, sizes


@dataclass(frozen=True)
class SparseAutoCandidate(CostedByCin, ScheduleCandidate):
    """One schedule of stage 3: its branched graph, its SparseAuto costs (`cost`), and the asymptotic
    model's costs of its CIN (`running_cost`, …), by which `select` ranks it beside asymptotic ones."""

    big: Node
    cost: Costs
    user_formats: Mapping[str, Format] = field(repr=False, compare=False)
    model: CostModel = field(repr=False, compare=False)
    semiring: Semiring = field(default=PLUS_TIMES, repr=False, compare=False)  # the CIN's ⊕ and ⊗

    found_by = "sparseauto"

    @property
    def formats(self) -> dict[str, Format]:
        return dict(self.user_formats)

    @property
    def temporaries(self) -> list[str]:
        return [t.tensor for t in temporaries(self.big)]

    @cached_property
    def text(self) -> str:
        return cin_text(self.big, self.user_formats)

    @cached_property
    def cin(self) -> cin_ast.Stmt:
        """The BIG as CIN (what `text` spells): operands read with their formats' default protocols, dense
        ones and the temporaries located."""
        return in_semiring(to_cin(self.big, operand_accesses(self.big, self.user_formats)), self.semiring)

    def kernel_schedule(self) -> tuple[cin_ast.Stmt, dict[str, Format]]:
        return self.cin, self.formats

    def __str__(self) -> str:
        return show(self.big)


class SparseAutoFront(Candidates):
    """Stage 3's schedules of one expression, with the statistics of every stage."""

    def __init__(self, assignment: notation.Assignment, formats: Mapping[str, Format], found: Search,
                 kernel_factory: KernelFactory):
        self.assignment, self.formats, self.search = assignment, dict(formats), found
        self.kernel_factory = kernel_factory
        model = cost_model(assignment, self.formats)
        semiring = semiring_of(assignment)
        self.candidates = [SparseAutoCandidate(big, cost, self.formats, model, semiring)
                           for big, cost in found.schedules]

    @property
    def complete(self) -> bool:
        return self.search.complete

    def select(self, memory_budget: int | None = None, **tensors) -> SparseAutoCandidate:
        """The candidate with the least iteration time on these operands among those whose temporaries
        fit `memory_budget` bytes (default: half of one core's private caches), ties broken by strides."""
        if not self.candidates:
            raise AutosparseError("Expected a front with candidates, but it is empty")
        compute = self.search.compute
        extents: dict[str, int] = {}
        found = {}
        for factor in compute.factors:
            if factor.tensor not in tensors:
                raise AutosparseError(f"Expected operand {factor.tensor} for {self.assignment}, but found "
                                      f"{sorted(tensors)}")
            tensor = as_tensor(tensors[factor.tensor], self.formats[factor.tensor], factor.tensor)
            found[factor.tensor] = tensor
            if len(tensor.shape) != len(factor.indices):
                raise ShapeError(f"Expected {factor} to have order {len(factor.indices)}, but its shape is "
                                 f"{tensor.shape}")
            for index, extent in zip(factor.indices, tensor.shape):
                if extents.setdefault(index, extent) != extent:
                    raise ShapeError(f"Expected index {index} to have one extent, but {factor} gives it {extent} "
                                     f"and another operand {extents[index]}")
        values = sizes({f.tensor: f for f in compute.factors}, self.formats, found, extents)
        budget = default_budget() if memory_budget is None else memory_budget
        big, _ = choose([(c.big, c.cost) for c in self.candidates], values, self.formats, extents, budget)
        return next(c for c in self.candidates if c.big is big)
