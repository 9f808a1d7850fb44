"""The autoschedulers as the public API offers them: `autoschedule`, whose fronts compile their
candidates through the pipeline's Kernel, and `schedule="auto"`: an autoscheduler's candidates for an
expression (the asymptotic frontier, or SparseAuto's final set), selected from for the operands at hand.

Searching and selecting cost far more than a small kernel call, so both are remembered for the process:
the frontier per expression and formats, the choice per size class of the operands as well (each
dimension and each operand's stored-entry count rounded up to a power of two), so a loop over similar
inputs decides once.
"""

from __future__ import annotations

from typing import Mapping

from ..autoschedule import Front, SparseAutoFront
from ..autoschedule import autoschedule as run_autoscheduler
from ..autoschedule.candidate import ScheduleCandidate
from ..format.spec import as_format
from ..notation import Assignment, accesses
from ..tensor import as_tensor
from .kernel import Kernel

#: The autoscheduler's search stops taking programs after this many seconds (the frontier of those
#: taken is still a frontier of valid schedules; only SpMTTKRP-sized searches reach it).
SEARCH_SECONDS = 20.0

_fronts: dict[tuple, "Front | SparseAutoFront"] = {}
_choices: dict[tuple, ScheduleCandidate] = {}


def autoschedule(expression: str, formats: Mapping[str, object] | None = None, model: str = "asymptotic",
                 **options) -> "Front | SparseAutoFront":
    """`asp.autoschedule`: the candidates of autoscheduler `model` for `expression` (the options are
    `autoschedule.autoschedule`'s), compiled by the pipeline's Kernel where `select(tune=...)` times them
    or `verify` checks them."""
    return run_autoscheduler(expression, formats, model, kernel_factory=Kernel, **options)


def chosen_schedule(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object],
                    model: str = "asymptotic") -> ScheduleCandidate | None:
    """The candidate chosen for these operands; None (the default schedule) where the front is empty
    (`B(i,j) - B(j,i)` reads B in two orders, which no one format of B realises)."""
    return chosen(assignment, formats, operands, model)[1]


def chosen(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object],
           model: str = "asymptotic") -> tuple["Front | SparseAutoFront", ScheduleCandidate | None]:
    """The autoscheduler's candidates for the expression, and the one chosen for these operands."""
    orders = {a.tensor: len(a.indices) for a in (assignment.lhs, *accesses(assignment.rhs))}
    resolved = {name: str(as_format(formats.get(name, "dense"), order)) for name, order in orders.items()}
    key = (model, str(assignment), tuple(sorted(resolved.items())))
    front = _fronts.get(key)
    if front is None:
        limit = {"time_limit": SEARCH_SECONDS} if model == "asymptotic" else {}
        front = _fronts[key] = autoschedule(str(assignment), resolved, model=model, **limit)
    tensors = {name: as_tensor(value, front.formats[name], name) for name, value in operands.items()
               if name in orders}
    size_class = tuple(sorted((name, tuple(_rounded(n) for n in t.shape), _rounded(t.nnz))
                              for name, t in tensors.items()))
    choice = _choices.get((key, size_class))
    if choice is None:
        choice = _choices[(key, size_class)] = front.select(**tensors) if len(front) else None  # None: the default
    return front, choice


def _rounded(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()
