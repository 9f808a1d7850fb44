"""TTV on threads (issue 30): a kernel whose outermost loop steps one operand's compressed first level (a CSF
tensor's, a DCSR matrix's) into a result whose first level is dense and whose levels below are sparse runs
parallel by default: the threads split the operand's positions into runs of equal work (RowSplit), each
assembling the result rows of its run, the rows no position names left empty. TTV's result shares the
tensor's pattern (stored at its positions); the others are appended in chunks, phase by phase. Each result
is checked against numpy on dense copies at 1 and 2 threads; conftest runs small operands on threads
(PARALLEL_MIN_ENTRIES 0) unless a test restores the shipped threshold."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.pipeline import kernel as pipeline_kernel

TTV = "A(i,j) = B(i,j,k) * c(k)"

#: (name, expression, formats, reference): the shapes that qualify, each over B (3-D) or B's first slice.
SHAPES = [
    ("ttv", TTV, {"B": "csf", "A": "csr"}, lambda b, c: np.einsum("ijk,k->ij", b, c)),
    ("ttv-product", "A(i,j) = B(i,j,k) * C(i,j,k)", {"B": "csf", "C": "dss", "A": "csr"},
     lambda b, c: np.einsum("ijk,ijk->ij", b, c)),
    ("spgemm-dcsr", "C(i,j) = A(i,k) * B(k,j)", {"A": "dcsr", "B": "csr", "C": "csr"}, lambda a, b: a @ b),
    ("multiply-dcsr", "C(i,j) = A(i,j) * B(i,j)", {"A": "dcsr", "B": "csr", "C": "csr"}, lambda a, b: a * b),
]


def _tensor(case: str, shape, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dense = np.zeros(shape)
    if case == "one":
        dense[tuple(s - 1 for s in shape)] = 2.5
    elif case in ("some", "zeros"):
        dense = np.where(rng.random(shape) < 0.3, rng.random(shape) + 0.5, 0.0)
        dense[shape[0] // 2] = 0.0  # a first-level row no position names
        dense[-1] = 0.0
    return dense


def _stored(dense: np.ndarray, fmt: str, index_dtype, zeros: bool) -> asp.Tensor:
    """`dense` in `fmt`; with `zeros`, its entries kept as explicit zeros."""
    if not zeros:
        return asp.Tensor.from_numpy(dense, format=fmt, index_dtype=index_dtype)
    coords = np.array(np.nonzero(dense))
    return asp.Tensor.from_coo(coords, 0.0, dense.shape, format=fmt, index_dtype=index_dtype)


def _operands(name: str, case: str, shape, index_dtype):
    """The two operands of a shape (dense copies, then as given to the kernel)."""
    first, second = {"ttv": "Bc", "ttv-product": "BC"}.get(name, "AB")
    zeros = case == "zeros"
    if name.startswith("ttv"):
        b = _tensor(case, shape, 1)
        other = np.random.default_rng(2).random(shape[2]) if name == "ttv" else _tensor("some", shape, 3)
        given = other if name == "ttv" else _stored(other, "dss", index_dtype, False)
        return (b * (not zeros), other), {first: _stored(b, "sss", index_dtype, zeros), second: given}
    a = _tensor(case, shape[:2], 4)
    b = _tensor("some", shape[1::-1] if name == "spgemm-dcsr" else shape[:2], 5)
    return (a * (not zeros), b), {first: _stored(a, "dcsr", index_dtype, zeros),
                                  second: _stored(b, "csr", index_dtype, False)}


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("name, expression, formats, reference", SHAPES, ids=[s[0] for s in SHAPES])
def test_a_sparse_outer_loop_into_csr_equals_numpy(name, expression, formats, reference, index_dtype, threads):
    kernel = asp.compile(expression, formats, num_threads=threads)
    for case, shape in [("empty", (4, 3, 5)), ("zeros", (7, 3, 11)), ("one", (5, 4, 3)), ("some", (9, 6, 7)),
                        ("some", (1, 5, 1)), ("one", (1, 1, 1)), ("some", (13, 1, 4))]:
        dense, given = _operands(name, case, shape, index_dtype)
        result = kernel(**given)
        np.testing.assert_allclose(result.to_numpy(), reference(*dense), rtol=1e-12, atol=0, err_msg=case)
        assert kernel.ran_parallel == (threads > 1), case
        assert result.format == asp.Format("ds")


def test_ttv_stores_at_the_tensor_s_positions_in_the_threads_runs():
    """No appending: the result's column coordinates are the tensor's second level, each row's count is
    stored by the thread that visits it, and every thread deals itself a run of the first level's positions."""
    kernel = asp.compile(TTV, {"B": "csf", "A": "csr"}, num_threads=2)
    source = kernel.source
    assert "#pragma omp parallel num_threads(2)" in source and "omp_get_num_threads()" in source
    assert "A_pos2[i_ + 1] = B_pos2[B_p1 + 1] - B_pos2[B_p1];" in source
    assert "A_size2 +=" not in source  # nothing counted or appended


@pytest.mark.parametrize("heavy", [0, 5, 11])
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_every_slice_is_run_once_however_the_work_is_placed(heavy, threads):
    """One heavy slice (first, middle or last) among light and empty ones, more threads than slices: the
    runs cover each slice once, and the rows between them stay empty."""
    dense = np.zeros((12, 5, 6))
    dense[heavy] = np.arange(1, 31).reshape(5, 6)
    dense[(heavy + 3) % 12, 2, 4] = 7.0
    c = np.random.default_rng(6).random(6)
    for expression, formats, operands, expected in [
            (TTV, {"B": "csf", "A": "csr"}, {"c": c}, np.einsum("ijk,k->ij", dense, c)),
            ("A(i,j) = B(i,j,k) * C(i,j,k)", {"B": "csf", "C": "dss", "A": "csr"},
             {"C": asp.Tensor.from_numpy(dense, format="dss")}, np.einsum("ijk,ijk->ij", dense, dense))]:
        kernel = asp.compile(expression, formats, num_threads=threads)
        result = kernel(B=asp.Tensor.from_numpy(dense, format="sss"), **operands)
        np.testing.assert_allclose(result.to_numpy(), expected, rtol=1e-12)
        assert kernel.ran_parallel


def test_below_the_threshold_ttv_runs_serially(monkeypatch):
    monkeypatch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", 1 << 16)
    kernel = asp.compile(TTV, {"B": "csf", "A": "csr"}, num_threads=2)
    dense = _tensor("some", (9, 6, 7), 7)
    c = np.arange(7.0)
    result = kernel(B=asp.Tensor.from_numpy(dense, format="sss"), c=c)
    np.testing.assert_allclose(result.to_numpy(), np.einsum("ijk,k->ij", dense, c), rtol=1e-12)
    assert not kernel.ran_parallel
