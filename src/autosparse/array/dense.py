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
    """A step's value by `numpy.einsum`, where its operands are numpy arrays of a BLAS type and its right-hand
    side a product of accesses with sums; None otherwise."""
    found = _subscripts(expression)
    if found is None:
        return None
    subscripts, names = found
    arrays = [operands[name] for name in names]
    if not _blas_arrays(arrays):
        return None
    value = np.einsum(subscripts, *arrays, optimize=any(array.ndim > 1 for array in arrays))
    return np.ascontiguousarray(value) if isinstance(value, np.ndarray) and value.ndim else value


def _blas_arrays(values) -> bool:
    return all(type(value) is np.ndarray and value.dtype in BLAS_TYPES for value in values)


@lru_cache(maxsize=KEPT)
def _subscripts(expression: str) -> tuple[str, tuple[str, ...]] | None:
    """numpy.einsum's subscripts of a step `C(..) = product of accesses, with sums` and the operands' names in
    their order, or None for any other step (a sum of terms, a function, a number, a reduction other than +).
    A sum scoped inside the product sums an index no other factor reads (the planner names each index once),
    so the whole product summed over every index the result lacks means the same."""
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
    letters: dict = {}
    for index in (*assignment.lhs.indices, *(i for factor in factors for i in factor.indices)):
        letters.setdefault(index, chr(ord("a") + len(letters)) if len(letters) < 26 else None)
    if None in letters.values():
        return None

    def spelled(indices) -> str:
        return "".join(letters[index] for index in indices)

    subscripts = f"{','.join(spelled(f.indices) for f in factors)}->{spelled(assignment.lhs.indices)}"
    return subscripts, tuple(factor.tensor for factor in factors)
