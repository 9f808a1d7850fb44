"""Temporaries of `where` (LOWERING.md §5): written by the producer, read by the consumer, reset after.

  ListWorkspace    one index: w[N], a generation mark per coordinate and the list of touched coordinates.
                   The consumer steps the ordered list; the reset is a new generation, so a row costs its
                   entries. One the consumer locates keeps untouched values zero instead (the reset
                   clears the touched ones), so a located read is one load, not a mark check and a load.
  DenseWorkspace   any order: a dense array, located, cleared after the consumer.
  ScalarWorkspace  no index: one value on the stack (a register), cleared after the consumer.
  HashedWorkspace  any order: open addressing on the linearised coordinates (so a hypersparse workspace
                   costs its entries); the consumer steps the entries sorted by coordinates.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import Prelude
from ..errors import ScheduleError
from ..format.dense import Dense
from ..runtime.abi import ReturnCode
from .reads import Position, ReadLevel, TensorLevel
from .writes import Target


class Workspace(Target):
    name: str

    def _ident(self, part: str) -> str:
        """The C name of one of the workspace's arrays or counters."""
        return names.user(self.name, part)

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
    value_type: str

    def _size(self) -> str:
        return " * ".join(("1", *self.dims))

    def allocate(self, b: CBuilder) -> None:
        b.bridge_line(f"{self.value_type} *{names.vals(self.name)} = calloc((size_t)({self._size()}), "
               f"sizeof({self.value_type}));")
        b.fail(f"!{names.vals(self.name)}", ReturnCode.OUT_OF_MEMORY)

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        return Position(Dense().locate({}, parent.begin, coordinate, self.dims[level]))

    def read_level(self, level: int) -> ReadLevel:
        return TensorLevel(Dense(), {}, self.dims[level])

    def reset(self, b: CBuilder, values: bool = True) -> None:
        if values:
            b.bridge_line(f"memset({names.vals(self.name)}, 0, (size_t)({self._size()}) * sizeof({self.value_type}));")

    def release(self, b: CBuilder) -> None:
        b.bridge_line(f"free({names.vals(self.name)});")


@dataclass(frozen=True)
class ScalarWorkspace(DenseWorkspace):
    """A temporary with no index (a scoped sum's register): a one-element array on the stack, which the C
    compiler keeps in a register; private to each thread of a parallel region it is declared in."""

    def allocate(self, b: CBuilder) -> None:
        b.bridge_line(f"{self.value_type} {names.vals(self.name)}[1] = {{0}};")

    def reset(self, b: CBuilder, values: bool = True) -> None:
        if values:
            b.bridge_line(f"{names.vals(self.name)}[0] = 0;")

    def release(self, b: CBuilder) -> None:
        pass


@dataclass(frozen=True)
class _ListLevel(ReadLevel):
    workspace: "ListWorkspace"
    full = False
    ordered = True
    unique = True

    def range(self, parent: Position) -> tuple[str, str]:
        return "0", self.workspace.count

    def coordinate(self, q: str) -> str:
        return f"{self.workspace.list}[{q}]"

    def stepped(self, q: str, coordinate: str) -> str:
        return coordinate

    def locate(self, parent: Position, coordinate: str) -> Position:
        """Values at coordinates this producer did not touch are stale, and read as missing, unless the
        workspace keeps them zero."""
        if self.workspace.located:
            return Position(coordinate)
        return Position(f"({self.workspace.touched(coordinate)} ? {coordinate} : -1)", may_miss=True)


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
    value_type: str
    located: bool = False  # the consumer locates: untouched values are kept zero

    @property
    def list(self) -> str:
        return self._ident("list")

    def touched(self, coordinate: str) -> str:
        return f"{self._ident('mark')}[{coordinate}] == {self._ident('gen')}"

    def allocate(self, b: CBuilder) -> None:
        vals, mark, spare, bits = (names.vals(self.name), self._ident("mark"), self._ident("spare"),
                                   self._ident("bits"))
        if self.located:
            b.bridge_line(f"{self.value_type} *{vals} = calloc((size_t){self.dim} + 1, sizeof({self.value_type}));")
        else:
            b.bridge_line(f"{self.value_type} *{vals} = malloc((size_t){self.dim} * sizeof({self.value_type}) + 1);")
        b.bridge_line(f"int64_t *{mark} = calloc((size_t){self.dim} + 1, sizeof(int64_t));")
        b.bridge_line(f"int64_t *{self.list} = malloc(((size_t){self.dim} + 1) * sizeof(int64_t));")
        b.bridge_line(f"int64_t *{spare} = malloc(((size_t){self.dim} + 1) * sizeof(int64_t));")
        b.bridge_line(f"uint64_t *{bits} = calloc(((size_t){self.dim} >> 6) + ((size_t){self.dim} >> 12) + 2, "
               f"sizeof(uint64_t));")
        b.bridge_line(f"int64_t {self.count} = 0, {self._ident('gen')} = 1;")
        b.fail(f"!{vals} || !{mark} || !{self.list} || !{spare} || !{bits}", ReturnCode.OUT_OF_MEMORY)

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        return Position(coordinate)

    def _first_touch(self, coordinate: str, b: CBuilder) -> None:
        b.bridge_line(f"{self._ident('mark')}[{coordinate}] = {self._ident('gen')};")
        b.bridge_line(f"{self.list}[{self.count}++] = {coordinate};")

    def count_at_most(self, amount: str, b: CBuilder) -> None:
        """The count alone, above the list's length: the bound phase's consumer reads nothing else."""
        b.bridge_line(f"{self.count} += {amount};")

    def mark(self, position: Position, b: CBuilder) -> None:
        with b.bridge_block(f"if (!({self.touched(position.begin)}))"):
            self._first_touch(position.begin, b)

    def store(self, position: Position, op: str, value: str, b: CBuilder) -> None:
        j, vals, v = position.begin, names.vals(self.name), self._ident("v")
        with b.bridge_block():
            b.bridge_line(f"const {self.value_type} {v} = {value};")
            with b.bridge_block(f"if (!({self.touched(j)}))"):
                self._first_touch(j, b)
                b.bridge_line(f"{vals}[{j}] = {v};")
            b.bridge_line(f"else {vals}[{j}] {op} {v};")

    def read_level(self, level: int) -> ReadLevel:
        return _ListLevel(self)

    def prepare_read(self, b: CBuilder, ordered: bool = True) -> None:
        if ordered:
            b.bridge_line(f"ordertouched({self.list}, {self.count}, {self._ident('spare')}, {self._ident('bits')}, "
                   f"{self.dim});")

    def reset(self, b: CBuilder, values: bool = True) -> None:
        if self.located and values:
            with b.bridge_block(f"for (int64_t q = 0; q < {self.count}; q++)"):
                b.bridge_line(f"{names.vals(self.name)}[{self.list}[q]] = 0;")
        b.bridge_line(f"{self._ident('gen')}++;")
        b.bridge_line(f"{self.count} = 0;")

    def release(self, b: CBuilder) -> None:
        for array in (names.vals(self.name), self._ident("mark"), self.list, self._ident("spare"), self._ident("bits")):
            b.bridge_line(f"free({array});")


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

    def range(self, parent: Position) -> tuple[str, str]:
        return ("0", self.workspace.count) if self.level == 0 else (parent.begin, parent.last)

    def coordinate(self, q: str) -> str:
        stride = " * ".join(("1", *self.workspace.dims[self.level + 1:]))
        return f"(({self.workspace.keys}[{q}] / ({stride})) % {self.workspace.dims[self.level]})"

    def locate(self, parent: Position, coordinate: str) -> Position:
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
    value_type: str

    @property
    def keys(self) -> str:
        return self._ident("keys")

    def allocate(self, b: CBuilder) -> None:
        t, vt = self._ident, self.value_type
        b.bridge_line(f"int64_t {t('cap')} = 16, {self.count} = 0, {t('sorted_cap')} = 0;")
        b.bridge_line(f"{t('entry')} *{t('table')} = malloc(16 * sizeof({t('entry')}));")
        b.bridge_line(f"int64_t *{t('slots')} = malloc(16 * sizeof(int64_t));")
        b.bridge_line(f"int64_t *{self.keys} = NULL;")
        b.bridge_line(f"{vt} *{names.vals(self.name)} = NULL;")
        b.fail(f"!{t('table')} || !{t('slots')}", ReturnCode.OUT_OF_MEMORY)
        b.bridge_line(f"for (int64_t s = 0; s < 16; s++) {t('table')}[s].key = -1;")

    def helpers(self) -> tuple[Prelude, ...]:
        t = self._ident
        return (Prelude("hashed_workspace", (("entry", t("entry")), ("probe", t("probe")), ("insert", t("insert")),
                                             ("value_type", self.value_type))),)

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        return Position(Dense().locate({}, parent.begin, coordinate, self.dims[level]))

    def _insert(self, position: Position, b: CBuilder) -> None:
        t = self._ident
        b.bridge_line(f"int64_t slot = {t('insert')}(&{t('table')}, &{t('slots')}, &{t('cap')}, &{self.count}, "
               f"{position.begin});")
        b.fail("slot < 0", ReturnCode.OUT_OF_MEMORY)

    def mark(self, position: Position, b: CBuilder) -> None:
        with b.bridge_block():
            self._insert(position, b)

    def store(self, position: Position, op: str, value: str, b: CBuilder) -> None:
        with b.bridge_block():
            self._insert(position, b)
            b.bridge_line(f"{self._ident('table')}[slot].val {op} {value};")

    def read_level(self, level: int) -> ReadLevel:
        return _SortedLevel(self, level)

    def prepare_read(self, b: CBuilder, ordered: bool = True) -> None:
        """The keys sorted (sortcoordinates, the second half of `keys` its spare), then each one's value
        found in the table again: one probe per entry, as the gather of an entry sort's values would be."""
        t, vt, vals = self._ident, self.value_type, names.vals(self.name)
        with b.bridge_block(f"if ({self.count} > {t('sorted_cap')})"):
            b.bridge_line(f"free({self.keys}); free({vals});")
            b.bridge_line(f"{self.keys} = malloc((size_t)(4 * {self.count}) * sizeof(int64_t));")
            b.bridge_line(f"{vals} = malloc((size_t)(2 * {self.count}) * sizeof({vt}));")
            b.bridge_line(f"{t('sorted_cap')} = {self.keys} && {vals} ? 2 * {self.count} : 0;")
            b.fail(f"!{self.keys} || !{vals}", ReturnCode.OUT_OF_MEMORY)
        with b.bridge_block(f"for (int64_t q = 0; q < {self.count}; q++)"):
            b.bridge_line(f"{self.keys}[q] = {t('table')}[{t('slots')}[q]].key;")
        b.bridge_line(f"sortcoordinates({self.keys}, {self.count}, {self.keys} + {self.count});")
        with b.bridge_block(f"for (int64_t q = 0; q < {self.count}; q++)"):
            b.bridge_line(f"{vals}[q] = {t('table')}[{t('probe')}({t('table')}, {t('cap')}, {self.keys}[q])].val;")

    def reset(self, b: CBuilder, values: bool = True) -> None:
        """Every slot this producer filled is emptied (its value zeroed when it is filled again)."""
        with b.bridge_block(f"for (int64_t q = 0; q < {self.count}; q++)"):
            b.bridge_line(f"{self._ident('table')}[{self._ident('slots')}[q]].key = -1;")
        b.bridge_line(f"{self.count} = 0;")

    def release(self, b: CBuilder) -> None:
        for part in ("table", "slots", "keys"):
            b.bridge_line(f"free({self._ident(part)});")
        b.bridge_line(f"free({names.vals(self.name)});")
