"""Threads writing sparse results and keeping their own temporaries (scheduling issue, item 3): a result
assembled by appending is built by threads inside one parallel region (each thread bounds or counts its
chunk of rows, one thread turns the counts into chunk starts and allocates, each fills its chunk, the
chunks are moved together), and the temporaries of a `where` inside a parallel loop are each thread's
own. Every schedule equals the numpy reference over the
edge-case inputs and both index dtypes; results are the same bits on every run; the code has the
promised shape; what cannot be sliced is a ScheduleError naming the rule."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import autosparse as asp
from conftest import densified

from kernel_cases import CASES, expect_schedule_error, run_differential

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
ADD = "C(i,j) = A(i,j) + B(i,j)"
TTM = "A(i,j,k) = B(i,j,l) * C(k,l)"
MTTKRP = "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"
ROWS = "parallelize(i, cpu_thread, no_races)"
CSR3 = {"A": "csr", "B": "csr", "C": "csr"}

#: (expression, formats, schedule)
PARALLEL = [
    (SPGEMM, CSR3, ROWS),  # the default concretisation's list workspace, one per thread
    (SPGEMM, CSR3, f"precompute(A(i,k) * B(k,j), j, j); {ROWS}"),
    (SPGEMM, CSR3, f"precompute(A(i,k) * B(k,j), j, jw, h); {ROWS}"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "dense"}, f"precompute(A(i,k) * B(k,j), j, j); {ROWS}"),
    (SPGEMM, {"A": "csr", "B": "dense", "C": "csr"}, ROWS),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "dense"},
     "split(i, i0, i1, 2); precompute(A(i,k) * B(k,j), j, jw, h); parallelize(i0, cpu_thread, no_races)"),
    (ADD, CSR3, ROWS),
    ("C(i,j) = A(i,j) * B(i,j)", CSR3, ROWS),
    ("C(i,j) = A(i,j) - B(i,j)", {"A": "csr", "B": "dense", "C": "csr"}, ROWS),
    ("A(i,j,k) = B(i,j,k) + C(i,j,k)", {"A": "dss", "B": "dss", "C": "dss"}, ROWS),  # two levels counted
    (TTM, {"B": "dss", "A": "dsd"}, ROWS),
    (TTM, {"B": "dss", "A": "dss"}, ROWS),
    (MTTKRP, {"B": "dss"}, f"precompute(B(i,k,l) * D(l,j), j, j); {ROWS}"),
    (MTTKRP, {"B": "dense"}, "precompute(B(i,k,l) * D(l,j), j, j); parallelize(k, cpu_thread, temporary)"),
    (MTTKRP, {"B": "dense"}, "precompute(B(i,k,l) * D(l,j), j, j); parallelize(k, cpu_thread, atomics)"),
]
IDS = [f"{e.split('=')[0].strip()}-{'-'.join(f'{n}:{f}' for n, f in fm.items())}-{s}" for e, fm, s in PARALLEL]


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("expression, formats, schedule", PARALLEL, ids=IDS)
def test_a_parallel_schedule_with_sparse_results_or_temporaries_computes_the_expression(
        expression, formats, schedule, case, index_dtype):
    """Three threads on extents of 2 to 5: some threads get no rows at all."""
    run_differential(expression, formats, case, np.float64, index_dtype, schedule=schedule, num_threads=3)


def _matrix(rng, rows: int, cols: int, density: float) -> sp.csr_matrix:
    """Random values on 1/8 steps (sums are exact in any order), with whole rows left empty."""
    matrix = sp.random(rows, cols, density=density, format="csr", random_state=rng)
    matrix.data = rng.integers(1, 16, matrix.nnz) / 8
    matrix = sp.csr_matrix(matrix.multiply(rng.random(rows)[:, None] < 0.8))
    matrix.eliminate_zeros()  # positive values: the product's pattern is its nonzeros
    return matrix


@pytest.mark.parametrize("threads", [1, 2, 4, 7])
@pytest.mark.parametrize("workspace", [None, "j, j", "j, jw, h"])
def test_parallel_spgemm_equals_scipy_on_many_rows_and_repeats_its_bits(threads, workspace):
    rng = np.random.default_rng(threads)
    a, b = _matrix(rng, 301, 57, 0.08), _matrix(rng, 57, 211, 0.1)
    schedule = ROWS if workspace is None else f"precompute(A(i,k) * B(k,j), {workspace}); {ROWS}"
    kernel = asp.compile(SPGEMM, CSR3, schedule=schedule, num_threads=threads)
    first = kernel(A=a, B=b)
    expected = (a @ b).toarray()
    np.testing.assert_array_equal(densified(first), expected)
    assert first.levels[1]["pos"][-1] == np.count_nonzero(expected)  # no gaps between the threads' rows
    for _ in range(3):  # each row is one thread's, summed in order: deterministic
        again = kernel(A=a, B=b)
        for mine, theirs in zip(again.levels, first.levels):
            for name in mine:
                np.testing.assert_array_equal(mine[name], theirs[name])
        np.testing.assert_array_equal(again.vals, first.vals)


@settings(max_examples=25, deadline=None)
@given(rows=st.integers(0, 40), inner=st.integers(1, 30), cols=st.integers(1, 40),
       density=st.floats(0.0, 0.5), threads=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_parallel_sparse_results_match_scipy_on_random_shapes(rows, inner, cols, density, threads, seed):
    rng = np.random.default_rng(seed)
    a, b, c = _matrix(rng, rows, inner, density), _matrix(rng, inner, cols, density), _matrix(rng, rows, inner, density)
    product = asp.compile(SPGEMM, CSR3, schedule=ROWS, num_threads=threads)
    np.testing.assert_array_equal(densified(product(A=a, B=b)), (a @ b).toarray())
    total = asp.compile(ADD, CSR3, schedule=ROWS, num_threads=threads)
    np.testing.assert_array_equal(densified(total(A=a, B=c)), (a + c).toarray())


def test_a_tall_ttm_with_a_csf_result_equals_numpy():
    rng = np.random.default_rng(5)
    dense = rng.integers(1, 8, (60, 9, 7)) * (rng.random((60, 9, 7)) < 0.15) / 8
    factor = rng.integers(1, 8, (5, 7)) / 8
    kernel = asp.compile(TTM, {"B": "dss", "A": "dss"}, schedule=ROWS, num_threads=2)
    result = kernel(B=asp.Tensor.from_numpy(dense, "dss"), C=factor)
    np.testing.assert_array_equal(densified(result), np.einsum("ijl,kl->ijk", dense, factor))


# ----- generated-code shape --------------------------------------------------------------------------------

def test_the_phases_of_a_parallel_assembly_share_one_region():
    source = asp.compile(SPGEMM, CSR3, schedule=ROWS, num_threads=2).source
    assert source.count("#pragma omp parallel") == 1 and "#pragma omp parallel num_threads(threads)" in source
    assert "const int threads = 2;" in source and "runtime" not in source
    assert source.count("for (int64_t i_ = i_first; i_ < i_stop; i_++)") == 3  # bound, count, fill: rows by work
    region = source[source.index("#pragma omp parallel"):source.index("if (failed) return failed;")]
    bound, single, count, fill = (region.index(mark) for mark in ("/* bound */", "#pragma omp single",
                                                                  "/* count */", "/* fill */"))
    assert bound < single < count < fill  # one thread sizes the arrays between the phases
    # each thread's rows are dealt once, as the region starts, and every phase runs over them
    assert region.count("int64_t i_first = 0;") == region.count("int64_t i_stop = 0;") == 1
    assert region.index("int64_t i_stop = 0;") < bound
    assert region.index("if (!C_bounded)") < count  # the exact count only when the bounds did not fit
    # the workspace is allocated once per thread, inside the region, before the phases and freed after
    assert region.index("w_mark = calloc") < bound and region.index("free(w_mark)") > fill
    assert "int64_t C_size2 = 0;" in region and "C_size2 = C_size2_chunks[thread];" in region
    assert not re.search(r"return [12];", region)  # nothing leaves a region: failures raise its flag
    after = source[source.index("if (failed) return failed;"):]
    assert "memmove(C_crd2 + C_size2 * 1 + 0, C_crd2 + from * 1 + 0" in after  # the chunks moved together


def test_a_temporary_inside_a_parallel_loop_over_a_dense_result_is_each_threads_own():
    source = asp.compile(MTTKRP, {"B": "dense"}, num_threads=2,
                         schedule="precompute(B(i,k,l) * D(l,j), j, j); parallelize(k, cpu_thread, temporary)").source
    region = source[source.index("#pragma omp parallel num_threads(threads)"):]
    assert region.index("w_mark = calloc") < region.index("#pragma omp for schedule(static)")
    assert "#pragma omp critical" in region and "free(w_mark)" in region


# ----- rejections ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, formats, schedule, words", [
    (SPGEMM, CSR3, "split(i, i0, i1, 4); parallelize(i0, cpu_thread, no_races)",
     ["parallelize(i0", "C is assembled by appending", "outermost one, over C's first level"]),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "dcsr"}, ROWS,
     ["parallelize(i", "C is assembled by appending", "that level dense"]),
    ("y(i) = A(i,j) * x(j)", {"A": "csr", "y": "s"}, ROWS, ["parallelize(i", "y is assembled by appending"]),
    ("A(i,j,k) = B(i,j,k) + C(i,j,k)", {"A": "dds", "B": "dds", "C": "dds"}, "parallelize(j, cpu_thread, no_races)",
     ["parallelize(j", "A is assembled by appending", "outermost"]),
    (SPGEMM, CSR3, "precompute(A(i,k) * B(k,j), j, j); parallelize(i, cpu_vector, no_races)",
     ["parallelize(i)", "where inside a SIMD loop"]),
])
def test_parallel_writes_that_cannot_be_sliced_are_schedule_errors(expression, formats, schedule, words):
    expect_schedule_error(expression, formats, schedule, words)


def test_no_races_on_a_loop_that_sums_into_one_register_is_refused():
    """Each thread would add into the same register: a promise of no races that the loop cannot keep
    (it used to give a wrong sum now and then); atomics or temporary make it right."""
    expression, formats = "A(i,j) = B(i,j,k) * c(k)", {"B": "dss", "A": "ds"}
    racing = "precompute(B(i,j,k) * c(k), j, v0); parallelize(k, cpu_thread, no_races)"
    with pytest.raises(asp.ScheduleError, match="adds into one register"):
        asp.compile(expression, formats=formats, schedule=racing, num_threads=2).source  # noqa: B018
    rng = np.random.default_rng(0)
    dense = rng.random((3, 4, 50)) * (rng.random((3, 4, 50)) < 0.6)
    c = rng.random(50)
    for race in ("atomics", "temporary"):
        kernel = asp.compile(expression, formats=formats, schedule=racing.replace("no_races", race), num_threads=2)
        result = kernel(B=asp.Tensor.from_numpy(dense, format="dss"), c=c)
        np.testing.assert_allclose(densified(result), np.einsum("ijk,k->ij", dense, c), rtol=1e-12)
