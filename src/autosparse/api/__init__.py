"""The public entry points: `compile`, `evaluate`, `einsum` and `autoschedule` (ARCHITECTURE.md, public
contract)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Mapping

import numpy as np

from ..autoschedule.algebra import checked
from ..autoschedule.candidate import ScheduleCandidate
from ..config import num_threads as default_threads
from ..errors import AutosparseError, ParseError
from ..format import Format
from ..notation import Assignment, accesses, einsum_assignment, operand_name
from ..pipeline.conversions import stored_entries
from ..pipeline.lastfirst import LastFirst
from ..pipeline.operands import as_assignment, infer_format, operand_fills
from ..pipeline.result_format import inferred_result_format
from ..tensor import Tensor
from ..tensor.operations import install as install_array_operations
from .arrays import ArrayOperations
from .auto import autoschedule, evaluated
from .kernel import Kernel

#: evaluate's parameters: an operand of the expression with one of these names is passed in `operands=`.
OPTIONS = ("format", "schedule", "instrument", "model", "num_threads", "operands")

#: The kernels `evaluate` and `einsum` built, the least recently used dropped past this many: a loop of
#: calls on like operands (`A @ x` in a solver) parses and schedules once, then only calls.
KERNELS_KEPT = 256
_kernels: OrderedDict[tuple, Kernel] = OrderedDict()
#: evaluate's warm calls: the kernel for `_warm_key`'s key, emptied when it holds KERNELS_KEPT.
_warm: LastFirst = LastFirst()


def compile(expression: str, formats: Mapping[str, "str | Format"] | None = None, schedule=None,
            num_threads: int | None = None, instrument: bool = False) -> Kernel:
    """A kernel for `expression` with each tensor in `formats`: operands dense where not given; the
    result, where not given, in the format inferred from the operands' (as `evaluate` infers it; dense
    under CIN written by hand), which `kernel.formats` shows. With `instrument=True` each call records
    its loops' iteration counts in `kernel.counts`."""
    return Kernel(expression, formats, schedule, num_threads, instrument)


def evaluate(expression: str, /, format: "str | Format | None" = None, schedule=None, instrument: bool = False,
             model: str = "auto", num_threads: int | None = None,
             operands: "Mapping[str, object] | None" = None, **named):
    """Compute `expression` from the operands, by keyword or in the mapping `operands` (needed for an
    operand named like one of the parameters, `OPTIONS`). Tensors keep their formats; arrays are dense,
    scipy matrices CSR or CSC. Without `format`, the result's is inferred from the operands' (sparse
    where sparse operands bound its pattern: pipeline/result_format.py). A dense result is a numpy array
    (no copy), a sparse one a Tensor, an order-0 one a Python number. `schedule="auto"` runs the
    autoscheduler `model` ("auto": both models where both apply, their candidates ranked by one estimate;
    "asymptotic" or "sparseauto": that one alone) and selects a candidate for these operands, each of its
    loops co-iterating as `coiterate(i, auto)` chooses; the choice is remembered across processes.
    `num_threads` caps the kernel's threads."""
    warm_key = _warm_key(expression, format, schedule, instrument, num_threads, operands, named)
    if warm_key is not None:
        kernel = _warm.find(warm_key)
        if kernel is not None:
            return kernel(**(named if operands is None else operands))
    assignment = as_assignment(expression)
    operands = _operands(assignment, operands, named)
    formats = _formats(assignment, operands, format)
    if isinstance(schedule, str) and schedule.strip() == "auto":  # the search needs the result's format
        checked(assignment)  # before the result's format is inferred: a ScheduleError naming what the search refuses
        if assignment.lhs.tensor not in formats and formats.keys() >= {a.tensor for a in accesses(assignment.rhs)}:
            formats[assignment.lhs.tensor] = inferred_result_format(assignment, formats, operand_fills(operands))
        return evaluated(assignment, formats, operands, model, lambda candidate: _kernel(
            assignment, formats, candidate, num_threads, instrument, operands, "auto"))
    kernel = _kernel(assignment, formats, schedule, num_threads, instrument, operands)
    if warm_key is not None:
        if len(_warm) >= KERNELS_KEPT:
            _warm.clear()
        _warm[warm_key] = kernel
    return kernel(**operands)


def warm_kernel(expression: str, operands: Mapping[str, object]) -> Kernel | None:
    """The kernel `evaluate(expression, operands=operands)` would call at once, found as its warm calls find
    it (a call like it ran before); None where that call would take the general path."""
    key = _warm_key(expression, None, None, False, None, operands, {})
    return None if key is None else _warm.find(key)


def _warm_key(expression, format, schedule, instrument: bool, num_threads: int | None,
              mapping, named: Mapping[str, object]) -> tuple | None:
    """What evaluate's choice of a kernel depends on, for a call `_warm` answers without parsing, checking
    the operands' names or building `_kernel`'s key: the text, the options, the threads, and each operand's
    name and kind — a Tensor's format, fill and the magnitude of its stored entries (`_kernel` keeps kernels per
    it), or a numpy array. A key is kept only once a call with it got past those checks, so finding one
    proves them. None for a call that must take the general path: an expression that is not text, an
    autoscheduled or non-text schedule, a format that is neither text nor a Format, operands both in
    `operands=` and as keywords, or an operand that is neither a Tensor nor a numpy array (scipy matrices,
    numbers, lists)."""
    if type(expression) is not str or not (schedule is None or type(schedule) is str and schedule.strip() != "auto") \
            or not (format is None or type(format) is str or isinstance(format, Format)):
        return None
    if mapping is None:
        values, passed = named, "keywords"
    elif not named and type(mapping) is dict:
        values, passed = mapping, "operands="
    else:
        return None
    kinds = []
    for name, value in values.items():
        kind = type(value)
        if kind is Tensor:
            kinds.append((name, value.format, value.fill, value.nnz.bit_length()))
        elif kind is np.ndarray:
            kinds.append((name, kind))
        else:
            return None
    threads = default_threads() if num_threads is None else num_threads
    return expression, format, schedule, instrument, num_threads, threads, passed, tuple(kinds)


def einsum(subscripts: str, *operands, format: "str | Format | None" = None, schedule=None,
           num_threads: int | None = None):
    """numpy.einsum's spelling: `einsum("ij,jk->ik", A, B)`; the result as `evaluate` gives it."""
    if not isinstance(subscripts, str):
        raise ParseError(f"Expected einsum subscripts as text, such as 'ij,jk->ik', but found "
                         f"{type(subscripts).__name__}", f"{subscripts!r:.80}", 1)
    assignment = einsum_assignment(subscripts, [tuple(getattr(value, "shape", ())) for value in operands])
    named = {operand_name(k): value for k, value in enumerate(operands)}
    return _kernel(assignment, _formats(assignment, named, format), schedule, num_threads, False, named)(**named)


def _kernel(assignment: Assignment, formats: dict, schedule, num_threads: int | None, instrument: bool,
            operands: Mapping[str, object], coiteration: str | None = None) -> Kernel:
    """The Kernel for these formats, the operands' fills and options, built once (`KERNELS_KEPT`). The
    operands' stored entries choose which to convert when their storage orders disagree: kernels are kept
    per their rounded sizes, so operands twice as large may convert the other one."""
    stored = stored_entries(operands)
    fills = {name: fill for name, fill in operand_fills(operands).items() if fill != 0}
    threads = default_threads() if num_threads is None else num_threads
    # a candidate by identity: its fields (a sketch, a cost's queries) hash deeply, on every warm call; the
    # Kernel kept holds it, so its id names it while the key is kept
    schedule_key = ("candidate", id(schedule)) if isinstance(schedule, ScheduleCandidate) else schedule
    key = (assignment, tuple(sorted(formats.items(), key=lambda item: item[0])), schedule_key, threads, instrument,
           tuple(sorted((name, int(count).bit_length()) for name, count in stored.items())), coiteration,
           tuple(sorted(fills.items())))
    build = lambda: Kernel(assignment, formats, schedule, num_threads, instrument, coiteration, stored,  # noqa: E731
                           fills)
    try:
        kernel = _kernels.get(key)
    except TypeError:  # a schedule that is not a value (a candidate's CIN is): built for this call only
        return build()
    if kernel is None:
        kernel = _kernels[key] = build()
        if len(_kernels) > KERNELS_KEPT:
            _kernels.popitem(last=False)
    else:
        _kernels.move_to_end(key)
    return kernel


def _operands(assignment: Assignment, mapping: "Mapping[str, object] | None", named: Mapping[str, object]) -> dict:
    """The operands by name, from the mapping and the keywords, checked against the expression's: an
    operand named like an option must come in the mapping (as a keyword it is taken for the option)."""
    expected = sorted({a.tensor for a in accesses(assignment.rhs)})
    mapping = {} if mapping is None else mapping
    if not isinstance(mapping, Mapping):
        raise AutosparseError(f"Expected operands= to map the operands' names to their values, but found "
                              f"{type(mapping).__name__}")
    clashes = sorted(set(expected) & set(OPTIONS) - set(mapping))
    if clashes:
        given = ", ".join(f"{name!r}: ..." for name in clashes)
        raise AutosparseError(f"The operand(s) {clashes} of {assignment} share their names with evaluate's "
                              f"options: pass them as operands={{{given}}}")
    twice = sorted(set(mapping) & set(named))
    if twice:
        raise AutosparseError(f"Expected each operand once, but {twice} came both in operands= and as keywords")
    operands = {**mapping, **named}
    unknown = sorted(set(operands) - set(expected))
    if unknown:
        raise AutosparseError(f"Expected the operands {expected} of {assignment}, but found {unknown} too "
                              f"(not an option of evaluate nor an operand)")
    return operands


def _formats(assignment: Assignment, operands: Mapping[str, object], format: "str | Format | None") -> dict:
    """Every operand's format (its own), and the result's where given (the Kernel infers it otherwise, from
    the formats it computes in)."""
    orders = {a.tensor: len(a.indices) for a in accesses(assignment.rhs)}
    formats = {name: infer_format(value, orders[name]) for name, value in operands.items() if name in orders}
    if format is not None:
        formats[assignment.lhs.tensor] = format
    return formats


def _default_kernel(expression: str, operands: dict) -> Kernel:
    """The kernel `evaluate(expression, operands=operands)` calls with its default options: the
    operators' (api/arrays.py), which keep it for their warm calls."""
    assignment = as_assignment(expression)
    operands = _operands(assignment, operands, {})
    return _kernel(assignment, _formats(assignment, operands, None), None, None, False, operands)


#: Tensor's operators: one kernel each, found by `operators.warm` on a repeated call (api/arrays.py).
operators = ArrayOperations(_default_kernel)
install_array_operations(operators)  # Tensor's operators: one kernel each, through evaluate

__all__ = ["OPTIONS", "Kernel", "autoschedule", "compile", "einsum", "evaluate"]
