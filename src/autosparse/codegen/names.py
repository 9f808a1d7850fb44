"""Every C identifier and type name of a generated kernel comes from here, so names never collide and
the C reads the same everywhere."""

from __future__ import annotations

import numpy as np

INDEX_TYPES = {np.dtype(np.int32): "int32_t", np.dtype(np.int64): "int64_t"}
VALUE_TYPES = {
    np.dtype(np.float64): "double",
    np.dtype(np.float32): "float",
    np.dtype(np.int64): "int64_t",
    np.dtype(np.complex128): "double _Complex",
}


def index_type(dtype) -> str:
    return INDEX_TYPES[np.dtype(dtype)]


def value_type(dtype) -> str:
    return VALUE_TYPES[np.dtype(dtype)]


def array(tensor: str, level: int, name: str) -> str:
    return f"{tensor}{level + 1}_{name}"


def vals(tensor: str) -> str:
    return f"{tensor}_vals"


def extent(index) -> str:
    return f"N_{index}"


#: Identifiers an index variable's own name would collide with: C's keywords, what the kernel's headers
#: define (complex.h's `I`, the allocation and copy functions), and the names the kernel itself declares
#: around the loops (its arguments, helpers, and the flags and counters of parallel regions).
RESERVED = frozenset("""
    auto break case char const continue default do double else enum extern float for goto if inline int
    long register restrict return short signed sizeof static struct switch typedef union unsigned void
    volatile while I complex imaginary bool true false NULL
    args dims sizes counters min64 result_array order_touched calloc malloc realloc free memset memmove
    memcpy qsort madvise failed thread threads team trips
""".split())


def coordinate(index) -> str:
    """The C variable holding an index's coordinate: its name, unless that is reserved."""
    name = str(index)
    return f"{name}_" if name in RESERVED else name


def position(access: str, level: int) -> str:
    return f"p{access}{level + 1}"


def position_end(access: str, level: int) -> str:
    return f"p{access}{level + 1}_end"


def segment_end(access: str, level: int) -> str:
    return f"p{access}{level + 1}_seg"


def coordinate_of(access: str, level: int) -> str:
    return f"{access}{level + 1}_i"


def size(tensor: str, level: int) -> str:
    return f"{tensor}{level + 1}_size"


def capacity(tensor: str, level: int, name: str) -> str:
    return f"{tensor}{level + 1}_{name}_cap"


def found(tensor: str, level: int) -> str:
    return f"{tensor}{level + 1}_found"


class Fresh:
    """Numbered names for temporaries of the generated code (accumulators, values)."""

    def __init__(self):
        self._count = 0

    def __call__(self, stem: str) -> str:
        self._count += 1
        return f"{stem}{self._count}"
