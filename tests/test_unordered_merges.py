"""Element-wise sums over an operand whose rows are stored in no order (`ds~`, what `A @ B` returns): the
default schedule gathers each row through a dense workspace (cin.concretize.unordered_merges) instead of
sorting the operand, and the result infers `ds~`; a sorted result asked for sorts the workspace's list.
Products still sort the unordered operand first. Differential against numpy on dense copies: every mix of
sorted and unsorted operands and results, explicit zeros (kept), empty rows and matrices, a single entry,
non-square and size-1 shapes, int32 and int64 indices, 1 and 2 threads."""

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.cin import Where, walk
from autosparse.tensor import native

SHAPES = {"random": ((9, 7), 0.4), "size-1": ((1, 1), 1.0), "single-entry": ((4, 6), 1 / 24),
          "empty": ((0, 3), 0.5), "all-zero": ((5, 1), 0.0), "wide": ((2, 40), 0.6)}
OPERATORS = {"+": np.add, "-": np.subtract, "*": np.multiply}


def _operand(dense, unordered, index_dtype, seed, explicit_zero=False):
    """`dense` as CSR, or as `ds~` with each row's entries shuffled; its first stored entry made an
    explicit zero when asked. Returns the tensor and the pattern it stores."""
    m = sp.csr_matrix(dense)
    if explicit_zero and m.nnz:
        m.data[0] = 0.0
    crd, vals = m.indices.copy(), m.data.copy()
    if unordered:
        rng = np.random.default_rng(seed)
        for i in range(m.shape[0]):
            lo, hi = m.indptr[i], m.indptr[i + 1]
            order = rng.permutation(hi - lo)[::-1] + lo
            crd[lo:hi], vals[lo:hi] = crd[order], vals[order]
    pattern = np.zeros(dense.shape, dtype=bool)
    pattern[np.repeat(np.arange(m.shape[0]), np.diff(m.indptr)), m.indices] = True
    levels = [{}, {"pos": m.indptr.astype(index_dtype), "crd": crd.astype(index_dtype)}]
    return asp.Tensor(dense.shape, "ds~" if unordered else "csr", levels, vals), pattern


def _sorted_rows(tensor):
    pos, crd = tensor.levels[1]["pos"], tensor.levels[1]["crd"]
    return all(np.all(np.diff(crd[pos[i]:pos[i + 1]]) > 0) for i in range(tensor.shape[0]))


RUNS = [(1, np.int32, None), (2, np.int64, "csr")]  # threads, indices, result format (None: inferred)
CASES = [("+", orders, *run) for orders in [(True, False), (False, True), (True, True)] for run in RUNS] + \
        [("-", (False, True), *run) for run in RUNS] + [("*", (True, False), *run) for run in RUNS]


@pytest.mark.parametrize("op, orders, threads, index_dtype, result", CASES)
def test_element_wise_over_unordered_operands_matches_numpy(op, orders, threads, index_dtype, result):
    expression = f"C(i,j) = A(i,j) {op} B(i,j)"
    for case, (shape, density) in SHAPES.items():
        seed = len(case)
        a, b = (sp.random(*shape, density=density, format="csr", random_state=seed + k).toarray() for k in (0, 1))
        (A, pa), (B, pb) = (_operand(m, unordered, index_dtype, seed + k, explicit_zero=k == 0)
                            for k, (m, unordered) in enumerate(zip((a, b), orders)))
        a = np.where(pa, A.to_numpy(), 0.0)  # the explicit zero
        got = asp.evaluate(expression, A=A, B=B, format=result, num_threads=threads)
        np.testing.assert_array_equal(got.to_numpy(), OPERATORS[op](a, b))
        assert got.nnz == np.count_nonzero(pa & pb if op == "*" else pa | pb)  # explicit zeros kept
        assert got.index_dtype == index_dtype
        sums = op != "*"
        assert got.format == asp.Format("ds~" if sums and result is None else "csr"), case
        if got.format == asp.Format("csr"):
            assert _sorted_rows(got), case


@pytest.mark.parametrize("op", OPERATORS)
def test_a_sum_gathers_the_unordered_operand_and_a_product_sorts_it(op):
    kernel = asp.compile(f"C(i,j) = A(i,j) {op} B(i,j)", formats={"A": "ds~", "B": "csr"})
    gathered = any(isinstance(node, Where) for node in walk(kernel.cin))
    assert gathered == (op != "*")
    assert kernel.conversions == ({} if gathered else {"A": (asp.Format("ds~"), asp.Format("csr"))})
    sorted_kernel = asp.compile(f"C(i,j) = A(i,j) {op} B(i,j)", formats={"A": "ds~", "B": "csr", "C": "csr"})
    assert "ordertouched" in sorted_kernel.source if gathered else sorted_kernel.conversions


@pytest.mark.parametrize("threads", [1, 2])
def test_a_product_plus_a_matrix_or_scaled_through_the_operators_sorts_nothing(monkeypatch, threads):
    rng = np.random.default_rng(4)
    a, b, c = (np.where(rng.random((40, 40)) < 0.2, rng.random((40, 40)), 0.0) for _ in range(3))
    A, B, C = (asp.Tensor.from_numpy(m, format="csr") for m in (a, b, c))
    converted = []
    installed = native._installed[0]
    monkeypatch.setattr(native, "_installed", [lambda t, f: converted.append(f) or installed(t, f)])
    asp.set_num_threads(threads)
    try:
        P = A @ B
        assert P.format == asp.Format("ds~")
        for got, expected in ((P + C, a @ b + c), (C + P, c + a @ b), (P - C, a @ b - c), (C - P, c - a @ b),
                              (2 * P, 2 * (a @ b)), (-P, -(a @ b)), (P * c, (a @ b) * c)):  # walked as stored
            assert got.format == asp.Format("ds~")
            np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-14)
    finally:
        asp.set_num_threads(None)
    assert converted == []
