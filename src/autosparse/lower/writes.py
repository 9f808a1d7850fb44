"""How a kernel writes a tensor (LOWERING.md §4-5): results and the temporaries of `where`.

Each `Target` emits its C: allocation at kernel start, what entering one of its levels in a loop means
(a located position, or a tentative appended one that is committed after the loop body if anything was
stored below it), the store itself, and the epilogue. `Workspace`s are also read back by the consumer
of their `where` and reset after it.

  dense result      vals[p * N + i] (op)= v                       the caller allocates and zeroes it
  appended result   two phases over the same loops: count  p = size; ...; if (nz) size++;
                    then exact crd/vals, then fill  if (nz) { crd[p] = i; pos[parent + 1]++; size++; }
                    and prefix sums; a bound phase may size them first
  shared pattern    an operand's positions: crd[p_operand] = i; vals[p_operand] = v (SDDMM, TTV, scaling)
  list workspace    dense w[N] + generation marks + list of touched coordinates, ordered before reading
  dense workspace   w[N1 * ... * Nr], cleared after reading
  hashed workspace  open addressing on the linearised coordinates, sorted before reading
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Mapping

from ..cin.ast import Access
from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import Literal, Prelude, Var, as_expr
from ..format.level import Level
from ..runtime.abi import Slot
from ..runtime.abi import ReturnCode
from .reads import Position

#: Where each (access, level) stands inside the loops: the positions the lowering has reached.
Reads = Mapping[tuple[Access, int], Position]

#: The helpers every kernel defines (min64, resultarray), in codegen's prelude.
HELPERS = Prelude("result_arrays")


def _allocation(length: str, ctype: str, zeroed: bool) -> str:
    return f"resultarray({length}, sizeof({ctype}), {int(zeroed)})"


def located(level: Level, parent: Position, coordinate, dim) -> Position:
    """The position `coordinate` (a C expression; `dim` the level's extent) leads to below `parent` at a level
    the kernel locates, as a result's and a workspace's dense levels are."""
    return Position(level.locate({}, parent.begin, as_expr(coordinate), as_expr(dim)))


class Target(ABC):
    name: str
    #: Stores need no flag: every position is final, and storing a zero changes nothing.
    flag_free = True
    #: Every level is located from its coordinate, so stores may come in any order; positions are
    #: computed at the store from all coordinates (else levels are entered loop by loop, in order).
    random_access = True
    #: A store that is the only one its position gets may overwrite (`=`) instead of adding.
    overwrites = False
    #: Whether the bound phase may replace a loop storing here by its trip count (`count_at_most`).
    bounds = False

    def parallel_safe(self) -> bool:
        """Whether iterations of a parallel loop may store here at once: stores touch nothing but their
        own positions (no counts, no appends, no shared list)."""
        return False

    def reduction_size(self) -> str | None:
        """How many values a thread's private copy holds when parallel iterations add into the same
        positions (`temporary`); None when no two iterations store at one position."""
        return None

    def allocate(self, b: CBuilder) -> None: ...

    def bind(self, level: int, coordinate: str, b: CBuilder) -> None: ...

    @abstractmethod
    def enter(self, level: int, coordinate: str, parent: Position, reads: Reads, b: CBuilder) -> Position:
        """The position that `coordinate` at `level` below `parent` leads to, with any C it needs (`reads`:
        where the operands stand at this point of the loops)."""

    def leave(self, level: int, parent: Position, position: Position, b: CBuilder, parent_flag: str | None) -> None:
        pass

    def flag(self, level: int) -> str | None:
        """The flag a store below a tentative position at `level` sets; None when positions are final."""
        return None

    def store(self, position: Position, op: str, value: str, b: CBuilder) -> None:
        b.bridge_line(f"{names.vals(self.name)}[{position.begin}] {op} {value};")

    def mark(self, position: Position, b: CBuilder) -> None:
        """What a store does in the count phase of a two-phase assembly, where no value is computed."""

    def count_at_most(self, amount: str, b: CBuilder) -> None:
        """Bound phase: a loop making at most `amount` new entries here, replaced by the count. Only
        targets that set `bounds` are ever bounded (lowering checks it), so reaching this is a bug."""
        raise AssertionError(f"{type(self).__name__} sets no `bounds`, yet the bound phase replaced a loop storing "
                             f"into it")

    def finish(self, b: CBuilder) -> None: ...


@dataclass(frozen=True)
class DenseResult(Target):
    """A result whose every level is dense: the caller passes zeroed values, the kernel locates."""

    name: str
    levels: tuple[Level, ...]
    dims: tuple[str, ...]
    #: Whether one statement writes it (else a position may be stored by several).
    overwrites: bool = True

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        return located(self.levels[level], parent, coordinate, self.dims[level])

    def parallel_safe(self) -> bool:
        return True

    def reduction_size(self) -> str | None:
        return " * ".join(("1", *self.dims))


@dataclass(frozen=True)
class AssembledResult(Target):
    """A result with sparse levels, whose arrays the kernel allocates and hands back: `size` variables
    count each sparse level's positions, from which every array's length follows."""

    random_access = False
    name: str
    levels: tuple[Level, ...]
    dims: tuple[str, ...]
    index_type: str
    value_type: str

    def _head(self, level: int) -> int:
        """The compressed level that starts the group of singletons `level` belongs to."""
        while self.levels[level].properties.branchless:
            level -= 1
        return level

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

    def _length(self, level: int, array: str) -> str:
        """The length of one of `level`'s arrays: a pos array has one entry per parent position, and one more."""
        return self._count(level - 1) + " + 1" if array == "pos" else self._count(level)

    def slots(self) -> list[Slot]:
        out = [Slot(self.name, level, array) for level, lv in enumerate(self.levels) for array in lv.array_names]
        return out + [Slot(self.name, -1, "vals")]

    def lengths(self) -> dict[Slot, str]:
        lengths = {Slot(self.name, level, array): self._length(level, array)
                   for level, lv in enumerate(self.levels) for array in lv.array_names}
        lengths[Slot(self.name, -1, "vals")] = self._count(len(self.levels) - 1)
        return lengths


@dataclass(frozen=True)
class AppendedResult(AssembledResult):
    """A result with appended levels (CSR, DCSR, CSF, COO, ...), assembled in two phases (LOWERING.md
    §4). The count phase runs the loops without values and counts each sparse level's positions
    (`size`); every array is then allocated at its size; the fill phase runs the loops again, writes
    coordinates and values in order and counts each parent's children into `pos`, which prefix sums
    close. Nothing grows or is copied, and allocations repeat their sizes from call to call (which malloc
    recycles, where growing arrays fault in fresh pages every call). A position is tentative until
    something is stored below it; both phases take the same decisions, which depend on the pattern only.

    A kernel may first run a bound phase (lower.py), where loops that make at most one entry per
    iteration are replaced by their trip counts: its sizes are upper bounds, cheap to find. The arrays
    are then allocated at those bounds (address space only: the pages the fill never reaches are never
    mapped in) and trimmed after the fill; the exact count runs only when the bounds do not fit the
    index type or cannot be allocated."""

    flag_free = False
    #: Whether the values must start at zero: when stores add into them, or dense levels below an
    #: appended one leave slots unwritten.
    zero_values: bool = True
    #: Which phase this target lowers: counting (False) or filling.
    filling: bool = False
    #: Whether threads assemble it, each a chunk of consecutive positions of the first level, which is
    #: dense (rows of CSR): see `chunks`.
    chunked: bool = False

    @property
    def bounds(self) -> bool:
        return not self.levels[-1].properties.full

    @property
    def bounded(self) -> str:
        """The C flag saying that the arrays were allocated at the bound phase's sizes."""
        return names.user(self.name, "bounded")

    def _is_group_end(self, level: int) -> bool:
        return not self.levels[level].properties.full and (
            level + 1 == len(self.levels) or not self.levels[level + 1].properties.branchless)

    def _sized(self, level: int) -> bool:
        """Whether `level`'s pos array has a known length before counting (no sparse level above)."""
        return all(self.levels[k].properties.full for k in range(level))

    def _counters(self) -> list[str]:
        return [names.size(self.name, level) for level, lv in enumerate(self.levels)
                if not lv.properties.full and not lv.properties.branchless]

    def _entries(self) -> list[tuple[str, str, str, bool]]:
        """The arrays sized by counting: (C name, length, element type, zeroed)."""
        out = []
        for level, lv in enumerate(self.levels):
            for array in lv.array_names:
                if array != "pos" or not self._sized(level):
                    out.append((self._array(level, array), self._length(level, array), self.index_type,
                                array == "pos"))
        count = self._count(len(self.levels) - 1)
        return out + [(names.vals(self.name), count, self.value_type, self.zero_values)]

    def allocate(self, b: CBuilder) -> None:
        """Before counting: the pos arrays of known length and the size counters."""
        for level, lv in enumerate(self.levels):
            if "pos" in lv.array_names and self._sized(level):
                ident = self._array(level, "pos")
                b.bridge_line(f"{self.index_type} *{ident} = {_allocation(self._count(level - 1), self.index_type, True)};")
                b.fail(f"!{ident}", ReturnCode.OUT_OF_MEMORY)
        for size in self._counters():
            b.bridge_line(f"int64_t {size} = 0;")
        for ident, _, ctype, _ in self._entries():
            b.bridge_line(f"{ctype} *{ident} = NULL;")
        b.bridge_line(f"int {self.bounded} = 0;")

    def allocate_bounded(self, b: CBuilder) -> None:
        """After the bound phase: the arrays at the bounds, when they fit the index type and memory."""
        entries = self._entries()
        with b.bridge_block(f"if ({' && '.join(f'{size} <= {self._limit()}' for size in self._counters())})"):
            for ident, length, ctype, zeroed in entries:
                b.bridge_line(f"{ident} = {_allocation(length, ctype, zeroed)};")
            b.bridge_line(f"{self.bounded} = {' && '.join(ident for ident, *_ in entries)};")
            with b.bridge_block(f"if (!{self.bounded})"):
                for ident, _, ctype, _ in entries:
                    b.bridge_line(f"free({ident});")
                    b.bridge_line(f"{ident} = NULL;")

    def allocate_entries(self, b: CBuilder) -> None:
        """After the count phase: every array at its exact size."""
        for size in self._counters():
            b.fail(f"{size} > {self._limit()}", ReturnCode.INDEX_OVERFLOW)
        for ident, length, ctype, zeroed in self._entries():
            b.bridge_line(f"{ident} = {_allocation(length, ctype, zeroed)};")
            b.fail(f"!{ident}", ReturnCode.OUT_OF_MEMORY)

    def rewind(self, b: CBuilder) -> None:
        """Before the fill: the sizes count again from zero."""
        for size in self._counters():
            b.bridge_line(f"{size} = 0;")

    def count_at_most(self, amount: str, b: CBuilder) -> None:
        b.bridge_line(f"{names.size(self.name, self._head(len(self.levels) - 1))} += {amount};")

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        lv = self.levels[level]
        if lv.properties.full:
            return located(lv, parent, coordinate, self.dims[level])
        if not self._is_group_end(level):
            return parent
        p = names.position(names.access(self.name), level)
        b.bridge_line(f"int64_t {p} = {names.size(self.name, self._head(level))};")
        b.bridge_line(f"int {self.flag(level)} = 0;")
        return Position(Var(p))

    def flag(self, level: int) -> str | None:
        return names.user(self.name, f"nz{level + 1}") if self._is_group_end(level) else None

    def leave(self, level, parent, position, b, parent_flag) -> None:
        if not self._is_group_end(level):
            return
        head = self._head(level)
        with b.bridge_block(f"if ({self.flag(level)})"):
            if self.filling:
                for k in range(head, level + 1):
                    b.bridge_line(f"{self._array(k, 'crd')}[{position.begin}] = {self._coordinate_var(k)};")
                b.bridge_line(f"{self._array(head, 'pos')}[{parent.begin} + 1]++;")
            b.bridge_line(f"{names.size(self.name, head)}++;")
            if parent_flag:
                b.bridge_line(f"{parent_flag} = 1;")

    def finish(self, b: CBuilder) -> None:
        """Prefix sums close the pos arrays; arrays allocated at bounds are trimmed to their sizes."""
        for level, lv in enumerate(self.levels):
            if "pos" in lv.array_names:
                pos = self._array(level, "pos")
                with b.bridge_block(f"for (int64_t p = 0; p < {self._count(level - 1)}; p++)"):
                    b.bridge_line(f"{pos}[p + 1] += {pos}[p];")
        with b.bridge_block(f"if ({self.bounded})"):
            for ident, length, ctype, _ in self._entries():
                with b.bridge_block():
                    b.bridge_line(f"void *trimmed = realloc({ident}, ((size_t)({length}) + 1) * sizeof({ctype}));")
                    b.bridge_line(f"if (trimmed) {ident} = trimmed;")

    # --- chunks: threads assembling it in one parallel region (kernel.py) ---------------------------------
    #
    # Each thread runs the phases over its chunk of the parallel loop (`schedule(static)`: one chunk of
    # consecutive first-level positions per thread, in thread order, the same in every phase) with sizes
    # of its own, declared in the region. After a count phase, one thread turns the chunks' counts into
    # where each chunk starts (their sum sizes the arrays); each thread then fills its chunk from its start.
    # After a bound phase the chunks' entries end short of the next chunk's start; once the region ends,
    # `compact` moves the chunks together. After an exact count, they already are.

    def _chunk_arrays(self) -> list[tuple[str, str, str]]:
        """Per counted level: (its size, where each chunk starts, where each chunk's fill ended)."""
        return [(size, f"{size}_chunks", f"{size}_ends") for size in self._counters()]

    def allocate_chunks(self, threads: str, b: CBuilder) -> None:
        for _, starts, ends in self._chunk_arrays():
            b.bridge_line(f"int64_t *{starts} = calloc((size_t){threads} + 1, sizeof(int64_t));")
            b.bridge_line(f"int64_t *{ends} = calloc((size_t){threads} + 1, sizeof(int64_t));")
            b.fail(f"!{starts} || !{ends}", ReturnCode.OUT_OF_MEMORY)

    def declare_chunk_sizes(self, b: CBuilder) -> None:
        """In the region: this thread's sizes, which the phases' code counts (shadowing the totals)."""
        for size in self._counters():
            b.bridge_line(f"int64_t {size} = 0;")

    def count_chunk(self, thread: str, b: CBuilder) -> None:
        """After a count (or bound) phase: this thread's counts."""
        for size, starts, _ in self._chunk_arrays():
            b.bridge_line(f"{starts}[{thread}] = {size};")

    def sum_chunks(self, team: str, b: CBuilder) -> None:
        """By one thread: the chunks' counts become their starts; its own sizes become the totals, which
        the arrays are then allocated at."""
        for size, starts, _ in self._chunk_arrays():
            b.bridge_line(f"{size} = 0;")
            with b.bridge_block(f"for (int t = 0; t < {team}; t++)"):
                b.bridge_line(f"const int64_t n = {starts}[t];")
                b.bridge_line(f"{starts}[t] = {size};")
                b.bridge_line(f"{size} += n;")

    def start_chunk(self, thread: str, b: CBuilder) -> None:
        """Before the fill: this thread's sizes start at its chunk's start."""
        for size, starts, _ in self._chunk_arrays():
            b.bridge_line(f"{size} = {starts}[{thread}];")

    def end_chunk(self, thread: str, b: CBuilder) -> None:
        for size, _, ends in self._chunk_arrays():
            b.bridge_line(f"{ends}[{thread}] = {size};")

    def _anchor(self, level: int) -> tuple[str, str] | None:
        """The size counting the positions that index `level`'s, and how many of `level`'s each has (dense
        levels below a sparse one multiply them); None when no sparse level is at or above `level`."""
        scale = []
        while level >= 0 and self.levels[level].properties.full:
            scale.insert(0, self.dims[level])
            level -= 1
        if level < 0:
            return None
        return names.size(self.name, self._head(level)), " * ".join(("1", *scale))

    def _positioned(self) -> list[tuple[str, str, tuple[str, str] | None, int]]:
        """Every array indexed by positions: (C name, element type, anchor, offset): a pos array holds its
        parent positions' counts one element on."""
        out = []
        for level, lv in enumerate(self.levels):
            for array in lv.array_names:
                anchor = self._anchor(level - 1 if array == "pos" else level)
                out.append((self._array(level, array), self.index_type, anchor, int(array == "pos")))
        return out + [(names.vals(self.name), self.value_type, self._anchor(len(self.levels) - 1), 0)]

    def compact(self, team: str, b: CBuilder) -> None:
        """After the region: each chunk's entries moved down to where the chunks before it end (memmove,
        in thread order: a chunk never moves up); the sizes become the totals."""
        for size, starts, ends in self._chunk_arrays():
            b.bridge_line(f"{size} = 0;")
            with b.bridge_block(f"for (int t = 0; t < {team}; t++)"):
                b.bridge_line(f"const int64_t from = {starts}[t], n = {ends}[t] - from;")
                with b.bridge_block(f"if (n > 0 && from != {size})"):
                    for ident, ctype, anchor, offset in self._positioned():
                        if anchor is None or anchor[0] != size:
                            continue
                        scale = anchor[1]
                        b.bridge_line(f"memmove({ident} + {size} * {scale} + {offset}, {ident} + from * {scale} + {offset}, "
                               f"(size_t)(n * {scale}) * sizeof({ctype}));")
                b.bridge_line(f"{size} += n;")
            b.bridge_line(f"free({starts});")
            b.bridge_line(f"free({ends});")

    def _coordinate_var(self, level: int) -> str:
        return names.user(self.name, f"c{level + 1}")

    def bind(self, level: int, coordinate: str, b: CBuilder) -> None:
        """Remember the coordinate of a grouped level until its group commits (COO rows)."""
        if self.filling and not self.levels[level].properties.full:
            b.bridge_line(f"const int64_t {self._coordinate_var(level)} = {coordinate};")


@dataclass(frozen=True)
class SharedPatternResult(AssembledResult):
    """A result whose pattern is an operand's (LOWERING.md §4: SDDMM, TTV, scaling). The loops over the
    result's levels step exactly that operand's levels, once each and in order, so the result's sparse
    levels hold the operand's positions: their coordinates are copied before the loops and each value is
    stored at the operand's position. A dense result level over a sparse operand level (CSR from CSF) is
    located instead; the sparse level below it then counts its children per parent from the operand's
    segments, closed by a prefix sum. Nothing is appended or grown; every position of the operand is
    visited and stored exactly once (a position whose reduction is empty stores an explicit zero), and
    the result's values start zeroed only when dense result levels have positions the operand lacks.

    Dense levels may follow the shared ones (TTM: C(i,j,r) over A(i,j,k)'s first two levels): they are
    located below the shared positions, and take sums (the reduction over k runs around r), so the
    values start zeroed. Distinct shared positions own disjoint dense blocks, so threads over the shared
    levels never meet."""

    source: Access | None = None  # the operand whose positions the result shares
    overwrites = True  # each position is stored once, by the one statement that writes the result
    source_levels: tuple[Level, ...] = ()
    source_arrays: tuple[Mapping[str, str], ...] = ()  # the C names of its arrays, level by level

    def parallel_safe(self) -> bool:
        return all(self._mirrored(level) for level in range(len(self.source_levels)))

    @property
    def _suffix(self) -> bool:
        """Whether dense levels follow the shared ones."""
        return len(self.levels) > len(self.source_levels)

    def _mirrored(self, level: int) -> bool:
        """Whether the result's positions at `level` are the operand's (the root's always are)."""
        if level < 0:
            return True
        if level >= len(self.source_levels):
            return False
        if self.levels[level].properties.full:
            return self.source_levels[level].properties.full and self._mirrored(level - 1)
        return True

    def _counted(self, level: int) -> bool:
        """Whether `level`'s pos array is counted in the loops rather than copied."""
        return "pos" in self.levels[level].array_names and not self._mirrored(level - 1)

    def _source_count(self, level: int) -> str:
        if level < 0:
            return "1"
        if self.source_levels[level].properties.full:
            return f"({self._source_count(level - 1)} * {self.dims[level]})"
        parents = self._source_count(level - 1)
        return self.source_levels[level].position_range(self.source_arrays[level], Literal(0), as_expr(parents))[1]

    def allocate(self, b: CBuilder) -> None:
        for level, lv in enumerate(self.levels):
            if not lv.properties.full and not lv.properties.branchless:
                size = names.size(self.name, level)
                b.bridge_line(f"const int64_t {size} = {self._source_count(level)};")
                b.fail(f"{size} > {self._limit()}", ReturnCode.INDEX_OVERFLOW)
            for array in lv.array_names:
                ident, length = self._array(level, array), self._length(level, array)
                counted = array == "pos" and self._counted(level)
                b.bridge_line(f"{self.index_type} *{ident} = {_allocation(length, self.index_type, counted)};")
                b.fail(f"!{ident}", ReturnCode.OUT_OF_MEMORY)
                if array != "crd" and not counted:
                    with b.bridge_block(f"for (int64_t p = 0; p < {length}; p++)"):
                        b.bridge_line(f"{ident}[p] = {self.source_arrays[level][array]}[p];")
        count, vals = self._count(len(self.levels) - 1), names.vals(self.name)
        # dense levels over sparse ones: the positions no operand entry reaches stay zero
        zeroed = self._suffix or not self._mirrored(len(self.levels) - 1)
        b.bridge_line(f"{self.value_type} *{vals} = {_allocation(count, self.value_type, zeroed)};")
        b.fail(f"!{names.vals(self.name)}", ReturnCode.OUT_OF_MEMORY)

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        if level >= len(self.source_levels):
            return located(self.levels[level], parent, coordinate, self.dims[level])
        source = reads[(self.source, level)]
        if self._mirrored(level):
            if "crd" in self.levels[level].array_names:
                b.bridge_line(f"{self._array(level, 'crd')}[{source.begin}] = {coordinate};")
            return source
        position = located(self.levels[level], parent, coordinate, self.dims[level])
        below = level + 1
        if below < len(self.source_levels) and self._counted(below):
            begin, end = self.source_levels[below].position_range(self.source_arrays[below], source.begin,
                                                                  source.last)
            b.bridge_line(f"{self._array(below, 'pos')}[{position.begin} + 1] = {end} - {begin};")
        return position

    def store(self, position: Position, op: str, value: str, b: CBuilder) -> None:
        """A shared position is stored once (a reduction below it is summed in a register first); a
        position of the dense levels below may take a sum."""
        b.bridge_line(f"{names.vals(self.name)}[{position.begin}] {op if self._suffix else '='} {value};")

    def finish(self, b: CBuilder) -> None:
        for level in range(len(self.levels)):
            if self._counted(level):
                pos = self._array(level, "pos")
                with b.bridge_block(f"for (int64_t p = 0; p < {self._count(level - 1)}; p++)"):
                    b.bridge_line(f"{pos}[p + 1] += {pos}[p];")
