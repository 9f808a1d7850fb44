"""coiterate(i, strategy[, tensor]): how loop i meets its operands: merge, gallop, binary, hash, bitmap, auto."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...cin.ast import Coiteration, Stmt, Strategy, accesses
from ...errors import ScheduleError
from ...notation.ast import IndexVar
from .base import (Arity, Command, Derived, Relations, ScheduleCommand, command, read_choice, read_index,
                   read_tensor_name)
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

    def __str__(self) -> str:
        return f"{self.name}({self.index}, {self.strategy.value}{f', {self.tensor}' if self.tensor else ''})"

    @classmethod
    def read(cls, written: Command) -> "Coiterate":
        tensor = read_tensor_name(written.args[2], written) if len(written.args) > 2 else None
        return cls(read_index(written.args[0], written), read_choice(Strategy, written.args[1], written), tensor)

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        loop = find_loop(stmt, self.index, str(self))
        if self.tensor is not None and self.tensor not in {a.tensor.name for a in accesses(loop.body)}:
            raise ScheduleError(f"{self}: {self.tensor} is not read inside the loop over {self.index}")
        chosen = (loop.coiterate or Coiteration()).with_strategy(self.strategy, self.tensor)
        return replace_node(stmt, loop, replace(loop, coiterate=chosen)), relations
