"""Assembly of appended results: a bound phase sizes the arrays from trip counts, the fill writes them
and counts `pos`, and the exact count runs only when the bounds cannot be allocated.

The differential tests run every kernel through whichever path it takes; these check what they cannot
see: that the bound phase really skips the loops it replaces, that arrays allocated at loose bounds come
back trimmed to their entries, and that the exact count takes over when the bounds are too large."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"


def _phase(source: str, name: str) -> str:
    """The C of one phase: from its comment to the next phase's."""
    start = source.index(f"/* {name} */")
    ends = [source.find(f"/* {other} */", start + 1) for other in ("bound", "count", "fill")]
    return source[start:min(e for e in ends if e > 0)]


def test_gustavson_bound_phase_adds_row_lengths_without_visiting_them():
    source = asp.compile(SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}).source
    bound = _phase(source, "bound")
    assert "B_crd2" not in bound and "w_mark" not in bound  # B's rows are measured, not stepped
    assert "w_count += trips" in bound and "C_size2 += trips" in bound
    assert "B_crd2" in _phase(source, "count")  # the exact count, kept for when the bounds do not fit


def test_csr_addition_is_bounded_by_its_row_lengths():
    source = asp.compile("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, num_threads=1).source
    bound = _phase(source, "bound")
    assert "min64(A_p2_end - A_p2 + (B_p2_end - B_p2), j_dim)" in bound
    assert "while" not in bound  # no merge


def test_an_intersection_is_bounded_by_its_shorter_operand():
    source = asp.compile("C(i,j) = A(i,j) * B(i,j)", {"A": "csr", "B": "dcsr", "C": "csr"},
                         schedule="∀i ∀j C(i,j) = A(i,j) * B(i,j)").source
    assert "min64(min64(A_p2_end - A_p2, B_p2_end - B_p2), j_dim)" in _phase(source, "bound")


def test_a_kernel_with_nothing_to_bound_only_counts():
    """A reduction into a dense-then-sparse result's first level: no loop makes the last level's entries."""
    source = asp.compile("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "d", "y": "d"}).source
    assert "/* bound */" not in source and "/* count */" not in source


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_loose_bounds_are_trimmed_to_the_entries(index_dtype):
    """Each row of A @ B reaches the same 5 columns 40 times: the bound is 40× the result."""
    rng = np.random.default_rng(3)
    a = sp.csr_array(np.ones((50, 40)))
    b = sp.csr_array((rng.random(200) + 1, np.tile(np.arange(0, 50, 10), 40), np.arange(0, 201, 5)),
                     shape=(40, 50))
    kernel = asp.compile(SPGEMM, {"A": "csr", "B": "csr", "C": "csr"})
    C = kernel(A=asp.Tensor.from_scipy(a, index_dtype=index_dtype),
               B=asp.Tensor.from_scipy(b, index_dtype=index_dtype))
    expected = sp.csr_array(a @ b)
    expected.sort_indices()
    assert C.nnz == expected.nnz == 250
    np.testing.assert_array_equal(C.levels[1]["pos"], expected.indptr)
    np.testing.assert_array_equal(C.levels[1]["crd"], expected.indices)
    np.testing.assert_allclose(C.vals, expected.data)


CHILD = textwrap.dedent("""
    import resource
    import numpy as np, scipy.sparse as sp
    import autosparse as asp
    # rows of A @ B reach the same 2000 columns 500 times each: bounds of 2·10^8 entries (2.4 GB), a
    # result of 4·10^5 (5 MB); every array of the bounds together cannot fit the 2 GB allowed
    a = sp.csr_array(np.ones((200, 500)))
    b = sp.csr_array(np.random.default_rng(0).random((500, 2000)) + 1)
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"})
    A, B = asp.Tensor.from_scipy(a, index_dtype=np.int64), asp.Tensor.from_scipy(b, index_dtype=np.int64)
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
    C = kernel(A=A, B=B)
    assert C.nnz == 200 * 2000
    np.testing.assert_allclose(C.to_numpy(), (a @ b).toarray())
    print("ok")
""")


def test_bounds_too_large_to_allocate_fall_back_to_the_exact_count():
    result = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
