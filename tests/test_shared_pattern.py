"""Results whose pattern is an operand's (LOWERING.md §4): SDDMM, TTV, scaling and copies take the
operand's positions instead of appending. Each case checks the values against numpy, that the stored
pattern is exactly the operand's (explicit zeros where a reduction is empty), and that the kernel took
the shared path (nothing appended or grown) — or, for the cases that must not share, that it did not."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from conftest import densified


def _stored(tensor: asp.Tensor, order: int) -> set[tuple[int, ...]]:
    coords, _ = tensor.to_coo()
    return set(map(tuple, np.asarray(coords)[:order].T))


def _random3(shape, nnz, seed, fmt, index_dtype=np.int32):
    rng = np.random.default_rng(seed)
    flat = rng.choice(int(np.prod(shape)), size=nnz, replace=False)
    coords = np.array(np.unravel_index(np.sort(flat), shape))
    vals = rng.integers(1, 9, size=nnz).astype(np.float64)
    dense = np.zeros(shape)
    dense[tuple(coords)] = vals
    return asp.Tensor.from_coo(coords, vals, shape, format=fmt, index_dtype=index_dtype), dense


def _shared(kernel) -> bool:
    return "GROW(" not in kernel.source.split("autosparse_kernel")[1] and "_nz" not in kernel.source


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("nnz", [0, 1, 37])
@pytest.mark.parametrize("result_format", ["csr", "dcsr"])
def test_sddmm_result_takes_the_sampled_pattern(result_format, nnz, index_dtype):
    rows, cols, k = 9, 7, 4
    rng = np.random.default_rng(nnz)
    m = sp.random(rows, cols, density=nnz / (rows * cols), format="csr", random_state=nnz)
    c, d = rng.random((rows, k)), rng.random((k, cols))
    B = asp.Tensor.from_scipy(m, format=result_format, index_dtype=index_dtype)
    kernel = asp.compile("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"A": result_format, "B": result_format})
    A = kernel(B=B, C=c, D=d)
    assert _shared(kernel)
    np.testing.assert_allclose(A.to_numpy(), m.toarray() * (c @ d), rtol=1e-12)
    assert _stored(A, 2) == _stored(B, 2)


def test_sddmm_with_empty_inner_dimension_keeps_the_pattern_as_explicit_zeros():
    m = sp.random(6, 5, density=0.4, format="csr", random_state=3)
    kernel = asp.compile("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"A": "csr", "B": "csr"})
    A = kernel(B=asp.Tensor.from_scipy(m), C=np.zeros((6, 0)), D=np.zeros((0, 5)))
    assert A.nnz == m.nnz and not A.vals.any()


@pytest.mark.parametrize("source, result", [("csf", "csr"), ("csf", "ss"), ("dss", "ds"), ("sss", "dd")])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_ttv_result_holds_the_fibers(source, result, index_dtype):
    B, dense = _random3((5, 6, 7), 40, 1, source, index_dtype)
    c = np.arange(1.0, 8.0)
    kernel = asp.compile("A(i,j) = B(i,j,k) * c(k)", {"A": result, "B": source})
    A = kernel(B=B, c=c)
    np.testing.assert_allclose(densified(A), np.einsum("ijk,k->ij", dense, c))
    if result != "dd":
        assert _shared(kernel)
        assert _stored(A, 2) == {tuple(p) for p in np.argwhere(dense.any(axis=2))}


@pytest.mark.parametrize("source, result", [("csf", "csf"), ("sss", "dds"), ("dss", "dss"), ("sss", "ssd"),
                                            ("sss", "sdd"),
                                            ("sss", "dss")])
def test_scaling_copies_the_pattern(source, result):
    B, dense = _random3((4, 5, 6), 30, 2, source)
    kernel = asp.compile("A(i,j,k) = -2 * B(i,j,k)", {"A": result, "B": source})
    A = kernel(B=B)
    assert _shared(kernel)
    np.testing.assert_array_equal(A.to_numpy(), -2 * dense)
    sparse_levels = len(result.rstrip("d"))  # trailing dense levels store whole fibers
    assert _stored(A, sparse_levels) == _stored(B, sparse_levels)


def test_explicit_zeros_of_the_operand_are_kept():
    B = asp.Tensor.from_coo(np.array([[0, 1, 1], [2, 0, 3]]), np.array([0.0, 5.0, 0.0]), (3, 4), format="csr")
    A = asp.evaluate("A(i,j) = 3 * B(i,j)", format="csr", B=B)
    assert A.nnz == 3 and sorted(A.vals) == [0.0, 0.0, 15.0]


@pytest.mark.parametrize("expression, formats, shares", [
    ("A(i,j) = B(i,j) * C(i,j)", {"A": "csr", "B": "csr"}, True),            # dense C is located
    ("A(i,j) = B(i,j) * C(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, False),  # intersection: a subset
    ("A(i,j) = B(i,j) + C(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, False),  # union: a superset
    ("A(i,j) = B(i,j) + C(i,j)", {"A": "csr", "B": "csr"}, False),           # dense C fills every row
    ("A(i,j) = B(i,j)", {"A": "coo", "B": "csr"}, False),                     # different level kinds
    ("A(i,j) = B(i,j)", {"A": "csr", "B": "coo"}, False),                     # a non-unique level
    ("A(j,i) = B(i,j)", {"A": "csr", "B": "csr"}, False),                     # transposed: out of order
])
def test_only_results_with_an_operand_pattern_share_it(expression, formats, shares):
    b = sp.random(6, 6, density=0.3, format="csr", random_state=5)
    c = sp.random(6, 6, density=0.3, format="csr", random_state=6)
    operands = {"B": asp.Tensor.from_scipy(b, format=formats["B"])}
    if "C" in expression:
        operands["C"] = asp.Tensor.from_scipy(c, format="csr") if "C" in formats else np.arange(36.0).reshape(6, 6)
    kernel = asp.compile(expression, formats)
    A = kernel(**operands)
    dense = {name: t.to_numpy() if isinstance(t, asp.Tensor) else t for name, t in operands.items()}
    if "+" in expression:
        expected = dense["B"] + dense["C"]
    elif "C" in expression:
        expected = dense["B"] * dense["C"]
    else:
        expected = dense["B"].T if expression.startswith("A(j,i)") else dense["B"]
    np.testing.assert_allclose(A.to_numpy(), expected)
    assert _shared(kernel) == shares


def test_loop_invariant_factors_are_multiplied_once_per_sum():
    """Σ_k b·c(k)·d(k) is computed as b·Σ_k c(k)·d(k): B's value leaves the k loop."""
    kernel = asp.compile("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"A": "csr", "B": "csr"})
    inner = kernel.source.split("for (int64_t k_ = 0")[1].split("}")[0]
    assert "B_vals" not in inner
    m = sp.random(8, 9, density=0.3, format="csr", random_state=7)
    c, d = np.arange(24.0).reshape(8, 3), np.arange(27.0).reshape(3, 9)
    A = kernel(B=asp.Tensor.from_scipy(m), C=c, D=d)
    np.testing.assert_allclose(A.to_numpy(), m.toarray() * (c @ d))


TTM = "C(i,j,r) = A(i,j,k) * B(k,r)"


@pytest.mark.parametrize("schedule", [None, "parallelize(i, cpu_thread, no_races)",
                                      "parallelize(j, cpu_thread, no_races)"])
@pytest.mark.parametrize("shape, nnz", [((6, 5, 7), 40), ((1, 1, 4), 2), ((5, 6, 1), 9), ((4, 3, 5), 0),
                                        ((4, 3, 5), 1)])
@pytest.mark.parametrize("formats", [("sss", "ssd"), ("dss", "dsd")])
def test_ttm_result_shares_the_first_two_levels_and_runs_in_parallel(formats, shape, nnz, schedule):
    """Zhao et al.'s TTM: C's first two levels are A's (copied), its last is dense below them, and the
    threads of a loop over A's stored slices write disjoint blocks of C."""
    a_format, c_format = formats
    A, dense = _random3(shape, nnz, 3, a_format)
    B = np.random.default_rng(4).random((shape[2], 3))
    kernel = asp.compile(TTM, formats={"A": a_format, "B": "dense", "C": c_format}, schedule=schedule,
                         num_threads=2)
    C = kernel(A=A, B=B)
    np.testing.assert_allclose(C.to_numpy(), np.einsum("ijk,kr->ijr", dense, B), atol=1e-12)
    assert _stored(C, 2) == _stored(A, 2)
    assert _shared(kernel)
    if schedule is not None:
        assert "#pragma omp parallel" in kernel.source


@pytest.mark.parametrize("threads", [1, 3, 8])
@pytest.mark.parametrize("heavy", [0, 2, 4])
def test_threads_share_a_sparse_loop_by_nonzeros_and_every_slice_is_run_once(threads, heavy):
    """Each thread runs one stretch of slices holding an equal share of the entries below: one heavy
    slice (first, middle or last), more threads than slices, and one thread all cover every slice once."""
    dense = np.zeros((5, 4, 6))
    dense[heavy] = np.arange(1, 25).reshape(4, 6)
    dense[(heavy + 1) % 5, 1, 2] = 7.0
    A = asp.Tensor.from_numpy(dense, format="sss")
    B = np.random.default_rng(5).random((6, 2))
    kernel = asp.compile(TTM, formats={"A": "sss", "B": "dense", "C": "ssd"},
                         schedule="parallelize(i, cpu_thread, no_races)", num_threads=threads)
    np.testing.assert_allclose(kernel(A=A, B=B).to_numpy(), np.einsum("ijk,kr->ijr", dense, B))
    assert f"num_threads({threads})" in kernel.source and "_parts = omp_get_num_threads()" in kernel.source


def test_a_parallel_loop_over_positions_steps_one_operand():
    with pytest.raises(asp.ScheduleError, match="carry"):
        asp.compile("z(i) = a(i) * b(i)", formats={"a": "s", "b": "s", "z": "d"},
                    schedule="parallelize(i, cpu_thread, no_races)").source
