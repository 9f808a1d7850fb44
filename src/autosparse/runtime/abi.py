"""The kernel ABI: the one contract between the code lowering writes and the runtime that calls it.

    int autosparse_kernel(void **args, const int64_t *dims, int64_t *sizes, int64_t *counters)

`args` holds one pointer per `Slot`: each operand's level arrays and values, then the result's. A dense
result's values are allocated by the caller (zeroed unless `zeroes_result`); an assembled result's arrays
are allocated by the kernel, which writes their pointers back into `args` and their lengths into `sizes`.
`dims[k]` is the extent of `indices[k]`. The return value is a `ReturnCode`. Nothing is global: concurrent
calls are safe.

Lowering produces a `KernelSource`; the runtime reads nothing else of lowering. Besides the C text it
declares everything a caller needs to check and marshal a call (`runtime.calls`): the slots, the indices
whose extents fill `dims`, the result's indices, the memory the kernel will allocate and the extents the
schedule promised.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..cin.provenance import Bound
from ..errors import CoordinateError, FormatError, OrderError
from ..notation.ast import IndexVar

#: The name of the one function every kernel's shared object exports.
SYMBOL = "autosparse_kernel"


class ReturnCode(enum.IntEnum):
    """What a kernel returns. Every code but OK and INDEX_OVERFLOW (the caller retries with int64
    indices) is an error the caller raises."""

    OK = 0
    OUT_OF_MEMORY = 1
    INDEX_OVERFLOW = 2  # a position outgrew the result's index type
    DUPLICATE = 3  # an operand found by hashing its whole coordinates holds one twice
    COORDINATE_OUT = 4  # a coordinate the kernel checks (`Types.checked`) is negative or past its extent
    OUT_OF_ORDER = 5  # a run of coordinates the kernel checks comes after a larger one (`Types.checked`)


@dataclass(frozen=True)
class Slot:
    """An argument slot of the kernel ABI: a pointer the kernel reads (or, for results it assembles,
    writes back), and the length it reports for it in `sizes`."""

    tensor: str
    level: int  # -1 for values
    array: str


@dataclass(frozen=True)
class Types:
    """The dtypes a kernel is specialised for: values and indices of every tensor but the temporaries."""

    values: Mapping[str, np.dtype]
    indices: Mapping[str, np.dtype]
    #: operands whose coordinates no one has checked (a scipy coo_matrix's arrays, which its owner may
    #: change between calls): the kernel compares each with its extent where it reads it, and where their
    #: format promises increasing runs (sorted COO's rows), each run's first with the entry before it
    checked: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WorkspaceSize:
    """A dense workspace the kernel allocates: `bytes_per_entry` for each coordinate of `indices`, which
    the caller checks against the memory limit before the call rather than let `malloc` fail late."""

    name: str
    indices: tuple[IndexVar, ...]
    bytes_per_entry: int


@dataclass(frozen=True)
class KernelSource:
    source: str
    operands: tuple[str, ...]
    result: str
    slots: tuple[Slot, ...]
    assembled: bool  # whether the kernel allocates the result (else the caller passes its values)
    indices: tuple[IndexVar, ...]
    counters: tuple[str, ...] | None
    result_indices: tuple[IndexVar, ...]  # the result's indices by mode: its shape
    result_level_indices: tuple[IndexVar, ...]  # by level: the extents of its dense top levels
    workspaces: tuple[WorkspaceSize, ...]
    bounds: tuple[Bound, ...]  # the extents the schedule promised (`bound`), which the kernel relies on
    openmp: bool = False  # whether a loop is parallel (built with -fopenmp)
    bitmaps: tuple[IndexVar, ...] = ()  # the dimension of each co-iteration bitmap (8 bytes and a bit an entry)
    hashed: tuple[str, ...] = ()  # the operands hashed by their whole coordinates (keyed.py)
    zeroes_result: bool = False  # whether the kernel zeroes each row of its dense result (the caller need not)
    checked: tuple[str, ...] = ()  # the operands whose coordinates it checks (`Types.checked`)
    result_fill: object = 0  # the result's fill: a dense result's values start at it, a sparse result keeps it


def raise_failure(code: int, source: KernelSource) -> None:
    """Raise the error a kernel's return `code` stands for; OK and INDEX_OVERFLOW (which the caller
    answers by retrying with int64 indices) raise nothing."""
    if code == ReturnCode.OUT_OF_MEMORY:
        raise MemoryError(f"the kernel for {source.result} ran out of memory")
    if code == ReturnCode.DUPLICATE:
        raise FormatError(f"Expected each coordinate once in {' or '.join(source.hashed)}, which the kernel finds "
                          f"by hashing whole coordinates, but one is stored twice: sum duplicates first "
                          f"(Tensor.from_coo does)")
    if code == ReturnCode.COORDINATE_OUT:
        raise CoordinateError(f"Expected every coordinate of {' and '.join(source.checked)} within its shape, but "
                              f"one is negative or past its extent")
    if code == ReturnCode.OUT_OF_ORDER:
        raise OrderError(f"Expected the coordinates of {' and '.join(source.checked)} in increasing runs, as the "
                         f"kernel read them, but one run comes after a larger one")
    if code not in (ReturnCode.OK, ReturnCode.INDEX_OVERFLOW):
        raise RuntimeError(f"the kernel for {source.result} returned {code}, which no ReturnCode names")
