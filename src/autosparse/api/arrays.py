"""Tensor's array operators as index notation: each one assignment, evaluated as one compiled kernel
(memoised by the pipeline, so a loop of `A @ x` compiles once), never through a dense copy.

    A @ B   C(i,j) = A(i,k) * B(k,j)          A @ x   C(i) = A(i,j) * B(j)       x @ A   C(j) = A(i) * B(i,j)
    A + B   C(i,j) = A(i,j) + B(i,j)          A * v   C(i,j) = A(i,j) * B(j)     (v of shape (n,): numpy's rows)
    2 * A   C(i,j) = A() * B(i,j)             -A      C(i,j) = -A(i,j)           A.sum(1)  C(i) = A(i,j)

A number is an order-0 operand, not a literal, so every value shares one kernel; a Python number keeps
numpy's weak typing (`2 * A` of float32 is float32). `A / s` multiplies by numpy's 1/s (so it may
differ from numpy's A / s in the last bit). An axis of extent 1 broadcasts in a numpy array (it is
squeezed away), not in a sparse operand (refused).

Result formats, chosen here and passed to `evaluate`: a product is sparse when a sparse factor spans every
index of the result, a sum when every term does, in a format of that operand's level kinds (full levels dense, the
others compressed) and mode order; a matrix product of two sparse matrices is sparse (CSC when both are
stored column-major, rows first otherwise), of a sparse and a dense one dense; a sum over an operand's
trailing levels keeps its leading levels' format. Everything else is dense.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import AutosparseError, ShapeError
from ..format import Format, Layout
from ..pipeline.operands import infer_format
from ..tensor import Tensor
from ..tensor.interop import is_scipy

_INDICES = "ijklmnopqrstuvwxyz"
_PYTHON_NUMBERS = (bool, int, float, complex)


@dataclass(frozen=True)
class ArrayOperations:
    """tensor.operations' hook: each operation as an assignment for `evaluate` (api's, injected by
    api/__init__ so that this module needs nothing above it)."""

    evaluate: Callable[..., object]

    def __call__(self, name: str, operands: tuple, axis: int | tuple[int, ...] | None = None) -> object:
        if name == "sum":
            return self._run(*_sum(operands[0], axis))
        return self._run(*_BUILDERS[name](*_as_operands(operands)))

    def _run(self, expression: str, operands: dict, fmt: Format | None) -> object:
        return self.evaluate(expression, format=fmt, **operands)


def _as_operands(values: tuple) -> list:
    """Tensors and scipy matrices as they are, the rest as numpy values; a Python number typed as numpy 2
    types it beside arrays (weakly: the arrays' dtype where that holds it)."""
    arrays = [value if type(value) in _PYTHON_NUMBERS else _as_array(value) for value in values]
    dtypes = [value.dtype for value in arrays if type(value) not in _PYTHON_NUMBERS]
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
    if not (isinstance(right, np.ndarray) and right.ndim == 0):
        raise AutosparseError(f"Expected a number to divide a tensor by, but found {type(right).__name__} "
                              f"of shape {right.shape}: division by an array is not computed yet")
    return _multiply(left, np.asarray(np.divide(1, right)))  # numpy's reciprocal: inf for 0, a float for an integer


def _negative(operand):
    indices = _indices(len(operand.shape))
    expression = f"{_access('C', indices)} = -{_access('A', indices)}"
    return expression, {"A": operand}, _pattern_format([operand] if _is_sparse(operand) else [], len(indices))


def _elementwise(operator: str, left, right):
    """`left operator right` broadcast as numpy broadcasts: each operand's modes are the result's last ones."""
    try:
        shape = np.broadcast_shapes(left.shape, right.shape)
    except ValueError:
        raise ShapeError(f"Expected shapes that broadcast together, but found {left.shape} and {right.shape}") from None
    indices = _indices(len(shape))
    (left, left_indices), (right, right_indices) = (_broadcast(value, indices, shape) for value in (left, right))
    expression = f"{_access('C', indices)} = {_access('A', left_indices)} {operator} {_access('B', right_indices)}"
    spanning = [value for value, used in ((left, left_indices), (right, right_indices))
                if _is_sparse(value) and len(used) == len(indices)]
    bounding = spanning if operator == "*" or len(spanning) == 2 else []  # a sum: only when both terms are
    return expression, {"A": left, "B": right}, _pattern_format(bounding, len(indices))


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

_MATMUL = {(2, 2): ("C(i,j)", "A(i,k)", "B(k,j)"), (2, 1): ("C(i)", "A(i,j)", "B(j)"),
           (1, 2): ("C(j)", "A(i)", "B(i,j)"), (1, 1): ("C()", "A(i)", "B(i)")}


def _matmul(left, right):
    orders = (len(left.shape), len(right.shape))
    if orders not in _MATMUL:
        raise ShapeError(f"Expected operands of order 1 or 2 for a matrix product, but found shapes {left.shape} "
                         f"and {right.shape}: multiply by a number with *, contract tensors with evaluate or einsum")
    if left.shape[-1] != right.shape[0]:
        raise ShapeError(f"Expected the last extent of {left.shape} to equal the first of {right.shape} in a "
                         f"matrix product, but they differ")
    result, a, b = _MATMUL[orders]
    return f"{result} = {a} * {b}", {"A": left, "B": right}, _product_format(left, right, sum(orders) - 2)


def _dot(left, right):
    """numpy's dot: a product by a number, or a matrix product."""
    return _multiply(left, right) if 0 in (len(left.shape), len(right.shape)) else _matmul(left, right)


def _product_format(left, right, order: int) -> Format | None:
    if order == 0:
        return None
    if not (_is_sparse(left) and _is_sparse(right)):
        return Format("dense", order)
    if order == 1:
        return Format("s")
    if _storage_format(left).mode_order == _storage_format(right).mode_order == (1, 0):
        return Format(_letter(_storage_format(right).levels[0]) + "1s0")
    return Format(_letter(_storage_format(left).levels[0]) + "s")


def _sum(operand, axis: tuple[int, ...] | None):
    """`operand` summed over `axis` (every mode when None)."""
    order = len(operand.shape)
    summed = set(range(order)) if axis is None else {a + order if a < 0 else a for a in axis}
    if not summed <= set(range(order)) or (axis is not None and len(summed) != len(axis)):
        raise ShapeError(f"Expected distinct axes of a tensor of order {order}, but found {axis}")
    indices = _indices(order)
    kept = [index for mode, index in enumerate(indices) if mode not in summed]
    expression = f"{_access('C', kept)} = {_access('A', indices)}"
    return expression, {"A": operand}, _sum_format(operand, summed, len(kept))


def _sum_format(operand, summed: set[int], order: int) -> Format | None:
    """The operand's format on the kept modes when they are stored above every summed one; dense otherwise."""
    if order == 0:
        return None
    fmt = operand.format if isinstance(operand, Tensor) else _storage_format(operand)
    if not _is_sparse(operand) or isinstance(fmt, Layout) or any(mode in summed for mode in fmt.mode_order[:order]):
        return Format("dense", order)
    return _result_format(operand, len(summed))


# ----- result formats ------------------------------------------------------------------------------------

def _is_sparse(value) -> bool:
    return is_scipy(value) or (isinstance(value, Tensor) and not value.format.is_dense)


def _storage_format(value) -> Format:
    fmt = value.format if isinstance(value, Tensor) else infer_format(value, len(value.shape))
    return fmt.storage if isinstance(fmt, Layout) else fmt


def _letter(level) -> str:
    return "d" if level.properties.full else "s"


def _pattern_format(bounding: list, order: int) -> Format | None:
    """The format of a result whose pattern the first of `bounding` bounds (dense when none does)."""
    if order == 0:
        return None
    return _result_format(bounding[0], 0) if bounding else Format("dense", order)


def _result_format(operand, dropped: int) -> Format:
    """A result over the operand's pattern (without its last `dropped` levels): full levels stay dense, the
    others become compressed (a COO operand gives a DCSR result), in the operand's mode order."""
    if isinstance(operand, Tensor) and isinstance(operand.format, Layout):
        return Format("d" + "s" * (len(operand.shape) - 1))
    fmt = _storage_format(operand)
    kept = fmt.mode_order[:len(fmt.levels) - dropped]
    renumbered = [sorted(kept).index(mode) for mode in kept]
    return Format("".join(_letter(level) for level in fmt.levels[:len(kept)]), mode_order=renumbered)


_BUILDERS = {"add": _add, "subtract": _subtract, "multiply": _multiply, "divide": _divide, "negative": _negative,
             "matmul": _matmul, "dot": _dot}
