"""How a kernel writes a tensor (LOWERING.md §4-5): results and the temporaries of `where`.

Each `Target` emits its C: allocation at kernel start, what entering one of its levels in a loop means
(a located position, or a tentative appended one that is committed after the loop body if anything was
stored below it), the store itself, and the epilogue. `Workspace`s are also read back by the consumer
of their `where` and reset after it.

  dense result      vals[p * N + i] (op)= v                       the caller allocates and zeroes it
  appended result   p = size; ...body...; if (nz) { crd[p] = i; pos[parent + 1]++; size++; }
                    pos holds counts until the epilogue's prefix sum; arrays grow geometrically
  list workspace    dense w[N] + touched flags + list of touched coordinates, sorted before reading
  dense workspace   w[N1 * ... * Nr], cleared after reading
  hashed workspace  open addressing on the linearised coordinates, sorted before reading
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from ..codegen import names
from ..codegen.builder import CBuilder
from ..format.level import Level
from .reads import Position

GROW_MACRO = """
/* Make room for `need` elements (at most `limit`: return 2 past it, 1 when memory runs out); the new
   part is zeroed when `zero`. */
#define GROW_BY(ptr, cap, need, limit, zero) do { if ((need) > (cap)) { \\
    int64_t grown_ = (cap) * 2 > (need) ? (cap) * 2 : (need); \\
    if (grown_ > (limit)) { if ((need) > (limit)) return 2; grown_ = (limit); } \\
    void *moved_ = realloc((ptr), (size_t)grown_ * sizeof(*(ptr))); if (!moved_) return 1; \\
    (ptr) = moved_; if (zero) memset((ptr) + (cap), 0, (size_t)(grown_ - (cap)) * sizeof(*(ptr))); \\
    (cap) = grown_; } } while (0)
#define GROW(ptr, cap, need, limit) GROW_BY(ptr, cap, need, limit, 1)
#define GROW_UNZEROED(ptr, cap, need, limit) GROW_BY(ptr, cap, need, limit, 0)
"""

INITIAL_CAPACITY = 1024


@dataclass(frozen=True)
class Slot:
    """An argument slot of the kernel ABI: a pointer the kernel reads (or, for results it assembles,
    writes back), and the length it reports for it in `sizes`."""

    tensor: str
    level: int  # -1 for values
    array: str


class Target(ABC):
    name: str
    #: Stores need no flag: every position is final, and storing a zero changes nothing.
    flag_free = True
    #: Every level is located from its coordinate, so stores may come in any order; positions are
    #: computed at the store from all coordinates (else levels are entered loop by loop, in order).
    random_access = True

    def allocate(self, b: CBuilder) -> None: ...

    def bind(self, level: int, coordinate: str, b: CBuilder) -> None: ...

    @abstractmethod
    def enter(self, level: int, coordinate: str, parent: Position, b: CBuilder) -> Position:
        """The position that `coordinate` at `level` below `parent` leads to, with any C it needs."""

    def leave(self, level: int, parent: Position, position: Position, b: CBuilder, parent_flag: str | None) -> None:
        pass

    def flag(self, level: int) -> str | None:
        """The flag a store below a tentative position at `level` sets; None when positions are final."""
        return None

    def store(self, position: Position, op: str, value: str, b: CBuilder) -> None:
        b.line(f"{names.vals(self.name)}[{position.begin}] {op} {value};")

    def finish(self, b: CBuilder) -> None: ...


@dataclass(frozen=True)
class DenseResult(Target):
    """A result whose every level is dense: the caller passes zeroed values, the kernel locates."""

    name: str
    levels: tuple[Level, ...]
    dims: tuple[str, ...]

    def enter(self, level, coordinate, parent, b) -> Position:
        return Position(self.levels[level].locate({}, parent.begin, coordinate, self.dims[level]))


@dataclass(frozen=True)
class AppendedResult(Target):
    """A result with appended levels (CSR, DCSR, CSF, COO, ...), assembled in one pass."""

    flag_free = False
    random_access = False
    name: str
    levels: tuple[Level, ...]
    dims: tuple[str, ...]
    index_type: str
    value_type: str
    #: Whether grown values must start at zero: when stores add into them, or dense levels below an
    #: appended one leave slots unwritten.
    zero_values: bool = True

    def _head(self, level: int) -> int:
        """The compressed level that starts the group of singletons `level` belongs to."""
        while self.levels[level].properties.branchless:
            level -= 1
        return level

    def _is_group_end(self, level: int) -> bool:
        return not self.levels[level].properties.full and (
            level + 1 == len(self.levels) or not self.levels[level + 1].properties.branchless)

    def _count(self, level: int) -> str:
        """The number of positions of `level` (-1: the root's one)."""
        if level < 0:
            return "1"
        if self.levels[level].properties.full:
            return f"({self._count(level - 1)} * {self.dims[level]})"
        return names.size(self.name, self._head(level))

    def _array(self, level: int, array: str) -> str:
        return names.array(self.name, level, array)

    def _limit(self) -> str:
        return "INT32_MAX" if self.index_type == "int32_t" else "INT64_MAX"

    def slots(self) -> list[Slot]:
        out = [Slot(self.name, level, array) for level, lv in enumerate(self.levels) for array in lv.array_names]
        return out + [Slot(self.name, -1, "vals")]

    def allocate(self, b: CBuilder) -> None:
        for level, lv in enumerate(self.levels):
            for array in lv.array_names:
                ident, cap = self._array(level, array), names.capacity(self.name, level, array)
                static = all(self.levels[k].properties.full for k in range(level))
                initial = f"{self._count(level - 1)} + 1" if array == "pos" and static else str(INITIAL_CAPACITY)
                b.line(f"int64_t {cap} = {initial};")
                b.line(f"{self.index_type} *{ident} = calloc((size_t){cap}, sizeof({self.index_type}));")
                b.line(f"if (!{ident}) return 1;")
            if not lv.properties.full and not lv.properties.branchless:
                b.line(f"int64_t {names.size(self.name, level)} = 0;")
        b.line(f"int64_t {self.name}_vals_cap = {INITIAL_CAPACITY};")
        b.line(f"{self.value_type} *{names.vals(self.name)} = calloc((size_t){self.name}_vals_cap, "
               f"sizeof({self.value_type}));")
        b.line(f"if (!{names.vals(self.name)}) return 1;")

    def _reserve(self, level: int, count: str, b: CBuilder) -> None:
        """Make room for `count` positions at `level` (len(levels): values) and the dense levels below."""
        if level == len(self.levels):
            grow = "GROW" if self.zero_values else "GROW_UNZEROED"
            b.line(f"{grow}({names.vals(self.name)}, {self.name}_vals_cap, {count}, INT64_MAX);")
        elif self.levels[level].properties.full:
            self._reserve(level + 1, f"({count}) * {self.dims[level]}", b)
        elif not self.levels[level].properties.branchless:
            b.line(f"GROW({self._array(level, 'pos')}, {names.capacity(self.name, level, 'pos')}, "
                   f"({count}) + 1, {self._limit()});")

    def enter(self, level, coordinate, parent, b) -> Position:
        lv = self.levels[level]
        if lv.properties.full:
            return Position(lv.locate({}, parent.begin, coordinate, self.dims[level]))
        if not self._is_group_end(level):
            return parent
        head = self._head(level)
        p = names.position(self.name, level)
        b.line(f"int64_t {p} = {names.size(self.name, head)};")
        for k in range(head, level + 1):
            b.line(f"GROW_UNZEROED({self._array(k, 'crd')}, {names.capacity(self.name, k, 'crd')}, {p} + 1, "
                   f"{self._limit()});")
        self._reserve(level + 1, f"{p} + 1", b)
        b.line(f"int {self.flag(level)} = 0;")
        return Position(p)

    def flag(self, level: int) -> str | None:
        return f"{self.name}{level + 1}_nz" if self._is_group_end(level) else None

    def leave(self, level, parent, position, b, parent_flag) -> None:
        if not self._is_group_end(level):
            return
        head = self._head(level)
        with b.block(f"if ({self.flag(level)})"):
            for k in range(head, level + 1):
                b.line(f"{self._array(k, 'crd')}[{position.begin}] = {self._coordinate_var(k)};")
            b.line(f"{self._array(head, 'pos')}[{parent.begin} + 1]++;")
            b.line(f"{names.size(self.name, head)}++;")
            if parent_flag:
                b.line(f"{parent_flag} = 1;")

    def _coordinate_var(self, level: int) -> str:
        return f"{self.name}{level + 1}_c"

    def bind(self, level: int, coordinate: str, b: CBuilder) -> None:
        """Remember the coordinate of a grouped level until its group commits (COO rows)."""
        if not self.levels[level].properties.full:
            b.line(f"const int64_t {self._coordinate_var(level)} = {coordinate};")

    def finish(self, b: CBuilder) -> None:
        for level, lv in enumerate(self.levels):
            if "pos" in lv.array_names:
                pos = self._array(level, "pos")
                with b.block(f"for (int64_t p = 0; p < {self._count(level - 1)}; p++)"):
                    b.line(f"{pos}[p + 1] += {pos}[p];")

    def lengths(self) -> dict[Slot, str]:
        lengths = {}
        for level, lv in enumerate(self.levels):
            for array in lv.array_names:
                count = self._count(level - 1) + " + 1" if array == "pos" else self._count(level)
                lengths[Slot(self.name, level, array)] = count
        lengths[Slot(self.name, -1, "vals")] = self._count(len(self.levels) - 1)
        return lengths
