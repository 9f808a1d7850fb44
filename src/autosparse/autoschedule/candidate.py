"""What every autoscheduler returns: candidates that `compile` takes as schedules (a CIN statement, with
the formats that CIN reads its operands in), in a sequence that keeps the search's statistics.

Autoschedulers sit above the pipeline that compiles a kernel but never import it: whoever asks for
candidates (api's `autoschedule`) hands over a kernel factory, with which a front compiles its own
candidates where selection times them or `verify` checks them.
"""

from __future__ import annotations

import abc
from typing import Callable, Mapping

from ..cin.ast import Stmt
from ..format import Format
from ..notation import ast as notation

#: `factory(assignment, formats, schedule=candidate)` -> a kernel, called with the operands by name
#: (the pipeline's `Kernel`).
KernelFactory = Callable[..., Callable[..., object]]


class ScheduleCandidate(abc.ABC):
    @abc.abstractmethod
    def kernel_schedule(self) -> tuple[Stmt, dict[str, Format]]:
        """The CIN statement and the formats `compile` reads the operands (and writes the result) in."""


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
