"""Temporaries of `where` (LOWERING.md §5): written by the producer, read by the consumer, reset after.

  ListWorkspace    one index: w[N], a generation mark per coordinate and the list of touched coordinates.
                   The consumer steps the ordered list; the reset is a new generation, so a row costs its
                   entries. One the consumer locates keeps untouched values zero instead (the reset
                   clears the touched ones), so a located read is one load, not a mark check and a load.
  DenseWorkspace   any order: a dense array, located, cleared after the consumer. Also one index where the
                   consumer locates it in a loop over the whole dimension (a row workspace under
                   `maximum(sum(...), 0)`): the sweep then costs what the consumer's loop costs anyway.
  ScalarWorkspace  no index: one value on the stack (a register), cleared after the consumer.
  HashedWorkspace  any order: open addressing on the linearised coordinates (so a hypersparse workspace
                   costs its entries); the consumer steps the entries sorted by coordinates.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import (CType, Expr, Initializer, Literal, Prelude, SizeOf, Var, address_of, and_, as_expr, call,
                             cast, eq, gt, increment, lt, not_, or_, ternary)
from ..errors import ScheduleError
from ..format.dense import Dense
from ..runtime.abi import ReturnCode
from .reads import Position, ReadLevel, TensorLevel
from .writes import Combine, Target, block_size, combine, free_arrays, located, start_value


class Workspace(Target):
    name: str

    def _ident(self, part: str) -> str:
        """The C name of one of the workspace's arrays or counters."""
        return names.user(self.name, part)

    def _var(self, part: str) -> Var:
        return Var(self._ident(part))

    @property
    def count(self) -> str:
        """The C variable holding how many entries the producer made."""
        return self._ident("count")

    @abstractmethod
    def read_level(self, level: int) -> ReadLevel:
        """How the consumer reads level `level`."""

    def helpers(self) -> tuple[Prelude, ...]:
        """C definitions this workspace's code calls, placed before the kernel."""
        return ()

    def prepare_read(self, b: CBuilder, ordered: bool = True) -> None:
        """Make the produced entries readable (in coordinate order unless `ordered` is False)."""

    def reset(self, b: CBuilder, values: bool = True) -> None:
        """Empty the workspace for the next producer (its values too, unless only the pattern was made)."""

    def release(self, b: CBuilder) -> None: ...


@dataclass(frozen=True)
class DenseWorkspace(Workspace):
    name: str
    dims: tuple[str, ...]
    value_type: CType
    start: object = 0  # the value each entry starts at: the identity of the reduction producing it

    def _size(self) -> Expr:
        return cast("size_t", block_size(self.dims))

    def allocate(self, b: CBuilder) -> None:
        if self.start == 0:
            vals = b.decl(self.value_type.pointer(), names.vals(self.name),
                          call("calloc", self._size(), SizeOf(self.value_type)))
            b.fail(not_(vals), ReturnCode.OUT_OF_MEMORY)
            return
        vals = b.decl(self.value_type.pointer(), names.vals(self.name),
                      call("malloc", self._size() * SizeOf(self.value_type)))
        b.fail(not_(vals), ReturnCode.OUT_OF_MEMORY)
        self.reset(b)

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        return located(Dense(), parent, coordinate, self.dims[level])

    def read_level(self, level: int) -> ReadLevel:
        return TensorLevel(Dense(), {}, self.dims[level])

    def reset(self, b: CBuilder, values: bool = True) -> None:
        if values and self.start == 0:
            b.expr(call("memset", Var(names.vals(self.name)), 0, self._size() * SizeOf(self.value_type)))
        elif values:  # memset writes bytes: +inf needs a loop
            with b.for_range("q", 0, self._size()):
                b.assign(Var(names.vals(self.name))[Var("q")], start_value(self.start, self.value_type))

    def release(self, b: CBuilder) -> None:
        free_arrays(b, names.vals(self.name))


@dataclass(frozen=True)
class ScalarWorkspace(DenseWorkspace):
    """A temporary with no index (a scoped sum's register): a one-element array on the stack, which the C
    compiler keeps in a register; private to each thread of a parallel region it is declared in."""

    def allocate(self, b: CBuilder) -> None:
        start = Literal(0) if self.start == 0 else start_value(self.start, self.value_type)
        b.decl(self.value_type, names.vals(self.name), Initializer((start,)), length=1)

    def reset(self, b: CBuilder, values: bool = True) -> None:
        if values:
            b.assign(Var(names.vals(self.name))[0], 0 if self.start == 0 else start_value(self.start, self.value_type))

    def release(self, b: CBuilder) -> None:
        pass


@dataclass(frozen=True)
class _ListLevel(ReadLevel):
    workspace: "ListWorkspace"
    full = False
    ordered = True
    unique = True

    def range(self, parent: Position) -> tuple[Expr, Expr]:
        return Literal(0), Var(self.workspace.count)

    def coordinate(self, q: Expr) -> Expr:
        return Var(self.workspace.list)[q]

    def stepped(self, q: Expr, coordinate: Expr) -> Expr:
        return coordinate

    def locate(self, parent: Position, coordinate: Expr) -> Position:
        """Values at coordinates this producer did not touch are stale, and read as missing, unless the
        workspace keeps them zero."""
        if self.workspace.located:
            return Position(coordinate)
        return Position(ternary(self.workspace.touched(coordinate), coordinate, -1), may_miss=True)


@dataclass(frozen=True)
class ListWorkspace(Workspace):
    """w[N] with the list of touched coordinates and a generation mark per coordinate: `mark[j] == gen`
    when this producer touched j. The first store into a coordinate overwrites what an earlier producer
    left there, so the reset is `gen++` and costs nothing, and nothing is ever cleared. Before the
    consumer steps the list it is put in order (ORDER_HELPER)."""

    flag_free = False  # a store marks its coordinate touched
    bounds = True
    #: Bytes per coordinate besides the value: the mark, the list, the sort's spare buffer and its bitmaps.
    BYTES_PER_COORDINATE = 25
    name: str
    dim: str
    value_type: CType
    located: bool = False  # the consumer locates: untouched values are kept at `start`
    start: object = 0  # the value an untouched entry holds (read only where the consumer locates)

    @property
    def list(self) -> str:
        return self._ident("list")

    def touched(self, coordinate: Expr) -> Expr:
        return eq(self._var("mark")[coordinate], self._var("gen"))

    def allocate(self, b: CBuilder) -> None:
        vt, dim = self.value_type, cast("size_t", as_expr(self.dim))
        vals_size = (call("malloc", dim * SizeOf(vt) + 1) if not self.located
                     else call("calloc", dim + 1, SizeOf(vt)) if self.start == 0
                     else call("malloc", (dim + 1) * SizeOf(vt)))
        arrays = (b.decl(vt.pointer(), names.vals(self.name), vals_size),
                  b.decl("int64_t *", self._ident("mark"), call("calloc", dim + 1, SizeOf("int64_t"))),
                  b.decl("int64_t *", self.list, call("malloc", (dim + 1) * SizeOf("int64_t"))),
                  b.decl("int64_t *", self._ident("spare"), call("malloc", (dim + 1) * SizeOf("int64_t"))),
                  b.decl("uint64_t *", self._ident("bits"),
                         call("calloc", (dim >> 6) + (dim >> 12) + 2, SizeOf("uint64_t"))))
        b.decl("int64_t", self.count, 0)
        b.decl("int64_t", self._ident("gen"), 1)
        b.fail(or_(*(not_(array) for array in arrays)), ReturnCode.OUT_OF_MEMORY)
        if self.located and self.start != 0:
            with b.for_range("q", 0, as_expr(self.dim)):
                b.assign(arrays[0][Var("q")], start_value(self.start, vt))

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        return Position(coordinate)

    def _first_touch(self, coordinate: Expr, b: CBuilder) -> None:
        b.assign(self._var("mark")[coordinate], self._var("gen"))
        b.assign(Var(self.list)[increment(Var(self.count))], coordinate)

    def count_at_most(self, amount, b: CBuilder) -> None:
        """The count alone, above the list's length: the bound phase's consumer reads nothing else."""
        b.assign(Var(self.count), amount, "+=")

    def mark(self, position: Position, b: CBuilder) -> None:
        with b.if_(not_(self.touched(position.begin))):
            self._first_touch(position.begin, b)

    def store(self, position: Position, op: Combine, value, b: CBuilder) -> None:
        j, vals = position.begin, Var(names.vals(self.name))
        with b.block():
            v = b.decl(self.value_type.constant(), self._ident("v"), value)
            with b.if_(not_(self.touched(j))):
                self._first_touch(j, b)
                b.assign(vals[j], v)
            with b.else_():
                combine(b, vals[j], v, op)

    def read_level(self, level: int) -> ReadLevel:
        return _ListLevel(self)

    def prepare_read(self, b: CBuilder, ordered: bool = True) -> None:
        if ordered:
            b.expr(call("ordertouched", Var(self.list), Var(self.count), self._var("spare"), self._var("bits"),
                        as_expr(self.dim)))

    def reset(self, b: CBuilder, values: bool = True) -> None:
        if self.located and values:
            with b.for_range("q", 0, Var(self.count)):
                b.assign(Var(names.vals(self.name))[Var(self.list)[Var("q")]],
                         0 if self.start == 0 else start_value(self.start, self.value_type))
        b.expr(increment(self._var("gen")))
        b.assign(Var(self.count), 0)

    def release(self, b: CBuilder) -> None:
        free_arrays(b, names.vals(self.name), self._ident("mark"), self.list, self._ident("spare"), self._ident("bits"))


#: sortcoordinates and ordertouched, which put a workspace's touched coordinates in order.
ORDER_HELPER = Prelude("order_touched")


@dataclass(frozen=True)
class _SortedLevel(ReadLevel):
    """Level `level` of a hashed workspace's entries sorted by linearised coordinates: a run of equal
    leading coordinates is one segment, as below a non-unique level."""

    workspace: "HashedWorkspace"
    level: int
    full = False
    ordered = True

    @property
    def unique(self) -> bool:
        return self.level == len(self.workspace.dims) - 1

    def range(self, parent: Position) -> tuple[Expr, Expr]:
        return (Literal(0), Var(self.workspace.count)) if self.level == 0 else (parent.begin, parent.last)

    def coordinate(self, q: Expr) -> Expr:
        stride = block_size(self.workspace.dims[self.level + 1:])
        return Var(self.workspace.keys)[q] // stride % as_expr(self.workspace.dims[self.level])

    def locate(self, parent: Position, coordinate: Expr) -> Position:
        raise ScheduleError(f"Expected the hashed workspace {self.workspace.name} to be stepped by its consumer, "
                            f"but it is located: drop the @locate protocol")


@dataclass(frozen=True)
class HashedWorkspace(Workspace):
    """Keys are the coordinates linearised in level order; `table` holds entries of a key (-1: empty)
    beside its value, so that a probe touches one cache line, and `slots` lists the occupied slots in
    insertion order. Before the consumer runs, the entries are copied out sorted into `keys` / `vals`,
    which its levels step through."""

    flag_free = False
    name: str
    dims: tuple[str, ...]
    value_type: CType

    @property
    def keys(self) -> str:
        return self._ident("keys")

    def allocate(self, b: CBuilder) -> None:
        entry = CType(self._ident("entry"))
        b.decl("int64_t", self._ident("cap"), 16)
        b.decl("int64_t", self.count, 0)
        b.decl("int64_t", self._ident("sorted_cap"), 0)
        table = b.decl(entry.pointer(), self._ident("table"), call("malloc", 16 * SizeOf(entry)))
        slots = b.decl("int64_t *", self._ident("slots"), call("malloc", 16 * SizeOf("int64_t")))
        b.decl("int64_t *", self.keys, Var("NULL"))
        b.decl(self.value_type.pointer(), names.vals(self.name), Var("NULL"))
        b.fail(or_(not_(table), not_(slots)), ReturnCode.OUT_OF_MEMORY)
        with b.for_range("s", 0, 16):
            b.assign(table[Var("s")].field("key"), -1)

    def helpers(self) -> tuple[Prelude, ...]:
        t = self._ident
        return (Prelude("hashed_workspace", (("entry", t("entry")), ("probe", t("probe")), ("insert", t("insert")),
                                             ("value_type", self.value_type))),)

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        return located(Dense(), parent, coordinate, self.dims[level])

    def _insert(self, position: Position, b: CBuilder) -> Var:
        """The slot of the position's key, inserted when new."""
        slot = b.decl("int64_t", "slot", call(self._ident("insert"), address_of(self._var("table")),
                                               address_of(self._var("slots")), address_of(self._var("cap")),
                                               address_of(Var(self.count)), position.begin))
        b.fail(lt(slot, 0), ReturnCode.OUT_OF_MEMORY)
        return slot

    def mark(self, position: Position, b: CBuilder) -> None:
        with b.block():
            self._insert(position, b)

    def store(self, position: Position, op: Combine, value, b: CBuilder) -> None:
        with b.block():
            slot = self._insert(position, b)
            combine(b, self._var("table")[slot].field("val"), value, op)

    def read_level(self, level: int) -> ReadLevel:
        return _SortedLevel(self, level)

    def prepare_read(self, b: CBuilder, ordered: bool = True) -> None:
        """The keys sorted (sortcoordinates, the second half of `keys` its spare), then each one's value
        found in the table again: one probe per entry, as the gather of an entry sort's values would be."""
        keys, vals, count, q = Var(self.keys), Var(names.vals(self.name)), Var(self.count), Var("q")
        table, sorted_cap = self._var("table"), self._var("sorted_cap")
        with b.if_(gt(count, sorted_cap)):
            free_arrays(b, self.keys, vals.name)
            b.assign(keys, call("malloc", cast("size_t", 4 * count) * SizeOf("int64_t")))
            b.assign(vals, call("malloc", cast("size_t", 2 * count) * SizeOf(self.value_type)))
            b.assign(sorted_cap, ternary(and_(keys, vals), 2 * count, 0))
            b.fail(or_(not_(keys), not_(vals)), ReturnCode.OUT_OF_MEMORY)
        with b.for_range("q", 0, count):
            b.assign(keys[q], table[self._var("slots")[q]].field("key"))
        b.expr(call("sortcoordinates", keys, count, keys + count))
        with b.for_range("q", 0, count):
            b.assign(vals[q], table[call(self._ident("probe"), table, self._var("cap"), keys[q])].field("val"))

    def reset(self, b: CBuilder, values: bool = True) -> None:
        """Every slot this producer filled is emptied (its value zeroed when it is filled again)."""
        with b.for_range("q", 0, Var(self.count)):
            b.assign(self._var("table")[self._var("slots")[Var("q")]].field("key"), -1)
        b.assign(Var(self.count), 0)

    def release(self, b: CBuilder) -> None:
        free_arrays(b, *(self._ident(part) for part in ("table", "slots", "keys")), names.vals(self.name))
