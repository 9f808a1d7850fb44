"""User values: their formats when none is given, their fills, the assignment they are evaluated for, and
the dtypes that specialise a kernel for them (`tensor.as_tensor` stores them in the formats it was compiled
for)."""

from __future__ import annotations

import functools

from typing import Mapping

import numpy as np

from ..format import Format
from ..format.spec import as_format
from ..errors import ScheduleError
from ..notation import Assignment, parse
from ..notation.operators import Value
from ..tensor import Tensor
from ..tensor.interop import is_scipy
from ..tensor.dtypes import INT32_MAX


def as_assignment(expression) -> Assignment:
    """An assignment from its text (parsed and checked: anything but text is a ParseError) or as it is."""
    if isinstance(expression, Assignment):
        return expression
    return _parsed(expression) if type(expression) is str else parse(expression)


@functools.lru_cache(maxsize=1024)  # `evaluate` and the operators parse on every call: once per text
def _parsed(text: str) -> Assignment:
    return parse(text)


def operand_fills(operands: Mapping[str, object]) -> dict[str, Value]:
    """Each Tensor operand's fill (arrays, scipy matrices and numbers have none but 0)."""
    return {name: value.fill for name, value in operands.items() if isinstance(value, Tensor)}


def check_fills(assignment: Assignment, compiled: Mapping[str, Value], given: Mapping[str, Value]) -> None:
    """A ScheduleError naming the first operand whose fill differs from the one the kernel was compiled
    for (0 where not given): its absent entries are folded into the C (zero elimination, lattices, the
    result's start)."""
    for name in sorted({*compiled, *given}):
        if not _same(compiled.get(name, 0), given.get(name, 0)):
            raise ScheduleError(f"Expected {name} of fill {compiled.get(name, 0)} in {assignment}, as the kernel "
                                f"was compiled for, but it has fill {given.get(name, 0)}: build a kernel for "
                                f"these fills (Kernel(..., fills=...))")


def _same(fill: Value, other: Value) -> bool:
    return bool(fill == other)


def infer_format(value, order: int) -> Format:
    """The format a value already has: a Tensor's own, CSR/CSC for scipy matrices, dense otherwise."""
    if isinstance(value, Tensor):
        return value.format
    if is_scipy(value):
        return as_format("csc" if value.format == "csc" else "csr", order)
    return as_format("dense", order)


def result_index_dtype(operands: Mapping[str, Tensor], extents) -> np.dtype:
    """int64 when an operand uses it or a coordinate can pass 2³¹; the kernel asks for a retry if a
    position outgrows int32."""
    if any(t.index_dtype == np.int64 for t in operands.values() if not t.format.is_dense) or \
            any(e > INT32_MAX for e in extents):
        return np.dtype(np.int64)
    return np.dtype(np.int32)


def result_value_dtype(operands: Mapping[str, Tensor], literals=(), divides: bool = False) -> np.dtype:
    """numpy's promotion of the operands' dtypes with the literals as weak Python scalars: `2.5 * a(i)`
    of an integer `a` is float64 and `2 * b(i)` of a float32 `b` stays float32, as in numpy. An
    expression that `divides` follows numpy's true division: integers give float64."""
    kinds = [t.dtype for t in operands.values()]
    dtype = np.result_type(*kinds, *literals) if kinds else np.result_type(np.float64, *literals)
    return np.dtype(np.float64) if divides and dtype.kind in "iub" else dtype
