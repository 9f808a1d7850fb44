"""What every autoscheduler's candidate is to `compile`: a schedule given as CIN text, with the
formats that CIN needs its operands in."""

from __future__ import annotations

import abc

from ..format import Format


class ScheduleCandidate(abc.ABC):
    @abc.abstractmethod
    def kernel_schedule(self) -> tuple[str, dict[str, Format]]:
        """The CIN text and the formats `compile` needs for it."""
