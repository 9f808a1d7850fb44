"""One graph convolution layer, `relu(Â X W)`, with Â = D^-1/2 (A + I) D^-1/2 the symmetrically normalised
adjacency with self loops (Kipf and Welling) and D the degrees of A + I.

Â is never formed: the program is `maximum(d ∘ ((A + I) @ (d ∘ (X @ W))), 0)` with d = D^-1/2 a column.
Lazily it is two steps: `C(i,j) = T0(i) * sum(k, T1(i,k) * T2(k,j))`, the scaled `d ∘ (X @ W)` (its
product is read by the next product for every row of A, so it is materialised rather than computed again
per row), which numpy computes by BLAS (its operands are numpy arrays: array/dense.py), and the kernel
`C(i,j) = maximum(T0(i) * sum(k, T1(i,k) * T2(k,j)), T3())`: the other scaling, the sparse product and the
ReLU in one, which runs row by row through a workspace of the row's outputs (the scoped sum walks each row
of A once, as the SpMM alone does). Eagerly it is `X @ W` by BLAS and four kernels. A + I and its degrees are
built with scipy, once a graph.

    python examples/gcn.py [graph.mtx[.gz]]    # default: a generated graph, 64 features, 16 outputs
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse import array as xp


def gcn_layer(adjacency: sp.sparray, features: np.ndarray, weight: np.ndarray, *, lazy: bool = True) -> np.ndarray:
    """`relu(Â @ features @ weight)` for the undirected graph `adjacency` (its pattern, made symmetric)."""
    lift = asp.lazy if lazy else _identity
    pattern = sp.csr_array(adjacency, dtype=np.float64)
    pattern.data[:] = 1.0
    looped = sp.csr_array(((pattern + pattern.T + sp.eye_array(pattern.shape[0])) > 0).astype(np.float64))
    scale = (1.0 / np.sqrt(looped.sum(axis=1)))[:, None]
    projected = xp.matmul(lift(np.asarray(features, dtype=np.float64)), lift(np.asarray(weight, dtype=np.float64)))
    mixed = xp.matmul(lift(asp.Tensor.from_scipy(looped)), xp.multiply(lift(scale), projected))
    (layer,) = asp.compute(xp.maximum(xp.multiply(lift(scale), mixed), 0.0))
    return layer


def _identity(value):
    return value


def main(argv: list[str]) -> None:
    if argv:
        graph = asp.read(argv[0], format="csr").to_scipy()
    else:
        rng = np.random.default_rng(0)
        n, m = 20_000, 200_000
        graph = sp.csr_array((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n))
    rng = np.random.default_rng(1)
    features = rng.standard_normal((graph.shape[0], 64))
    weight = rng.standard_normal((64, 16)) / 8
    layer = gcn_layer(graph, features, weight)
    print(f"{graph.shape[0]:,} vertices, {graph.nnz:,} edges: {layer.shape} outputs, "
          f"{(layer > 0).mean():.0%} positive")


if __name__ == "__main__":
    main(sys.argv[1:])
