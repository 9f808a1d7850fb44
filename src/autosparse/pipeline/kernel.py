"""The `Kernel`: an expression compiled for formats and a schedule, called with operands by name.

    expression --parse--> assignment --schedules.scheduled--> CIN  (once per Kernel)
    CIN + operand dtypes --specialise--> C --cc--> loaded kernel     (once per process, memoised)
    operands --runtime.calls--> result                               (each call)

A call returns a dense result as a numpy array (a view of the buffer the kernel filled, owned by the
caller), a sparse one as a Tensor and an order-0 one as a Python number; `compute` keeps every result
a Tensor, for callers that combine results (distributed chunks).

A result whose format is not given is inferred from the operands' (`result_format`), except under CIN
written by hand, whose loops were written for a result format: there it is dense unless given.

A `Kernel` is specialised lazily, once per combination of operand dtypes, and the specialisations are
memoised process-wide (keyed by the CIN and the dtypes), so a repeated `evaluate` skips the pipeline.
"""

from __future__ import annotations

import os
import weakref
from math import prod
from typing import Iterator, Mapping

import numpy as np

from ..cin import Stmt, tensors
from ..cin.concretize import concordant_formats, legalisation_signature
from ..coiterate import choice as coiterate
from ..config import check_allocation, checked_thread_count, forked_after_openmp, memory_limit
from ..config import num_threads as default_threads
from ..errors import AutosparseError, CoordinateError, FormatError, MemoryLimitError, OrderError, ScheduleError
from ..format import Format, Layout
from ..format.spec import as_format, format_mapping
from ..lower.kernel import generate
from ..notation import Assignment, Div, Literal, accesses, index_extents, split_diagonals, walk
from ..runtime import BoundCall, KernelCall
from ..runtime.abi import ReturnCode, Types
from ..tensor import Tensor
from ..tensor.dtypes import VALUE_DTYPES, promote_value_dtype
from .conversions import coordinates_as_stored, linear_in, operand_in, ordered_where_merged
from .diagonals import identity_formats, with_identities
from .operands import as_assignment, check_fills, operand_fills, result_index_dtype, result_value_dtype
from .result_format import inferred_result_format, sparse_result_format
from .lastfirst import LastFirst
from .schedules import assembly_format, derived_indices, parallel_by_default, scheduled, written_as_cin
from .specialise import specialise

#: Below this many stored entries in all its operands (a dense one counts its size), a call of the default
#: schedule runs sequentially: waking a team of threads costs tens of microseconds, more than such a
#: kernel takes (a 100² SpMV: 12 µs on one thread, 72 µs on two).
PARALLEL_MIN_ENTRIES = 1 << 16


class Kernel:
    """A compiled expression; call it with the operands by name."""

    def __init__(self, expression: "str | Assignment", formats: Mapping[str, "str | Format"] | None = None,
                 schedule=None, num_threads: int | None = None, instrument: bool = False,
                 coiteration: str | None = None, stored: Mapping[str, int] | None = None,
                 fills: Mapping[str, object] | None = None):
        """`coiteration="auto"` marks every loop of the schedule that says nothing of its co-iteration
        `coiterate(i, auto)` (the operands of each call choose). Without the result in `formats`, its
        format is inferred from the operands' (see `result_format`), or dense under CIN written by hand.
        Under the default schedule, operands whose storage orders disagree are computed in concordant
        formats (`conversions`), chosen by their `stored` entries where known. `fills`: the operands' fills
        (0 where not given), folded into the C; each call's operands must have them (`check_fills`)."""
        self.assignment, self._diagonals = split_diagonals(as_assignment(expression))
        self.fills = {name: fill for name, fill in (fills or {}).items() if fill != 0}
        formats = format_mapping(formats)
        orders = {a.tensor: len(a.indices) for a in (*accesses(self.assignment.rhs), self.assignment.lhs)}
        self.temporary_formats = {n: formats.pop(n) for n in list(formats) if n not in orders}
        if self.temporary_formats and not isinstance(schedule, str):
            raise AutosparseError(f"Expected formats only for tensors of {self.assignment}, but found "
                                  f"{sorted(self.temporary_formats)}")
        self.formats = {name: as_format(formats.get(name, "dense"), order) for name, order in orders.items()}
        self.formats.update(identity_formats(self._diagonals, self.formats))
        result = self.assignment.lhs.tensor
        given, self._warned = dict(self.formats), set()
        if schedule is None:  # the result, while not yet inferred, is dense: the operands choose the order
            self.formats = concordant_formats(self.assignment, self.formats, stored)
        if result not in formats and not written_as_cin(schedule):
            # from the formats computed in (CSR + CSC -> CSR), then the operands' order checked against it
            self.formats[result] = inferred_result_format(self.assignment, self.formats, self.fills)
            if schedule is None:
                self.formats = concordant_formats(self.assignment, self.formats, stored)
        if schedule is None:  # ds~ sorted where the default merges it (a schedule given names its strategies)
            self.formats = ordered_where_merged(self.formats, result, lambda formats: _lowers(
                self.assignment, formats, self.temporary_formats, schedule, result, fills=self.fills))
        self.conversions = {n: (given[n], fmt) for n, fmt in self.formats.items() if n != result and fmt != given[n]}
        self.result_format = self.formats[result]
        self.formats[result] = assembly_format(self.result_format)
        self._dense_result = _is_dense(self.result_format)
        self._in_mode_order = self._dense_result and \
            self.result_format.mode_order == tuple(range(self.result_format.order))
        self.schedule, self.instrument = schedule, instrument
        # coordinate operands read as stored (`_as_stored`) by a kernel computing in their format, per format
        self._given = given
        self._reads_as_stored = schedule is None and not self._diagonals and self._dense_result
        self._as_stored_kernels: dict[tuple, Kernel | None] = {}
        self._checked: frozenset[str] = frozenset()  # operands whose coordinates the C checks (`Types.checked`)
        # a hint: the last call's scipy COO rows were out of order, so the next starts with the pass (`_as_stored`)
        self._rows_out_of_order = False
        # the threads it runs on, taken when compiled: its own, else the process's (config.num_threads)
        threads = default_threads() if num_threads is None else checked_thread_count(num_threads)
        self.num_threads = 1 if forked_after_openmp() else threads
        # the default schedule, an autoscheduler's pick and co-iteration commands are scheduled per call: on
        # threads only for calls with the work to share them (PARALLEL_MIN_ENTRIES), legalised for its extents
        self._per_call = parallel_by_default(schedule)
        self._sized_threads = self._per_call and not instrument and self.num_threads > 1
        self._cin = self._scheduled({})
        if coiteration not in (None, "auto"):
            raise ScheduleError(f"Expected coiteration=None or 'auto', but found {coiteration!r}")
        self._coiteration = coiteration
        self._cin = self._marked(self._cin)
        self._cins = {1 if instrument else self.num_threads: self._cin}  # the CIN per call's threads (`_resolved`)
        self._auto = coiterate.has_auto(self._cin)  # coiterate(i, auto): chosen per call, from the operands
        self._chosen: Stmt | None = None
        self._derived = derived_indices(self._cin, self.assignment)
        self._operand_names = {a.tensor for a in accesses(self.assignment.rhs)}
        self._literals = tuple(n.value for n in walk(self.assignment.rhs) if isinstance(n, Literal))
        self._divides = any(isinstance(n, Div) for n in walk(self.assignment.rhs))
        self._calls: dict[tuple, KernelCall] = {}
        self._bound: LastFirst = LastFirst()  # signature -> BoundCall; `last`: the last call's, found or not
        self._operand_order = tuple(sorted(self._operand_names))
        self._operand_count = len(self._operand_order)
        # Dense operands a C-ordered numpy array can stand for as it is.
        self._plain_arrays = {n for n in self._operand_names if self.formats[n].is_dense
                              and self.formats[n].mode_order == tuple(range(self.formats[n].order))}
        self.counts: dict[str, int] | None = None
        self.warm_calls = 0  # calls that took an earlier call's BoundCall (`_run`)
        _live.add(self)

    def _run_on_one_thread(self) -> None:
        """After a fork from a process that had loaded OpenMP kernels (`config.forked_after_openmp`): forget
        every specialisation and warm call, which may open regions on several threads, and build the next
        ones for one thread."""
        self.num_threads, self._sized_threads = 1, False
        self._calls.clear()
        self._bound = LastFirst()
        self._as_stored_kernels.clear()

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
    def ran_parallel(self) -> bool:
        """Whether the last call ran a loop on threads (small operands run sequentially: `_threads_for`)."""
        bound = self._bound.last[1]
        return bound is not None and bound.call.source.openmp

    @property
    def chosen(self) -> Stmt | None:
        """For a schedule with `auto` strategies, the CIN the last call ran (None before any call)."""
        return self._chosen

    # --- the pipeline ---

    def _scheduled(self, extents, threads: int | None = None) -> Stmt:
        if threads is None:
            threads = 1 if self.instrument else self.num_threads  # counters are shared: counting stays sequential
        return scheduled(self.assignment, self.formats, self.temporary_formats, self.schedule, extents, threads,
                         self.fills)

    def _marked(self, cin: Stmt) -> Stmt:
        """`cin` with every loop's co-iteration chosen per call where the kernel was built so."""
        return coiterate.everywhere(cin) if self._coiteration == "auto" else cin

    def _resolved(self, tensors_in, extents, threads: int) -> Stmt:
        """For a schedule with `auto` strategies: its CIN for `threads` (scheduled afresh where the call runs
        on fewer threads than the kernel's) with the strategies chosen for these operands."""
        cin = self._cins.get(threads) if self._per_call else self._cin
        if cin is None:
            cin = self._cins[threads] = self._marked(self._scheduled({}, threads))
        return coiterate.resolve(cin, tensors_in, extents)

    def _threads_for(self, operands) -> int:
        """The threads the default schedule runs this call on: one for an instrumented kernel (its counters
        are shared: counting stays sequential), else one unless the operands hold the work (a scipy matrix
        its stored entries, a number one)."""
        if self.instrument:
            return 1
        if not self._sized_threads:
            return self.num_threads
        return self._threads_for_work(sum(value.nnz if type(value) is Tensor else getattr(value, "size", 1)
                                          for value in operands.values()))

    def _threads_for_work(self, work: int) -> int:
        """The threads of a call (of a kernel with `_sized_threads`) whose operands store `work` entries."""
        return self.num_threads if work >= PARALLEL_MIN_ENTRIES else 1

    def _default_types(self) -> Types:
        names = [n for n, v in tensors(self._cin).items() if not v.temporary]
        return Types({n: np.dtype(np.float64) for n in names}, {n: np.dtype(np.int32) for n in names}, self._checked)

    def _specialise(self, cin: Stmt, types: Types):
        return specialise(cin, types, self.instrument, self.num_threads)

    # --- calling ---

    def __call__(self, /, **operands):
        """The result: a numpy array if dense, a Tensor if sparse, a Python number for order 0."""
        bound, result = self._run(operands)
        if type(result) is np.ndarray:
            if not bound.shape:
                return result.item()
            return result if self._in_mode_order else _in_mode_order(result, self.result_format)
        return self._deliver(result)

    def compute(self, /, **operands):
        """The result as a Tensor in the result format, dense ones too (a Python number for order 0)."""
        bound, result = self._run(operands)
        if type(result) is np.ndarray:
            return bound.dense_tensor(result) if bound.shape else result.item()
        return self._deliver(result)

    def _run(self, operands) -> tuple[BoundCall, object]:
        """The call's BoundCall and what it returned (`BoundCall.run`: a dense result as its flat values).
        Operands of a signature an earlier call had (`_signature`) take that call's BoundCall, whose checks
        (formats, shapes, dtypes, memory) still hold for them: a warm call, counted in `warm_calls`, found
        through `LastFirst`."""
        operands = with_identities(self._diagonals, self.formats, operands) if self._diagonals else operands
        warm = self._warm(operands)
        if warm is None:
            promoted = _promoted(operands)
            if promoted is not operands:  # arrays the general path would convert: warm once converted
                operands = promoted
                warm = self._warm(operands)
        return self._call_general(operands) if warm is None else warm

    def _warm(self, operands) -> tuple[BoundCall, object] | None:
        """A warm call's BoundCall and what it returned, or None where the operands' signature is not warm."""
        bound = self._found(operands)
        if bound is not None:
            outcome = bound.run(operands)
            if outcome is not ReturnCode.INDEX_OVERFLOW:
                self.warm_calls += 1
                result, self.counts = outcome
                return bound, result
        return None

    def _found(self, operands) -> BoundCall | None:
        """The BoundCall of an earlier call whose signature the operands have, bound under today's memory limit."""
        signature = self._signature(operands)
        bound = None if signature is None else self._bound.find(signature)
        return bound if bound is not None and bound.limit == memory_limit() else None

    def warm_bound(self, operands) -> BoundCall | None:
        """The BoundCall a call with `operands` would run at once — a warm call (`_run`) — where its result is
        dense, in the result's axis order, and the kernel uninstrumented and reading no identity operand; None
        otherwise. For a caller that runs several such calls in one native call (runtime/sequence.py): what it
        runs is what `__call__` would."""
        if self._diagonals or not self._in_mode_order or self.instrument:
            return None
        bound = self._found(operands)
        return None if bound is None or bound.call.source.assembled else bound

    def _signature(self, operands) -> tuple | None:
        """What a call's bound specialisation depends on: each operand's kind (a Tensor's format, shape,
        dtypes; an array's type, shape, strides and dtype) and the threads its work pays for (and, where a
        strategy is `auto`, the stored-entry count, so operands of another size are chosen for afresh).
        Only the signatures of operands passed as they are (`_passed_as_given`) are kept, so a signature
        found proves the checks of that call hold for this one. None: some operand is no Tensor or array."""
        if len(operands) != self._operand_count:
            return None
        parts, work = [], 0
        for name in self._operand_order:
            value = operands.get(name)
            kind = type(value)
            if kind is Tensor:
                parts.append((value.kind, value.nnz) if self._auto else value.kind)
                work += value.nnz
            elif kind is np.ndarray:
                parts.append((value.shape, value.strides, value.dtype))
                work += value.size
            else:
                return None
        if self._sized_threads:
            parts.append(self._threads_for_work(work))
        return tuple(parts)

    def _passed_as_given(self, operands) -> bool:
        """Whether every operand can be passed to the kernel as it is: a Tensor in its compiled format, or
        a C-ordered numpy array of a kept dtype for a dense operand stored in mode order."""
        for name, value in operands.items():
            if type(value) is Tensor:
                if value.format != self.formats[name]:
                    return False
            elif not (type(value) is np.ndarray and name in self._plain_arrays and value.flags.c_contiguous
                      and promote_value_dtype(value.dtype) == value.dtype):
                return False
        return True

    def _call_general(self, operands):
        if operands.keys() != self._operand_names:
            raise AutosparseError(f"Expected operands {sorted(self._operand_names)}, but found {sorted(operands)}")
        check_fills(self.assignment, self.fills, operand_fills(operands))  # a warm call's signature holds its fills
        for kernel, stored in self._as_stored(operands):
            try:
                outcome = kernel._run(stored)
            except OrderError:  # rows taken as in order were not: the next reading finds their order first
                self._rows_out_of_order = True
                continue
            except CoordinateError:  # found where the kernel read it: the general path names the entry
                break
            self._bound.last, self.counts, self._chosen = kernel._bound.last, kernel.counts, kernel._chosen
            return outcome
        formats = self.formats
        tensors_in = {n: operand_in(v, formats[n], n, self._warned) for n, v in operands.items()}
        extents = index_extents(self.assignment, {n: t.shape for n, t in tensors_in.items()})
        extents.update({index: tensors_in[name].shape[mode] for index, (name, mode) in self._derived.items()})
        value_dtype = result_value_dtype(tensors_in, self._literals, self._divides)
        index_dtype = result_index_dtype(tensors_in, extents.values())
        threads = self._threads_for(tensors_in)
        cin = self._chosen = self._resolved(tensors_in, extents, threads) if self._auto else None
        self._check_dense_result(extents, value_dtype)
        while True:
            bound = self._call_for(tensors_in, extents, value_dtype, index_dtype, cin, threads).bind(extents)
            outcome = bound.run(tensors_in)
            if outcome is not ReturnCode.INDEX_OVERFLOW:
                break
            index_dtype = np.dtype(np.int64)
        signature = self._signature(operands) if self._passed_as_given(operands) else None
        if signature is not None:
            self._bound[signature] = bound
        self._bound.last = signature, bound
        result, self.counts = outcome
        return bound, result

    def _as_stored(self, operands) -> Iterator[tuple["Kernel", dict]]:
        """The kernels computing with the call's coordinate operands in their own formats, and the operands
        for them, where that costs less than converting them (`coordinates_as_stored`: each conversion would
        be paid on every call, and costs more than a product reading the coordinates, as scipy's `coo @ x`
        does), in the order to try them: the caller runs the next where one finds the rows it took as in
        order are not (OrderError). Only under the default schedule (a given one names its formats'
        strategies) and for a dense result that is linear in each (`linear_in`), written by adding each
        entry's term, so their order and repeated coordinates do not matter; each kernel, built once per
        formats, must lower without converting them (it refuses to merge unordered levels: `y = (A * B) x`
        with B in CSR converts a scipy matrix whose rows come out of order, while `y = A x + z` sums A x over
        each row's runs into a workspace first, `cin.concretize._revisits`). None: convert.

        A scipy matrix is read first as `coo`, its rows taken as in order (as `coo_matrix(csr)` and most
        files give them), by a kernel that checks each coordinate's range and each run's order where it
        loads them: one read of its arrays, not two, on one thread as on several (whose threads split it
        where one run of a row ends). Rows out of order fail that call (ReturnCode.OUT_OF_ORDER, its result
        dropped), and the next reading runs the pass (`checked_coordinates`: the ranges, and the rows' order,
        which picks `coo` or sequential `u~q`) and then the unchecked kernel: checking in the kernel costs
        more than the pass where nearly every entry starts a run. A failure is remembered
        (`_rows_out_of_order`): later calls start with the pass until it finds the rows in order again. The
        hint is only ever a cost: each call's reading is checked on that call's own arrays. The pass comes
        first too where the checked kernel does not lower (one that would index by the coordinates
        elsewhere: `indexed_by`)."""
        if not self._reads_as_stored:
            return
        reading = None if self._rows_out_of_order else self._reading_as_stored(operands, checked=True)
        if reading is not None:
            yield reading
        reading = self._reading_as_stored(operands, checked=False)
        if reading is not None:
            yield reading

    def _reading_as_stored(self, operands, checked: bool) -> "tuple[Kernel, dict] | None":
        """`_as_stored`'s kernel and operands, a scipy matrix's coordinates and rows' order checked by the
        kernel (`checked`), or by the pass before it, which notes on this Kernel whether the rows were in
        order (`_rows_out_of_order`)."""
        stored = {}
        for name, value in operands.items():
            tensor = coordinates_as_stored(value, self.formats[name], checked)
            if tensor is not None and linear_in(self.assignment.rhs, name):
                stored[name] = tensor
        scipy_operands = [name for name in stored if not isinstance(operands[name], Tensor)]
        if not checked and scipy_operands:
            self._rows_out_of_order = not all(stored[name].format.levels[0].properties.ordered
                                              for name in scipy_operands)
        if not stored:
            return None
        key = (tuple((name, tensor.format) for name, tensor in stored.items()),
               frozenset(scipy_operands) if checked else frozenset())
        if key not in self._as_stored_kernels:
            self._as_stored_kernels[key] = self._computing_in(dict(key[0]), key[1])
        kernel = self._as_stored_kernels[key]
        return None if kernel is None else (kernel, {**operands, **stored})

    def _computing_in(self, stored: Mapping[str, Format], checked: frozenset[str]) -> "Kernel | None":
        """This kernel computing with the operands in `stored` in those formats (the result's format and the
        rest as given), comparing the coordinates of those `checked` with their extents, or None where it
        does not lower so or would convert them after all."""
        result = self.assignment.lhs.tensor
        formats = {**self._given, **stored, result: self.result_format}
        if not _lowers(self.assignment, formats, self.temporary_formats, None, result, checked, self.num_threads,
                       self.fills):
            return None
        kernel = Kernel(self.assignment, formats, None, self.num_threads, self.instrument, self._coiteration,
                        fills=self.fills)
        kernel._checked = checked
        return None if any(name in kernel.conversions for name in stored) else kernel

    def _check_dense_result(self, extents, value_dtype: np.dtype) -> None:
        """A dense result over the memory limit is refused before anything runs, naming the sparse format
        to pass instead."""
        if not self._dense_result or not self.result_format.order:
            return
        result = self.assignment.lhs
        shape = tuple(extents[i] for i in result.indices)
        try:
            check_allocation(prod(shape) * value_dtype.itemsize, f"the dense result {result.tensor} of shape {shape}")
        except MemoryLimitError as error:
            sparse = sparse_result_format(self.assignment, self.formats)
            spelling = sparse.name if sparse.name and sparse.order > 1 else str(sparse)
            raise MemoryLimitError(f"{error}; pass format={spelling!r} for a sparse result") from None

    def _deliver(self, tensor: Tensor) -> Tensor:
        if tensor.format is self.result_format or tensor.format == self.result_format:
            return tensor
        return tensor.to_format(self.result_format, tensor.index_dtype)

    def _call_for(self, tensors_in, extents, value_dtype, index_dtype, cin: Stmt | None = None,
                  threads: int | None = None) -> KernelCall:
        """The specialisation for these dtypes and the threads the call's work pays for (and, under the
        default schedule, for how legalisation reads these extents; for a schedule with `auto` strategies,
        `cin` resolves them), built once per Kernel."""
        legalised_for = legalisation_signature(extents) if self.schedule is None else None
        key = (legalised_for, threads, cin, value_dtype, index_dtype,
               *((t.dtype, t.index_dtype) for t in tensors_in.values()))
        call = self._calls.get(key)
        if call is None:
            cin = cin or (self._scheduled(extents, threads) if self._per_call else self._cin)
            result = self.assignment.lhs.tensor
            types = Types({**{n: t.dtype for n, t in tensors_in.items()}, result: value_dtype},
                          {**{n: t.index_dtype for n, t in tensors_in.items()}, result: index_dtype}, self._checked)
            call = self._calls[key] = KernelCall(self._specialise(cin, types), types, self.formats[result])
        return call


def _lowers(assignment: Assignment, formats, temporary_formats, schedule, result: str,
            checked: frozenset[str] = frozenset(), threads: int = 1, fills: Mapping[str, object] = {}) -> bool:
    """Whether a kernel computing in `formats` (and checking the coordinates of those `checked`) lowers
    (on `threads`, for float64 and int32): asked only of kernels reading an unordered operand, whose
    lowering refuses to merge it, or an unchecked one, which it refuses to index by or search but where
    loaded, and on threads reads only in loops that deal each thread its rows."""
    formats = {**formats, result: assembly_format(formats[result])}
    try:
        for run_on in sorted({1, threads}):
            cin = scheduled(assignment, formats, temporary_formats, schedule, {}, run_on, fills)
            names = [n for n, v in tensors(cin).items() if not v.temporary]
            generate(cin, Types({n: np.dtype(np.float64) for n in names}, {n: np.dtype(np.int32) for n in names},
                                checked), num_threads=run_on)
    except ScheduleError:
        return False
    return True


def delivered(result):
    """A result as calls return it: a dense Tensor as a numpy array (`dense_array`), anything else as
    it is."""
    return dense_array(result) if type(result) is Tensor and _is_dense(result.format) else result


def _is_dense(fmt: "Format | Layout") -> bool:
    return not isinstance(fmt, Layout) and fmt.is_dense


def dense_array(tensor: Tensor) -> np.ndarray:
    """A dense Tensor's values as a writeable numpy array with the tensor's axes, without a copy: a view
    of the buffer the kernel filled (transposed where the format stores the modes in another order). The
    Tensor is not to be used afterwards: its values are the caller's now. Values in memory numpy may not
    write (a result that travelled from a Dask worker) are copied."""
    vals = tensor.vals
    try:
        vals.flags.writeable = True
    except ValueError:
        vals = vals.copy()
    return _with_axes(vals, tensor.format, tensor.shape)


def _promoted(operands: Mapping[str, object]) -> Mapping[str, object]:
    """`operands` with each numpy array of a dtype kernels do not take (bool, small ints, float16, complex64)
    in the one that holds its values, as the general path would convert it (`promote_value_dtype`); `operands`
    itself where there is none. A loop over a bool array (BFS's frontier, a comparison's result) then calls
    warm: its general path took about 0.35 ms a call on an 8,000-vertex graph, the conversion microseconds."""
    converted = None
    for name, value in operands.items():
        if type(value) is np.ndarray and value.dtype.kind in "biufc" and value.dtype not in VALUE_DTYPES:
            try:
                dtype = promote_value_dtype(value.dtype)
            except FormatError:  # (uint64): the general path says why
                continue
            converted = dict(operands) if converted is None else converted
            converted[name] = value.astype(dtype)
    return operands if converted is None else converted


def _in_mode_order(stored: np.ndarray, fmt: Format) -> np.ndarray:
    """A dense result's values, shaped as stored (`BoundCall.stored_shape`), with the result's axes: a view."""
    return stored.transpose(np.argsort(fmt.mode_order))


def _with_axes(vals: np.ndarray, fmt: Format, shape: tuple[int, ...]) -> np.ndarray:
    """A dense result's flat values as an array of `shape`, a view (transposed where `fmt` stores the
    modes in another order)."""
    order = fmt.mode_order
    if order == tuple(range(len(order))):
        return vals.reshape(shape)
    return vals.reshape(tuple(shape[mode] for mode in order)).transpose(np.argsort(order))


_live: "weakref.WeakSet[Kernel]" = weakref.WeakSet()  # every Kernel alive, for `_after_fork_in_child`


def _after_fork_in_child() -> None:
    if forked_after_openmp():
        for kernel in list(_live):
            kernel._run_on_one_thread()


os.register_at_fork(after_in_child=_after_fork_in_child)
