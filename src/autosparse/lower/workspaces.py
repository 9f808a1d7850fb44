"""Temporaries of `where` (LOWERING.md §5): written by the producer, read by the consumer, reset after.

  ListWorkspace    one index: w[N], a touched flag per coordinate and the list of touched coordinates.
                   The consumer steps the sorted list; the reset walks it, so a row costs its entries.
  DenseWorkspace   any order (a scalar too): a dense array, located, cleared after the consumer.
  HashedWorkspace  any order: open addressing on the linearised coordinates (so a hypersparse workspace
                   costs its entries); the consumer steps the entries sorted by coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..codegen import names
from ..codegen.builder import CBuilder
from ..format.dense import Dense
from .reads import Position, ReadLevel, TensorLevel
from .writes import Target


class Workspace(Target):
    def read_level(self, level: int) -> ReadLevel:
        raise NotImplementedError

    def prepare_read(self, b: CBuilder) -> None: ...

    def reset(self, b: CBuilder) -> None: ...

    def release(self, b: CBuilder) -> None: ...


@dataclass(frozen=True)
class DenseWorkspace(Workspace):
    name: str
    dims: tuple[str, ...]
    value_type: str

    def _size(self) -> str:
        return " * ".join(("1", *self.dims))

    def allocate(self, b: CBuilder) -> None:
        b.line(f"{self.value_type} *{names.vals(self.name)} = calloc((size_t)({self._size()}), "
               f"sizeof({self.value_type}));")
        b.line(f"if (!{names.vals(self.name)}) return 1;")

    def enter(self, level, coordinate, parent, b) -> Position:
        return Position(Dense().locate({}, parent.begin, coordinate, self.dims[level]))

    def read_level(self, level: int) -> ReadLevel:
        return TensorLevel(Dense(), {}, self.dims[level])

    def reset(self, b: CBuilder) -> None:
        b.line(f"memset({names.vals(self.name)}, 0, (size_t)({self._size()}) * sizeof({self.value_type}));")

    def release(self, b: CBuilder) -> None:
        b.line(f"free({names.vals(self.name)});")


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
        return Position(coordinate)


@dataclass(frozen=True)
class ListWorkspace(Workspace):
    flag_free = False  # a store marks its coordinate touched
    name: str
    dim: str
    value_type: str

    @property
    def list(self) -> str:
        return f"{self.name}_list"

    @property
    def count(self) -> str:
        return f"{self.name}_count"

    @property
    def touched(self) -> str:
        return f"{self.name}_touched"

    def allocate(self, b: CBuilder) -> None:
        vals = names.vals(self.name)
        b.line(f"{self.value_type} *{vals} = calloc((size_t){self.dim}, sizeof({self.value_type}));")
        b.line(f"uint8_t *{self.touched} = calloc((size_t){self.dim}, 1);")
        b.line(f"int64_t *{self.list} = malloc((size_t){self.dim} * sizeof(int64_t) + 1);")
        b.line(f"int64_t {self.count} = 0;")
        b.line(f"if (!{vals} || !{self.touched} || !{self.list}) return 1;")

    def enter(self, level, coordinate, parent, b) -> Position:
        return Position(coordinate)

    def store(self, position: Position, op: str, value: str, b: CBuilder) -> None:
        with b.block(f"if (!{self.touched}[{position.begin}])"):
            b.line(f"{self.touched}[{position.begin}] = 1;")
            b.line(f"{self.list}[{self.count}++] = {position.begin};")
        super().store(position, op, value, b)

    def read_level(self, level: int) -> ReadLevel:
        return _ListLevel(self)

    def prepare_read(self, b: CBuilder) -> None:
        b.line(f"if (sort_coordinates({self.list}, {self.count})) return 1;")

    def reset(self, b: CBuilder) -> None:
        with b.block(f"for (int64_t q = 0; q < {self.count}; q++)"):
            b.line(f"{names.vals(self.name)}[{self.list}[q]] = 0;")
            b.line(f"{self.touched}[{self.list}[q]] = 0;")
        b.line(f"{self.count} = 0;")

    def release(self, b: CBuilder) -> None:
        for array in (names.vals(self.name), self.touched, self.list):
            b.line(f"free({array});")


SORT_HELPER = """
/* Ascending sort of n coordinates: insertion sort for short lists, LSD radix sort on 11-bit digits
   (only as many passes as the largest value needs) otherwise. */
static int sort_coordinates(int64_t *a, int64_t n) {
    if (n <= 32) {
        for (int64_t k = 1; k < n; k++) {
            int64_t v = a[k], m = k - 1;
            while (m >= 0 && a[m] > v) { a[m + 1] = a[m]; m--; }
            a[m + 1] = v;
        }
        return 0;
    }
    int64_t largest = 0;
    for (int64_t k = 0; k < n; k++) if (a[k] > largest) largest = a[k];
    int64_t *spare = malloc((size_t)n * sizeof(int64_t));
    if (!spare) return 1;
    int64_t *from = a, *to = spare;
    for (int shift = 0; shift < 64 && (largest >> shift) > 0; shift += 11) {
        int64_t counts[2049] = {0};
        for (int64_t k = 0; k < n; k++) counts[((from[k] >> shift) & 0x7FF) + 1]++;
        for (int d = 0; d < 2048; d++) counts[d + 1] += counts[d];
        for (int64_t k = 0; k < n; k++) to[counts[(from[k] >> shift) & 0x7FF]++] = from[k];
        int64_t *t = from; from = to; to = t;
    }
    if (from != a) memcpy(a, from, (size_t)n * sizeof(int64_t));
    free(spare);
    return 0;
}
"""
