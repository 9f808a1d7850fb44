"""The pipeline end to end: expression + formats + schedule -> CIN -> C -> shared object -> results.

    k = compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
    C = k(A=A, B=B)

A `Kernel` is specialised lazily, once per combination of operand dtypes, and the specialisations are
memoised process-wide (keyed by the CIN and the dtypes), so a repeated `evaluate` skips the pipeline.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from math import prod
from typing import Mapping

import numpy as np

from ..cin import Stmt, assignments, concretize, parse_cin, tensors
from ..config import check_allocation
from ..errors import AutosparseError, ScheduleError
from ..format import Format
from ..format.spec import as_format
from ..lower.kernel import SYMBOL, KernelSource, Types, generate
from ..notation import Assignment, accesses, index_extents, parse
from ..runtime import adopt, load_library
from ..tensor import Tensor
from ..tensor import storage as st
from .operands import as_tensor, result_index_dtype, result_value_dtype

_OUT_OF_MEMORY, _INDEX_OVERFLOW = 1, 2


@dataclass(frozen=True)
class _Compiled:
    source: KernelSource
    function: object  # the ctypes function


_memo: dict[tuple, _Compiled] = {}


class Kernel:
    """A compiled expression; call it with the operands by name."""

    def __init__(self, expression: "str | Assignment", formats: Mapping[str, "str | Format"] | None = None,
                 schedule=None, num_threads: int | None = None, instrument: bool = False):
        self.assignment = parse(expression) if isinstance(expression, str) else expression
        formats = dict(formats or {})
        orders = {a.tensor: len(a.indices) for a in (*accesses(self.assignment.rhs), self.assignment.lhs)}
        self.temporary_formats = {n: formats.pop(n) for n in list(formats) if n not in orders}
        if self.temporary_formats and not isinstance(schedule, str):
            raise AutosparseError(f"Expected formats only for tensors of {self.assignment}, but found "
                                  f"{sorted(self.temporary_formats)}")
        self.formats = {name: as_format(formats.get(name, "dense"), order) for name, order in orders.items()}
        self.schedule, self.instrument = schedule, instrument
        self.num_threads = num_threads
        self._cin = self._schedule({})
        self.counts: dict[str, int] | None = None

    # --- what the user inspects ---

    @property
    def cin(self) -> Stmt:
        return self._cin

    @property
    def source(self) -> str:
        return self._specialise(self._cin, self._default_types()).source.source

    # --- the pipeline ---

    def _schedule(self, extents) -> Stmt:
        if self.schedule is None:
            return concretize(self.assignment, self.formats, extents)
        if isinstance(self.schedule, str):
            text = self.schedule.strip()
            if text.startswith(("∀", "forall", "where", "sequence")):
                return parse_cin(text, {**self.formats, **self.temporary_formats})
            raise ScheduleError(f"Expected None or a CIN statement as the schedule, but found {self.schedule!r} "
                                f"(scheduling commands are not supported yet)")
        if isinstance(self.schedule, (tuple,)) or not hasattr(self.schedule, "children"):
            raise ScheduleError(f"Expected None, CIN text or a CIN statement as the schedule, but found "
                                f"{type(self.schedule).__name__}")
        return self.schedule

    def _default_types(self) -> Types:
        names = [n for n, v in tensors(self._cin).items() if not v.temporary]
        return Types({n: np.dtype(np.float64) for n in names}, {n: np.dtype(np.int32) for n in names})

    def _specialise(self, cin: Stmt, types: Types) -> _Compiled:
        key = (cin, tuple(sorted(types.values.items())), tuple(sorted(types.indices.items())), self.instrument)
        compiled = _memo.get(key)
        if compiled is None:
            source = generate(cin, types, self.instrument)
            library = load_library(source.source)
            function = getattr(library, SYMBOL)
            function.restype = ctypes.c_int
            function.argtypes = [ctypes.c_void_p] * 4
            compiled = _memo[key] = _Compiled(source, function)
        return compiled

    # --- calling ---

    def __call__(self, **operands):
        names = {a.tensor for a in accesses(self.assignment.rhs)}
        missing, extra = names - operands.keys(), operands.keys() - names
        if missing or extra:
            raise AutosparseError(f"Expected operands {sorted(names)}, but found {sorted(operands)}")
        tensors_in = {n: as_tensor(v, self.formats[n], n) for n, v in operands.items()}
        extents = index_extents(self.assignment, {n: t.shape for n, t in tensors_in.items()})
        cin = self._cin if self.schedule is not None else self._schedule(extents)
        value_dtype = result_value_dtype(tensors_in)
        index_dtype = result_index_dtype(tensors_in, extents.values())
        result = self.assignment.lhs
        shape = tuple(extents[i] for i in result.indices)
        while True:
            types = Types({**{n: t.dtype for n, t in tensors_in.items()}, result.tensor: value_dtype},
                          {**{n: t.index_dtype for n, t in tensors_in.items()}, result.tensor: index_dtype})
            compiled = self._specialise(cin, types)
            outcome = _run(compiled, tensors_in, shape, extents, self.formats[result.tensor], types, cin)
            if outcome is not _INDEX_OVERFLOW:
                break
            index_dtype = np.dtype(np.int64)
        tensor, counts = outcome
        self.counts = counts
        return tensor if tensor.order else tensor.vals[0].item()


def _run(compiled: _Compiled, operands: Mapping[str, Tensor], shape, extents, fmt: Format, types: Types, cin):
    source = compiled.source
    dims = np.array([extents[i] for i in source.indices], dtype=np.int64)
    _check_workspaces(cin, extents, types.values[source.result])
    value_dtype, index_dtype = types.values[source.result], types.indices[source.result]
    if not source.assembled:
        check_allocation(prod(shape) * value_dtype.itemsize, f"the dense result {source.result}{list(shape)}")
        result_vals = np.zeros(prod(shape), dtype=value_dtype)
    else:
        _check_static_levels(fmt, [extents[i] for i in _level_indices(cin, source.result)], index_dtype)
    pointers = []
    for slot in source.slots:
        if slot.tensor == source.result:
            pointers.append(result_vals.ctypes.data if not source.assembled else None)
            continue
        tensor = operands[slot.tensor]
        array = tensor.vals if slot.level < 0 else tensor.levels[slot.level][slot.array]
        pointers.append(array.ctypes.data)
    args = (ctypes.c_void_p * len(pointers))(*pointers)
    sizes = np.zeros(len(pointers), dtype=np.int64)
    counters = np.zeros(len(source.counters or ()) + 1, dtype=np.int64)
    code = compiled.function(args, dims.ctypes.data, sizes.ctypes.data, counters.ctypes.data)
    if code == _INDEX_OVERFLOW:
        return _INDEX_OVERFLOW
    if code == _OUT_OF_MEMORY:
        raise MemoryError(f"the kernel for {source.result} ran out of memory")
    counts = _counts(source, counters)
    if not source.assembled:
        storage = st.Storage(tuple({} for _ in fmt.levels), result_vals)
        return Tensor._trusted(shape, fmt, storage), counts
    levels = [dict() for _ in fmt.levels]
    vals = None
    for k, slot in enumerate(source.slots):
        if slot.tensor != source.result:
            continue
        dtype = value_dtype if slot.level < 0 else index_dtype
        array = adopt(args[k] or 0, int(sizes[k]), dtype)
        if slot.level < 0:
            vals = array
        else:
            levels[slot.level][slot.array] = array
    return Tensor._trusted(shape, fmt, st.Storage(tuple(levels), vals)), counts


def _counts(source: KernelSource, counters: np.ndarray) -> dict[str, int] | None:
    if source.counters is None:
        return None
    counts: dict[str, int] = {}
    for label, value in zip(source.counters, counters):
        counts[label] = counts.get(label, 0) + int(value)
    return counts


def _level_indices(cin: Stmt, name: str):
    return next(a.lhs.level_indices for a in assignments(cin) if a.lhs.tensor.name == name)


def _check_static_levels(fmt: Format, dims, index_dtype: np.dtype) -> None:
    """A result's dense top levels are allocated whole (CSR's pos has a slot per row): refuse them over
    the memory limit before the kernel runs."""
    count = 1
    for level, dim in zip(fmt.levels, dims):
        if not level.properties.full:
            check_allocation((count + 1) * index_dtype.itemsize, f"the positions below {count:,} dense rows")
            return
        count *= dim


def _check_workspaces(cin: Stmt, extents, value_dtype: np.dtype) -> None:
    for name, var in tensors(cin).items():
        if var.temporary and var.format.is_dense:
            indices = next(a.lhs.indices for a in assignments(cin) if a.lhs.tensor.name == name)
            size = prod(extents[i] for i in indices)
            check_allocation(size * (value_dtype.itemsize + (9 if var.order == 1 else 0)),
                             f"the dense workspace {name}{list(indices)}")
