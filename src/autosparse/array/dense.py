"""Products of numpy arrays alone, computed by numpy, whose contractions are BLAS calls.

Such a product has nothing sparse to exploit, and BLAS's blocked kernels beat a generated loop nest: a GCN
layer's `X @ W` (4,039 × 64 by 64 × 16) took 1.13 ms as a generated kernel against 0.25 ms by BLAS. So an eager
`matmul`, `tensordot` or `vecdot` of numpy arrays is numpy's own function (einsum keeps its checks: numpy's
takes subscripts and operand counts autosparse refuses), and a lazy program's step
whose operands are all numpy arrays and whose right-hand side is a product of accesses with sums (a GEMM, a
GEMV, a dot product, a scaled product: what an einsum says) is `numpy.einsum` of it, which contracts two
operands at a time by BLAS. Only real floating operands (float32, float64): numpy's integer and bool products
do not go through BLAS, and a bool product is a logical one there, where a kernel's is a count.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..notation import Access, Mul, Sum, parse

#: The value types whose products numpy computes by BLAS.
BLAS_TYPES = (np.dtype(np.float32), np.dtype(np.float64))

#: numpy's function for each eager product, by the array API's name, and the options it takes.
_EAGER = {"matmul": (np.matmul, ()), "tensordot": (np.tensordot, ("axes",)), "vecdot": (np.vecdot, ("axis",))}

#: Steps' subscripts kept, by text: a loop runs the same steps every iteration.
KEPT = 256


def eager(name: str, operands: tuple, options: dict):
    """`name` of `operands` by numpy, where each is a numpy array of a BLAS type (a matrix or a vector) and
    numpy's function takes the options (matmul over another semiring does not); None otherwise, and where
    numpy refuses the shapes: autosparse's builders then name them as for any operand."""
    function, takes = _EAGER.get(name, (None, ()))
    if function is None or not options.keys() <= set(takes) or not _blas_arrays(operands) \
            or any(operand.ndim > 2 for operand in operands):
        return None
    try:
        return function(*operands, **options)
    except ValueError:
        return None


def step(expression: str, operands: dict):
    """A step's value by numpy, where its operands are numpy arrays of a BLAS type and its right-hand side is a
    product of accesses with sums that BLAS contracts: two factors, or two factors holding every summed index
    beside scalings by factors read at the result's indices alone (GCN's `d(i) * sum(k, X(i,k) * W(k,j))`);
    None otherwise."""
    found = _blas_product(expression, operands)
    if found is None:
        return None
    pair, scalings = found
    arrays = {name: operands[name] for name in {*pair[1], *(name for _, name, _ in scalings)}}
    subscripts, names, axes = pair
    factors = [arrays[name] for name in names]
    if axes is None:
        value = np.einsum(subscripts, *factors, optimize=True)
    else:  # one BLAS call, where einsum's own path costs a third more: np.dot where it means the product
        contracted, order = axes  # (its Python is a tenth of tensordot's: CG's r·r), tensordot otherwise
        plain = contracted == ([factors[0].ndim - 1], [0]) and factors[0].ndim <= 2 and factors[1].ndim <= 2
        value = (np.dot(*factors) if plain else np.tensordot(*factors, axes=contracted)).transpose(order)
    if not scalings:
        return np.ascontiguousarray(value) if isinstance(value, np.ndarray) and value.ndim else value
    # owned, writable and of the whole product's type: the scalings multiply it in place
    value = np.asarray(value, dtype=np.result_type(*arrays.values()), order="C")
    for subscripts, name, shape in scalings:
        value *= np.einsum(subscripts, arrays[name]).reshape(shape(arrays[name]))
    return value


def steps(expression: str, operands: dict) -> bool:
    """Whether `step` computes this step by numpy."""
    return _blas_product(expression, operands) is not None


def _blas_product(expression: str, operands: dict):
    """`_product`'s reading of the step where every array it reads is a numpy array of a BLAS type; else None."""
    found = _product(expression)
    if found is None or not _blas_arrays(operands[name] for name in {*found[0][1], *(n for _, n, _ in found[1])}):
        return None
    return found


def _blas_arrays(values) -> bool:
    return all(type(value) is np.ndarray and value.dtype in BLAS_TYPES for value in values)


@lru_cache(maxsize=KEPT)
def _product(expression: str):
    """How numpy computes a step `C(..) = a product of accesses, with sums` (a sum scoped inside the product
    sums an index no other factor reads: the planner names each index once, so the whole product summed over
    every index the result lacks means the same): einsum's subscripts for the factors it contracts and their
    names, and for each other factor the subscripts putting its modes in the result's order, its name and the
    shape it broadcasts at (1 at the result's other modes). None for any other step (a sum of terms, a
    function, a number, a reduction other than +) and for products BLAS does not contract in pairs."""
    assignment = parse(expression)
    factors: list[Access] = []

    def collect(node) -> bool:
        if isinstance(node, Access):
            factors.append(node)
            return True
        if isinstance(node, Mul):
            return collect(node.left) and collect(node.right)
        return isinstance(node, Sum) and collect(node.body)

    if assignment.accumulate or not collect(assignment.rhs):
        return None
    result = assignment.lhs.indices
    letters: dict = {}
    for index in (*result, *(i for factor in factors for i in factor.indices)):
        letters.setdefault(index, chr(ord("a") + len(letters)) if len(letters) < 26 else None)
    if None in letters.values():
        return None

    def spelled(indices) -> str:
        return "".join(letters[index] for index in indices)

    summing = [factor for factor in factors if not set(factor.indices) <= set(result)]
    if len(factors) <= 2:
        contracted, scaling = factors, []
    elif len(summing) == 2:
        contracted, scaling = summing, [factor for factor in factors if factor not in summing]
    else:
        return None
    kept = [index for index in result if any(index in factor.indices for factor in contracted)]
    pair = (f"{','.join(spelled(f.indices) for f in contracted)}->{spelled(kept)}",
            tuple(factor.tensor for factor in contracted), _tensordot(contracted, kept))
    if scaling and kept != list(result):
        return None  # the scalings would broadcast the contraction to modes it lacks: not an in-place product
    scalings = tuple((f"{spelled(factor.indices)}->{spelled(i for i in result if i in factor.indices)}", factor.tensor,
                      _broadcast_shape(result, factor.indices)) for factor in scaling)
    return pair, scalings


def _broadcast_shape(result: tuple, indices: tuple):
    """The shape, given the factor's array, that broadcasts its modes (in the result's order) against the result."""
    at = {index: mode for mode, index in enumerate(indices)}
    return lambda array: tuple(array.shape[at[index]] if index in at else 1 for index in result)


def _tensordot(pair: list[Access], kept: list) -> tuple | None:
    """`numpy.tensordot`'s axes for a pair of factors and the transposition of its result to `kept`'s order,
    where tensordot means the product: each factor's indices distinct, and the indices both read exactly those
    summed (an index one factor alone sums, or both read and the result keeps, is einsum's); None otherwise."""
    if len(pair) != 2 or any(len(set(f.indices)) != len(f.indices) for f in pair):
        return None
    left, right = (f.indices for f in pair)
    shared = [index for index in left if index in right]
    if set(shared) & set(kept) or set(left) | set(right) != set(shared) | set(kept):
        return None
    free = [index for index in left if index not in shared] + [index for index in right if index not in shared]
    axes = ([left.index(index) for index in shared], [right.index(index) for index in shared])
    return axes, tuple(free.index(index) for index in kept)
