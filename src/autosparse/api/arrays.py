"""Tensor's array operators as index notation: each one assignment, evaluated as one compiled kernel
(memoised by the pipeline, so a loop of `A @ x` compiles once), never through a dense copy.

    A @ B   C(i,j) = A(i,k) * B(k,j)          A @ x   C(i) = A(i,j) * B(j)       x @ A   C(j) = A(i) * B(i,j)
    A + B   C(i,j) = A(i,j) + B(i,j)          A * v   C(i,j) = A(i,j) * B(j)     (v of shape (n,): numpy's rows)
    2 * A   C(i,j) = A() * B(i,j)             -A      C(i,j) = -A(i,j)           A.sum(1)  C(i) = A(i,j)

A number is an order-0 operand, not a literal, so every value shares one kernel; a Python number keeps
numpy's weak typing (`2 * A` of float32 is float32). `A / d` divides by a number or a dense array (a
sparse divisor is refused by the notation: x / 0 where it stores nothing). An axis of extent 1
broadcasts in a numpy array (it is squeezed away), not in a sparse operand (refused).

The same builders serve autosparse.array (`build`): the element-wise functions (`maximum(A(i,j), B(j))`,
`where(A(), B(i), D(i))`: a third operand is D, C being the result), the reductions (`max(j, A(i,j))`),
`tensordot`, `vecdot`, `permute_dims` and the matrix product over a semiring (`min(k, A(i,k) + B(k,j))`).

Result formats are `evaluate`'s, inferred from the operands' (pipeline/result_format.py): sparse where
sparse operands bound the result's pattern, so an operator and its `evaluate` spelling agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..config import num_threads as default_threads
from ..errors import AutosparseError, RangeError, ShapeError
from ..notation import accesses
from ..notation.einsum import einsum_assignment, operand_name
from ..notation.operators import REDUCTIONS, REGISTRY
from ..pipeline.kernel import PARALLEL_MIN_ENTRIES
from ..pipeline.lastfirst import LastFirst
from ..tensor import Tensor
from ..tensor.interop import is_scipy
from ..tensor.operations import LOGICAL

_INDICES = "ijklmnopqrstuvwxyz"
NAMES = ("A", "B", "D")  # the operands' names in every builder's expression, in order (C is the result)
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

    def __call__(self, name: str, operands: tuple, axis: int | tuple[int, ...] | None = None, **options) -> object:
        """`name` of the operands; `axis` for reductions, `options` for the builders that take them
        (`tensordot`'s axes, `permute_dims`', `matmul`'s semiring), whose calls take the general path."""
        if name in LOGICAL:
            return numpy_bool(self.compute(name, operands, axis, **options))
        return self.compute(name, operands, axis, **options)

    def compute(self, name: str, operands: tuple, axis: int | tuple[int, ...] | None = None, **options) -> object:
        """`name` of the operands as the kernel gives it (a comparison's 0/1 in the operands' value type)."""
        if axis is not None or name in REDUCTIONS:
            options["axis"] = axis
        if options:
            return self.run(*build(name, operands, **options))
        operands = _as_operands(operands)  # a number as the 0-d array the builders make of it: warm calls too
        key = _warm_key(name, operands)
        if key is not None:
            kernel = self.warm.find(key)
            if kernel is not None:
                self.warm_calls += 1
                if len(operands) == 2:
                    return kernel(A=operands[0], B=operands[1])
                return kernel(A=operands[0]) if len(operands) == 1 else kernel(**dict(zip(NAMES, operands)))
        expression, named = build(name, operands)
        if key is None or tuple(named) != NAMES[:len(operands)] \
                or any(value is not given for value, given in zip(named.values(), operands)):
            return self.run(expression, named)
        kernel = self.kernel(expression, named)
        result = kernel(**named)
        if len(self.warm) >= WARM_KEPT:
            self.warm.clear()
        self.warm[key] = kernel
        return result

    def run(self, expression: str, operands: dict) -> object:
        """`expression` of `operands`, through `evaluate`'s kernel (one built once per kind of operands)."""
        return self.kernel(expression, operands)(**operands)


def numpy_bool(value):
    """A comparison's or a logical function's result as numpy types it: a dense one (an array or a number) as
    bool; a sparse one stays a Tensor of 0/1 in its value type, as a Tensor stores no bool (design31.md risk 7)."""
    if isinstance(value, np.ndarray):
        return value.astype(bool)
    return value if isinstance(value, Tensor) else np.bool_(value)


def _warm_key(name: str, operands: tuple) -> tuple | None:
    """What an operator's expression and kernel depend on, when every operand is a Tensor or a numpy
    array: the operation, each operand's kind — a Tensor's format, shape and dtypes with the magnitude of
    its stored entries (evaluate keeps kernels per it), an array's shape (the builders read shapes only;
    the kernel checks the rest of an array on every call) — and the process's threads where the operands
    hold the work to run on more than one (`PARALLEL_MIN_ENTRIES`): below it, a default-schedule kernel
    runs on one thread whatever count it was built for, and reading the count costs a system call
    (`sched_getaffinity`), a tenth of a small call. A key is kept only after a call with it passed the
    builder's checks and ran with the operands as given, named `NAMES` in order (not squeezed for
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
    return [weakly_typed(value, dtypes) if type(value) in _PYTHON_NUMBERS else value for value in arrays]


@dataclass(frozen=True, slots=True)
class Shaped:
    """A stand-in for an operand not computed yet (a lazy node of autosparse.array): the builders read its
    shape, and it broadcasts as a sparse operand does (no mode of extent 1 stretches) — except the modes
    `kept` (a reduction's keepdims), which stretch together: squeezed, it stands for `of` (the reduction
    without them)."""

    shape: tuple[int, ...]
    dtype: np.dtype
    kept: tuple[int, ...] = ()
    of: object = None

    def squeeze(self, axes: tuple[int, ...]) -> "Shaped":
        """The stand-in without the modes `axes`: every mode `kept` (a ShapeError for some of them only)."""
        if set(axes) != set(self.kept):
            raise ShapeError(f"Expected the modes {self.kept} of extent 1 of a lazy reduction's keepdims to broadcast "
                             f"together, but found {axes} of its shape {self.shape}")
        return Shaped(tuple(n for m, n in enumerate(self.shape) if m not in axes), self.dtype, of=self.of)


def _as_array(value):
    return value if isinstance(value, (Tensor, np.ndarray, Shaped)) or is_scipy(value) else np.asarray(value)


def index_names(order: int) -> list[str]:
    return [_INDICES[n] if n < len(_INDICES) else f"i{n}" for n in range(order)]


def _access(name: str, indices) -> str:
    return f"{name}({','.join(indices)})"


def build(name: str, operands: tuple, **options) -> tuple[str, dict]:
    """The assignment computing `name` of the operands (numbers typed as numpy types them) and the operands
    by the names it reads; a ShapeError where their shapes do not fit. The builders read only operands'
    shapes (and whether a value is a numpy array, whose axes of extent 1 broadcast), so autosparse.array
    builds its lazy nodes with them too."""
    if name not in _BUILDERS:
        raise AutosparseError(f"Expected an array operation among {sorted(_BUILDERS)}, but found {name!r}")
    return _BUILDERS[name](*_as_operands(operands), **options)


def weakly_typed(value, dtypes) -> np.ndarray:
    """A Python number as the 0-d array numpy 2 makes of it beside arrays of `dtypes`: their type where
    that holds the number (`2 * A` of float32 is float32); a RangeError where no numpy type holds it."""
    try:
        return np.asarray(value, dtype=np.result_type(*dtypes, value))
    except OverflowError:
        raise RangeError(f"Expected a number a value type holds, but found {value!r:.60}") from None


# ----- element-wise --------------------------------------------------------------------------------------

_SYMBOLS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
#: The element-wise functions of the notation the builders spell `name(A(...), B(...))` (operators.py).
_FUNCTIONS = ("maximum", "minimum", "abs", "sqrt", "exp", "log", "where", "less", "less_equal", "greater",
             "greater_equal", "equal", "not_equal", "logical_and", "logical_or", "logical_not")


def _negative(operand):
    indices = index_names(len(operand.shape))
    expression = f"{_access('C', indices)} = -{_access('A', indices)}"
    return expression, {"A": operand}


def _elementwise(name: str):
    """The builder of the element-wise operation `name`."""
    def builder(*operands):
        indices, arguments, named = _broadcast_all(name, operands)
        right = f" {_SYMBOLS[name]} ".join(arguments) if name in _SYMBOLS else f"{name}({', '.join(arguments)})"
        return f"{_access('C', indices)} = {right}", named
    return builder


def _broadcast_all(name: str, operands) -> tuple[list[str], list[str], dict]:
    """The operands broadcast as numpy broadcasts them, each operand's modes the result's last ones: the
    result's indices, each operand's access, and the operands by name."""
    try:
        shape = np.broadcast_shapes(*(operand.shape for operand in operands))
    except ValueError:
        raise ShapeError(f"Expected shapes that broadcast together in {name}, but found "
                         f"{', '.join(str(operand.shape) for operand in operands)}") from None
    indices = index_names(len(shape))
    broadcast = [_broadcast(operand, indices, shape) for operand in operands]
    return (indices, [_access(n, own) for n, (_, own) in zip(NAMES, broadcast)],
            {n: value for n, (value, _) in zip(NAMES, broadcast)})


def _broadcast(value, indices: list[str], shape: tuple[int, ...]):
    """The operand and its indices, the result's last ones; a numpy array's axes of extent 1 that broadcast
    are squeezed away."""
    own = indices[len(indices) - len(value.shape):]
    stretched = tuple(axis for axis, extent in enumerate(value.shape)
                      if extent == 1 and shape[len(shape) - len(value.shape) + axis] != 1)
    if not stretched:
        return value, own
    if not (isinstance(value, np.ndarray) or isinstance(value, Shaped) and value.kept):
        raise ShapeError(f"Expected a sparse operand of shape {shape[len(shape) - len(value.shape):]}, but found "
                         f"{value.shape}: its modes of extent 1 do not broadcast (a numpy array's do)")
    return value.squeeze(stretched), [index for axis, index in enumerate(own) if axis not in stretched]


# ----- products and sums ---------------------------------------------------------------------------------

#: A matrix product's indices by the operands' orders: the result's, the left's, the right's, the summed one.
_MATMUL = {(2, 2): ("ij", "ik", "kj", "k"), (2, 1): ("i", "ij", "j", "j"), (1, 2): ("j", "i", "ij", "i"),
           (1, 1): ("", "i", "i", "i")}


def _matmul(left, right, add: str = "add", multiply: str = "multiply"):
    """The matrix product over the semiring (⊕ `add`, ⊗ `multiply`: operators.py's names): `C(i,j) =
    A(i,k) * B(k,j)` over (add, multiply), `C(i,j) = min(k, A(i,k) + B(k,j))` over (minimum, add)."""
    orders = (len(left.shape), len(right.shape))
    if orders not in _MATMUL:
        raise ShapeError(f"Expected operands of order 1 or 2 for a matrix product, but found shapes {left.shape} "
                         f"and {right.shape}: multiply by a number with *, contract tensors with evaluate or einsum")
    if left.shape[-1] != right.shape[0]:
        raise ShapeError(f"Expected the last extent of {left.shape} to equal the first of {right.shape} in a "
                         f"matrix product, but they differ")
    result, a, b, summed = _MATMUL[orders]
    product = _combined(multiply, _access("A", a), _access("B", b))
    return f"{_access('C', result)} = {_reduced(add, [summed], product)}", {"A": left, "B": right}


def _combined(name: str, left: str, right: str) -> str:
    return f"{left} {_SYMBOLS[name]} {right}" if name in _SYMBOLS else f"{name}({left}, {right})"


def _reduced(name: str, indices, body: str) -> str:
    """`body` reduced by the operator `name` over `indices`: implicit for a sum (the form every kernel of
    the operators had), `min(j, body)` for the others."""
    if name == "add":
        return body
    for index in reversed(list(indices)):
        body = f"{REGISTRY[name].reduction}({index}, {body})"
    return body


def _dot(left, right):
    """numpy's dot: a product by a number, or a matrix product."""
    return _BUILDERS["multiply"](left, right) if 0 in (len(left.shape), len(right.shape)) else _matmul(left, right)


def _tensordot(left, right, axes=2):
    """numpy's tensordot: `axes` an integer (the left's last modes with the right's first) or a pair of
    sequences of modes; the result's modes are the left's free ones, then the right's."""
    if isinstance(axes, int):
        axes = (tuple(range(len(left.shape) - axes, len(left.shape))), tuple(range(axes)))
    left_axes, right_axes = (tuple(_axes((a,) if isinstance(a, int) else a, len(v.shape)))
                             for a, v in zip(axes, (left, right)))
    if len(left_axes) != len(right_axes) or \
            any(left.shape[a] != right.shape[b] for a, b in zip(left_axes, right_axes)):
        raise ShapeError(f"Expected pairs of modes of equal extents to contract, but found modes {left_axes} of "
                         f"{left.shape} and {right_axes} of {right.shape}")
    indices = index_names(len(left.shape) + len(right.shape))
    a, b = indices[:len(left.shape)], indices[len(left.shape):]
    for x, y in zip(left_axes, right_axes):
        b[y] = a[x]
    result = [a[m] for m in range(len(a)) if m not in left_axes] + [b[m] for m in range(len(b)) if m not in right_axes]
    return f"{_access('C', result)} = {_access('A', a)} * {_access('B', b)}", {"A": left, "B": right}


def _einsum(*operands, subscripts: str):
    """numpy's einsum of up to three operands: the one product summed over the letters the output lacks
    (notation/einsum.py), so that a lazy MTTKRP is `C(i,j) = A(i,k,l) * B(k,j) * D(l,j)`, whose default loop
    order walks the tensor once, not a tensordot whose product is then multiplied and summed apart."""
    if len(operands) > len(NAMES):
        raise AutosparseError(f"Expected at most {len(NAMES)} operands of autosparse.array.einsum, but found "
                              f"{len(operands)}: use autosparse.einsum")
    assignment = einsum_assignment(subscripts, [operand.shape for operand in operands])
    names = {operand_name(k): name for k, name in enumerate(NAMES)}
    product = " * ".join(_access(names[a.tensor], [i.name for i in a.indices]) for a in accesses(assignment.rhs))
    return f"{_access('C', [i.name for i in assignment.lhs.indices])} = {product}", dict(zip(NAMES, operands))


def _vecdot(left, right, axis: int = -1):
    """The array API's vecdot (of real values): the product summed over `axis` of the broadcast shape."""
    indices, (a, b), named = _broadcast_all("vecdot", (left, right))
    if not indices:
        raise ShapeError("Expected operands of order 1 or more in vecdot, but found two numbers")
    (summed,) = _axes((axis,), len(indices))
    return f"{_access('C', indices[:summed] + indices[summed + 1:])} = {a} * {b}", named


def _permute_dims(operand, axes):
    """The operand with its modes in the order `axes` (a permutation): the result's mode m is its mode axes[m]."""
    axes = tuple(_axes(axes, len(operand.shape)))
    if sorted(axes) != list(range(len(operand.shape))):
        raise ShapeError(f"Expected a permutation of the modes of an operand of shape {operand.shape}, but found "
                         f"{axes}")
    indices = index_names(len(operand.shape))
    return f"{_access('C', [indices[a] for a in axes])} = {_access('A', indices)}", {"A": operand}


def _matrix_transpose(operand):
    order = len(operand.shape)
    if order < 2:
        raise ShapeError(f"Expected an operand of order 2 or more to transpose, but found shape {operand.shape}")
    return _permute_dims(operand, (*range(order - 2), order - 1, order - 2))


def _reduction(word: str):
    """The builder of the reduction `word` (sum, prod, min, max, any, all) over `axis` (every mode when None);
    `keepdims` keeps each reduced mode with extent 1 by reducing the products with a one of those extents (B:
    exact in every value type), so the result stays one assignment, which a lazy program inlines as any other."""
    def builder(operand, axis: int | tuple[int, ...] | None = None, keepdims: bool = False):
        order = len(operand.shape)
        summed = set(range(order)) if axis is None else set(_axes((axis,) if isinstance(axis, int) else axis, order))
        indices = index_names(order)
        kept = [index for mode, index in enumerate(indices) if mode not in summed]
        reduced = [index for mode, index in enumerate(indices) if mode in summed]
        if not reduced:
            return f"{_access('C', kept)} = {_truth(word, _access('A', indices))}", {"A": operand}
        if not keepdims:
            return f"{_access('C', kept)} = {_reduced(REDUCTIONS[word].name, reduced, _access('A', indices))}", \
                {"A": operand}
        ones = index_names(order + len(reduced))[order:]
        result = [ones[reduced.index(index)] if mode in summed else index for mode, index in enumerate(indices)]
        body = _reduced(REDUCTIONS[word].name, reduced, f"{_access('A', indices)} * {_access('B', ones)}")
        return f"{_access('C', result)} = {body}", {"A": operand, "B": np.ones((1,) * len(ones), operand.dtype)}
    return builder


def _truth(word: str, body: str) -> str:
    """`body` reduced over no axes: itself, but for `any` and `all` its truth (numpy's `np.any(a, axis=())` is
    `a != 0`), which no reduction operator is left to make 0/1."""
    return f"not_equal({body}, 0)" if word in LOGICAL else body


def _axes(axes, order: int) -> list[int]:
    """Distinct modes of an operand of `order`, negative ones counted from the last; a ShapeError otherwise."""
    modes = [a + order if -order <= a < 0 else a for a in axes]
    if len(set(modes)) != len(modes) or not all(0 <= a < order for a in modes):
        raise ShapeError(f"Expected distinct axes of a tensor of order {order}, but found {tuple(axes)}")
    return modes


_BUILDERS = {"negative": _negative, "matmul": _matmul, "dot": _dot, "tensordot": _tensordot, "vecdot": _vecdot,
             "einsum": _einsum,
             "permute_dims": _permute_dims, "matrix_transpose": _matrix_transpose,
             **{name: _elementwise(name) for name in (*_SYMBOLS, *_FUNCTIONS)},
             **{word: _reduction(word) for word in REDUCTIONS}}
