"""Find-based co-iteration (Zhao et al. §4): a loop walks one operand's stored coordinates (the driver)
and finds each coordinate in the others, instead of stepping all of them in a two-finger merge.

The strategies differ in what the finding costs and what it needs (coiterate/findable.py checks the needs):

    merge   resume where the last find stopped, step by step         O(len(driver) + len(found)) per segment
    gallop  resume, leap 1, 2, 4, ... ahead, then bisect the leap    O(len(driver) · log(len(found) / len(driver)))
    binary  bisect the whole segment for every coordinate             O(len(driver) · log len(found))
    hash    a hash table of the segment, built once per segment       O(len(driver) + len(found))
    bitmap  a dense array, coordinate -> position, built likewise     O(len(driver) + len(found)), dim memory

A segment's table is rebuilt only when the segment changes: keyed by its [begin, end) positions (two
segments with the same bounds hold the same entries), so a vector found inside every row of a matrix
(SpMSpV) is hashed once per call. Tables live for the whole kernel call; they are the kernel's own, so
a loop inside a parallel loop may not use them.

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
from ..codegen.c_ast import Prelude
from ..errors import ScheduleError
from ..notation.ast import IndexVar
from . import lattice as lat
from ..coiterate.findable import NEEDS, findable
from ..runtime.abi import ReturnCode
from .reads import ReadLevel

#: A table's name -> (its strategy, the index whose dimension a bitmap covers).
Tables = dict[str, tuple[Strategy, IndexVar]]


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

    `position`/`end` are the iterator's position variable and segment end (declared by the loop);
    `begin` is its segment's first position as a C expression; `ident` names what this finder declares."""

    strategy: Strategy
    level: ReadLevel
    position: str
    begin: str
    end: str
    ident: str
    index: IndexVar  # the loop's
    driver_order: int
    count: Callable[[str], None]
    label: str

    @property
    def table(self) -> str:
        return f"{self.ident}_{self.strategy.value}"

    def prepare(self, tables: Tables, parallel: bool, b: CBuilder) -> None:
        """Before the pass: rewind a search, or make the segment's table current."""
        lo = f"{self.ident}_lo"
        b.bridge_line(f"const int64_t {lo} = {self.begin};")
        if self.strategy in (Strategy.MERGE, Strategy.GALLOP):
            b.bridge_line(f"{self.position} = {lo if self._forwards else f'{self.end} - 1'};")
        elif self.strategy in (Strategy.HASH, Strategy.BITMAP):
            if parallel:
                raise ScheduleError(f"{self.label}: a {self.strategy.value} table is built once for the kernel, and "
                                    f"a parallel loop around would share it between threads: use gallop or binary")
            tables[self.table] = (self.strategy, self.index)
            self._build(lo, b)

    @property
    def _forwards(self) -> bool:
        """Whether a resuming search moves up the positions (the level's order meets the driver's)."""
        return order_of(self.level) * self.driver_order > 0

    def _before(self, coordinate: str, index: str) -> str:
        """`coordinate` comes before `index` in the order the driver visits coordinates."""
        return f"{coordinate} < {index}" if self.driver_order > 0 else f"{coordinate} > {index}"

    def _inside(self, q: str) -> str:
        return f"{q} < {self.end}" if self._forwards else f"{q} >= {self.ident}_lo"

    def find(self, index: str, b: CBuilder) -> str:
        """Declare and return a variable holding the position of coordinate `index` (-1 when absent)."""
        found, crd = f"{self.ident}_at", self.level.coordinate
        q = self.position
        if self.strategy is Strategy.MERGE:
            with b.bridge_block(f"while ({self._inside(q)} && {self._before(crd(q), index)})"):
                self.count("scan")
                b.bridge_line(f"{q}{'++' if self._forwards else '--'};")
        elif self.strategy is Strategy.GALLOP:
            self._gallop(index, b)
        elif self.strategy is Strategy.BINARY:
            first, past, middle = f"{self.ident}_a", f"{self.ident}_z", f"{self.ident}_m"
            sooner = "<" if order_of(self.level) > 0 else ">"
            b.bridge_line(f"int64_t {first} = {self.ident}_lo, {past} = {self.end};")
            with b.bridge_block(f"while ({first} < {past})"):
                self.count("bisect")
                b.bridge_line(f"const int64_t {middle} = {first} + ({past} - {first}) / 2;")
                b.bridge_line(f"if ({crd(middle)} {sooner} {index}) {first} = {middle} + 1; else {past} = {middle};")
            b.bridge_line(f"const int64_t {found} = {first} < {self.end} && {crd(first)} == {index} ? {first} : -1;")
            return found
        elif self.strategy is Strategy.BITMAP:
            b.bridge_line(f"const int64_t {found} = {self.table}[{index}] - 1;")
            return found
        else:
            self._probe(index, found, b)
            return found
        b.bridge_line(f"const int64_t {found} = {self._inside(q)} && {crd(q)} == {index} ? {q} : -1;")
        return found

    def _gallop(self, index: str, b: CBuilder) -> None:
        """Leap 1, 2, 4, ... positions while they still come before `index`, then bisect the last leap."""
        q, crd, step = self.position, self.level.coordinate, "+" if self._forwards else "-"
        last, probe, leap, middle = (f"{self.ident}_{n}" for n in ("last", "probe", "leap", "m"))
        with b.bridge_block(f"if ({self._inside(q)} && {self._before(crd(q), index)})"):
            b.bridge_line(f"int64_t {last} = {q}, {leap} = 1, {probe} = {q} {step} 1;")
            with b.bridge_block(f"while ({self._inside(probe)} && {self._before(crd(probe), index)})"):
                self.count("leap")
                b.bridge_line(f"{last} = {probe}; {leap} <<= 1; {probe} = {last} {step} {leap};")
            bound = self.end if self._forwards else f"{self.ident}_lo - 1"
            b.bridge_line(f"if (!({self._inside(probe)})) {probe} = {bound};")
            with b.bridge_block(f"while ({probe} - {last} > 1 || {last} - {probe} > 1)"):
                self.count("bisect")
                b.bridge_line(f"const int64_t {middle} = {last} + ({probe} - {last}) / 2;")
                b.bridge_line(f"if ({self._before(crd(middle), index)}) {last} = {middle}; else {probe} = {middle};")
            b.bridge_line(f"{q} = {probe};")

    # --- tables -----------------------------------------------------------------------------------------

    def _build(self, lo: str, b: CBuilder) -> None:
        """Make the table hold the segment [lo, end), unless it already does."""
        table, crd = self.table, self.level.coordinate
        with b.bridge_block(f"if ({lo} != {table}_lo || {self.end} != {table}_hi)"):
            vacant = lambda q: f"if ({self.level.vacant(q)}) continue;" if self.level.vacant(q) else None
            if self.strategy is Strategy.BITMAP:  # clear the segment it held
                with b.bridge_block(f"for (int64_t q = {table}_lo; q < {table}_hi; q++)"):
                    if vacant("q"):
                        b.bridge_line(vacant("q"))
                    b.bridge_line(f"{table}[{crd('q')}] = 0;")
            else:
                b.bridge_line(f"const int64_t length = {self.end} - {lo};")
                b.bridge_line("int64_t slots = 16; while (slots < 2 * length) slots <<= 1;")
                with b.bridge_block(f"if (slots > {table}_capacity)"):
                    b.bridge_line(f"free({table});")
                    b.bridge_line(f"{table} = malloc((size_t)slots * 2 * sizeof(int64_t));")
                    b.bridge_line(f"{table}_capacity = {table} ? slots : 0;")
                    b.fail(f"!{table}", ReturnCode.OUT_OF_MEMORY)
                b.bridge_line(f"{table}_mask = slots - 1;")
                b.bridge_line(f"memset({table}, 0xff, (size_t)slots * 2 * sizeof(int64_t));")
            with b.bridge_block(f"for (int64_t q = {lo}; q < {self.end}; q++)"):
                if vacant("q"):
                    b.bridge_line(vacant("q"))
                self.count("build")
                if self.strategy is Strategy.BITMAP:
                    b.bridge_line(f"{table}[{crd('q')}] = q + 1;")
                else:
                    b.bridge_line(f"uint64_t slot = hash64({crd('q')}) & {table}_mask;")
                    b.bridge_line(f"while ({table}[2 * slot] >= 0) slot = (slot + 1) & {table}_mask;")
                    b.bridge_line(f"{table}[2 * slot] = {crd('q')}; {table}[2 * slot + 1] = q;")
            b.bridge_line(f"{table}_lo = {lo}; {table}_hi = {self.end};")

    def _probe(self, index: str, found: str, b: CBuilder) -> None:
        table, slot = self.table, f"{self.ident}_slot"
        b.bridge_line(f"int64_t {found} = -1;")
        b.bridge_line(f"uint64_t {slot} = hash64({index}) & {table}_mask;")
        with b.bridge_block(f"while ({table}[2 * {slot}] >= 0)"):
            self.count("probe")
            b.bridge_line(f"if ({table}[2 * {slot}] == {index}) {{ {found} = {table}[2 * {slot} + 1]; break; }}")
            b.bridge_line(f"{slot} = ({slot} + 1) & {table}_mask;")


#: hash64, the mix of the hash strategy's tables.
HASH_HELPER = Prelude("hash64")


def declare_tables(tables: Tables, b: CBuilder) -> None:
    """The kernel's tables, empty (no segment held), before its loops."""
    for name, (strategy, index) in tables.items():
        if strategy is Strategy.BITMAP:
            b.bridge_line(f"int64_t *restrict {name} = calloc((size_t){names.extent(index)} + 1, sizeof(int64_t));")
            b.fail(f"!{name}", ReturnCode.OUT_OF_MEMORY)
        else:
            b.bridge_line(f"int64_t *{name} = NULL, {name}_capacity = 0, {name}_mask = 0;")
        b.bridge_line(f"int64_t {name}_lo = -1, {name}_hi = -1;  /* the segment it holds: none yet */")


def release_tables(tables: Tables, b: CBuilder) -> None:
    for name in tables:
        b.bridge_line(f"free({name});")
