"""Find-based co-iteration (Zhao et al. §4): a loop walks one operand's stored coordinates (the driver)
and finds each coordinate in the others, instead of stepping all of them in a two-finger merge.

The strategies differ in what the finding costs and what it needs (coiterate/findable.py checks the needs):

    merge   resume where the last find stopped, step by step         O(len(driver) + len(found)) per segment
    gallop  resume, leap 1, 2, 4, ... ahead, then bisect the leap    O(len(driver) · log(len(found) / len(driver)))
    binary  bisect the whole segment for every coordinate             O(len(driver) · log len(found))
    hash    a hash table of the segment, built once per segment       O(len(driver) + len(found))
    bitmap  a dense array, coordinate -> position, built likewise     O(len(driver) + len(found)), dim memory

A bitmap is two arrays: one bit per coordinate saying whether the segment holds it (dim / 8 bytes, which
stays in the first-level cache where the positions do not), and coordinate -> position, read only where
the bit is set. Most lookups miss when the found operand is sparse (SpMSpV's x, 10% dense: 9 in 10), so
they cost one cached load instead of one that misses the cache (uniform 200,000², 2M entries: 7.5 -> 5.0
ms; docs/notes/perf30-spmspv-4.md). The bits decide; the positions are read only behind a set bit, so they are
never cleared: a call allocates them without zeroing (uniform's 1.6 MB), and a segment's change clears bits.

A segment's table is rebuilt only when the segment changes: keyed by its [begin, end) positions (two
segments with the same bounds hold the same entries). The table of an operand's first level, whose one
segment no loop moves (the vector of SpMSpV), is built once before the loops, so every thread of a
parallel loop reads it and none writes it. Tables live for the whole kernel call; they are the kernel's
own, so a loop inside a parallel loop may not use one whose segment moves.

Sums work with every strategy: the loop makes one pass per driver, one driver for each way a
coordinate can enter the result (each bottom point of the lattice); a pass skips the coordinates that
an earlier pass's driver holds, so each coordinate is handled once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from ..cin.ast import Coiteration, Strategy
from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import (Expr, Literal, Prelude, SizeOf, Var, and_, call, cast, decrement, eq,
                             ge, gt, increment, lt, ne, not_, or_, ternary)
from ..errors import ScheduleError
from ..notation.ast import IndexVar
from ..coiterate import lattice as lat
from ..coiterate.findable import NEEDS, findable
from ..runtime.abi import ReturnCode
from .reads import ReadLevel

#: A table's name -> (its strategy, the index whose dimension a bitmap covers, and its finder where the
#: table holds a segment no loop moves, built before the loops).
Tables = dict[str, tuple[Strategy, IndexVar, "Finder | None"]]


@dataclass(frozen=True)
class Roles:
    """Which iterators a loop walks (one pass each, in order) and how it finds the others."""

    drivers: tuple[lat.Iterator, ...]
    strategy: Mapping[lat.Iterator, Strategy]


def roles(coiteration: Coiteration | None, lattice: lat.Lattice, moved_by: Callable[[lat.Iterator], int],
          level_of: Callable[[lat.Iterator], ReadLevel], command: str) -> Roles | None:
    """The drivers and strategies of a loop, or None when it merges: no operand asks to be found, and
    all are sorted alike (a merge of an increasing and a decreasing operand walks one and searches the
    other backwards, resuming: the same steps).

    Each bottom point of the lattice (a way for a coordinate to matter) needs a driver among its
    iterators: one that asks to be merged if there is one; among those, one that repeats coordinates
    (no strategy finds in such a level); then the one whose segment changes most often (`moved_by`: the
    depth of the innermost loop around that moves it), so that the others' segments, and their tables,
    last longest; else the first."""
    iterators = list(dict.fromkeys(it for point in lattice for it in sorted(point.sparse, key=str)))
    coiteration = coiteration or Coiteration()
    strategy = {it: coiteration.strategy(it.access.tensor.name) for it in iterators}
    if Strategy.AUTO in strategy.values():
        raise ScheduleError(f"{command}: `auto` is chosen from the operands of a call; it reached code generation "
                            f"unresolved (compile the schedule and call the kernel, which resolves it)")
    if all(s is Strategy.MERGE for s in strategy.values()) and len({order_of(level_of(it)) for it in iterators}) <= 1:
        return None
    bottoms = [p for p in lattice if not any(q.sparse < p.sparse for q in lattice)]
    drivers: list[lat.Iterator] = []
    for point in bottoms:
        if point.sparse & set(drivers):
            continue
        ranked = sorted(point.sparse, key=lambda it: (strategy[it] is not Strategy.MERGE, level_of(it).unique,
                                                      -moved_by(it), iterators.index(it)))
        drivers.append(ranked[0])
    return Roles(tuple(drivers), strategy)


def check(roles: Roles, lattice: lat.Lattice, level_of: Callable[[lat.Iterator], ReadLevel], written: bool,
          command: str) -> None:
    """Refuse what a pass cannot do: find an operand its strategy does not suit (coiterate/findable.py), or append
    to a result out of order (a second pass, or an unordered driver)."""
    for number, driver in enumerate(roles.drivers):
        order = order_of(level_of(driver))
        for it in sought(roles, lattice, number):
            level = level_of(it)
            if not findable(roles.strategy[it], order_of(level), level.unique, order):
                raise ScheduleError(f"{command}: {it.access} cannot be found by {roles.strategy[it].value} while the "
                                    f"loop walks {driver.access}, whose level {_describe(level_of(driver))}: "
                                    f"{roles.strategy[it].value} needs {NEEDS[roles.strategy[it]]}, and level "
                                    f"{it.level} of {it.access.tensor.name} (format {it.access.tensor.format}) "
                                    f"{_describe(level)}")
    if written and (len(roles.drivers) > 1 or order_of(level_of(roles.drivers[0])) <= 0):
        raise ScheduleError(f"{command}: the loop appends to a sparse result, which takes coordinates in increasing "
                            f"order, but it walks {' then '.join(str(d.access) for d in roles.drivers)}"
                            f"{'' if len(roles.drivers) > 1 else ', not in increasing order'}: write into a dense "
                            f"result, or precompute into a workspace")


def _describe(level: ReadLevel) -> str:
    order = {1: "increasing", -1: "decreasing", 0: "unordered"}[order_of(level)]
    return f"is {order}{'' if level.unique else ' and may repeat a coordinate'}"


def order_of(level: ReadLevel) -> int:
    """+1 when a level's siblings increase, -1 when they decrease, 0 when they have no order."""
    return 1 if level.ordered or level.full else -1 if level.descending else 0


def cases(roles: Roles, lattice: lat.Lattice, number: int) -> lat.Lattice:
    """The points pass `number` distinguishes: none holding an earlier driver (whose pass took them)."""
    return tuple(p for p in lattice if not p.sparse & set(roles.drivers[:number]))


def sought(roles: Roles, lattice: lat.Lattice, number: int) -> list[lat.Iterator]:
    """The iterators pass `number` finds: the earlier drivers (to skip their coordinates), then every
    other iterator of its cases."""
    driver, earlier = roles.drivers[number], list(roles.drivers[:number])
    rest = [it for p in cases(roles, lattice, number) for it in sorted(p.sparse, key=str)]
    return list(dict.fromkeys(it for it in earlier + rest if it != driver))


@dataclass(frozen=True)
class Finder:
    """The C code that finds coordinates of one iterator's current segment, for one pass.

    `position`/`end` name the iterator's position variable and segment end (declared by the loop);
    `begin` is its segment's first position; `ident` names what this finder declares; `fixed` is the
    segment's [begin, end) where no loop moves it (the operand's first level), else None."""

    strategy: Strategy
    level: ReadLevel
    position: str
    begin: Expr
    end: str
    ident: str
    index: IndexVar  # the loop's
    driver_order: int
    count: Callable[[str, CBuilder], None]  # emits a count of `what` into a builder (instrumented kernels)
    label: str
    fixed: tuple[Expr, Expr] | None = None

    @property
    def table(self) -> str:
        return names.part(self.ident, self.strategy.value)

    def _own(self, part: str) -> Var:
        """A variable this finder declares."""
        return Var(names.part(self.ident, part))

    def _table(self, part: str) -> Var:
        """The table, or one of its bookkeeping variables."""
        return Var(names.part(self.table, part) if part else self.table)

    def prepare(self, tables: Tables, parallel: bool, b: CBuilder) -> None:
        """Before the pass: rewind a search, or make the segment's table current (that of a segment no loop
        moves is made so before the loops: `build_fixed`)."""
        if self.strategy in (Strategy.HASH, Strategy.BITMAP) and self.fixed is not None:
            tables[self.table] = (self.strategy, self.index, self)
            return
        lo = b.decl("const int64_t", self._own("lo").name, self.begin)
        if self.strategy in (Strategy.MERGE, Strategy.GALLOP):
            b.assign(Var(self.position), lo if self._forwards else Var(self.end) - 1)
        elif self.strategy in (Strategy.HASH, Strategy.BITMAP):
            if parallel:
                raise ScheduleError(f"{self.label}: a {self.strategy.value} table is built once for the kernel, and "
                                    f"a parallel loop around would share it between threads: use gallop or binary")
            tables[self.table] = (self.strategy, self.index, None)
            self._build(lo, Var(self.end), b)

    @property
    def _forwards(self) -> bool:
        """Whether a resuming search moves up the positions (the level's order meets the driver's)."""
        return order_of(self.level) * self.driver_order > 0

    def _before(self, coordinate: Expr, index: Expr) -> Expr:
        """`coordinate` comes before `index` in the order the driver visits coordinates."""
        return lt(coordinate, index) if self.driver_order > 0 else gt(coordinate, index)

    def _inside(self, q: Expr) -> Expr:
        return lt(q, Var(self.end)) if self._forwards else ge(q, self._own("lo"))

    def _ahead(self, q: Expr, by) -> Expr:
        """`by` positions on from `q`, in the direction the search moves."""
        return q + by if self._forwards else q - by

    def find(self, index: str, b: CBuilder) -> str:
        """Declare and return (by name) a variable holding the position of coordinate `index` (-1 when
        absent)."""
        index, found, crd = Var(index), self._own("at").name, self.level.coordinate
        if self.strategy not in (Strategy.HASH, Strategy.BITMAP):
            self.level.searched(self.label)
        q = Var(self.position)
        if self.strategy is Strategy.MERGE:
            with b.while_(and_(self._inside(q), self._before(crd(q), index))):
                self.count("scan", b)
                b.expr(increment(q) if self._forwards else decrement(q))
        elif self.strategy is Strategy.GALLOP:
            self._gallop(index, b)
        elif self.strategy is Strategy.BINARY:
            self._bisect(index, found, b)
            return found
        elif self.strategy is Strategy.BITMAP:
            b.decl("const int64_t", found, ternary(_held(Var(self.table), index), Var(self.table)[index], -1))
            return found
        else:
            self._probe(index, found, b)
            return found
        b.decl("const int64_t", found, ternary(and_(self._inside(q), eq(crd(q), index)), q, -1))
        return found

    def _bisect(self, index: Expr, found: str, b: CBuilder) -> None:
        """Bisect the whole segment for the first position not before `index`."""
        crd, end = self.level.coordinate, Var(self.end)
        sooner = lt if order_of(self.level) > 0 else gt
        first = b.decl("int64_t", self._own("a").name, self._own("lo"))
        past = b.decl("int64_t", self._own("z").name, end)
        with b.while_(lt(first, past)):
            self.count("bisect", b)
            middle = b.decl("const int64_t", self._own("m").name, first + (past - first) // 2)
            with b.if_(sooner(crd(middle), index)):
                b.assign(first, middle + 1)
            with b.else_():
                b.assign(past, middle)
        b.decl("const int64_t", found, ternary(and_(lt(first, end), eq(crd(first), index)), first, -1))

    def _gallop(self, index: Expr, b: CBuilder) -> None:
        """Leap 1, 2, 4, ... positions while they still come before `index`, then bisect the last leap."""
        q, crd = Var(self.position), self.level.coordinate
        with b.if_(and_(self._inside(q), self._before(crd(q), index))):
            last = b.decl("int64_t", self._own("last").name, q)
            leap = b.decl("int64_t", self._own("leap").name, 1)
            probe = b.decl("int64_t", self._own("probe").name, self._ahead(q, 1))
            with b.while_(and_(self._inside(probe), self._before(crd(probe), index))):
                self.count("leap", b)
                b.assign(last, probe)
                b.assign(leap, 1, "<<=")
                b.assign(probe, self._ahead(last, leap))
            with b.if_(not_(self._inside(probe))):
                b.assign(probe, Var(self.end) if self._forwards else self._own("lo") - 1)
            with b.while_(or_(gt(probe - last, 1), gt(last - probe, 1))):
                self.count("bisect", b)
                middle = b.decl("const int64_t", self._own("m").name, last + (probe - last) // 2)
                with b.if_(self._before(crd(middle), index)):
                    b.assign(last, middle)
                with b.else_():
                    b.assign(probe, middle)
            b.assign(q, probe)

    # --- tables -----------------------------------------------------------------------------------------

    def build_fixed(self, b: CBuilder) -> None:
        """Make the table hold the segment no loop moves, before the loops."""
        with b.block():
            self._build(b.decl("const int64_t", self._own("lo").name, self.fixed[0]),
                        b.decl("const int64_t", self._own("end").name, self.fixed[1]), b)

    def _build(self, lo: Var, end: Expr, b: CBuilder) -> None:
        """Make the table hold the segment [lo, end), unless it already does."""
        table, q = Var(self.table), Var("q")
        if self.strategy is Strategy.BITMAP:
            self.level.indexed_by("a bitmap")
        with b.if_(or_(ne(lo, self._table("lo")), ne(end, self._table("hi")))):
            if self.strategy is Strategy.BITMAP:  # clear the segment it held
                with b.for_range(q.name, self._table("lo"), self._table("hi")):
                    self._skip_vacant(q, b)
                    b.assign(_word(table, self.level.coordinate(q)), 0)
            else:
                self._size_table(lo, end, b)
            with b.for_range(q.name, lo, end):
                self._skip_vacant(q, b)
                self.count("build", b)
                if self.strategy is Strategy.BITMAP:
                    b.assign(table[self.level.coordinate(q)], q)
                    b.assign(_word(table, self.level.coordinate(q)), _bit(self.level.coordinate(q)), "|=")
                else:
                    self._insert(q, b)
            b.assign(self._table("lo"), lo)
            b.assign(self._table("hi"), end)

    def _skip_vacant(self, q: Var, b: CBuilder) -> None:
        vacant = self.level.vacant(q)
        if vacant is not None:
            with b.if_(vacant):
                b.continue_()

    def _size_table(self, lo: Var, end: Expr, b: CBuilder) -> None:
        """A hash table of twice the segment's length (a power of two), emptied."""
        table, capacity = Var(self.table), self._table("capacity")
        length = b.decl("const int64_t", "length", end - lo)
        slots = b.decl("int64_t", "slots", 16)
        with b.while_(lt(slots, 2 * length)):
            b.assign(slots, 1, "<<=")
        table_bytes = cast("size_t", slots) * 2 * SizeOf("int64_t")
        with b.if_(gt(slots, capacity)):
            b.expr(call("free", table))
            b.assign(table, call("malloc", table_bytes))
            b.assign(capacity, ternary(table, slots, 0))
            b.fail(not_(table), ReturnCode.OUT_OF_MEMORY)
        b.assign(self._table("mask"), slots - 1)
        b.expr(call("memset", table, Literal(0xff), table_bytes))

    def _insert(self, q: Var, b: CBuilder) -> None:
        """Position `q`'s coordinate into the hash table: probe linearly from its home slot."""
        table, mask, crd = Var(self.table), self._table("mask"), self.level.coordinate(q)
        slot = b.decl("uint64_t", "slot", call("hash64", crd) & mask)
        with b.while_(ge(table[2 * slot], 0)):
            b.assign(slot, (slot + 1) & mask)
        b.assign(table[2 * slot], crd)
        b.assign(table[2 * slot + 1], q)

    def _probe(self, index: Expr, found: str, b: CBuilder) -> None:
        table, mask = Var(self.table), self._table("mask")
        at = b.decl("int64_t", found, -1)
        slot = b.decl("uint64_t", self._own("slot").name, call("hash64", index) & mask)
        with b.while_(ge(table[2 * slot], 0)):
            self.count("probe", b)
            with b.if_(eq(table[2 * slot], index)):
                b.assign(at, table[2 * slot + 1])
                b.break_()
            b.assign(slot, (slot + 1) & mask)


#: hash64, the mix of the hash strategy's tables.
HASH_HELPER = Prelude("hash64")


def declare_tables(tables: Tables, b: CBuilder) -> None:
    """The kernel's tables before its loops: empty (no segment held), or holding the segment no loop moves."""
    for name, (strategy, index, fixed) in tables.items():
        if strategy is Strategy.BITMAP:
            # one allocation: the positions (never cleared: read only where the bit is set), then the bits (one
            # word each 64 coordinates), cleared
            extent = cast("size_t", Var(names.extent(index)))
            words = extent // 64 + 1
            table = b.decl("int64_t *restrict", name, call("malloc", (extent + 1 + words) * SizeOf("int64_t")))
            b.fail(not_(table), ReturnCode.OUT_OF_MEMORY)
            bits = b.decl("uint64_t *restrict", _bits(name).name, cast("uint64_t *", table + extent + 1))
            b.expr(call("memset", bits, 0, words * SizeOf("uint64_t")))
        else:
            b.decl("int64_t *", name, Var("NULL"))
            b.decl("int64_t", names.part(name, "capacity"), 0)
            b.decl("int64_t", names.part(name, "mask"), 0)
        b.comment("the segment it holds: none yet")
        b.decl("int64_t", names.part(name, "lo"), -1)
        b.decl("int64_t", names.part(name, "hi"), -1)
        if fixed is not None:
            fixed.build_fixed(b)


def release_tables(tables: Tables, b: CBuilder) -> None:
    for name in tables:
        b.expr(call("free", Var(name)))


def _bits(table: str) -> Var:
    """A bitmap's presence bits, one per coordinate."""
    return Var(names.part(table, "bits"))


def _word(table: Var, coordinate: Expr) -> Expr:
    """The word of a bitmap's presence bits that holds `coordinate`'s."""
    return _bits(table.name)[coordinate >> 6]


def _bit(coordinate: Expr) -> Expr:
    return cast("uint64_t", 1) << (coordinate & 63)


def _held(table: Var, coordinate: Expr) -> Expr:
    """Whether a bitmap holds `coordinate` (its presence bit is set)."""
    return ne(_word(table, coordinate) & _bit(coordinate), 0)
