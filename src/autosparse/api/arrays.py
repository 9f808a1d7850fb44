"""Tensor's array operators as index notation: each one assignment, evaluated as one compiled kernel
(memoised by the pipeline, so a loop of `A @ x` compiles once), never through a dense copy.

    A @ B   C(i,j) = A(i,k) * B(k,j)          A @ x   C(i) = A(i,j) * B(j)       x @ A   C(j) = A(i) * B(i,j)
    A + B   C(i,j) = A(i,j) + B(i,j)          A * v   C(i,j) = A(i,j) * B(j)     (v of shape (n,): numpy's rows)
    2 * A   C(i,j) = A() * B(i,j)             -A      C(i,j) = -A(i,j)           A.sum(1)  C(i) = A(i,j)

A number is an order-0 operand, not a literal, so every value shares one kernel; a Python number keeps
numpy's weak typing (`2 * A` of float32 is float32). `A / d` divides by a number or a dense array (a
sparse divisor is refused by the notation: x / 0 where it stores nothing). An axis of extent 1
broadcasts in a numpy array (it is squeezed away), not in a sparse operand (refused).

Result formats are `evaluate`'s, inferred from the operands' (pipeline/result_format.py): sparse where
sparse operands bound the result's pattern, so an operator and its `evaluate` spelling agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..config import num_threads as default_threads
from ..errors import ShapeError
from ..pipeline.kernel import PARALLEL_MIN_ENTRIES
from ..pipeline.lastfirst import LastFirst
from ..tensor import Tensor
from ..tensor.interop import is_scipy

_INDICES = "ijklmnopqrstuvwxyz"
_NAMES = ("A", "B")  # the operands' names in every builder's expression, in order
_PYTHON_NUMBERS = (bool, int, float, complex)
_ARRAY_TYPES = frozenset({Tensor, np.ndarray})  # operands taken as they are


#: Warm operator calls kept before `ArrayOperations.warm` is emptied (as many as api keeps kernels).
WARM_KEPT = 256


@dataclass
class ArrayOperations:
    """tensor.operations' hook: each operation as an assignment, computed by the kernel that `evaluate`
    calls for it (`kernel`: api's, injected by api/__init__ so that this module needs nothing above it).
    `warm` keeps that kernel per `_warm_key`, so that a repeated `A @ x` calls its kernel at once,
    without building its expression or evaluate's checks again; `warm_calls` counts such calls."""

    kernel: Callable[[str, dict], Callable[..., object]]
    warm: LastFirst = field(default_factory=LastFirst)
    warm_calls: int = 0

    def __call__(self, name: str, operands: tuple, axis: int | tuple[int, ...] | None = None) -> object:
        if name == "sum":
            return self._run(*_sum(operands[0], axis))
        key = _warm_key(name, operands)
        if key is not None:
            kernel = self.warm.find(key)
            if kernel is not None:
                self.warm_calls += 1
                return kernel(A=operands[0], B=operands[1]) if len(operands) == 2 else kernel(A=operands[0])
        expression, named = _BUILDERS[name](*_as_operands(operands))
        if key is None or tuple(named) != _NAMES[:len(operands)] \
                or any(value is not given for value, given in zip(named.values(), operands)):
            return self._run(expression, named)
        kernel = self.kernel(expression, named)
        result = kernel(**named)
        if len(self.warm) >= WARM_KEPT:
            self.warm.clear()
        self.warm[key] = kernel
        return result

    def _run(self, expression: str, operands: dict) -> object:
        return self.kernel(expression, operands)(**operands)


def _warm_key(name: str, operands: tuple) -> tuple | None:
    """What an operator's expression and kernel depend on, when every operand is a Tensor or a numpy
    array: the operation, each operand's kind — a Tensor's format, shape and dtypes with the magnitude of
    its stored entries (evaluate keeps kernels per it), an array's shape (the builders read shapes only;
    the kernel checks the rest of an array on every call) — and the process's threads where the operands
    hold the work to run on more than one (`PARALLEL_MIN_ENTRIES`): below it, a default-schedule kernel
    runs on one thread whatever count it was built for, and reading the count costs a system call
    (`sched_getaffinity`), a tenth of a small call. A key is kept only after a call with it passed the
    builder's checks and ran with the operands as given, named `_NAMES` in order (not squeezed for
    broadcasting), so finding one proves those checks and names the operands. None: some operand is
    neither."""
    kinds, work = [name], 0
    for value in operands:
        kind = type(value)
        if kind is Tensor:
            kinds.append(value.kind)
            kinds.append(value.nnz.bit_length())
            work += value.nnz
        elif kind is np.ndarray:
            kinds.append(value.shape)
            work += value.size
        else:
            return None
    kinds.append(default_threads() if work >= PARALLEL_MIN_ENTRIES else 1)
    return tuple(kinds)


def _as_operands(values: tuple) -> "tuple | list":
    """Tensors and scipy matrices as they are, the rest as numpy values; a Python number typed as numpy 2
    types it beside arrays (weakly: the arrays' dtype where that holds it)."""
    if all(type(value) in _ARRAY_TYPES for value in values):  # `A @ x`: the common case, on every call
        return values
    arrays = [value if type(value) in _PYTHON_NUMBERS else _as_array(value) for value in values]
    dtypes = [value.dtype for value in arrays if type(value) not in _PYTHON_NUMBERS]
    if len(dtypes) == len(arrays):  # no number to type
        return arrays
    return [np.asarray(value, dtype=np.result_type(*dtypes, value)) if type(value) in _PYTHON_NUMBERS else value
            for value in arrays]


def _as_array(value):
    return value if isinstance(value, (Tensor, np.ndarray)) or is_scipy(value) else np.asarray(value)


def _indices(order: int) -> list[str]:
    return [_INDICES[n] if n < len(_INDICES) else f"i{n}" for n in range(order)]


def _access(name: str, indices) -> str:
    return f"{name}({','.join(indices)})"


# ----- element-wise --------------------------------------------------------------------------------------

def _add(left, right):
    return _elementwise("+", left, right)


def _subtract(left, right):
    return _elementwise("-", left, right)


def _multiply(left, right):
    return _elementwise("*", left, right)


def _divide(left, right):
    return _elementwise("/", left, right)


def _negative(operand):
    indices = _indices(len(operand.shape))
    expression = f"{_access('C', indices)} = -{_access('A', indices)}"
    return expression, {"A": operand}


def _elementwise(operator: str, left, right):
    """`left operator right` broadcast as numpy broadcasts: each operand's modes are the result's last ones."""
    try:
        shape = np.broadcast_shapes(left.shape, right.shape)
    except ValueError:
        raise ShapeError(f"Expected shapes that broadcast together, but found {left.shape} and {right.shape}") from None
    indices = _indices(len(shape))
    (left, left_indices), (right, right_indices) = (_broadcast(value, indices, shape) for value in (left, right))
    expression = f"{_access('C', indices)} = {_access('A', left_indices)} {operator} {_access('B', right_indices)}"
    return expression, {"A": left, "B": right}


def _broadcast(value, indices: list[str], shape: tuple[int, ...]):
    """The operand and its indices, the result's last ones; a numpy array's axes of extent 1 that broadcast
    are squeezed away."""
    own = indices[len(indices) - len(value.shape):]
    stretched = tuple(axis for axis, extent in enumerate(value.shape)
                      if extent == 1 and shape[len(shape) - len(value.shape) + axis] != 1)
    if not stretched:
        return value, own
    if not isinstance(value, np.ndarray):
        raise ShapeError(f"Expected a sparse operand of shape {shape[len(shape) - len(value.shape):]}, but found "
                         f"{value.shape}: its modes of extent 1 do not broadcast (a numpy array's do)")
    return value.squeeze(stretched), [index for axis, index in enumerate(own) if axis not in stretched]


# ----- products and sums ---------------------------------------------------------------------------------

_MATMUL = {(2, 2): "C(i,j) = A(i,k) * B(k,j)", (2, 1): "C(i) = A(i,j) * B(j)", (1, 2): "C(j) = A(i) * B(i,j)",
           (1, 1): "C() = A(i) * B(i)"}


def _matmul(left, right):
    orders = (len(left.shape), len(right.shape))
    if orders not in _MATMUL:
        raise ShapeError(f"Expected operands of order 1 or 2 for a matrix product, but found shapes {left.shape} "
                         f"and {right.shape}: multiply by a number with *, contract tensors with evaluate or einsum")
    if left.shape[-1] != right.shape[0]:
        raise ShapeError(f"Expected the last extent of {left.shape} to equal the first of {right.shape} in a "
                         f"matrix product, but they differ")
    return _MATMUL[orders], {"A": left, "B": right}


def _dot(left, right):
    """numpy's dot: a product by a number, or a matrix product."""
    return _multiply(left, right) if 0 in (len(left.shape), len(right.shape)) else _matmul(left, right)


def _sum(operand, axis: tuple[int, ...] | None):
    """`operand` summed over `axis` (every mode when None)."""
    order = len(operand.shape)
    summed = set(range(order)) if axis is None else {a + order if a < 0 else a for a in axis}
    if not summed <= set(range(order)) or (axis is not None and len(summed) != len(axis)):
        raise ShapeError(f"Expected distinct axes of a tensor of order {order}, but found {axis}")
    indices = _indices(order)
    kept = [index for mode, index in enumerate(indices) if mode not in summed]
    expression = f"{_access('C', kept)} = {_access('A', indices)}"
    return expression, {"A": operand}


_BUILDERS = {"add": _add, "subtract": _subtract, "multiply": _multiply, "divide": _divide, "negative": _negative,
             "matmul": _matmul, "dot": _dot}
