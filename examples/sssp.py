"""Single-source shortest paths by Bellman-Ford over the min-plus semiring: `d'(i) = min(d(i), min_j(W(j,i) +
d(j)))`, with the weights stored under fill +inf (an absent edge is an infinite one), until nothing changes.
Lazily the step is a fused function (`asp.fused`), traced once into one kernel, `C(i) = minimum(T0(i), min(j,
T1(i,j) + T0(j)))` (the product's scoped minimum fused with the update); eagerly it is two. The test for a change compares numpy vectors, in numpy.

    python examples/sssp.py [graph.mtx[.gz]]    # default: a generated graph with random weights
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse import array as xp


def shortest_paths(weights: sp.sparray, source: int, *, lazy: bool = True) -> np.ndarray:
    """Distances from `source` along the directed, non-negatively weighted edges of `weights` (row i holds
    i's out-edges); +inf where unreachable."""
    step = fused_step if lazy else _step
    edges = sp.coo_array(weights)
    n = weights.shape[0]
    incoming = asp.Tensor.from_coo(np.vstack([edges.col, edges.row]), edges.data.astype(np.float64), (n, n),
                                   format="csr", fill=np.inf)  # row i: the edges into i
    distance = np.full(n, np.inf)
    distance[source] = 0.0
    for _ in range(n):
        relaxed = step(incoming, distance)
        if np.array_equal(relaxed, distance):
            break
        distance = relaxed
    return distance


def _step(incoming, distance):
    return xp.minimum(distance, xp.matmul(incoming, distance, semiring="min_plus"))


fused_step = asp.fused(_step)


def main(argv: list[str]) -> None:
    if argv:
        graph = asp.read(argv[0], format="csr").to_scipy()
        graph = sp.csr_array((np.abs(graph.data) + 1.0, graph.indices, graph.indptr), shape=graph.shape)
    else:
        rng = np.random.default_rng(0)
        n, m = 20_000, 100_000
        graph = sp.csr_array((rng.random(m) + 0.1, (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n))
    distance = shortest_paths(graph, 0)
    reached = np.isfinite(distance)
    print(f"{graph.shape[0]:,} vertices, {graph.nnz:,} edges: {reached.sum():,} reached from 0, "
          f"farthest at {distance[reached].max():.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
