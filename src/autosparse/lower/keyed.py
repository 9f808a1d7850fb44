"""Unsorted COO found by hashing its whole coordinates (Zhao et al. §4: a HashMap needs only that
distinct positions hold distinct coordinates).

An unsorted COO tensor (`u~q`) repeats a row in runs that come in no order, so none of its levels can
be found on its own: a row has no one segment, and a run's columns are only part of the row. When a
schedule asks for `coiterate(j, hash, B)` at the loop over B's last index, B is read through a view
instead: its upper levels only stand for the coordinates fixed so far, and its last level looks all of
them up at once in a table of B's entries, (coordinates) -> position, built once per call in
O(nnz(B)). B is then located, never stepped, as a hashed level is: the loops over its indices run over
the other operands (C(i,j) = A(i,j) * B(i,j) walks A's rows and finds each (i, j) in B), or over the
whole dimension where nothing else bounds them (in a sum with B).

A table holds each coordinate once; an unsorted COO that stores one twice (its duplicates are meant to
be added) makes the call fail with ReturnCode.DUPLICATE rather than find one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..cin.ast import Access, Forall, Stmt, Strategy, accesses, walk
from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import (Block, Decl, Expr, Function, Literal, Param, Return, SizeOf, Var, and_, call,
                             cast, eq, ge, increment, lt, not_)
from ..errors import ScheduleError
from ..runtime.abi import ReturnCode
from .reads import ROOT, Position, ReadLevel, TensorLevel

def keyed_accesses(stmt: Stmt, scattered) -> dict[Access, str]:
    """The accesses a loop over their last index finds by `hash` although their levels cannot be found
    one at a time (`scattered(access)`: a level above the last repeats coordinates in no order), each with
    the name of its table."""
    keyed = {}
    for loop in walk(stmt):
        if not isinstance(loop, Forall) or loop.coiterate is None:
            continue
        for access in accesses(loop.body):
            if (access.level_indices[-1:] == (loop.index,) and scattered(access)
                    and loop.coiterate.strategy(access.tensor.name) is Strategy.HASH):
                keyed.setdefault(access, names.user(access.tensor.name, f"keys{len(keyed)}"))
    return keyed


@dataclass(frozen=True)
class KeyLevel(ReadLevel):
    """An upper level of a keyed view: locating it only records that its coordinate is fixed (the last
    level reads the coordinates from the loops)."""

    full = True
    ordered = False
    unique = True
    steppable = False

    def range(self, parent: Position) -> tuple[Expr, Expr]:
        raise ScheduleError("a hashed unsorted COO's levels are located, never stepped")

    def coordinate(self, q: Expr) -> Expr:
        raise ScheduleError("a hashed unsorted COO's levels are located, never stepped")

    def locate(self, parent: Position, coordinate: Expr) -> Position:
        return ROOT


@dataclass(frozen=True)
class KeyedLevel(KeyLevel):
    """The last level of a keyed view: the position of the entry holding all the access's coordinates
    (-1 when none does), looked up in the table."""

    table: str = ""
    coordinates: tuple[str, ...] = ()

    full = False

    def locate(self, parent: Position, coordinate: Expr) -> Position:
        width = len(self.coordinates)
        return Position(call(names.generated("keyedfind", width), Var(self.table), Var(names.part(self.table, "mask")),
                             *(Var(c) for c in self.coordinates)), may_miss=True)


def view(access: Access, levels: tuple[TensorLevel, ...], table: str) -> tuple[ReadLevel, ...]:
    coordinates = tuple(names.coordinate(index) for index in access.level_indices)
    return (*(KeyLevel() for _ in levels[:-1]), KeyedLevel(table=table, coordinates=coordinates))


def check(access: Access, levels: tuple[TensorLevel, ...], command: str) -> None:
    """Only unsorted COO (a first level that repeats coordinates, then one child per parent) keeps
    each entry's coordinates at one position, which the table maps to."""
    if levels[0].level.properties.unique or not all(level.level.properties.branchless for level in levels[1:]):
        raise ScheduleError(f"{command}: {access} (format {access.tensor.format}) repeats coordinates in no order "
                            f"above its last level, so no level of it can be found alone, and only unsorted COO "
                            f"(u~q, u~qq, ...) is hashed by its whole coordinates")


def build(access: Access, levels: tuple[TensorLevel, ...], table: str, count: Callable[[str], None],
          b: CBuilder) -> None:
    """Before the loops: the table of every entry of the access's tensor, (coordinates) -> position
    (`count` instruments each insertion)."""
    width = len(levels)
    first, last = levels[0].range(ROOT)
    table_var, mask, q = Var(table), Var(names.part(table, "mask")), Var("q")
    table_bytes = cast("size_t", mask + 1) * (width + 1) * SizeOf("int64_t")
    b.comment(f"{access.tensor.name}'s entries by their coordinates, for finding them by hash")
    b.decl("int64_t", mask.name, 15)
    with b.while_(lt(mask + 1, 2 * (last - first))):
        b.assign(mask, 2 * mask + 1)
    b.decl("int64_t *", table, call("malloc", table_bytes))
    b.fail(not_(table_var), ReturnCode.OUT_OF_MEMORY)
    b.expr(call("memset", table_var, Literal(0xff), table_bytes))
    with b.for_(Decl("int64_t", "q", first), lt(q, last), increment(q)):
        count(f"hash {access.tensor.name} by coordinates")
        coordinates = (level.coordinate(q) for level in levels)
        with b.if_(not_(call(names.generated("keyedinsert", width), table_var, mask, q, *coordinates))):
            b.expr(call("free", table_var))
            b.return_(int(ReturnCode.DUPLICATE))


def release(table: str, b: CBuilder) -> None:
    b.expr(call("free", Var(table)))


def helpers(width: int) -> tuple[Function, ...]:
    """Insert and find for tables of `width` coordinates a slot (then the position; -1 marks a free
    slot), probing linearly from a hash of all the coordinates."""
    coordinates = tuple(Var(names.generated("c", k)) for k in range(width))
    params = tuple(Param("int64_t", c.name) for c in coordinates)
    table, mask, slot, q = Var("table"), Var("mask"), Var("slot"), Var("q")
    slotter, finder, inserter = (names.generated(stem, width) for stem in ("keyedslot", "keyedfind", "keyedinsert"))
    slot_of = call(slotter, table, mask, *coordinates)
    return (Function("int64_t *", slotter, (Param("int64_t *", "table"), Param("int64_t", "mask"), *params),
                     _slot_body(width, coordinates), "static inline"),
            Function("int64_t", finder, (Param("const int64_t *", "table"), Param("int64_t", "mask"), *params),
                     Block((Return(call(slotter, cast("int64_t *", table), mask, *coordinates)[width]),)),
                     "static inline"),
            Function("int", inserter, (Param("int64_t *", "table"), Param("int64_t", "mask"),
                                       Param("int64_t", "q"), *params),
                     _insert_body(width, coordinates, slot_of, slot, q), "static inline"))


def _slot_body(width: int, coordinates: tuple[Var, ...]) -> Block:
    table, mask, slot, h = Var("table"), Var("mask"), Var("slot"), Var("h")
    b = CBuilder()
    b.decl("uint64_t", "h", 0)
    for c in coordinates:
        b.assign(h, (h ^ cast("uint64_t", c)) * Literal(0x9E3779B97F4A7C15, "ull"))
    b.decl("int64_t *", "slot", table + cast("size_t", (h ^ (h >> 29)) & cast("uint64_t", mask)) * (width + 1))
    same = and_(*(eq(slot[k], c) for k, c in enumerate(coordinates)))
    with b.while_(and_(ge(slot[0], 0), not_(same))):
        b.assign(slot, width + 1, "+=")
        with b.if_(eq(slot, table + cast("size_t", mask + 1) * (width + 1))):
            b.assign(slot, table)
    b.return_(slot)
    return b.statements()


def _insert_body(width: int, coordinates: tuple[Var, ...], slot_of: Expr, slot: Var, q: Var) -> Block:
    """0 when the coordinates are already there."""
    b = CBuilder()
    b.decl("int64_t *", "slot", slot_of)
    with b.if_(ge(slot[0], 0)):
        b.return_(0)
    for k, c in enumerate(coordinates):
        b.assign(slot[k], c)
    b.assign(slot[width], q)
    b.return_(1)
    return b.statements()
