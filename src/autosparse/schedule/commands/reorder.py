"""reorder(i, k, j): the directly nested loops over these indices, in this order; with `path=[…]`, the
whole loop order of a section of a branched nest (SparseAuto's reorder)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ...cin.ast import Forall, Stmt, accesses, assignments, nest, unnest_loops, walk
from ...errors import ScheduleError
from ...notation.ast import IndexVar
from .. import branched
from .base import Arity, Command, Derived, Path, Relations, ScheduleCommand, command, read_index
from .rewrite import replace_node


@command
@dataclass(frozen=True)
class Reorder(ScheduleCommand):
    """The chain of directly nested foralls over exactly `order`'s indices, put in that order (each loop
    keeps its marks). Swapping perfectly nested loops around one statement reorders a sum, which is
    always allowed; a loop cannot move across a `where` or `sequence`, which would change what the
    temporary holds or what runs first."""

    name: ClassVar[str] = "reorder"
    arity: ClassVar[Arity] = Arity(2, None)
    order: tuple[IndexVar, ...]
    path: Path | None = None

    def __str__(self) -> str:
        path = [f"path={self.path}"] if self.path is not None else []
        return f"{self.name}({', '.join([*map(str, self.order), *path])})"

    @classmethod
    def read(cls, written: Command) -> "Reorder":
        return cls(tuple(read_index(a, written) for a in written.args), written.path)

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        if self.path is not None:
            order = tuple(map(str, self.order))
            return branched.reorder(stmt, order, self.path.steps, str(self)), relations
        return self._reordered(stmt), relations

    def _reordered(self, stmt: Stmt) -> Stmt:
        name = str(self)
        order = self.order
        if len(set(order)) != len(order) or len(order) < 2:
            raise ScheduleError(f"{name}: expected two or more distinct index variables")
        found = _find_chain(stmt, set(order))
        if found is None:
            loops = {n.index for n in walk(stmt) if isinstance(n, Forall)}
            missing = [i for i in order if i not in loops]
            if missing:
                raise ScheduleError(f"{name}: there is no loop over {', '.join(map(str, missing))}")
            raise ScheduleError(f"{name}: the loops over {', '.join(map(str, order))} are not directly nested "
                                f"(a loop cannot move across a where, a sequence or another loop)")
        if any(loop.parallel for loop in found[0]):
            raise ScheduleError(f"{name}: no command may follow parallelize on the loops it reorders")
        loops, body = found
        _check_storage_order(name, order, body)
        by_index = {loop.index: loop for loop in loops}
        return replace_node(stmt, loops[0], nest(tuple(by_index[i] for i in order), body))


def _check_storage_order(command: str, order: tuple[IndexVar, ...], body: Stmt) -> None:
    """A sparse operand is reached level by level, each level from its parent's position, so the loops
    over its indices must follow its storage order (dense operands are read at random, and an output
    written out of order gets a workspace from legalisation)."""
    for access in dict.fromkeys(a for a in accesses(body) if not a.tensor.temporary):
        if access.tensor.format.is_dense or any(access is a.lhs for a in assignments(body)):
            continue
        stored = [i for i in access.level_indices if i in order]
        wanted = [i for i in order if i in stored]
        if stored != wanted:
            raise ScheduleError(f"{command}: {access} is stored in the order {', '.join(map(str, stored))} "
                                f"(format {access.tensor.format}), so loop {wanted[0]} cannot come first")


def _find_chain(stmt: Stmt, indices: set[IndexVar]) -> tuple[tuple[Forall, ...], Stmt] | None:
    """The first chain of directly nested foralls whose indices are exactly `indices` (outermost first),
    and what it encloses."""
    for node in walk(stmt):
        if isinstance(node, Forall) and node.index in indices:
            loops, body = unnest_loops(node)
            loops = loops[:len(indices)]
            if {loop.index for loop in loops} == indices:
                return loops, loops[-1].body
            return None
    return None
