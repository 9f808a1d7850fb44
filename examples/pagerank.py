"""PageRank by power iteration: each step `r' = d·(M @ r) + (1 - d + d·s)/n`. Lazily the step is a fused
function (`asp.fused`): traced once into one kernel, `C(i) = T0() * sum(j, T1(i,j) * T2(j)) + T3()` (the
product and the update fused), which every later iteration runs with nothing recorded or planned again;
eagerly it is three kernels (the product, the scaling, the sum). The dangling vertices' rank s and the
convergence test are sums over numpy vectors, in numpy.

    python examples/pagerank.py [graph.mtx[.gz]]    # default: a generated R-MAT-like graph
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse import array as xp


def pagerank(adjacency: sp.sparray, damping: float = 0.85, tol: float = 1e-10, max_iterations: int = 200, *,
             lazy: bool = True):
    """The PageRank vector of the directed graph `adjacency` (row i holds i's out-links), and the iterations
    taken. Dangling vertices (no out-links) spread their rank evenly, as networkx does."""
    step = fused_step if lazy else _step
    adjacency = sp.csr_array(adjacency, dtype=np.float64)
    n = adjacency.shape[0]
    out_degree = np.asarray(adjacency.sum(axis=1)).ravel()
    dangling = out_degree == 0
    scale = np.divide(1.0, out_degree, out=np.zeros(n), where=~dangling)
    transition = asp.Tensor.from_scipy(sp.csr_array(adjacency.T @ sp.diags_array(scale)))  # M(i,j): j links to i
    rank = np.full(n, 1.0 / n)
    for iteration in range(1, max_iterations + 1):
        teleport = (1.0 - damping + damping * rank[dangling].sum()) / n
        updated = step(transition, rank, damping, teleport)
        if np.abs(updated - rank).sum() < tol:
            return updated, iteration
        rank = updated
    return rank, max_iterations


def _step(transition, rank, damping, teleport):
    return xp.add(xp.multiply(damping, xp.matmul(transition, rank)), teleport)


fused_step = asp.fused(_step)


def main(argv: list[str]) -> None:
    if argv:
        graph = asp.read(argv[0], format="csr").to_scipy()
    else:
        rng = np.random.default_rng(0)
        n, m = 20_000, 200_000
        graph = sp.csr_array((np.ones(m), (rng.integers(0, n, m), rng.zipf(1.8, m) % n)), shape=(n, n))
    rank, iterations = pagerank(graph)
    top = np.argsort(rank)[::-1][:5]
    print(f"{graph.shape[0]:,} vertices, {graph.nnz:,} edges: {iterations} iterations; top 5 {[int(v) for v in top]}")


if __name__ == "__main__":
    main(sys.argv[1:])
