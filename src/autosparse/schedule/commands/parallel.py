"""How a loop runs on the machine:

    parallelize(i, unit, race)   OpenMP threads or SIMD lanes over loop i, races handled by `race`
    unroll(i, n)                 ask the C compiler to unroll loop i n times
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from ...cin.ast import MAX_UNROLL, Forall, Parallel, ParallelUnit, Race, Stmt, Where, assignments, walk
from ...cin.provenance import Provenance
from ...notation.ast import IndexVar
from .base import (Arity, Command, Derived, Relations, ScheduleCommand, command, read_choice, read_index,
                   read_integer)
from .rewrite import checked_count, failure, find_loop, replace_node


@command
@dataclass(frozen=True)
class Parallelize(ScheduleCommand):
    """Mark the loop over `index` parallel. The race strategy must fit what the loop writes:
    `no_races` needs every result position written inside to depend on `index` (no reduction over
    it; a derived `index` stands for the coordinates it was derived from, and a position over collapsed
    levels for all of them); `atomics` and `temporary` need the writes to be sums. The temporaries of
    `where`s inside a thread loop are each thread's own; SIMD lanes cannot have their own, and a second
    level of threads is not supported."""

    name: ClassVar[str] = "parallelize"
    arity: ClassVar[Arity] = Arity(3, 3)
    ends_schedule: ClassVar[bool] = True
    index: IndexVar
    unit: ParallelUnit
    race: Race

    def __str__(self) -> str:
        return f"{self.name}({self.index}, {self.unit.value}, {self.race.value})"

    @classmethod
    def read(cls, written: Command) -> "Parallelize":
        index, unit, race = written.args
        return cls(read_index(index, written), read_choice(ParallelUnit, unit, written),
                   read_choice(Race, race, written))

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        index, unit, race = self.index, self.unit, self.race
        loop = find_loop(stmt, index, str(self))
        if loop.parallel is not None:
            raise failure(self.name, index, "the loop is already parallel")
        if loop.unroll:
            raise failure(self.name, index, "the loop is unrolled, and OpenMP's pragma must directly precede its "
                                            "loop: split it and unroll the inner part")
        if unit is ParallelUnit.CPU_THREAD and any(isinstance(n, Forall) and n.parallel is not None
                                                   and n.parallel.unit is ParallelUnit.CPU_THREAD
                                                   for n in walk(stmt) if _encloses(n, loop) or _encloses(loop, n)):
            raise failure(self.name, index, "threads inside threads: a loop around or inside it is already "
                                            "parallel over cpu_thread")
        if unit is ParallelUnit.CPU_VECTOR and any(isinstance(n, Where) for n in walk(loop.body)):
            raise failure(self.name, index, "a where inside a SIMD loop would share its temporary between lanes "
                                            "(threads get one each: parallelize over cpu_thread)")
        written = [a for a in assignments(loop.body) if not a.lhs.tensor.temporary]
        provenance = Provenance(relations)
        reduced = [a for a in written if not provenance.writes_apart(index, a.lhs.indices)]
        if race is Race.NO_RACES and reduced:
            raise failure(self.name, index, f"no_races over a reduction: {reduced[0].lhs} is summed over {index}, "
                                            f"so iterations write the same place (use atomics or temporary)")
        if race in (Race.ATOMICS, Race.TEMPORARY) and any(not a.accumulate for a in reduced):
            raise failure(self.name, index, f"{race.value} needs the racing writes to be sums (+=)")
        if unit is ParallelUnit.CPU_VECTOR and race is Race.ATOMICS:
            raise failure(self.name, index, "SIMD lanes have no atomics: use temporary (a sum per lane, added "
                                            "after the loop) or parallelize over cpu_thread")
        return replace_node(stmt, loop, replace(loop, parallel=Parallel(unit, race))), relations


def _encloses(outer: Stmt, inner: Stmt) -> bool:
    return outer is not inner and any(n is inner for n in walk(outer))


@command
@dataclass(frozen=True)
class Unroll(ScheduleCommand):
    """Ask the C compiler to unroll the loop over `index` `factor` times."""

    name: ClassVar[str] = "unroll"
    arity: ClassVar[Arity] = Arity(2, 2)
    index: IndexVar
    factor: int

    def __str__(self) -> str:
        return f"{self.name}({self.index}, {self.factor})"

    @classmethod
    def read(cls, written: Command) -> "Unroll":
        return cls(read_index(written.args[0], written), read_integer(written.args[1], written))

    def apply(self, stmt: Stmt, relations: Relations) -> Derived:
        checked_count(self.factor, MAX_UNROLL, self.name, self.index, "factor")
        loop = find_loop(stmt, self.index, str(self))
        return replace_node(stmt, loop, replace(loop, unroll=self.factor)), relations
