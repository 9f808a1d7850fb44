"""User values -> Tensors in the formats a kernel was compiled for, and the dtypes that specialise it."""

from __future__ import annotations

from numbers import Number
from typing import Mapping

import numpy as np

from ..errors import AutosparseError
from ..format import Format
from ..format.spec import as_format
from ..notation import Assignment, parse
from ..tensor import Tensor
from ..tensor.dtypes import INT32_MAX


def as_assignment(expression) -> Assignment:
    """An assignment from its text (parsed and checked: anything but text is a ParseError) or as it is."""
    return expression if isinstance(expression, Assignment) else parse(expression)


def infer_format(value, order: int) -> Format:
    """The format a value already has: a Tensor's own, CSR/CSC for scipy matrices, dense otherwise."""
    if isinstance(value, Tensor):
        return value.format
    if _is_scipy(value):
        return as_format("csc" if value.format == "csc" else "csr", order)
    return as_format("dense", order)


def as_tensor(value, fmt: Format, name: str) -> Tensor:
    """`value` stored in `fmt`: a Tensor in another format is converted (a copy), arrays and scipy or
    pydata sparse arrays are imported."""
    if isinstance(value, Tensor):
        return value if value.format == fmt else value.to_format(fmt)
    if _is_scipy(value):
        return Tensor.from_scipy(value, format=fmt)
    if type(value).__module__.startswith("sparse"):
        return Tensor.from_pydata(value, format=fmt)
    if isinstance(value, (Number, np.ndarray, np.generic, list, tuple)):
        return Tensor.from_numpy(np.asarray(value), format=fmt)
    raise AutosparseError(f"Expected a Tensor, a numpy array, a scipy or pydata sparse array or a number for "
                          f"{name}, but found {type(value).__name__}")


def _is_scipy(value) -> bool:
    return type(value).__module__.startswith("scipy.sparse")


def result_index_dtype(operands: Mapping[str, Tensor], extents) -> np.dtype:
    """int64 when an operand uses it or a coordinate can pass 2³¹; the kernel asks for a retry if a
    position outgrows int32."""
    if any(t.index_dtype == np.int64 for t in operands.values() if not t.format.is_dense) or \
            any(e > INT32_MAX for e in extents):
        return np.dtype(np.int64)
    return np.dtype(np.int32)


def result_value_dtype(operands: Mapping[str, Tensor], literals=()) -> np.dtype:
    """numpy's promotion of the operands' dtypes with the literals as weak Python scalars: `2.5 * a(i)`
    of an integer `a` is float64 and `2 * b(i)` of a float32 `b` stays float32, as in numpy."""
    kinds = [t.dtype for t in operands.values()]
    return np.result_type(*kinds, *literals) if kinds else np.result_type(np.float64, *literals)
