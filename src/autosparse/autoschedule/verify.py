"""Compile every candidate of a front and compare it with numpy on small random operands: the check
behind `autosparse autoschedule --check` and the compiled counts in docs/benchmarks.md.

The reference is computed by numpy from the scoped expression itself (`dense_value`): each `sum(j, …)`
sums its own body and the reductions left implicit sum the whole right-hand side, so an expression such
as `y(i) = A(i,j) * x(j) + z(i)` is checked against A·x + z (TACO's meaning), not against one einsum
over every operand. Every operator is applied through its registry entry's numpy function
(`Operator.numpy`, its `reduce` for `min(j, …)`), and each operand is densified with its fill
(`np.where(stored, values, fill)`: +inf for a min-plus distance).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from ..errors import AutosparseError
from ..notation import accesses
from ..notation import ast as notation
from ..tensor import Tensor
from .front import Front
from .sparseauto.front import SparseAutoFront


def verify(front: "Front | SparseAutoFront", extent: int = 7, density: float = 0.35, seed: int = 0) -> tuple[int, list[str]]:
    """(how many candidates compiled and matched, a message per one that did not), on operands with the
    front's fills (`front.fills`, 0 where not given)."""
    assignment = front.assignment
    rng = np.random.default_rng(seed)
    reads = accesses(assignment.rhs)
    extents = index_extents(reads, extent)
    dense, stored, operands = {}, {}, {}
    for access in dict.fromkeys(reads):
        if access.tensor in dense:
            continue
        shape = tuple(extents[i] for i in access.indices)
        fill = front.fills.get(access.tensor, 0)
        fmt = front.formats[access.tensor]
        stored[access.tensor] = (rng.random(shape) < density) | fmt.is_dense  # a dense format stores every entry
        dense[access.tensor] = np.where(stored[access.tensor], rng.random(shape), fill)
        operands[access.tensor] = Tensor.from_numpy(dense[access.tensor], format=front.formats[access.tensor],
                                                    fill=fill)
    expected = dense_value(assignment, dense, stored)
    passed, failures = 0, []
    for cand in front:
        try:
            got = front.kernel(cand)(**operands)
            got = got.to_numpy() if isinstance(got, Tensor) else got
            if np.allclose(np.asarray(got, dtype=float), np.asarray(expected, dtype=float)):
                passed += 1
            else:
                failures.append(f"{cand.cin}: wrong values")
        except AutosparseError as error:
            failures.append(f"{cand.cin}: {type(error).__name__}: {error}")
    return passed, failures


def index_extents(reads, extent: int) -> dict:
    """A distinct extent from `extent` up for each index, but one for indices that meet at a mode of
    one tensor (`B(i,j)` and `B(i,k)` make j and k one dimension, `B(i,j) + B(j,i)` i and j), so
    that distinct dimensions catch a kernel that confuses them and every operand has one shape."""
    same: dict = {}

    def root(index):
        while same.setdefault(index, index) != index:
            index = same[index]
        return index

    first: dict = {}
    for access in reads:
        for mode, index in enumerate(access.indices):
            same[root(index)] = root(first.setdefault((access.tensor, mode), index))
    groups = list(dict.fromkeys(root(i) for a in reads for i in a.indices))
    return {index: extent + groups.index(root(index)) for index in same}


def dense_value(assignment: notation.Assignment, arrays: Mapping[str, np.ndarray],
                stored: Mapping[str, np.ndarray] = {}) -> np.ndarray:
    """The value `assignment` gives its result (axes in the result's index order) for dense operands
    `arrays`, computed by numpy term by term: each `Sum` over its body, the implicit reductions over the
    whole right-hand side. `stored`: where each operand stores an entry (all of it where not given),
    which is what `pattern(M(i,j))` reads."""
    value, labels = _value(assignment.rhs, arrays, stored)
    kept = assignment.lhs.indices
    value = value.sum(axis=tuple(n for n, index in enumerate(labels) if index not in kept))
    labels = tuple(index for index in labels if index in kept)
    return np.transpose(value, tuple(labels.index(index) for index in kept))


def _value(expr, arrays: Mapping[str, np.ndarray], stored: Mapping[str, np.ndarray]) -> tuple[np.ndarray, tuple]:
    """`expr` as an array whose axes are the returned indices (those it does not sum)."""
    if isinstance(expr, notation.Access):
        return np.asarray(arrays[expr.tensor]), expr.indices
    if isinstance(expr, notation.Literal):
        return np.asarray(expr.value), ()
    op = notation.operator_of(expr)
    if op is not None and not op.reads_values:  # pattern(M(i,j)): where M stores an entry
        access = expr.children()[0]
        return np.asarray(stored.get(access.tensor, np.ones(np.shape(arrays[access.tensor]), bool))), access.indices
    reduction = notation.reduction_of(expr)
    if reduction is not None:
        value, labels = _value(expr.body, arrays, stored)
        return (reduction.numpy.reduce(value, axis=labels.index(expr.index)),
                tuple(i for i in labels if i != expr.index))
    children = [_value(child, arrays, stored) for child in expr.children()]
    labels = tuple(dict.fromkeys(i for _, child_labels in children for i in child_labels))
    with np.errstate(all="ignore"):  # inf - inf where a caveat of the registry's laws allows it
        return op.numpy(*(_broadcast(value, child_labels, labels)
                                                  for value, child_labels in children)), labels


def _broadcast(value: np.ndarray, labels: tuple, onto: tuple) -> np.ndarray:
    """`value` (axes `labels`) with its axes in the order of `onto` and length-1 axes for the others."""
    value = np.transpose(value, [labels.index(index) for index in onto if index in labels])
    return np.expand_dims(value, tuple(n for n, index in enumerate(onto) if index not in labels))
