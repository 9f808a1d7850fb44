"""What every autoscheduler returns: candidates that `compile` takes as schedules (CIN text, with the
formats that CIN needs its operands in), in a sequence that keeps the search's statistics."""

from __future__ import annotations

import abc

from ..format import Format


class ScheduleCandidate(abc.ABC):
    @abc.abstractmethod
    def kernel_schedule(self) -> tuple[str, dict[str, Format]]:
        """The CIN text and the formats `compile` needs for it."""


class Candidates:
    """The candidates an autoscheduler kept for one expression (`candidates`), and its search (`search`,
    with the `stages` it went through)."""

    candidates: list
    search: object

    def __iter__(self):
        return iter(self.candidates)

    def __len__(self) -> int:
        return len(self.candidates)

    def __getitem__(self, n: int):
        return self.candidates[n]

    @property
    def stages(self) -> list:
        return self.search.stages
