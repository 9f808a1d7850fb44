"""Breadth-first search levels over the lor-land semiring with a complemented mask of the visited set,
GraphBLAS's `q<!v> = A' lor.land q`, direction-optimizing (Beamer et al.): each level either pulls or pushes.

- Pull (a large frontier): every unvisited vertex looks for a frontier vertex among its in-edges,
  `logical_and(levels < 0, any(j, A'(i,j) ∧ q(j)))` with q a dense bool vector. Lazily one kernel,
  `C(i) = logical_and(less(T0(i), T1()), any(j, logical_and(T2(i,j), T3(j))))`: the mask and the product fuse,
  and the kernel skips visited rows and stops a row at its first frontier vertex.
- Push (a small frontier): the frontier's out-edges are walked, `logical_and(levels < 0, any(j, q(j) ∧ A(j,i)))`
  with q a sparse vector. Lazily one kernel, `C(i) = logical_and(less(T0(i), T1()), any(j, logical_and(T2(j),
  T3(j,i))))`, whose result is a sparse vector of the vertices reached: a level costs the frontier's edges,
  not a pass over every vertex.

A level pushes while the frontier's out-edges are fewer than a fourteenth of the graph's (Beamer's α). Lazily
both steps are fused functions (`asp.fused`), each traced once; eagerly each is three kernels (the comparison,
the product, the conjunction). Frontiers are numpy arrays of vertex ids between levels; the levels are
written, and the empty frontier found, in numpy.

    python examples/bfs.py [graph.mtx[.gz]]    # default: a generated graph
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse import array as xp


def bfs(adjacency: sp.sparray, source: int, *, lazy: bool = True) -> np.ndarray:
    """The level of each vertex (edges directed, row i holds i's out-edges) in a breadth-first search from
    `source`, int64, -1 where unreachable."""
    pull, push = (fused_pull, fused_push) if lazy else (_pull, _push)
    pattern = sp.csr_array(adjacency, dtype=np.float64)
    pattern.data[:] = 1.0
    n = pattern.shape[0]
    incoming = asp.Tensor.from_scipy(sp.csr_array(pattern.T))  # row i: the edges into i
    outgoing = asp.Tensor.from_scipy(pattern)  # row j: the edges out of j
    degrees = np.diff(pattern.indptr)
    levels = np.full(n, -1, dtype=np.int64)
    levels[source] = 0
    frontier = np.array([source])
    for depth in range(1, n):
        if degrees[frontier].sum() * ALPHA < pattern.nnz:
            q = asp.Tensor.from_coo(frontier[None, :], np.ones(len(frontier)), (n,), format="s")
            (reached,), found = push(q, outgoing, levels).to_coo()
            frontier = reached[found != 0]
        else:
            q = np.zeros(n, dtype=bool)
            q[frontier] = True
            frontier = np.flatnonzero(pull(incoming, levels, q))
        if not len(frontier):
            break
        levels[frontier] = depth
    return levels


#: A level pushes while its frontier's out-edges times ALPHA are fewer than the graph's edges.
ALPHA = 14


def _pull(incoming, levels, frontier):
    return xp.logical_and(xp.less(levels, 0), xp.matmul(incoming, frontier, semiring="lor_land"))


def _push(frontier, outgoing, levels):
    return xp.logical_and(xp.less(levels, 0), xp.matmul(frontier, outgoing, semiring="lor_land"))


fused_pull, fused_push = asp.fused(_pull), asp.fused(_push)


def main(argv: list[str]) -> None:
    if argv:
        graph = asp.read(argv[0], format="csr").to_scipy()
    else:
        rng = np.random.default_rng(0)
        n, m = 100_000, 300_000
        graph = sp.csr_array((np.ones(m), (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n))
    levels = bfs(graph, 0)
    reached = levels >= 0
    print(f"{graph.shape[0]:,} vertices, {graph.nnz:,} edges: {reached.sum():,} reached from 0 "
          f"in {levels.max()} levels")


if __name__ == "__main__":
    main(sys.argv[1:])
