"""Breadth-first search levels over the lor-land semiring with a complemented mask of the visited set,
GraphBLAS's `q<!v> = A' lor.land q`: the next frontier is `logical_and(levels < 0, any(j, A'(i,j) ∧ q(j)))`.

Lazily the step is a fused function (`asp.fused`), traced once into one kernel, `C(i) = logical_and(less(T0(i),
T1()), any(j, logical_and(T2(i,j), T3(j))))`: the mask (the unvisited vertices, `levels < 0`) and the product
fuse, so the unmasked product is never stored, and the kernel skips visited rows. Eagerly the same program is
three kernels (the comparison, the product, the conjunction). Frontiers are numpy bool vectors (autosparse
reads them as 0/1; it stores no booleans, design31.md §6 risk 7); writing the level of the new frontier and
the test for an empty one run in numpy.

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
    step = fused_step if lazy else _step
    pattern = sp.csr_array(adjacency, dtype=np.float64)
    pattern.data[:] = 1.0
    incoming = asp.Tensor.from_scipy(sp.csr_array(pattern.T))  # row i: the edges into i
    levels = np.full(pattern.shape[0], -1, dtype=np.int64)
    levels[source] = 0
    frontier = levels == 0
    for depth in range(1, pattern.shape[0]):
        frontier = step(incoming, levels, frontier)
        if not frontier.any():
            break
        levels[frontier != 0] = depth
    return levels


def _step(incoming, levels, frontier):
    return xp.logical_and(xp.less(levels, 0), xp.matmul(incoming, frontier, semiring="lor_land"))


fused_step = asp.fused(_step)


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
