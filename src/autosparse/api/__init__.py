"""The public entry points: `compile`, `evaluate`, `einsum` and `autoschedule` (ARCHITECTURE.md, public
contract)."""

from __future__ import annotations

from typing import Mapping

from ..format import Format
from ..errors import ParseError
from ..notation import accesses, einsum_assignment, operand_name
from ..tensor.operations import install as install_array_operations
from .arrays import ArrayOperations
from .auto import autoschedule, chosen_schedule
from .kernel import Kernel
from ..pipeline.conversions import stored_entries
from ..pipeline.operands import as_assignment, infer_format


def compile(expression: str, formats: Mapping[str, "str | Format"] | None = None, schedule=None,
            num_threads: int | None = None, instrument: bool = False) -> Kernel:
    """A kernel for `expression` with each tensor in `formats` (dense where not given). With
    `instrument=True` each call records its loops' iteration counts in `kernel.counts`."""
    return Kernel(expression, formats, schedule, num_threads, instrument)


def evaluate(expression: str, format: "str | Format | None" = None, schedule=None, instrument: bool = False,
             model: str = "asymptotic", **operands):
    """Compute `expression` from the operands (Tensors keep their formats; arrays are dense, scipy
    matrices CSR or CSC). The result is a Tensor in `format` (dense by default), or a number for order 0.
    `schedule="auto"` runs the autoscheduler `model` ("asymptotic" or "sparseauto") and selects a
    candidate for these operands, each of its loops co-iterating as `coiterate(i, auto)` chooses."""
    assignment = as_assignment(expression)
    formats = _operand_formats(assignment, operands)
    if format is not None:
        formats[assignment.lhs.tensor] = format
    if isinstance(schedule, str) and schedule.strip() == "auto":
        schedule = chosen_schedule(assignment, formats, operands, model)
        return Kernel(assignment, formats, schedule, instrument=instrument, coiteration="auto")(**operands)
    return Kernel(assignment, formats, schedule, instrument=instrument, stored=stored_entries(operands))(**operands)


def einsum(subscripts: str, *operands, format: "str | Format | None" = None, schedule=None):
    """numpy.einsum's spelling: `einsum("ij,jk->ik", A, B)`."""
    if not isinstance(subscripts, str):
        raise ParseError(f"Expected einsum subscripts as text, such as 'ij,jk->ik', but found "
                         f"{type(subscripts).__name__}", f"{subscripts!r:.80}", 1)
    assignment = einsum_assignment(subscripts, [tuple(getattr(value, "shape", ())) for value in operands])
    named = {operand_name(k): value for k, value in enumerate(operands)}
    formats = _operand_formats(assignment, named)
    if format is not None:
        formats[assignment.lhs.tensor] = format
    return Kernel(assignment, formats, schedule, stored=stored_entries(named))(**named)


def _operand_formats(assignment, operands) -> dict:
    orders = {a.tensor: len(a.indices) for a in accesses(assignment.rhs)}
    return {name: infer_format(value, orders[name]) for name, value in operands.items() if name in orders}


install_array_operations(ArrayOperations(evaluate))  # Tensor's operators: one kernel each, through evaluate

__all__ = ["Kernel", "autoschedule", "compile", "einsum", "evaluate"]
