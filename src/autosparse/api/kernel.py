"""The pipeline end to end: expression + formats + schedule -> CIN -> C -> shared object -> results.

    k = compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "csr", "B": "csr", "C": "csr"})
    C = k(A=A, B=B)

A `Kernel` is specialised lazily, once per combination of operand dtypes, and the specialisations are
memoised process-wide (keyed by the CIN and the dtypes), so a repeated `evaluate` skips the pipeline.
"""

from __future__ import annotations

import ctypes
import numbers
import re
from dataclasses import dataclass
from math import prod
from typing import Mapping

import numpy as np

from ..cin import Stmt, assignments, default_loops, legalise, loop_indices, parse_cin, tensors
from ..cin import accesses as cin_accesses
from ..cin.check import check_computes
from ..cin.provenance import Bound, BoundKind, Provenance, split_relations
from ..cin.concretize import DENSE_WORKSPACE_LIMIT
from ..config import check_allocation, memory_limit
from ..errors import AutosparseError, FormatError, ScheduleError, ShapeError
from ..format import Capability, Compressed, Format, Layout
from ..format.spec import as_format, format_mapping
from ..lower.kernel import generate
from ..lower.workspaces import ListWorkspace
from ..notation import Assignment, Literal, accesses, index_extents, walk
from ..notation.ast import IndexVar
from ..runtime import address, adopt, load_library
from ..runtime.abi import SYMBOL, KernelSource, ReturnCode, Types, raise_failure
from ..coiterate import choice as coiterate
from ..autoschedule.candidate import ScheduleCandidate
from ..schedule import Schedule, blocked
from ..tensor import Tensor
from ..tensor import storage as st
from ..tensor.dtypes import promote_value_dtype
from .operands import as_assignment, as_tensor, result_index_dtype, result_value_dtype

#: The most OpenMP threads a kernel may ask for: more than the cores of any machine it is built for,
#: far fewer than the 100,000 whose stacks and per-thread temporaries crash the process.
MAX_THREADS = 1024


@dataclass(frozen=True)
class _Compiled:
    source: KernelSource
    function: object  # the ctypes function


_memo: dict[tuple, _Compiled] = {}


#: CIN with no loop at all (`s() = a() * b()`, a scalar candidate): an assignment, which no command text is.
_CIN_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*\s*\([^()]*\)\s*\+?=(?!=)")

class Kernel:
    """A compiled expression; call it with the operands by name."""

    def __init__(self, expression: "str | Assignment", formats: Mapping[str, "str | Format"] | None = None,
                 schedule=None, num_threads: int | None = None, instrument: bool = False,
                 coiteration: str | None = None):
        """`coiteration="auto"` marks every loop of the schedule that says nothing of its co-iteration
        `coiterate(i, auto)` (the operands of each call choose)."""
        self.assignment = as_assignment(expression)
        formats = format_mapping(formats)
        if isinstance(schedule, ScheduleCandidate):
            # A candidate reads its operands in formats of its own (the call converts them).
            schedule, needed = schedule.kernel_schedule()
            formats.update(needed)
        orders = {a.tensor: len(a.indices) for a in (*accesses(self.assignment.rhs), self.assignment.lhs)}
        self.temporary_formats = {n: formats.pop(n) for n in list(formats) if n not in orders}
        if self.temporary_formats and not isinstance(schedule, str):
            raise AutosparseError(f"Expected formats only for tensors of {self.assignment}, but found "
                                  f"{sorted(self.temporary_formats)}")
        self.formats = {name: as_format(formats.get(name, "dense"), order) for name, order in orders.items()}
        result = self.assignment.lhs.tensor
        self.result_format = self.formats[result]
        self.formats[result] = _assembly_format(self.result_format)
        self.schedule, self.instrument = schedule, instrument
        self._blocked = {name: fmt for name, fmt in self.formats.items() if isinstance(fmt, Layout)}
        self.num_threads = _checked_threads(num_threads)
        self._cin = self._schedule({})
        if coiteration == "auto":
            self._cin = coiterate.everywhere(self._cin)
        elif coiteration is not None:
            raise ScheduleError(f"Expected coiteration=None or 'auto', but found {coiteration!r}")
        self._auto = coiterate.has_auto(self._cin)  # coiterate(i, auto): chosen per call, from the operands
        self._chosen: Stmt | None = None
        self._derived = _derived_indices(self._cin, self.assignment)
        self._operand_names = {a.tensor for a in accesses(self.assignment.rhs)}
        self._literals = tuple(n.value for n in walk(self.assignment.rhs) if isinstance(n, Literal))
        self._calls: dict[tuple, _Call] = {}
        self._bound: dict[tuple | None, _Bound] = {}
        self._operand_order = tuple(sorted(self._operand_names))
        # Dense operands a C-ordered numpy array can stand for as it is.
        self._plain_arrays = {n for n in self._operand_names if self.formats[n].is_dense
                              and self.formats[n].mode_order == tuple(range(self.formats[n].order))}
        self.counts: dict[str, int] | None = None

    # --- what the user inspects ---

    @property
    def cin(self) -> Stmt:
        return self._cin

    @property
    def source(self) -> str:
        """The C code (for a schedule with `auto` strategies: of the last call's choice)."""
        if self._auto:
            if self._chosen is None:
                raise ScheduleError("coiterate(..., auto) chooses per call, from the operands: call the kernel "
                                    "before reading its source")
            return self._specialise(self._chosen, self._default_types()).source.source
        return self._specialise(self._cin, self._default_types()).source.source

    @property
    def chosen(self) -> Stmt | None:
        """For a schedule with `auto` strategies, the CIN the last call ran (None before any call)."""
        return self._chosen

    # --- the pipeline ---

    def _schedule(self, extents) -> Stmt:
        """The kernel's CIN: the default schedule, hand-written CIN, or scheduling commands (a Schedule,
        or their text) replayed on the default schedule before legalisation."""
        schedule = self.schedule
        if schedule is None:
            return legalise(self._default_loops(), extents)
        if isinstance(schedule, str):
            text = schedule.strip()
            if text == "auto":
                raise ScheduleError("schedule='auto' selects for the operands of one call: use evaluate(..., "
                                    "schedule='auto'), or autoschedule(...).select(**operands) as the schedule")
            if text.startswith(("∀", "forall", "where", "sequence")) or _CIN_ASSIGNMENT.match(text):
                if self._blocked:
                    raise ScheduleError(f"Expected scheduling commands for a kernel reading the blocked operands "
                                        f"{sorted(self._blocked)}, but found CIN: their block views are the kernel's own")
                stmt = parse_cin(text, {**self.formats, **self.temporary_formats})
                check_computes(stmt, self.assignment)
                return stmt
            schedule = Schedule.parse(text)
        if isinstance(schedule, Schedule):
            stmt = legalise(schedule.apply(self._default_loops()), extents)
        elif hasattr(schedule, "children") and not self._blocked:
            stmt = schedule
        else:
            raise ScheduleError(f"Expected None, CIN text, scheduling commands or a CIN statement as the schedule, "
                                f"but found {type(schedule).__name__}")
        if not self._blocked:  # block views are read at the block variables, not the expression's indices
            check_computes(stmt, self.assignment)
        return stmt

    def _default_loops(self) -> Stmt:
        """The default schedule before legalisation; blocked operands read through their block views."""
        if not self._blocked:
            return default_loops(self.assignment, self.formats)
        ordering = {name: blocked.stand_in(fmt) if isinstance(fmt, Layout) else fmt for name, fmt in self.formats.items()}
        return blocked.unblock(default_loops(self.assignment, ordering), self._blocked)

    def _default_types(self) -> Types:
        names = [n for n, v in tensors(self._cin).items() if not v.temporary]
        return Types({n: np.dtype(np.float64) for n in names}, {n: np.dtype(np.int32) for n in names})

    def _specialise(self, cin: Stmt, types: Types) -> _Compiled:
        key = (cin, tuple(sorted(types.values.items())), tuple(sorted(types.indices.items())), self.instrument,
               self.num_threads)
        compiled = _memo.get(key)
        if compiled is None:
            source = generate(cin, types, self.instrument, self.num_threads)
            library = load_library(source.source, openmp=source.openmp)
            function = getattr(library, SYMBOL)
            function.restype = ctypes.c_int
            function.argtypes = [ctypes.c_void_p] * 4
            compiled = _memo[key] = _Compiled(source, function)
        return compiled

    # --- calling ---

    def __call__(self, /, **operands):
        bound = self._bound.get(self._signature(operands))
        if bound is not None and bound.limit == memory_limit():
            outcome = bound.run(operands)
            if outcome is not ReturnCode.INDEX_OVERFLOW:
                return self._deliver(outcome)
        return self._call_general(operands)

    def _signature(self, operands) -> tuple | None:
        """What a call's bound specialisation depends on, when every operand can be passed as it is (a
        Tensor in its compiled format, or a C-ordered numpy array of a kept dtype for a dense operand):
        shapes, dtypes and index dtypes (and, where a strategy is `auto`, the stored-entry count, so
        operands of another size are chosen for afresh). None sends the call down the general path."""
        if len(operands) != len(self._operand_order):
            return None
        parts = []
        for name in self._operand_order:
            value = operands.get(name)
            if type(value) is Tensor:
                kind = value.kind
                if kind[0] is not self.formats[name] and kind[0] != self.formats[name]:
                    return None
                parts.append((kind, value.nnz) if self._auto else kind)
            elif type(value) is np.ndarray and name in self._plain_arrays and value.flags.c_contiguous \
                    and promote_value_dtype(value.dtype) == value.dtype:
                parts.append((value.shape, value.dtype))
            else:
                return None
        return tuple(parts)

    def _call_general(self, operands):
        if operands.keys() != self._operand_names:
            raise AutosparseError(f"Expected operands {sorted(self._operand_names)}, but found {sorted(operands)}")
        formats = self.formats
        tensors_in = {n: as_tensor(v, formats[n], n) for n, v in operands.items()}
        extents = index_extents(self.assignment, {n: t.shape for n, t in tensors_in.items()})
        extents.update({index: tensors_in[name].shape[mode] for index, (name, mode) in self._derived.items()})
        value_dtype = result_value_dtype(tensors_in, self._literals)
        index_dtype = result_index_dtype(tensors_in, extents.values())
        cin = self._chosen = coiterate.resolve(self._cin, tensors_in, extents) if self._auto else None
        while True:
            bound = self._call_for(tensors_in, extents, value_dtype, index_dtype, cin).bind(extents)
            outcome = bound.run(tensors_in)
            if outcome is not ReturnCode.INDEX_OVERFLOW:
                break
            index_dtype = np.dtype(np.int64)
        signature = self._signature(operands)
        if signature is not None:
            self._bound[signature] = bound
        return self._deliver(outcome)

    def _deliver(self, outcome):
        tensor, self.counts = outcome
        if not tensor.order:
            return tensor.vals[0].item()
        if tensor.format is self.result_format or tensor.format == self.result_format:
            return tensor
        return tensor.to_format(self.result_format, tensor.index_dtype)

    def _call_for(self, tensors_in, extents, value_dtype, index_dtype, cin: Stmt | None = None) -> "_Call":
        """The specialisation for these dtypes (and, under the default schedule, for whether a dense
        workspace would fit these extents; for a schedule with `auto` strategies, `cin` resolves them),
        built once per Kernel."""
        wide = tuple(e > DENSE_WORKSPACE_LIMIT for e in extents.values()) if self.schedule is None else ()
        key = (wide, cin, value_dtype, index_dtype, *((t.dtype, t.index_dtype) for t in tensors_in.values()))
        call = self._calls.get(key)
        if call is None:
            cin = cin or (self._cin if self.schedule is not None else self._schedule(extents))
            result = self.assignment.lhs.tensor
            types = Types({**{n: t.dtype for n, t in tensors_in.items()}, result: value_dtype},
                          {**{n: t.index_dtype for n, t in tensors_in.items()}, result: index_dtype})
            call = self._calls[key] = _Call(cin, self._specialise(cin, types), types, self.formats[result])
        return call


@dataclass(frozen=True)
class _Workspace:
    name: str
    indices: tuple
    nbytes_per_entry: int


class _Call:
    """One specialised kernel and what calling it needs, precomputed: memory checks, argument order,
    how to wrap the result."""

    def __init__(self, cin: Stmt, compiled: _Compiled, types: Types, fmt: Format):
        self.source, self.function, self.fmt = compiled.source, compiled.function, fmt
        result = self.source.result
        self.value_dtype, self.index_dtype = types.values[result], types.indices[result]
        lhs = next(a.lhs for a in assignments(cin) if a.lhs.tensor.name == result)
        self.result_indices, self.result_level_indices = lhs.indices, lhs.level_indices
        self.workspaces = tuple(
            _Workspace(name, next(a.lhs.indices for a in assignments(cin) if a.lhs.tensor.name == name),
                       self.value_dtype.itemsize + (ListWorkspace.BYTES_PER_COORDINATE if var.order == 1 else 0))
            for name, var in tensors(cin).items() if var.temporary and var.format.is_dense)
        self.inputs = tuple((k, slot.tensor, slot.level, slot.array) for k, slot in enumerate(self.source.slots)
                            if slot.tensor != result)
        self.outputs = tuple((k, slot.level, slot.array) for k, slot in enumerate(self.source.slots)
                             if slot.tensor == result)
        self.pointer_array = ctypes.c_void_p * len(self.source.slots)
        self.counter_count = len(self.source.counters or ()) + 1
        self.bounds = tuple(r for r in split_relations(cin)[1] if isinstance(r, Bound))

    def bind(self, extents) -> "_Bound":
        """This specialisation for one set of extents, after the memory checks that depend on them."""
        for bound in self.bounds:
            extent = extents[bound.index]
            if extent > bound.size or bound.kind is BoundKind.MAX_EXACT and extent != bound.size:
                relation = "exactly" if bound.kind is BoundKind.MAX_EXACT else "at most"
                raise ShapeError(f"The schedule's {bound} promises that {bound.index} has extent {relation} "
                                 f"{bound.size}, but the operands give it {extent}")
        for workspace in self.workspaces:
            check_allocation(prod(extents[i] for i in workspace.indices) * workspace.nbytes_per_entry,
                             f"the dense workspace {workspace.name}({','.join(map(str, workspace.indices))})")
        for index in self.source.bitmaps:
            check_allocation((extents[index] + 1) * 8, f"the co-iteration bitmap over {index}")
        shape = tuple(extents[i] for i in self.result_indices)
        if not self.source.assembled:
            check_allocation(prod(shape) * self.value_dtype.itemsize,
                             f"the dense result {self.source.result} of shape {shape}")
        else:
            _check_static_levels(self.fmt, [extents[i] for i in self.result_level_indices], self.index_dtype)
        return _Bound(self, shape, [extents[i] for i in self.source.indices])


class _Bound:
    """A specialisation bound to the extents of one call signature: a call gathers the operands' buffer
    addresses, runs the kernel and wraps what it returns. `dims`, and for a dense result `sizes` and the
    counters of an uninstrumented kernel, are never written by the kernel, so calls share them (two
    threads may call at once)."""

    def __init__(self, call: _Call, shape: tuple[int, ...], dims: list[int]):
        self.call, self.shape, self.limit = call, shape, memory_limit()
        self.size = prod(shape)
        self.dims = (ctypes.c_int64 * max(len(dims), 1))(*dims)
        self.shared_sizes = (ctypes.c_int64 * len(call.source.slots))()
        self.shared_counters = (ctypes.c_int64 * 1)()

    def run(self, operands: Mapping[str, "Tensor | np.ndarray"]):
        call = self.call
        source = call.source
        pointers = [None] * len(source.slots)
        for k, name, level, array in call.inputs:
            value = operands[name]
            pointers[k] = value.address(level, array) if type(value) is Tensor else address(value)
        if not source.assembled:
            result_vals = np.zeros(self.size, dtype=call.value_dtype)
            pointers[call.outputs[0][0]] = address(result_vals)
        args = call.pointer_array(*pointers)
        sizes = (ctypes.c_int64 * len(pointers))() if source.assembled else self.shared_sizes
        counters = (ctypes.c_int64 * call.counter_count)() if source.counters is not None else self.shared_counters
        code = call.function(args, self.dims, sizes, counters)
        if code == ReturnCode.INDEX_OVERFLOW:
            return ReturnCode.INDEX_OVERFLOW
        raise_failure(code, source)
        counts = _counts(source, counters)
        if not source.assembled:
            result_vals.flags.writeable = False
            storage = st.Storage(tuple({} for _ in call.fmt.levels), result_vals)
            return Tensor._owned(self.shape, call.fmt, storage), counts
        levels, vals = [dict() for _ in call.fmt.levels], None
        for k, level, array in call.outputs:
            dtype = call.value_dtype if level < 0 else call.index_dtype
            adopted = adopt(args[k] or 0, int(sizes[k]), dtype)
            adopted.flags.writeable = False
            if level < 0:
                vals = adopted
            else:
                levels[level][array] = adopted
        return Tensor._owned(self.shape, call.fmt, st.Storage(tuple(levels), vals)), counts


def _checked_threads(num_threads: int | None) -> int | None:
    """Checked before any C is written: the count is pasted into the kernel's OpenMP clauses."""
    if num_threads is None:
        return None
    if isinstance(num_threads, bool) or not isinstance(num_threads, numbers.Integral) \
            or not 1 <= num_threads <= MAX_THREADS:
        raise ScheduleError(f"Expected num_threads to be None or a positive integer of at most {MAX_THREADS}, "
                            f"but found {num_threads!r}")
    return int(num_threads)


def _counts(source: KernelSource, counters) -> dict[str, int] | None:
    if source.counters is None:
        return None
    counts: dict[str, int] = {}
    for label, value in zip(source.counters, counters):
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


def _derived_indices(cin: Stmt, assignment: Assignment) -> dict[IndexVar, tuple[str, int]]:
    """The loop indices a schedule introduced (precompute's iw), each with an operand mode that gives its
    extent."""
    known = {i for a in (assignment.lhs, *accesses(assignment.rhs)) for i in a.indices}
    made = Provenance(split_relations(cin)[1]).derived()
    derived = {}
    for access in cin_accesses(cin):
        if not access.tensor.temporary and access.tensor.name != assignment.lhs.tensor:
            for mode, index in enumerate(access.indices):
                if index not in known and index not in made:
                    derived.setdefault(index, (access.tensor.name, mode))
    unbound = {i for i in loop_indices(cin) if i not in known and i not in derived and i not in made}
    if unbound:
        raise ScheduleError(f"Expected every loop index to index an operand, but {', '.join(map(str, unbound))} "
                            f"indexes none, so its extent is unknown")
    return derived


def _assembly_format(fmt: Format) -> Format:
    """The format a kernel builds for a requested result format: the same, except that levels it can
    neither locate densely nor append to (hashed) are built compressed, then converted by the storage
    layer."""
    levels = tuple(level if level.properties.full or Capability.APPEND in level.capabilities else Compressed()
                   for level in fmt.levels)
    return fmt if levels == fmt.levels else Format(levels, mode_order=fmt.mode_order)
