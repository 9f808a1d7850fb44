"""The public `Kernel`: the pipeline's, taking an autoscheduler's candidate as a schedule as well.

    k = compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
    C = k(A=A, B=B)
"""

from __future__ import annotations

from typing import Mapping

from ..autoschedule.candidate import ScheduleCandidate
from ..format import Format
from ..format.spec import format_mapping
from ..pipeline import Kernel as PipelineKernel
from ..pipeline.schedules import Chosen


class Kernel(PipelineKernel):
    """A compiled expression; call it with the operands by name."""

    def __init__(self, expression, formats: Mapping[str, "str | Format"] | None = None, schedule=None,
                 num_threads: int | None = None, instrument: bool = False, coiteration: str | None = None,
                 stored: Mapping[str, int] | None = None, fills: Mapping[str, object] | None = None):
        schedule, needed = unwrap_candidate(schedule)
        super().__init__(expression, {**format_mapping(formats), **needed}, schedule, num_threads, instrument,
                         coiteration, stored, fills)


def unwrap_candidate(schedule) -> tuple[object, dict[str, Format]]:
    """An autoscheduler's candidate as the pipeline takes a schedule, with the formats its CIN reads the
    operands in (the call converts them): its CIN as `Chosen`, which runs on threads as the default schedule
    does (the default as itself); any other schedule as it is, needing no formats."""
    if isinstance(schedule, ScheduleCandidate):
        cin, needed = schedule.kernel_schedule()
        return (None if cin is None else Chosen(cin)), needed
    return schedule, {}
