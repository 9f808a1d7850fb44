"""The default schedule's innermost sums over contiguous dense data run over SIMD lanes
(schedule/autovector.py): which loops are marked, that the kernel needs no OpenMP runtime for it, and that
each result agrees with numpy on dense copies — empty, single-entry, float32, non-finite."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp

LANES = "omp simd reduction(+:"


def source(expression: str, formats: dict | None = None) -> str:
    return asp.compile(expression, formats or {}).source.replace(" ", "")


def marked(expression: str, formats: dict | None = None) -> bool:
    return LANES.replace(" ", "") in source(expression, formats)


@pytest.mark.parametrize("expression, formats", [
    ("c() = a(i) * b(i)", {}),                                 # a dot product
    ("C(i,j) = A(i,j,k) * x(k)", {}),                          # dense rows below two dense loops
    ("y(i) = A(i,j) * x(j)", {}),                              # dense rows of a matrix-vector product
    ("c() = A(i,j) * B(i,j)", {}),                              # a whole matrix's inner product
    ("y(i) = A(i,j) * x(j) + z(i)", {}),                       # the sum inside a larger expression
])
def test_contiguous_dense_sums_run_over_lanes(expression, formats):
    assert marked(expression, formats)


@pytest.mark.parametrize("expression, formats", [
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}),                    # a gather through coordinates
    ("y(i) = A(j,i) * x(j)", {}),                              # a column: strided values
    ("C(i,j) = S(i,j) * B(i,k) * D(k,j)", {"S": "csr"}),       # D's column, strided
    ("C(i,j) = S(i,j) * B(i,k) * D(j,k)", {"S": "csr"}),       # a dot per stored entry: codegen/jam.py's
    ("c(i) = a(i) + b(i)", {}),                                # element-wise: the compiler's already
    ("c() = a(i) * b(i)", {"a": "s"}),                         # a sparse vector's entries
])
def test_gathers_strides_and_elementwise_loops_are_left_alone(expression, formats):
    assert not marked(expression, formats)


def test_lanes_need_no_openmp_runtime(monkeypatch):
    """A SIMD loop is not a parallel one: the kernel is built without -fopenmp (its pragma needs only the
    -fopenmp-simd every kernel gets), as the C compiler is asked for it."""
    from autosparse.runtime import calls, compiler
    built, original = [], calls.load_library
    monkeypatch.setattr(calls, "load_library", lambda source, openmp=False: built.append((source, openmp)) or
                        original(source, openmp=openmp))
    assert asp.compile("s() = u(i) * v(i)")(u=np.ones(100_000), v=np.ones(100_000)) == 100_000
    assert [openmp for source, openmp in built if "omp simd reduction" in source] == [False]
    assert "-fopenmp-simd" in compiler.compile_flags(False, False, True)
    assert "-fopenmp" not in compiler.compile_flags(False, False, True)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 1000, 4099])
def test_dot_products_agree_with_numpy(n, dtype):
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    got = asp.evaluate("c() = a(i) * b(i)", a=a, b=b)
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    assert got == pytest.approx(float(np.dot(a.astype(np.float64), b.astype(np.float64))), rel=tolerance,
                                abs=tolerance * max(n, 1))


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (1, 1), (3, 17), (64, 130)])
def test_dense_rows_agree_with_numpy(shape):
    rng = np.random.default_rng(sum(shape))
    A, x, z = rng.standard_normal(shape), rng.standard_normal(shape[1]), rng.standard_normal(shape[0])
    np.testing.assert_allclose(asp.evaluate("y(i) = A(i,j) * x(j) + z(i)", A=A, x=x, z=z), A @ x + z,
                               rtol=1e-12, atol=1e-12)


def test_sddmm_left_to_jam_agrees_with_numpy():
    rng = np.random.default_rng(3)
    S = np.where(rng.random((40, 30)) < 0.2, rng.random((40, 30)), 0.0)
    B, D = rng.standard_normal((40, 33)), rng.standard_normal((30, 33))
    got = asp.evaluate("C(i,j) = S(i,j) * B(i,k) * D(j,k)", format="csr", S=asp.Tensor.from_numpy(S, "csr"),
                       B=B, D=D)
    np.testing.assert_allclose(got.to_numpy(), S * (B @ D.T), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("poison, expected", [(np.inf, np.inf), (np.nan, np.nan), (-np.inf, -np.inf)])
def test_non_finite_terms_are_kept(poison, expected):
    a = np.ones(100)
    a[57] = poison
    got = asp.evaluate("c() = a(i) * b(i)", a=a, b=np.ones(100))
    assert got == expected or np.isnan(expected) and np.isnan(got)


def test_opposite_infinities_make_nan_in_any_order():
    a = np.zeros(64)
    a[3], a[60] = np.inf, -np.inf
    assert np.isnan(asp.evaluate("c() = a(i) * b(i)", a=a, b=np.ones(64)))


def test_contraction_off_keeps_every_sum_in_the_source_order(monkeypatch):
    """`fp_contract` off promises the plain loop's sums bit for bit: no lanes, and the sequential sum."""
    monkeypatch.setattr(asp.config, "_fp_contract", False)
    a = np.random.default_rng(5).standard_normal(1001)
    assert not marked("c() = a(i) * b(i)")
    sequential = 0.0
    for value in a:
        sequential += value * value
    assert asp.compile("c() = a(i) * a(i)")(a=a) == sequential
