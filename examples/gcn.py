"""One graph convolution layer (Kipf and Welling), `relu(D^-1/2 (A + I) D^-1/2 X W)`, with D the degrees of
A + I: the whole layer from the adjacency matrix A, its normalisation included.

Neither Â = D^-1/2 (A + I) D^-1/2 nor A + I is formed: the program is
`maximum(d ∘ (A @ P + P), 0)` with `P = d ∘ (X @ W)` and `d = 1 / sqrt(sum(A, axis=1) + 1)` scaling rows.
Lazily it is three steps:
1. `C(i) = T0() / sqrt(sum(j, T1(i,j)) + T2())`: d, one pass over A's rows (it is read by both scalings);
2. `C(i,j) = T0(i) * sum(k, T1(i,k) * T2(k,j))`: P, which numpy computes by BLAS (its operands are numpy
   arrays: array/dense.py); materialised, as the product is read by the next one for every row of A;
3. `C(i,j) = maximum(T0(i) * (sum(k, T1(i,k) * T2(k,j)) + T2(i,j)), T3())`: the sparse product, the self
   loops, the scaling and the ReLU in one kernel, row by row through a workspace of the row's outputs.
Eagerly it is `X @ W` by BLAS and nine kernels, each writing its whole result.

For an undirected graph A is symmetric; a weighted one's weights (non-negative) are its degrees' terms.

    python examples/gcn.py [graph.mtx[.gz]]    # default: a generated graph, 64 features, 16 outputs
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse import array as xp


def gcn_layer(adjacency: sp.sparray, features: np.ndarray, weight: np.ndarray, *, lazy: bool = True) -> np.ndarray:
    """`relu(Â @ features @ weight)` for the square adjacency matrix `adjacency` (without self loops)."""
    lift = asp.lazy if lazy else _identity
    graph = lift(asp.Tensor.from_scipy(sp.csr_array(adjacency, dtype=np.float64)))
    scale = xp.divide(1.0, xp.sqrt(xp.add(xp.sum(graph, axis=1), 1.0)))
    projected = xp.einsum("i,ij->ij", scale, xp.matmul(lift(np.asarray(features, dtype=np.float64)),
                                                       lift(np.asarray(weight, dtype=np.float64))))
    mixed = xp.add(xp.matmul(graph, projected), projected)
    (layer,) = asp.compute(xp.maximum(xp.einsum("i,ij->ij", scale, mixed), 0.0))
    return layer


def _identity(value):
    return value


def main(argv: list[str]) -> None:
    if argv:
        graph = asp.read(argv[0], format="csr").to_scipy()
    else:
        rng = np.random.default_rng(0)
        n, m = 20_000, 200_000
        edges = sp.csr_array((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n))
        graph = sp.csr_array(((edges + edges.T) > 0).astype(np.float64))
        graph.setdiag(0)
        graph.eliminate_zeros()
    rng = np.random.default_rng(1)
    features = rng.standard_normal((graph.shape[0], 64))
    weight = rng.standard_normal((64, 16)) / 8
    layer = gcn_layer(graph, features, weight)
    print(f"{graph.shape[0]:,} vertices, {graph.nnz:,} edges: {layer.shape} outputs, "
          f"{(layer > 0).mean():.0%} positive")


if __name__ == "__main__":
    main(sys.argv[1:])
