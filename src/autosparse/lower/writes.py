"""How a kernel writes a tensor (LOWERING.md §4-5): results and the temporaries of `where`.

Each `Target` emits its C: allocation at kernel start, what entering one of its levels in a loop means
(a located position, or a tentative appended one that is committed after the loop body if anything was
stored below it), the store itself, and the epilogue. `Workspace`s are also read back by the consumer
of their `where` and reset after it.

  dense result      vals[p * N + i] (op)= v                       the caller allocates and zeroes it
  appended result   two phases over the same loops: count  p = size; ...; if (nz) size++;
                    then exact crd/vals, then fill  start = size; ...; if (nz) { crd[p] = i; size++; }
                    ...; pos[parent + 1] += size - start (once per parent) and prefix sums; a bound
                    phase may size them first
  shared pattern    an operand's positions: crd[p_operand] = i; vals[p_operand] = v (SDDMM, TTV, scaling)
  list workspace    dense w[N] + generation marks + list of touched coordinates, ordered before reading
                    (unless an unordered result level takes them as they come)
  dense workspace   w[N1 * ... * Nr], cleared after reading
  hashed workspace  open addressing on the linearised coordinates, sorted before reading
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, Mapping, Union

import numpy as np

from ..cin.ast import Access
from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import (CType, Decl, Expr, Literal, Prelude, SizeOf, Var, and_, as_expr, call, cast, gt,
                             increment, le, lt, ne, not_, or_)
from ..codegen.literals import c_literal
from ..format.level import Level
from ..notation.operators import REGISTRY
from ..runtime.abi import Slot
from ..runtime.abi import ReturnCode
from .reads import Position

#: Where each (access, level) stands inside the loops: the positions the lowering has reached.
Reads = Mapping[tuple[Access, int], Position]

#: The helpers every kernel defines (min64, resultarray), in codegen's prelude.
HELPERS = Prelude("result_arrays")


#: How a store combines with what its position holds: `=` or `+=`, or a reduction's operator as a function
#: of the position's C and the value's C (`combiner`: `x = x < v || x != x ? x : v` for a minimum).
Combine = Union[str, Callable[[Expr, Expr], Expr]]


#: The reductions C writes as a compound assignment.
_COMPOUND = {"add": "+=", "multiply": "*="}


def combiner(reduce: str, value_type: CType) -> Combine:
    """How a reduction by the operator `reduce` stores: `+=` for a sum, `*=` for a product, otherwise its
    operator's C (`codegen/functions.py`) applied to the position and the value."""
    if reduce in _COMPOUND:
        return _COMPOUND[reduce]
    spell = REGISTRY[reduce].c
    return lambda target, value: spell(value_type, target, value)


def combine(b: CBuilder, target: Expr, value: Expr, op: Combine) -> None:
    """`target (op)= value`."""
    if isinstance(op, str):
        b.assign(target, value, op)
    else:
        b.assign(target, op(target, value))


def start_value(value, value_type: CType) -> Expr:
    """A fill or a reduction's identity as C of the value type: an infinite one of an integer kernel is the
    type's bound (+inf is INT64_MAX, as `operators._top` has it)."""
    if value_type.base == "int64_t" and value in (np.inf, -np.inf):
        return Var("INT64_MAX" if value > 0 else "INT64_MIN")
    return c_literal(value, value_type)


def _allocation(length: Expr, ctype: str, zeroed: bool) -> Expr:
    return call("resultarray", length, SizeOf(ctype), int(zeroed))


def block_size(dims) -> Expr:
    """1 * dims[0] * ...: how many positions dense levels of extents `dims` give one parent."""
    size: Expr = Literal(1)
    for dim in dims:
        size = size * as_expr(dim)
    return size


def free_arrays(b: CBuilder, *arrays: str) -> None:
    for array in arrays:
        b.expr(call("free", Var(array)))


def _team_loop(team: str):
    """`for (int t = 0; t < team; t++)`: over the threads of a region."""
    t = Var("t")
    return Decl("int", t.name, Literal(0)), lt(t, Var(team)), increment(t)


def located(level: Level, parent: Position, coordinate, dim) -> Position:
    """The position `coordinate` (a C expression; `dim` the level's extent) leads to below `parent` at a level
    the kernel locates, as a result's and a workspace's dense levels are."""
    return Position(level.locate({}, parent.begin, coordinate, as_expr(dim)))


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

    def reduction_size(self) -> Expr | None:
        """How many values a thread's private copy holds when parallel iterations add into the same
        positions (`temporary`); None when no two iterations store at one position."""
        return None

    def keeps_order(self, level: int) -> bool:
        """Whether entries must reach `level` in coordinate order (else a workspace may hand them over
        unsorted)."""
        return True

    def allocate(self, b: CBuilder) -> None: ...

    def bind(self, level: int, coordinate: Expr, b: CBuilder) -> None: ...

    @abstractmethod
    def enter(self, level: int, coordinate: Expr, parent: Position, reads: Reads, b: CBuilder) -> Position:
        """The position that `coordinate` at `level` below `parent` leads to, with any C it needs (`reads`:
        where the operands stand at this point of the loops)."""

    def leave(self, level: int, parent: Position, position: Position, b: CBuilder, parent_flag: str | None) -> None:
        pass

    def flag(self, level: int) -> str | None:
        """The flag a store below a tentative position at `level` sets; None when positions are final."""
        return None

    def store(self, position: Position, op: Combine, value: Expr, b: CBuilder) -> None:
        combine(b, Var(names.vals(self.name))[position.begin], value, op)

    def mark(self, position: Position, b: CBuilder) -> None:
        """What a store does in the count phase of a two-phase assembly, where no value is computed."""

    def count_at_most(self, amount: Expr, b: CBuilder) -> None:
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

    def reduction_size(self) -> Expr | None:
        return block_size(self.dims)


@dataclass(frozen=True)
class AssembledResult(Target):
    """A result with sparse levels, whose arrays the kernel allocates and hands back: `size` variables
    count each sparse level's positions, from which every array's length follows."""

    random_access = False
    name: str
    levels: tuple[Level, ...]
    dims: tuple[str, ...]
    index_type: CType
    value_type: CType

    def _head(self, level: int) -> int:
        """The compressed level that starts the group of singletons `level` belongs to."""
        while self.levels[level].properties.branchless:
            level -= 1
        return level

    def _count(self, level: int) -> Expr:
        """The number of positions of `level` (-1: the root's one)."""
        if level < 0:
            return Literal(1)
        if self.levels[level].properties.full:
            return self._count(level - 1) * as_expr(self.dims[level])
        return Var(names.size(self.name, self._head(level)))

    def _array(self, level: int, array: str) -> str:
        return names.array(self.name, level, array)

    def _limit(self) -> Var:
        return Var(names.largest_index(self.index_type))

    def _length(self, level: int, array: str) -> Expr:
        """The length of one of `level`'s arrays: a pos array has one entry per parent position, and one more."""
        return self._count(level - 1) + 1 if array == "pos" else self._count(level)

    def keeps_order(self, level: int) -> bool:
        properties = self.levels[level].properties
        return properties.ordered or properties.descending

    def slots(self) -> list[Slot]:
        out = [Slot(self.name, level, array) for level, lv in enumerate(self.levels) for array in lv.array_names]
        return out + [Slot(self.name, -1, "vals")]

    def lengths(self) -> dict[Slot, Expr]:
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

    def _entries(self) -> list[tuple[str, Expr, str, bool]]:
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
                pos = b.decl(self.index_type.pointer(), self._array(level, "pos"),
                             _allocation(self._count(level - 1), self.index_type, True))
                b.fail(not_(pos), ReturnCode.OUT_OF_MEMORY)
        for size in self._counters():
            b.decl("int64_t", size, 0)
        for ident, _, ctype, _ in self._entries():
            b.decl(ctype.pointer(), ident, Var("NULL"))
        b.decl("int", self.bounded, 0)

    def allocate_bounded(self, b: CBuilder) -> None:
        """After the bound phase: the arrays at the bounds, when they fit the index type and memory."""
        entries = self._entries()
        with b.if_(and_(*(le(Var(size), self._limit()) for size in self._counters()))):
            for ident, length, ctype, zeroed in entries:
                b.assign(Var(ident), _allocation(length, ctype, zeroed))
            b.assign(Var(self.bounded), and_(*(Var(ident) for ident, *_ in entries)))
            with b.if_(not_(Var(self.bounded))):
                for ident, _, ctype, _ in entries:
                    free_arrays(b, ident)
                    b.assign(Var(ident), Var("NULL"))

    def allocate_entries(self, b: CBuilder) -> None:
        """After the count phase: every array at its exact size."""
        for size in self._counters():
            b.fail(gt(Var(size), self._limit()), ReturnCode.INDEX_OVERFLOW)
        for ident, length, ctype, zeroed in self._entries():
            b.assign(Var(ident), _allocation(length, ctype, zeroed))
            b.fail(not_(Var(ident)), ReturnCode.OUT_OF_MEMORY)

    def rewind(self, b: CBuilder) -> None:
        """Before the fill: the sizes count again from zero."""
        for size in self._counters():
            b.assign(Var(size), 0)

    def count_at_most(self, amount: Expr, b: CBuilder) -> None:
        b.assign(Var(names.size(self.name, self._head(len(self.levels) - 1))), amount, "+=")

    def _counts_children(self, level: int) -> bool:
        """Whether the fill counts the children of `level`'s positions into the pos array below it."""
        return self.filling and level + 1 < len(self.levels) and "pos" in self.levels[level + 1].array_names

    def _children_start(self, level: int) -> str:
        """The C variable holding the size of the level below when a position of `level` was entered."""
        return names.part(names.size(self.name, level + 1), "start")

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        lv = self.levels[level]
        if lv.properties.full:
            position = located(lv, parent, coordinate, self.dims[level])
        elif not self._is_group_end(level):
            return parent
        else:
            p = b.decl("int64_t", names.position(names.access(self.name), level),
                       Var(names.size(self.name, self._head(level))))
            b.decl("int", self.flag(level), 0)
            position = Position(p)
        if self._counts_children(level):
            b.decl("const int64_t", self._children_start(level), Var(names.size(self.name, level + 1)))
        return position

    def flag(self, level: int) -> str | None:
        return names.user(self.name, f"nz{level + 1}") if self._is_group_end(level) else None

    def leave(self, level, parent, position, b, parent_flag) -> None:
        """Commit a tentative position that something was stored below. A position's children are counted
        into the pos array below once, when it is left (adding: a dense position entered again adds more),
        not entry by entry; a tentative position's only when committed (else its slot is reused)."""
        if not self._is_group_end(level):
            if self.levels[level].properties.full:
                self._close_children(level, position, b)
            return
        head = self._head(level)
        with b.if_(Var(self.flag(level))):
            if self.filling:
                for k in range(head, level + 1):
                    b.assign(Var(self._array(k, "crd"))[position.begin], Var(self._coordinate_var(k)))
            self._close_children(level, position, b)
            b.expr(increment(Var(names.size(self.name, head))))
            if parent_flag:
                b.assign(Var(parent_flag), 1)

    def _close_children(self, level: int, position: Position, b: CBuilder) -> None:
        if self._counts_children(level):
            children = Var(names.size(self.name, level + 1)) - Var(self._children_start(level))
            b.assign(Var(self._array(level + 1, "pos"))[position.begin + 1], children, "+=")

    def finish(self, b: CBuilder) -> None:
        """Prefix sums close the pos arrays (the root's one child counts the first level's positions);
        arrays allocated at bounds are trimmed to their sizes."""
        if "pos" in self.levels[0].array_names:
            b.assign(Var(self._array(0, "pos"))[1], Var(names.size(self.name, 0)))
        for level, lv in enumerate(self.levels):
            if "pos" in lv.array_names:
                _prefix_sum(Var(self._array(level, "pos")), self._count(level - 1), b)
        with b.if_(Var(self.bounded)):
            for ident, length, ctype, _ in self._entries():
                with b.block():
                    trimmed = b.decl("void *", "trimmed",
                                     call("realloc", Var(ident), (cast("size_t", length) + 1) * SizeOf(ctype)))
                    with b.if_(trimmed):
                        b.assign(Var(ident), trimmed)

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
        return [(size, names.part(size, "chunks"), names.part(size, "ends")) for size in self._counters()]

    def allocate_chunks(self, threads: str, b: CBuilder) -> None:
        length = cast("size_t", Var(threads)) + 1
        for _, starts, ends in self._chunk_arrays():
            arrays = [b.decl("int64_t *", name, call("calloc", length, SizeOf("int64_t"))) for name in (starts, ends)]
            b.fail(or_(*(not_(array) for array in arrays)), ReturnCode.OUT_OF_MEMORY)

    def declare_chunk_sizes(self, b: CBuilder) -> None:
        """In the region: this thread's sizes, which the phases' code counts (shadowing the totals)."""
        for size in self._counters():
            b.decl("int64_t", size, 0)

    def count_chunk(self, thread: str, b: CBuilder) -> None:
        """After a count (or bound) phase: this thread's counts."""
        for size, starts, _ in self._chunk_arrays():
            b.assign(Var(starts)[Var(thread)], Var(size))

    def sum_chunks(self, team: str, b: CBuilder) -> None:
        """By one thread: the chunks' counts become their starts; its own sizes become the totals, which
        the arrays are then allocated at."""
        t = Var("t")
        for size, starts, _ in self._chunk_arrays():
            b.assign(Var(size), 0)
            with b.for_(*_team_loop(team)):
                n = b.decl("const int64_t", "n", Var(starts)[t])
                b.assign(Var(starts)[t], Var(size))
                b.assign(Var(size), n, "+=")

    def start_chunk(self, thread: str, b: CBuilder) -> None:
        """Before the fill: this thread's sizes start at its chunk's start."""
        for size, starts, _ in self._chunk_arrays():
            b.assign(Var(size), Var(starts)[Var(thread)])

    def end_chunk(self, thread: str, b: CBuilder) -> None:
        for size, _, ends in self._chunk_arrays():
            b.assign(Var(ends)[Var(thread)], Var(size))

    def _anchor(self, level: int) -> tuple[str, Expr] | None:
        """The size counting the positions that index `level`'s, and how many of `level`'s each has (dense
        levels below a sparse one multiply them); None when no sparse level is at or above `level`."""
        scale = []
        while level >= 0 and self.levels[level].properties.full:
            scale.insert(0, self.dims[level])
            level -= 1
        if level < 0:
            return None
        return names.size(self.name, self._head(level)), block_size(scale)

    def _positioned(self) -> list[tuple[str, str, tuple[str, Expr] | None, int]]:
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
        t = Var("t")
        for size, starts, ends in self._chunk_arrays():
            b.assign(Var(size), 0)
            with b.for_(*_team_loop(team)):
                start = b.decl("const int64_t", "from", Var(starts)[t])
                n = b.decl("const int64_t", "n", Var(ends)[t] - start)
                with b.if_(and_(gt(n, 0), ne(start, Var(size)))):
                    for ident, ctype, anchor, offset in self._positioned():
                        if anchor is None or anchor[0] != size:
                            continue
                        array, scale = Var(ident), anchor[1]
                        b.expr(call("memmove", array + Var(size) * scale + offset, array + start * scale + offset,
                                    cast("size_t", n * scale) * SizeOf(ctype)))
                b.assign(Var(size), n, "+=")
            free_arrays(b, starts, ends)

    def _coordinate_var(self, level: int) -> str:
        return names.user(self.name, f"c{level + 1}")

    def bind(self, level: int, coordinate: Expr, b: CBuilder) -> None:
        """Remember the coordinate of a grouped level until its group commits (COO rows)."""
        if self.filling and not self.levels[level].properties.full:
            b.decl("const int64_t", self._coordinate_var(level), coordinate)


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
        """Every store is at a place of its own: an operand position (each visited once), or located below
        one by a coordinate of a unique level, whose iterations differ (TTV's CSR rows over a CSF tensor's
        first level, each row's count stored by the iteration that visits it, summed after the loops)."""
        return True

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

    def _source_count(self, level: int) -> Expr:
        if level < 0:
            return Literal(1)
        if self.source_levels[level].properties.full:
            return self._source_count(level - 1) * as_expr(self.dims[level])
        parents = self._source_count(level - 1)
        return self.source_levels[level].position_range(self.source_arrays[level], Literal(0), parents)[1]

    def allocate(self, b: CBuilder) -> None:
        for level, lv in enumerate(self.levels):
            if not lv.properties.full and not lv.properties.branchless:
                size = b.decl("const int64_t", names.size(self.name, level), self._source_count(level))
                b.fail(gt(size, self._limit()), ReturnCode.INDEX_OVERFLOW)
            for array in lv.array_names:
                length = self._length(level, array)
                counted = array == "pos" and self._counted(level)
                copy = b.decl(self.index_type.pointer(), self._array(level, array),
                              _allocation(length, self.index_type, counted))
                b.fail(not_(copy), ReturnCode.OUT_OF_MEMORY)
                if array != "crd" and not counted:
                    with b.for_range("p", 0, length):
                        b.assign(copy[Var("p")], Var(self.source_arrays[level][array])[Var("p")])
        count = self._count(len(self.levels) - 1)
        # dense levels over sparse ones: the positions no operand entry reaches stay zero
        zeroed = self._suffix or not self._mirrored(len(self.levels) - 1)
        vals = b.decl(self.value_type.pointer(), names.vals(self.name), _allocation(count, self.value_type, zeroed))
        b.fail(not_(vals), ReturnCode.OUT_OF_MEMORY)

    def enter(self, level, coordinate, parent, reads, b) -> Position:
        if level >= len(self.source_levels):
            return located(self.levels[level], parent, coordinate, self.dims[level])
        source = reads[(self.source, level)]
        if self._mirrored(level):
            if "crd" in self.levels[level].array_names:
                b.assign(Var(self._array(level, "crd"))[source.begin], coordinate)
            return source
        position = located(self.levels[level], parent, coordinate, self.dims[level])
        below = level + 1
        if below < len(self.source_levels) and self._counted(below):
            begin, end = self.source_levels[below].position_range(self.source_arrays[below], source.begin,
                                                                  source.last)
            b.assign(Var(self._array(below, "pos"))[position.begin + 1], end - begin)
        return position

    def store(self, position: Position, op: Combine, value: Expr, b: CBuilder) -> None:
        """A shared position is stored once (a reduction below it is summed in a register first); a
        position of the dense levels below may take a sum."""
        combine(b, Var(names.vals(self.name))[position.begin], value, op if self._suffix else "=")

    def finish(self, b: CBuilder) -> None:
        for level in range(len(self.levels)):
            if self._counted(level):
                _prefix_sum(Var(self._array(level, "pos")), self._count(level - 1), b)


def _prefix_sum(pos: Var, parents: Expr, b: CBuilder) -> None:
    """Close a pos array whose entries counted each parent's children: pos[p + 1] += pos[p]."""
    p = Var("p")
    with b.for_range(p.name, 0, parents):
        b.assign(pos[p + 1], pos[p], "+=")
