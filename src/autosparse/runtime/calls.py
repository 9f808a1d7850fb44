"""Calling a kernel: operands -> the ABI's arguments -> the C function -> its ReturnCode -> a result Tensor.

    call = KernelCall(load_kernel(source), types, result_format)   # once per specialisation
    bound = call.bind(extents)                                     # once per call signature: memory checks
    outcome = bound.run(operands)                                  # each call

Everything here is driven by what the `KernelSource` declares (slots, the indices that fill `dims`, the
result's indices, dense workspaces, bitmaps, promised extents, counters), so calling a kernel reads
nothing of lowering.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from math import prod
from typing import Mapping

import numpy as np

from ..cin.provenance import Bound, BoundKind
from ..config import check_allocation, memory_limit
from ..errors import ShapeError
from ..format import Format
from ..tensor import Tensor
from ..tensor import storage as st
from .abi import SYMBOL, KernelSource, ReturnCode, Types, raise_failure
from .buffers import address, adopt
from .library import load_library


@dataclass(frozen=True)
class LoadedKernel:
    source: KernelSource
    function: object  # the ctypes function


def load_kernel(source: KernelSource) -> LoadedKernel:
    """The kernel's C function, compiled (or found in the cache) and typed as the ABI says."""
    function = getattr(load_library(source.source, openmp=source.openmp), SYMBOL)
    function.restype = ctypes.c_int
    function.argtypes = None  # BoundCall.run passes four ctypes arrays, as pointers: converting each to a
    # declared c_void_p took a third of the C call's 1.1 µs
    return LoadedKernel(source, function)


class KernelCall:
    """One specialised kernel and what calling it needs, precomputed: argument order, how to wrap the
    result in `fmt`, the dtypes of its values and indices."""

    def __init__(self, kernel: LoadedKernel, types: Types, fmt: Format):
        self.source, self.function, self.fmt = kernel.source, kernel.function, fmt
        result = self.source.result
        self.value_dtype, self.index_dtype = types.values[result], types.indices[result]
        self.inputs = tuple((k, slot.tensor, slot.level, slot.array) for k, slot in enumerate(self.source.slots)
                            if slot.tensor != result)
        self.outputs = tuple((k, slot.level, slot.array) for k, slot in enumerate(self.source.slots)
                             if slot.tensor == result)
        self.slot_count = len(self.source.slots)
        self.address = ctypes.cast(self.function, ctypes.c_void_p).value  # for runtime/sequence.py
        self.pointer_array = ctypes.c_void_p * self.slot_count
        self.counter_count = len(self.source.counters or ()) + 1

    def bind(self, extents) -> BoundCall:
        """This specialisation for one set of extents, after the checks that depend on them: the
        schedule's promised extents, and the memory the kernel or its caller would allocate."""
        source = self.source
        for bound in source.bounds:
            _check_promise(bound, extents[bound.index])
        for workspace in source.workspaces:
            check_allocation(prod(extents[i] for i in workspace.indices) * workspace.bytes_per_entry,
                             f"the dense workspace {workspace.name}({','.join(map(str, workspace.indices))})")
        for index in source.bitmaps:
            check_allocation((extents[index] + 1) * 8 + (extents[index] // 64 + 1) * 8,
                             f"the co-iteration bitmap over {index}")
        shape = tuple(extents[i] for i in source.result_indices)
        if not source.assembled:
            check_allocation(prod(shape) * self.value_dtype.itemsize,
                             f"the dense result {source.result} of shape {shape}")
        else:
            _check_static_levels(self.fmt, [extents[i] for i in source.result_level_indices], self.index_dtype)
        return BoundCall(self, shape, [extents[i] for i in source.indices])


class BoundCall:
    """A specialisation bound to the extents of one call signature: a call gathers the operands' buffer
    addresses, runs the kernel and wraps what it returns. `dims`, and for a dense result `sizes` and the
    counters of an uninstrumented kernel, are never written by the kernel, so calls share them (two
    threads may call at once)."""

    def __init__(self, call: KernelCall, shape: tuple[int, ...], dims: list[int]):
        self.call, self.shape, self.limit = call, shape, memory_limit()
        # a dense result's values as the kernel writes them: its modes in storage order
        self.stored_shape = tuple(shape[mode] for mode in call.fmt.mode_order) if not call.source.assembled else shape
        self.dims = (ctypes.c_int64 * max(len(dims), 1))(*dims)
        self.shared_sizes = (ctypes.c_int64 * len(call.source.slots))()
        self.shared_counters = (ctypes.c_int64 * 1)()
        # for runtime/sequence.py, which passes them to its driver as addresses
        self.dims_address, self.sizes_address, self.counters_address = \
            ctypes.addressof(self.dims), ctypes.addressof(self.shared_sizes), ctypes.addressof(self.shared_counters)

    def run(self, operands: Mapping[str, "Tensor | np.ndarray"]):
        """(the result, the loops' counts if instrumented), or ReturnCode.INDEX_OVERFLOW: the caller
        retries with int64 indices. Any other failure is raised. A dense result comes as its values, a
        writeable numpy array of `stored_shape` the caller owns (`dense_tensor` wraps it), a sparse one
        as a Tensor: a warm call of a small kernel lasts microseconds, and wrapping a dense result only
        to unwrap it again cost a third of them (reshaping it afterwards, another 0.15 µs)."""
        call = self.call
        source = call.source
        args = self.arguments(operands)
        assembled = source.assembled
        if not assembled:
            result_vals = self.dense_result()
            args[call.outputs[0][0]] = address(result_vals)
        sizes = (ctypes.c_int64 * call.slot_count)() if assembled else self.shared_sizes
        counters = self.shared_counters if source.counters is None else (ctypes.c_int64 * call.counter_count)()
        code = call.function(args, self.dims, sizes, counters)
        if code:  # ReturnCode.OK is 0
            if code == ReturnCode.INDEX_OVERFLOW:
                return ReturnCode.INDEX_OVERFLOW
            raise_failure(code, source)
        counts = None if source.counters is None else _counts(source.counters, counters)
        if not assembled:
            return result_vals, counts
        result = Tensor.from_read_only_storage(self.shape, call.fmt, _adopted(call, args, sizes), source.result_fill)
        return result, counts

    def arguments(self, operands: Mapping[str, "Tensor | np.ndarray"]):
        """The kernel's `args`: each operand's arrays' addresses, NULL where the kernel allocates (set item by
        item: 2.5x faster than from a list)."""
        call = self.call
        args = call.pointer_array()
        for k, name, level, array in call.inputs:
            value = operands[name]
            args[k] = value.address(level, array) if type(value) is Tensor else address(value)
        return args

    def dense_result(self) -> np.ndarray:
        """A dense result's values before the kernel writes them: not cleared where the kernel writes each one,
        else holding its fill."""
        source, call = self.call.source, self.call
        if source.zeroes_result:
            return np.empty(self.stored_shape, dtype=call.value_dtype)
        if source.result_fill != 0:
            return np.full(self.stored_shape, source.result_fill, dtype=call.value_dtype)
        return np.zeros(self.stored_shape, dtype=call.value_dtype)

    def dense_tensor(self, values: np.ndarray) -> Tensor:
        """A dense result's values, as `run` returns them, as the result Tensor (read-only from now on)."""
        values = values.reshape(-1)
        values.flags.writeable = False
        storage = st.Storage(tuple({} for _ in self.call.fmt.levels), values)
        return Tensor.from_read_only_storage(self.shape, self.call.fmt, storage, self.call.source.result_fill)


def _adopted(call: KernelCall, args, sizes) -> st.Storage:
    """The arrays an assembling kernel allocated, owned (and freed) by numpy from now on."""
    levels, vals = [dict() for _ in call.fmt.levels], None
    for k, level, array in call.outputs:
        dtype = call.value_dtype if level < 0 else call.index_dtype
        adopted = adopt(args[k] or 0, int(sizes[k]), dtype)
        adopted.flags.writeable = False
        if level < 0:
            vals = adopted
        else:
            levels[level][array] = adopted
    return st.Storage(tuple(levels), vals)


def _check_promise(bound: Bound, extent: int) -> None:
    """The kernel was written for the extent a `bound` command promised: a call must keep the promise."""
    if extent > bound.size or bound.kind is BoundKind.MAX_EXACT and extent != bound.size:
        relation = "exactly" if bound.kind is BoundKind.MAX_EXACT else "at most"
        raise ShapeError(f"The schedule's {bound} promises that {bound.index} has extent {relation} "
                         f"{bound.size}, but the operands give it {extent}")


def _counts(labels: tuple[str, ...], counters) -> dict[str, int]:
    """An instrumented kernel's counters by label (a label counted in several places summed)."""
    counts: dict[str, int] = {}
    for label, value in zip(labels, counters):
        counts[label] = counts.get(label, 0) + int(value)
    return counts


def _check_static_levels(fmt: Format, dims, index_dtype: np.dtype) -> None:
    """A result's dense top levels are allocated whole (CSR's pos has a slot per row): refuse them over
    the memory limit before the kernel runs."""
    count = 1
    for level, dim in zip(fmt.levels, dims):
        if not level.properties.full:
            check_allocation((count + 1) * index_dtype.itemsize, f"the positions below {count:,} dense rows")
            return
        count *= dim
