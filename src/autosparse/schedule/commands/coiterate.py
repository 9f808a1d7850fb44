"""coiterate(i, strategy[, tensor]): how loop i meets its operands: merge, gallop, binary, hash, bitmap, auto."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...cin.ast import Coiteration, Stmt, Strategy, accesses
from ...errors import ScheduleError
from ...notation.ast import IndexVar
from .base import Arity, Derived, Relations, ScheduleCommand, command
from .rewrite import find_loop, replace_node


@command
@dataclass(frozen=True)
class Coiterate(ScheduleCommand):
    """How the loop over `index` meets its operands (Zhao et al.): `strategy` for all of them, or for
    `tensor`'s alone. Whether the operands' levels allow it is checked when the kernel is generated,
    where the loop's driver and found operands are known."""

    name: ClassVar[str] = "coiterate"
    arity: ClassVar[Arity] = Arity(2, 3)
    index: IndexVar
    strategy: Strategy
    tensor: str | None = None

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        loop = find_loop(stmt, self.index, str(self))
        if self.tensor is not None and self.tensor not in {a.tensor.name for a in accesses(loop.body)}:
            raise ScheduleError(f"{self}: {self.tensor} is not read inside the loop over {self.index}")
        chosen = (loop.coiterate or Coiteration()).with_strategy(self.strategy, self.tensor)
        return replace_node(stmt, loop, replace(loop, coiterate=chosen)), relations
