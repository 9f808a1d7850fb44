"""The programs in examples/ against scipy and numpy on small graphs: PageRank (lazy, fused into one
kernel a step) and single-source shortest paths (the min-plus semiring over weights of fill +inf)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def graph(n: int, m: int, seed: int) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    return sp.csr_array((rng.random(m) + 0.1, (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n))


def dense_pagerank(adjacency: np.ndarray, damping: float, iterations: int) -> np.ndarray:
    n = len(adjacency)
    out_degree = adjacency.sum(axis=1)
    dangling = out_degree == 0
    transition = (adjacency / np.where(dangling, 1, out_degree)[:, None]).T
    rank = np.full(n, 1 / n)
    for _ in range(iterations):
        rank = damping * transition @ rank + (1 - damping + damping * rank[dangling].sum()) / n
    return rank


@pytest.mark.parametrize("n, m, seed", [(1, 0, 0), (5, 0, 1), (40, 120, 2), (200, 300, 3), (300, 3000, 4)])
def test_pagerank_matches_the_dense_power_iteration(n, m, seed):
    adjacency = graph(n, m, seed)
    adjacency.data[:] = 1.0
    rank, iterations = example("pagerank").pagerank(adjacency, tol=1e-12)
    np.testing.assert_allclose(rank, dense_pagerank(adjacency.toarray(), 0.85, iterations), rtol=1e-9, atol=1e-15)
    assert rank.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("n, m, seed, source", [(1, 0, 0, 0), (6, 0, 1, 2), (50, 150, 2, 0), (200, 600, 3, 7),
                                                (300, 5000, 4, 299)])
def test_shortest_paths_match_dijkstra(n, m, seed, source):
    weights = graph(n, m, seed)
    expected = csgraph.dijkstra(weights, directed=True, indices=source)
    np.testing.assert_allclose(example("sssp").shortest_paths(weights, source), expected)


def test_shortest_paths_over_a_repeated_edge_read_its_summed_weight():
    weights = sp.coo_array(([5.0, 1.0, 2.0], ([0, 0, 1], [1, 1, 2])), shape=(3, 3))  # 0 -> 1 twice: 5 and 1
    distance = example("sssp").shortest_paths(sp.csr_array(weights), 0)
    # scipy sums a repeated coordinate when it builds CSR (6), and so does the coordinate list a Tensor reads
    np.testing.assert_allclose(distance, [0.0, 6.0, 8.0])


@pytest.mark.parametrize("n, m, seed", [(1, 0, 0), (3, 0, 1), (40, 200, 2), (150, 1500, 3)])
def test_triangles_match_the_trace_of_the_cube(n, m, seed):
    adjacency = graph(n, m, seed)
    dense = ((adjacency + adjacency.T).toarray() > 0).astype(float)
    np.fill_diagonal(dense, 0)
    assert example("triangles").triangles(adjacency) == round(np.trace(np.linalg.matrix_power(dense, 3)) / 6)


def test_a_triangle_and_a_square():
    edges = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 6), (6, 3)]
    rows, cols = zip(*edges)
    assert example("triangles").triangles(sp.csr_array((np.ones(7), (rows, cols)), shape=(7, 7))) == 1
