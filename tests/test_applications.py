"""The programs in examples/ against scipy and numpy on small inputs, each both lazy (planned and fused by
`asp.compute`, or a step traced once by `asp.fused`) and eager (one kernel per array operation); for the lazy
ones, the kernels per step their docstrings claim, and that steps after the first build no kernel."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse import csgraph

import autosparse as asp
from autosparse import api
from autosparse.array.plan import plan

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
LAZY = pytest.mark.parametrize("lazy", [True, False], ids=["lazy", "eager"])


def example(name: str):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def graph(n: int, m: int, seed: int) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    return sp.csr_array((rng.random(m) + 0.1, (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n))


def edges(n: int, pairs) -> sp.csr_array:
    rows, cols = zip(*pairs) if pairs else ((), ())
    return sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, n))


@pytest.fixture
def planned(monkeypatch):
    """Runs a program with `asp.compute` watched: each call's plan (its kernels' texts) and the keys of
    api._kernels after it."""
    calls, kernels = [], []
    original = asp.compute

    def compute(*lazies):
        calls.append(tuple(step.expression for step in plan([asp.lazy(value).node for value in lazies])))
        values = original(*lazies)
        kernels.append(set(api._kernels))
        return values

    def check(program, per_step: list[int]):
        """`program` (run at least twice over its steps) plans `per_step` kernels in each step's calls, the
        same texts each step, and builds no kernel after its first step."""
        monkeypatch.setattr(asp, "compute", compute)
        program()
        period = len(per_step)
        assert len(calls) >= 2 * period and len(calls) % period == 0
        assert [len(call) for call in calls] == per_step * (len(calls) // period)
        assert calls == calls[:period] * (len(calls) // period)
        assert kernels[-1] <= kernels[period - 1]
        return calls[:period]
    return check


@pytest.fixture
def traced(monkeypatch):
    """Runs a program whose step is the fused function `name` of its example `module`, watched: the keys of
    api._kernels after each step; gives the kernels the step runs."""
    def check(module, name: str, program):
        """`program` (run for at least two steps) traces its step once and builds no kernel after its first step."""
        fused, first, kernels = getattr(module, name), [], []

        def step(*arguments):
            first[:] = first or [arguments]
            values = fused(*arguments)
            kernels.append(set(api._kernels))
            return values
        monkeypatch.setattr(module, name, step)
        program()
        assert len(kernels) >= 2 and fused.traces == 1
        assert kernels[-1] <= kernels[0]
        return fused.expressions(*first[0])
    return check


def dense_pagerank(adjacency: np.ndarray, damping: float, iterations: int) -> np.ndarray:
    n = len(adjacency)
    out_degree = adjacency.sum(axis=1)
    dangling = out_degree == 0
    transition = (adjacency / np.where(dangling, 1, out_degree)[:, None]).T
    rank = np.full(n, 1 / n)
    for _ in range(iterations):
        rank = damping * transition @ rank + (1 - damping + damping * rank[dangling].sum()) / n
    return rank


@LAZY
@pytest.mark.parametrize("n, m, seed", [(1, 0, 0), (5, 0, 1), (40, 120, 2), (200, 300, 3), (300, 3000, 4)])
def test_pagerank_matches_the_dense_power_iteration(n, m, seed, lazy):
    adjacency = graph(n, m, seed)
    adjacency.data[:] = 1.0
    rank, iterations = example("pagerank").pagerank(adjacency, tol=1e-12, lazy=lazy)
    np.testing.assert_allclose(rank, dense_pagerank(adjacency.toarray(), 0.85, iterations), rtol=1e-9, atol=1e-15)
    assert rank.sum() == pytest.approx(1.0)


def test_pagerank_is_one_kernel_a_step(traced):
    module = example("pagerank")
    step = traced(module, "fused_step", lambda: module.pagerank(graph(30, 90, 5), max_iterations=4))
    assert step == ("C(i) = T0() * sum(j, T1(i,j) * T2(j)) + T3()",)


@LAZY
@pytest.mark.parametrize("n, m, seed, source", [(1, 0, 0, 0), (6, 0, 1, 2), (50, 150, 2, 0), (200, 600, 3, 7),
                                                (300, 5000, 4, 299)])
def test_shortest_paths_match_dijkstra(n, m, seed, source, lazy):
    weights = graph(n, m, seed)
    expected = csgraph.dijkstra(weights, directed=True, indices=source)
    np.testing.assert_allclose(example("sssp").shortest_paths(weights, source, lazy=lazy), expected)


@LAZY
def test_shortest_paths_over_a_repeated_edge_read_its_summed_weight(lazy):
    weights = sp.coo_array(([5.0, 1.0, 2.0], ([0, 0, 1], [1, 1, 2])), shape=(3, 3))  # 0 -> 1 twice: 5 and 1
    distance = example("sssp").shortest_paths(sp.csr_array(weights), 0, lazy=lazy)
    # scipy sums a repeated coordinate when it builds CSR (6), and so does the coordinate list a Tensor reads
    np.testing.assert_allclose(distance, [0.0, 6.0, 8.0])


def test_shortest_paths_are_one_kernel_a_step(traced):
    module = example("sssp")
    step = traced(module, "fused_step", lambda: module.shortest_paths(graph(40, 120, 6), 0))
    assert step == ("C(i) = minimum(T0(i), min(j, T1(i,j) + T0(j)))",)


@LAZY
@pytest.mark.parametrize("n, m, seed", [(1, 0, 0), (3, 0, 1), (40, 200, 2), (150, 1500, 3)])
def test_triangles_match_the_trace_of_the_cube(n, m, seed, lazy):
    adjacency = graph(n, m, seed)
    dense = ((adjacency + adjacency.T).toarray() > 0).astype(float)
    np.fill_diagonal(dense, 0)
    expected = round(np.trace(np.linalg.matrix_power(dense, 3)) / 6)
    assert example("triangles").triangles(adjacency, lazy=lazy) == expected


@LAZY
def test_a_triangle_and_a_square(lazy):
    square = edges(7, [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 6), (6, 3)])
    assert example("triangles").triangles(square, lazy=lazy) == 1


def test_triangles_are_one_masked_kernel_built_once(planned):
    triangles = example("triangles").triangles
    (step,) = planned(lambda: [triangles(graph(30, 100, seed)) for seed in (7, 8)], [1])
    assert step == ("C() = T0(i,j) * sum(k, T0(i,k) * T0(k,j))",)


def levels(adjacency: sp.sparray, source: int) -> np.ndarray:
    hops = csgraph.shortest_path(adjacency, directed=True, unweighted=True, indices=source)
    return np.where(np.isinf(hops), -1, hops).astype(np.int64)


@LAZY
@pytest.mark.parametrize("n, m, seed, source", [(1, 0, 0, 0), (5, 0, 1, 3), (40, 60, 2, 0), (200, 500, 3, 9),
                                                (300, 3000, 4, 299)])
def test_bfs_levels_match_scipy(n, m, seed, source, lazy):
    adjacency = graph(n, m, seed)
    found = example("bfs").bfs(adjacency, source, lazy=lazy)
    assert found.dtype == np.int64
    np.testing.assert_array_equal(found, levels(adjacency, source))


@LAZY
def test_bfs_follows_edges_forward_skips_self_loops_and_leaves_the_unreachable_at_minus_one(lazy):
    adjacency = edges(6, [(0, 0), (0, 1), (1, 2), (3, 0), (2, 1), (5, 5)])  # 3 reaches 0, 0 not 3; 4 isolated
    np.testing.assert_array_equal(example("bfs").bfs(adjacency, 0, lazy=lazy), [0, 1, 2, -1, -1, -1])
    np.testing.assert_array_equal(example("bfs").bfs(adjacency, 3, lazy=lazy), [1, 2, 3, 0, -1, -1])


def test_bfs_is_one_kernel_a_level_mask_and_product_fused(traced):
    module = example("bfs")
    step = traced(module, "fused_step", lambda: module.bfs(graph(50, 100, 9), 0))
    assert step == ("C(i) = logical_and(less(T0(i), T1()), any(j, logical_and(T2(i,j), T3(j))))",)


def spd(n: int, seed: int) -> sp.csr_array:
    m = sp.random_array((n, n), density=0.3, format="csr", rng=np.random.default_rng(seed))
    return sp.csr_array(m @ m.T + n * sp.eye_array(n))


@LAZY
@pytest.mark.parametrize("n, seed", [(1, 0), (2, 1), (9, 2), (60, 3)])
def test_conjugate_gradient_matches_a_dense_solve(n, seed, lazy):
    matrix, rhs = spd(n, seed), np.arange(1.0, n + 1)
    x, iterations = example("cg").conjugate_gradient(matrix, rhs, tol=1e-12, lazy=lazy)
    np.testing.assert_allclose(x, np.linalg.solve(matrix.toarray(), rhs), rtol=1e-8)
    assert 1 <= iterations <= n + 1


@LAZY
def test_conjugate_gradient_of_a_zero_right_hand_side_takes_no_iteration(lazy):
    x, iterations = example("cg").conjugate_gradient(spd(5, 4), np.zeros(5), lazy=lazy)
    assert iterations == 0 and not x.any()


def test_conjugate_gradient_is_six_kernels_an_iteration(traced):
    module, matrix = example("cg"), spd(30, 5)
    steps = traced(module, "fused_iteration",
                   lambda: module.conjugate_gradient(matrix, np.ones(30), max_iterations=4))
    # A·p; α = r·r / p·(A p); x + α p; r - α (A p); r'·r'; r' + (r'·r' / r·r) p (the quotient inlined)
    assert steps == ("C(i) = T0(i,j) * T1(j)", "C() = T0() / sum(i, T1(i) * T2(i))", "C(i) = T0(i) + T1() * T2(i)",
                     "C(i) = T0(i) - T1() * T2(i)", "C() = T0(i) * T0(i)", "C(i) = T0(i) + T1() / T2() * T3(i)")


def dense_cp_als(tensor: np.ndarray, rank: int, iterations: int, seed: int):
    rng = np.random.default_rng(seed)
    factors = [rng.random((extent, rank)) for extent in tensor.shape]
    specs = ("ijk,jr,kr->ir", "ijk,ir,kr->jr", "ijk,ir,jr->kr")
    for _ in range(iterations):
        for mode in range(3):
            others = [f for m, f in enumerate(factors) if m != mode]
            solved = np.einsum(specs[mode], tensor, *others) @ np.linalg.pinv((others[0].T @ others[0]) *
                                                                              (others[1].T @ others[1]))
            weights = np.linalg.norm(solved, axis=0)
            factors[mode] = solved / np.where(weights == 0, 1.0, weights)
    return weights, factors


def sparse_tensor(shape, density: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.random(shape) * (rng.random(shape) < density)


@LAZY
@pytest.mark.parametrize("shape, density, rank, seed", [((5, 4, 3), 0.4, 2, 0), ((7, 6, 5), 0.2, 3, 1),
                                                        ((1, 4, 3), 0.6, 1, 2), ((4, 3, 6), 0.0, 2, 3)])
def test_cp_als_matches_the_dense_einsum_sweeps(shape, density, rank, seed, lazy):
    dense = sparse_tensor(shape, density, seed)
    dense[:, 0, :] = 0.0  # an empty slice: a zero row of that factor
    weights, factors = example("cp_als").cp_als(asp.Tensor.from_numpy(dense, "csf"), rank, 2, seed, lazy=lazy)
    expected_weights, expected = dense_cp_als(dense, rank, 2, seed)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-8, atol=1e-12)
    for factor, reference in zip(factors, expected):
        np.testing.assert_allclose(factor, reference, rtol=1e-7, atol=1e-10)


def test_cp_als_is_one_mttkrp_kernel_a_mode(planned):
    tensor = asp.Tensor.from_numpy(sparse_tensor((6, 5, 4), 0.3, 4), "csf")
    steps = planned(lambda: example("cp_als").cp_als(tensor, 2, 2), [1, 1, 1])
    # the tensordot, the broadcast product and the sum: one product, the sum taken around the dense factor
    assert steps[:3] == [("C(i,j) = T0(i,k,l) * T1(l,j) * T2(k,j)",), ("C(i,j) = T0(k,i,l) * T1(l,j) * T2(k,j)",),
                         ("C(i,j) = T0(k,l,i) * T1(l,j) * T2(k,j)",)]


def dense_gcn(adjacency: sp.sparray, features: np.ndarray, weight: np.ndarray) -> np.ndarray:
    looped = adjacency.toarray() + np.eye(adjacency.shape[0])
    scale = 1 / np.sqrt(looped.sum(axis=1))
    return np.maximum((scale[:, None] * looped * scale[None, :]) @ features @ weight, 0)


@LAZY
@pytest.mark.parametrize("n, m, seed", [(1, 0, 0), (5, 0, 1), (40, 100, 2), (120, 600, 3)])
def test_gcn_layer_matches_the_dense_normalised_product(n, m, seed, lazy):
    rng = np.random.default_rng(seed)
    adjacency, features, weight = graph(n, m, seed), rng.standard_normal((n, 6)), rng.standard_normal((6, 3))
    layer = example("gcn").gcn_layer(adjacency, features, weight, lazy=lazy)
    np.testing.assert_allclose(layer, dense_gcn(adjacency, features, weight), rtol=1e-10, atol=1e-12)


def test_gcn_layer_is_three_steps_self_loops_scaling_and_relu_fused(planned):
    """The degrees, the scaled `X @ W` (numpy's), and one kernel for the rest: A + I is never formed."""
    rng = np.random.default_rng(10)
    layer = example("gcn").gcn_layer
    (step,) = planned(lambda: [layer(graph(30, 90, seed), rng.standard_normal((30, 4)), rng.standard_normal((4, 2)))
                               for seed in (11, 12)], [3])
    assert step == ("C(i) = T0() / sqrt(sum(j, T1(i,j)) + T2())",
                    "C(i,j) = T0(i) * sum(k, T1(i,k) * T2(k,j))",
                    "C(i,j) = maximum(T0(i) * (sum(k, T1(i,k) * T2(k,j)) + T2(i,j)), T3())")


# ----- the CG iteration's replay: its kernels in native calls (array/fused.py, runtime/sequence.py) -------------

def _cg_operands(n: int, seed: int):
    rng = np.random.default_rng(seed)
    m = np.where(rng.random((n, n)) < 0.3, rng.random((n, n)), 0.0)
    return m @ m.T + n * np.eye(n), rng.random(n), rng.random(n), rng.random(n), 2.5


@pytest.mark.parametrize("kind, together", [("csr", [4, 1]), ("dense", [4, 1]), ("numpy", [3, 1])])
def test_a_replayed_cg_iteration_runs_its_dense_kernels_in_native_calls(kind, together, sequences):
    """After its first call, a CG iteration's kernels run without Python between them (a step numpy computes
    splits them: the dot product r·r, and A @ p of a numpy A), and every call equals the eager iteration on new
    values."""
    iteration = example("cg")._iteration
    step = asp.fused(iteration)
    for seed in range(4):
        a, x, r, p, rr = _cg_operands(7, seed)
        matrix = a if kind == "numpy" else asp.Tensor.from_numpy(a, kind)
        sequences.clear()
        got = step(matrix, x, r, p, rr)
        for value, want in zip(got, iteration(matrix, x, r, p, rr)):
            np.testing.assert_allclose(value, want, rtol=1e-12)
        assert sequences == ([] if seed == 0 else together)


def test_a_kernel_failing_in_a_native_call_runs_again_the_ordinary_way(monkeypatch):
    """The driver stops at a kernel that fails; it and the ones after it run again one by one, as a call of
    each would run (here the failure is made up after the first kernel ran: every value is still right)."""
    from autosparse.runtime import sequence
    original, failures = sequence.run_sequence, []

    def failing_after_the_first(calls):
        assert original(calls[:1]) is None
        failures.append(len(calls))
        return 1, 3

    iteration = example("cg")._iteration
    step = asp.fused(iteration)
    a, x, r, p, rr = _cg_operands(9, 1)
    a = asp.Tensor.from_numpy(a, "csr")
    step(a, x, r, p, rr)
    monkeypatch.setattr(sequence, "run_sequence", failing_after_the_first)
    got = step(a, x, r, p, rr)
    assert failures == [4, 1]
    for value, want in zip(got, iteration(a, x, r, p, rr)):
        np.testing.assert_allclose(value, want, rtol=1e-12)
