"""What every autoscheduler returns: candidates that `compile` takes as schedules (a CIN statement, with
the formats that CIN reads its operands in), in a sequence that keeps the search's statistics.

Autoschedulers sit above the pipeline that compiles a kernel but never import it: whoever asks for
candidates (api's `autoschedule`) hands over a kernel factory, with which a front compiles its own
candidates where selection times them or `verify` checks them.

Every candidate, whichever model found it, also exposes what `select` estimates it by (the cost inputs `ScheduleCandidate` lists):
the asymptotic cost model's task sets of the program as its CIN runs. So one front may hold candidates
of both models (`JointFront`, `model="auto"`), ranked by one estimate.
"""

from __future__ import annotations

import abc
from functools import cached_property
from typing import Callable, Mapping

from ..cin.ast import Stmt, results, tensors
from ..format import Format
from ..notation import accesses
from ..notation import ast as notation
from .asymptotic.cost import Cost, CostModel
from .asymptotic.sketch import from_cin
from .table import front_table

#: `factory(assignment, formats, schedule=candidate)` -> a kernel, called with the operands by name
#: (the pipeline's `Kernel`).
KernelFactory = Callable[..., Callable[..., object]]


class ScheduleCandidate(abc.ABC):
    """A schedule `compile` accepts, with what `select` ranks it by: `running_cost` (the task sets of its
    CIN as it runs), `table_cost` and `probe_cost` (the parts of those that touch hash-table temporaries
    and hashed operands), `formats` (the operands' and temporaries' formats its CIN reads), `transposes`
    (operands read in a format other than the one given), `temporaries` and `cin`."""

    found_by = "?"  # the model that found it, as the front's table names it

    @abc.abstractmethod
    def kernel_schedule(self) -> tuple[Stmt, dict[str, Format]]:
        """The CIN statement and the formats `compile` reads the operands (and writes the result) in."""


def cost_model(assignment: notation.Assignment, formats: Mapping[str, Format]) -> CostModel:
    """The asymptotic cost model of one kernel (as its search builds it, sunk costs included), to cost
    programs no asymptotic search produced."""
    operands = accesses(assignment.rhs)
    sparse = {a.tensor: tuple(i.name for i in a.indices) for a in operands if not formats[a.tensor].is_dense}
    indices = tuple(dict.fromkeys(i.name for a in (assignment.lhs, *operands) for i in a.indices))
    return CostModel(sparse, indices)


class CostedByCin:
    """The cost inputs of a candidate known by its CIN (protocols chosen, formats given), for a class
    with `cin` and `model` (its kernel's `cost_model`): the task sets of that CIN as it runs, and the
    parts that touch hash-table temporaries (or a result staged in one) and hashed operands."""

    @cached_property
    def _cin_costs(self) -> tuple[object, frozenset[str], frozenset[str]]:
        written = set(results(self.cin))
        hashed = [var for var in tensors(self.cin).values()
                  if any(level.inserts_sparsely for level in var.format.levels)]
        tables = frozenset(var.name for var in hashed if var.temporary or var.name in written)
        return from_cin(self.cin), tables, frozenset(var.name for var in hashed) - tables

    @property
    def running_cost(self) -> Cost:
        return self.model.cost(self._cin_costs[0])

    @property
    def table_cost(self) -> Cost:
        running, tables, _ = self._cin_costs
        return self.model.cost_touching(running, tables)

    @property
    def probe_cost(self) -> Cost:
        running, _, probed = self._cin_costs
        return self.model.cost_touching(running, probed)


class Candidates:
    """The candidates an autoscheduler kept for one expression (`candidates`), and its search (`search`,
    with the `stages` it went through)."""

    candidates: list
    search: object
    assignment: notation.Assignment
    formats: Mapping[str, Format]
    kernel_factory: KernelFactory

    def __iter__(self):
        return iter(self.candidates)

    def __len__(self) -> int:
        return len(self.candidates)

    def __getitem__(self, n: int):
        return self.candidates[n]

    @property
    def stages(self) -> list:
        return self.search.stages

    def kernel(self, candidate: ScheduleCandidate):
        """`candidate` compiled for this front's expression and formats."""
        return self.kernel_factory(self.assignment, self.formats, schedule=candidate)

    def select(self, tune: int = 0, **tensors):
        """The candidate expected to run fastest on these operands (`select.py`), whichever model found it."""
        from .select import select
        return select(self, tensors, tune)

    def __str__(self) -> str:
        return front_table(self)


class JointFront(Candidates):
    """The candidates of several models' fronts for one expression (`model="auto"`): the asymptotic
    frontier and SparseAuto's final set side by side, each costed by the same estimate, so `select`
    weighs a 3-D temporary of one against the branched nests of the other."""

    def __init__(self, fronts: list[Candidates]):
        first = fronts[0]
        self.fronts = fronts
        self.assignment, self.formats, self.kernel_factory = first.assignment, first.formats, first.kernel_factory
        self.candidates = [cand for front in fronts for cand in front]

    @property
    def complete(self) -> bool:
        return all(front.complete for front in self.fronts)

    @property
    def stages(self) -> list:
        return [stage for front in self.fronts for stage in front.stages]
