"""Triangle counting as a masked product: with L the strictly lower triangle of an undirected graph,
the triangles are `sum(L ∘ (L @ L))`. Written lazily, the program is planned into one kernel,
`C() = T0(i,j) * sum(k, T0(i,k) * T0(k,j))`: L(i,j) masks the product, so `L @ L` is never formed.
Eagerly it is three kernels, and `L @ L` is a sparse product stored in full before the mask is applied.

    python examples/triangles.py [graph.mtx[.gz]]    # default: a generated graph
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse import array as xp


def triangles(adjacency: sp.sparray, *, lazy: bool = True) -> int:
    """The triangles of the undirected graph whose edges `adjacency` holds (in either or both directions;
    weights and self-loops ignored)."""
    lift = asp.lazy if lazy else _identity
    pattern = sp.csr_array(adjacency, dtype=np.float64)
    pattern.data[:] = 1.0
    lower = sp.csr_array(sp.tril(((pattern + pattern.T) > 0).astype(np.float64), -1))
    lower.sort_indices()
    below = lift(asp.Tensor.from_scipy(lower))
    (count,) = asp.compute(xp.sum(xp.multiply(below, xp.matmul(below, below))))
    return round(count)


def _identity(value):
    return value


def main(argv: list[str]) -> None:
    graph = asp.read(argv[0], format="csr").to_scipy() if argv else \
        sp.random_array((20_000, 20_000), density=5e-4, format="csr", random_state=0)  # about 200,000 edges
    print(f"{graph.shape[0]:,} vertices, {graph.nnz:,} edges: {triangles(graph):,} triangles")


if __name__ == "__main__":
    main(sys.argv[1:])
