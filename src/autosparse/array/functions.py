"""The array API's functions on Tensors, numpy arrays, scipy matrices and numbers: each one assignment,
computed by one kernel (api/arrays.py builds it, as for Tensor's operators), but a product of float numpy
arrays alone, which numpy computes by BLAS (dense.py). On a LazyArray they record a node instead (lazy.py),
computed by `autosparse.compute`.
"""

from __future__ import annotations

import builtins

import numpy as np

from .. import api
from ..tensor import Tensor
from ..tensor.interop import is_scipy
from . import dense
from .lazy import LazyArray, record
from .semirings import plus_times
from .semirings import semiring as as_semiring


def _computed(name: str, operands: tuple, **options):
    """`name` of the operands: a lazy node where one is lazy, otherwise computed now."""
    if builtins.any(isinstance(operand, LazyArray) for operand in operands):
        return record(name, operands, **options)
    value = dense.eager(name, operands, options)
    return api.operators(name, operands, **options) if value is None else value


def asarray(obj, format=None, dtype=None):
    """`obj` as a Tensor (in `format`, dense for arrays and numbers when None; a scipy matrix's own); a
    Tensor in its format, a LazyArray as it is."""
    if isinstance(obj, LazyArray):
        return obj
    if isinstance(obj, Tensor):
        tensor = obj if format is None else obj.to_format(format)
    elif is_scipy(obj):
        tensor = Tensor.from_scipy(obj, format)
    else:
        tensor = Tensor.from_numpy(np.asarray(obj), "dense" if format is None else format)
    return tensor if dtype is None else tensor.astype(dtype)


def _elementwise(name: str, arity: int):
    def function(*operands):
        if len(operands) != arity:
            raise TypeError(f"{name} takes {arity} arguments, but {len(operands)} were given")
        return _computed(name, operands)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"numpy's {name}, element-wise, the operands broadcast as numpy broadcasts them."
    return function


add, subtract, multiply, divide, maximum, minimum, less, less_equal, greater, greater_equal, equal, not_equal, \
    logical_and, logical_or = (_elementwise(name, 2) for name in (
        "add", "subtract", "multiply", "divide", "maximum", "minimum", "less", "less_equal", "greater",
        "greater_equal", "equal", "not_equal", "logical_and", "logical_or"))
negative, abs, sqrt, exp, log, logical_not = (_elementwise(name, 1) for name in (
    "negative", "abs", "sqrt", "exp", "log", "logical_not"))
where = _elementwise("where", 3)


def _reduction(word: str):
    def function(x, /, *, axis=None, keepdims=False):
        if keepdims:
            return _computed(word, (x,), axis=axis, keepdims=True)
        return _computed(word, (x,), axis=axis)
    function.__name__ = function.__qualname__ = word
    function.__doc__ = f"The {word} of `x` over `axis` (every mode when None; negative ones from the last), the " \
                       f"reduced modes kept with extent 1 where `keepdims`."
    return function


sum, prod, max, min, any, all = (_reduction(word) for word in ("sum", "prod", "max", "min", "any", "all"))


def matmul(x1, x2, /, *, semiring="plus_times"):
    """The matrix product (orders 1 and 2, as numpy's matmul) over `semiring` (semirings.py: a name such as
    "min_plus", or a Semiring)."""
    ring = as_semiring(semiring)
    if ring == plus_times:
        return _computed("matmul", (x1, x2))
    return _computed("matmul", (x1, x2), add=ring.add, multiply=ring.multiply)


def tensordot(x1, x2, /, *, axes=2):
    """numpy's tensordot: the left's last `axes` modes with the right's first, or the pairs of modes given."""
    return _computed("tensordot", (x1, x2), axes=axes)


def einsum(subscripts: str, /, *operands):
    """numpy's einsum (`"ikl,kj,lj->ij"`; up to three operands): one kernel of their product, summed over the
    letters the output lacks."""
    return _computed("einsum", operands, subscripts=subscripts)


def vecdot(x1, x2, /, *, axis=-1):
    """The products of x1 and x2 (broadcast) summed over `axis` (real values)."""
    return _computed("vecdot", (x1, x2), axis=axis)


def permute_dims(x, /, axes):
    """`x` with its modes in the order `axes`."""
    return _computed("permute_dims", (x,), axes=tuple(axes))


def matrix_transpose(x, /):
    """`x` with its last two modes swapped."""
    return _computed("matrix_transpose", (x,))
