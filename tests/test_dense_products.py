"""Products of float numpy arrays alone are numpy's (BLAS), eagerly and as a lazy program's steps: equal to
numpy's own, no kernel built, and every other operand (a Tensor, an integer or bool array, a semiring) still
through a kernel, with autosparse's errors."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from autosparse.array import dense

xp = asp.array


@pytest.fixture
def kernel_calls(monkeypatch):
    """The autosparse kernels called while the test runs (Kernel's two ways to run), counted: a kernel built by
    an earlier test is called without being built again."""
    calls = []
    for method in ("__call__", "compute"):
        original = getattr(asp.Kernel, method)
        monkeypatch.setattr(asp.Kernel, method, lambda kernel, /, _original=original, **operands:
                            calls.append(kernel) or _original(kernel, **operands))
    return calls


@pytest.fixture
def no_kernel_built(kernel_calls):
    yield
    assert not kernel_calls


SHAPES = [((4, 3), (3, 5)), ((0, 3), (3, 2)), ((3, 0), (0, 2)), ((1, 1), (1, 1)), ((5, 1), (1, 4))]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("left, right", SHAPES, ids=str)
def test_eager_products_of_float_arrays_are_numpys(left, right, dtype, no_kernel_built):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(left).astype(dtype), rng.standard_normal(right).astype(dtype)
    for got, expected in ((xp.matmul(a, b), a @ b), (xp.tensordot(a, b, axes=1), a @ b),
                          (xp.matmul(a, b[:, 0]), a @ b[:, 0]), (xp.vecdot(a, a), (a * a).sum(axis=-1))):
        assert got.dtype == expected.dtype
        np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_other_operands_go_through_kernels_and_keep_autosparses_errors(kernel_calls):
    a = np.arange(6.0).reshape(2, 3)
    ints = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(xp.matmul(ints, ints.T), ints @ ints.T)  # int64: a kernel
    np.testing.assert_allclose(xp.matmul(asp.Tensor.from_numpy(a, "csr"), a.T), a @ a.T)  # a Tensor: a kernel
    np.testing.assert_allclose(xp.matmul(a, a.T, semiring="max_plus"), (a[:, :, None] + a.T[None]).max(axis=1))
    assert len(kernel_calls) == 3
    with pytest.raises(asp.ShapeError):
        xp.matmul(a, a)


def _scaled_product(d, x, w):
    return xp.multiply(d, xp.matmul(x, w))


def test_a_lazy_step_of_numpy_arrays_that_is_a_product_is_numpys(no_kernel_built):
    rng = np.random.default_rng(1)
    d, x, w = rng.random((7, 1)), rng.random((7, 4)), rng.random((4, 3))
    (scaled,) = asp.compute(_scaled_product(asp.lazy(d), asp.lazy(x), w))
    np.testing.assert_allclose(scaled, d * (x @ w))
    assert scaled.flags.c_contiguous
    np.testing.assert_allclose(asp.fused(_scaled_product)(d, x, w), d * (x @ w))
    total = asp.compute(xp.vecdot(asp.lazy(x[:, 0]), x[:, 1]))[0]
    assert total == pytest.approx(x[:, 0] @ x[:, 1]) and isinstance(total, float)


def test_a_lazy_step_with_a_tensor_or_a_schedule_runs_a_kernel(kernel_calls):
    rng = np.random.default_rng(2)
    x, w = rng.random((5, 4)), rng.random((4, 3))
    (product,) = asp.compute(xp.matmul(asp.lazy(asp.Tensor.from_numpy(x, "dense")), w))
    np.testing.assert_allclose(product, x @ w)
    assert len(kernel_calls) == 1
    (scheduled,) = asp.compute(xp.matmul(asp.lazy(x), w), schedule="reorder(i, k, j)")
    np.testing.assert_allclose(scheduled, x @ w)
    assert len(kernel_calls) == 2


@pytest.mark.parametrize("expression, contracted, scalings", [
    ("C(i,j) = T0(i,k) * T1(k,j)", ("ac,cb->ab", ("T0", "T1")), ()),
    ("C() = T0(i) * T0(i)", ("a,a->", ("T0", "T0")), ()),
    ("C(i) = T0(i,i)", ("aa->a", ("T0",)), ()),
    ("C(i,j) = T0(i) * sum(k, T1(i,k) * T2(k,j))", ("ac,cb->ab", ("T1", "T2")), (("a->a", "T0"),)),
    ("C(i,j) = T0(j,i) * sum(k, T1(i,k) * T2(k,j))", ("ac,cb->ab", ("T1", "T2")), (("ba->ab", "T0"),)),
    ("C() = T0() * sum(i, T1(i) * T2(i))", ("a,a->", ("T1", "T2")), (("->", "T0"),)),
])
def test_the_steps_numpy_computes_are_products_that_blas_contracts_in_a_pair(expression, contracted, scalings):
    pair, scaled = dense._product(expression)
    assert pair[:2] == contracted
    assert tuple((subscripts, name) for subscripts, name, _ in scaled) == scalings


@pytest.mark.parametrize("expression", ["C(i) = T0(i) + T1(i)", "C(i) = 2 * T0(i)", "C(i) = maximum(T0(i), T1(i))",
                                        "C(i) = min(j, T0(i,j) + T1(j))", "C(i) = T0(i,j) * T1(j,k) * T2(k)",
                                        "C(i,j) = T0(j) * sum(k, T1(i,k) * T2(k))"])
def test_other_steps_are_kernels(expression):
    assert dense._product(expression) is None


@pytest.mark.parametrize("dtypes", [(np.float64, np.float64, np.float64), (np.float32, np.float32, np.float32),
                                    (np.float32, np.float32, np.float64), (np.float64, np.float32, np.float32)])
def test_a_scaled_product_is_typed_and_valued_as_numpy_has_it(dtypes):
    rng = np.random.default_rng(3)
    d, x, w = (rng.random(shape).astype(dtype) for shape, dtype in zip([(6,), (6, 4), (4, 3)], dtypes))
    value = dense.step("C(i,j) = T0(i) * sum(k, T1(i,k) * T2(k,j))", {"T0": d, "T1": x, "T2": w})
    expected = d[:, None] * (x @ w)
    assert value.dtype == expected.dtype and value.flags.c_contiguous
    np.testing.assert_allclose(value, expected, rtol=1e-5)
    transposed = dense.step("C(i,j) = T0(j,i) * sum(k, T1(i,k) * T2(k,j))", {"T0": (x @ w).T.copy(), "T1": x, "T2": w})
    np.testing.assert_allclose(transposed, (x @ w) ** 2, rtol=1e-5)


@pytest.mark.parametrize("expression, shapes, expected", [
    ("C(i,j) = T0(i,k) * T1(k,j)", [(3, 4), (4, 5)], lambda a, b: a @ b),
    ("C(j,i) = T0(i,k) * T1(k,j)", [(3, 4), (4, 5)], lambda a, b: (a @ b).T),
    ("C(i,j) = T0(k,i) * T1(j,k)", [(4, 3), (5, 4)], lambda a, b: a.T @ b.T),
    ("C() = T0(i,j) * T1(i,j)", [(3, 4), (3, 4)], lambda a, b: (a * b).sum()),
    ("C(i,j) = T0(i,j) * T1(i,j)", [(3, 4), (3, 4)], lambda a, b: a * b),  # einsum's: both keep i and j
    ("C(i) = T0(i,j) * T1(k)", [(3, 4), (5,)], lambda a, b: a.sum(axis=1) * b.sum()),  # sums one factor alone
    ("C(i,j) = T0(i) * T1(j)", [(3,), (0,)], lambda a, b: np.outer(a, b)),
])
def test_pairs_by_tensordot_or_einsum_equal_numpy(expression, shapes, expected):
    rng = np.random.default_rng(4)
    a, b = (rng.random(shape) for shape in shapes)
    value = dense.step(expression, {"T0": a, "T1": b})
    np.testing.assert_allclose(value, expected(a, b))
    assert np.ndim(value) == 0 or value.flags.c_contiguous
