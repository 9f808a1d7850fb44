"""loopfuse(loc, pol, path): SparseAuto's fusion directive, on the statement read as a branched
iteration graph (`schedule/branched.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...cin.ast import Stmt
from ...errors import ScheduleError
from .. import branched
from .base import Arity, Command, Derived, Path, Relations, ScheduleCommand, command, read_integer, read_name


@command
@dataclass(frozen=True)
class Loopfuse(ScheduleCommand):
    """Split the product of the section at `path` after its `loc`-th factor into a producer (the first
    factors when `pol`, else the rest) and a consumer, fusing the loops both use."""

    name: ClassVar[str] = "loopfuse"
    arity: ClassVar[Arity] = Arity(3, 3)
    loc: int
    pol: bool
    path: Path

    def __str__(self) -> str:
        return f"{self.name}({self.loc}, {'true' if self.pol else 'false'}, {self.path})"

    @classmethod
    def read(cls, written: Command) -> "Loopfuse":
        loc, pol, path = written.args
        if not isinstance(path, Path):
            raise ScheduleError(f"{written}: expected a path such as [] or [1, 0] as the third argument")
        spelled = {"true": True, "false": False}.get(read_name(pol, written))
        if spelled is None:
            raise ScheduleError(f"{written}: expected true or false (is the producer on the left?)")
        return cls(read_integer(loc, written), spelled, path)

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        return branched.loopfuse(stmt, self.loc, self.pol, self.path.steps, str(self)), relations
