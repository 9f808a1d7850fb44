"""autosparse.array's functions against numpy on dense copies, for Tensor, numpy and scipy operands.

Each function is checked on the text it builds and on its value, functions and reductions other than the sum
(maximum, exp, where, min, semirings other than plus_times ...) included."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse import ShapeError
from autosparse.api.arrays import build
from autosparse.array.plan import plan

xp = asp.array

RNG = np.random.default_rng(31)
DENSE = np.where(RNG.random((3, 4)) < 0.5, RNG.integers(1, 9, (3, 4)), 0).astype(float)
DENSE[0, 0] = 0.0  # an explicit zero stays a zero


def kinds(array: np.ndarray):
    """The same values as a CSR Tensor, a numpy array and (for matrices) a scipy CSR matrix."""
    out = [asp.Tensor.from_numpy(array, "csr" if array.ndim == 2 else "sparse"), array]
    if array.ndim == 2:
        out.append(sp.csr_matrix(array))
    return out


def dense(value) -> np.ndarray:
    return value.to_numpy() if isinstance(value, asp.Tensor) else np.asarray(value)


def expect(name: str, operands: tuple, text: str, expected, built: dict | None = None, **options):
    """`xp.<name>(*operands, **options)` builds `text` (from the builder's options `built`, where they are not
    the function's) and equals numpy's `expected`."""
    assert build(name, operands, **(options if built is None else built))[0] == text
    result = dense(getattr(xp, name)(*operands, **options))
    # numpy's bool results: a sparse one holds its truth in the value type as 0/1 (a Tensor stores no bool)
    if expected.dtype == bool:
        assert set(np.unique(result)) <= {0, 1}, result
    np.testing.assert_allclose(result.astype(bool) if expected.dtype == bool else result, expected)


@pytest.mark.parametrize("k", range(3))
@pytest.mark.parametrize("name, text", [
    ("add", "C(i,j) = A(i,j) + B(i,j)"), ("subtract", "C(i,j) = A(i,j) - B(i,j)"),
    ("multiply", "C(i,j) = A(i,j) * B(i,j)"), ("maximum", "C(i,j) = maximum(A(i,j), B(i,j))"),
    ("minimum", "C(i,j) = minimum(A(i,j), B(i,j))"), ("less", "C(i,j) = less(A(i,j), B(i,j))"),
    ("greater_equal", "C(i,j) = greater_equal(A(i,j), B(i,j))"), ("not_equal", "C(i,j) = not_equal(A(i,j), B(i,j))"),
    ("logical_and", "C(i,j) = logical_and(A(i,j), B(i,j))"), ("logical_or", "C(i,j) = logical_or(A(i,j), B(i,j))"),
])
def test_binary(name, text, k):
    other = np.flip(DENSE, 0).copy()
    expect(name, (kinds(DENSE)[k], kinds(other)[k]), text, getattr(np, name)(DENSE, other))


@pytest.mark.parametrize("k", range(3))
@pytest.mark.parametrize("name", ["negative", "abs", "sqrt", "exp", "log", "logical_not"])
def test_unary(name, k):
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(DENSE)
    expect(name, (kinds(DENSE)[k],), f"C(i,j) = {'-A(i,j)' if name == 'negative' else f'{name}(A(i,j))'}", expected)


@pytest.mark.parametrize("k", range(3))
def test_divide_by_a_dense_array_and_by_a_number(k):
    divisor = DENSE + 1
    expect("divide", (kinds(DENSE)[k], divisor), "C(i,j) = A(i,j) / B(i,j)", DENSE / divisor)
    np.testing.assert_allclose(dense(xp.divide(kinds(DENSE)[k], 4)), DENSE / 4)


@pytest.mark.parametrize("k", range(2))
def test_broadcasting_a_row_and_a_number(k):
    row = np.arange(1.0, 5.0)
    expect("add", (kinds(DENSE)[k], row), "C(i,j) = A(i,j) + B(j)", DENSE + row)
    expect("multiply", (2.5, kinds(DENSE)[k]), "C(i,j) = A() * B(i,j)", 2.5 * DENSE)
    expect("maximum", (kinds(DENSE)[k], 0.5), "C(i,j) = maximum(A(i,j), B())", np.maximum(DENSE, 0.5))


def test_where():
    condition = DENSE > 2
    expect("where", (condition, DENSE, 0.0), "C(i,j) = where(A(i,j), B(i,j), D())", np.where(condition, DENSE, 0.0))


@pytest.mark.parametrize("k", range(3))
def test_matmul_and_semirings(k):
    a, b, x = kinds(DENSE)[k], kinds(DENSE.T.copy())[k], np.arange(1.0, 5.0)
    expect("matmul", (a, b), "C(i,j) = A(i,k) * B(k,j)", DENSE @ DENSE.T)
    expect("matmul", (a, x), "C(i) = A(i,j) * B(j)", DENSE @ x)
    expect("matmul", (x[:3], a), "C(j) = A(i) * B(i,j)", x[:3] @ DENSE)
    rings = {"min_plus": ("min(k, A(i,k) + B(k,j))", np.min(DENSE[:, :, None] + DENSE.T[None], axis=1)),
             "max_times": ("max(k, A(i,k) * B(k,j))", np.max(DENSE[:, :, None] * DENSE.T[None], axis=1))}
    for name, (body, expected) in rings.items():
        ring = xp.SEMIRINGS[name]
        expect("matmul", (a, b), f"C(i,j) = {body}", expected, {"add": ring.add, "multiply": ring.multiply},
               semiring=name)


def test_unknown_semiring_is_refused():
    with pytest.raises(asp.AutosparseError, match="min_plus"):
        xp.matmul(DENSE, DENSE.T, semiring="tropical")


@pytest.mark.parametrize("k", range(3))
@pytest.mark.parametrize("word, body", [
    ("sum", "A(i,j)"), ("prod", "prod(j, A(i,j))"), ("max", "max(j, A(i,j))"), ("min", "min(j, A(i,j))"),
    ("any", "any(j, A(i,j))"), ("all", "all(j, A(i,j))"),
])
def test_reductions(word, body, k):
    oracle = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "any": np.any, "all": np.all}[word]
    expect(word, (kinds(DENSE)[k],), f"C(i) = {body}", oracle(DENSE, axis=1), axis=1)
    unreduced = "not_equal(A(i,j), 0)" if word in ("any", "all") else "A(i,j)"  # any over no axes: a truth
    expect(word, (kinds(DENSE)[k],), f"C(i,j) = {unreduced}", oracle(DENSE, axis=()), axis=())


@pytest.mark.parametrize("k", range(3))
def test_sum_over_every_axis_and_negative_axes(k):
    assert float(xp.sum(kinds(DENSE)[k])) == pytest.approx(DENSE.sum())
    np.testing.assert_allclose(dense(xp.sum(kinds(DENSE)[k], axis=-2)), DENSE.sum(axis=0))
    with pytest.raises(ShapeError, match="distinct axes"):
        xp.sum(kinds(DENSE)[k], axis=(1, -1))


@pytest.mark.parametrize("k", range(3))
def test_tensordot_vecdot_and_transposes(k):
    a, x = kinds(DENSE)[k], np.arange(1.0, 5.0)
    expect("tensordot", (a, DENSE.T.copy()), "C(i,l) = A(i,j) * B(j,l)", np.tensordot(DENSE, DENSE.T, 1), axes=1)
    expect("tensordot", (a, DENSE), "C() = A(i,j) * B(i,j)", np.tensordot(DENSE, DENSE, 2))
    expect("tensordot", (a, DENSE), "C(j,l) = A(i,j) * B(i,l)", np.tensordot(DENSE, DENSE, ([0], [0])),
           axes=([0], [0]))
    expect("vecdot", (a, x), "C(i) = A(i,j) * B(j)", DENSE @ x)
    expect("vecdot", (a, DENSE), "C(j) = A(i,j) * B(i,j)", (DENSE * DENSE).sum(0), axis=0)
    expect("permute_dims", (a,), "C(j,i) = A(i,j)", DENSE.T, axes=(1, 0))
    expect("matrix_transpose", (a,), "C(j,i) = A(i,j)", DENSE.T)


@pytest.mark.parametrize("fmt", ["csf", "coo", "dense"])
@pytest.mark.parametrize("subscripts, text, planned", [
    # MTTKRP: one product, the tensor walked once
    ("ikl,kj,lj->ij", "C(i,j) = A(i,k,l) * B(k,j) * D(l,j)", "C(i,j) = T0(i,k,l) * T1(k,j) * T2(l,j)"),
    ("kil,kj,lj->ij", "C(i,j) = A(k,i,l) * B(k,j) * D(l,j)", "C(i,j) = T0(k,i,l) * T1(k,j) * T2(l,j)"),
    ("ikl,kl", "C(i) = A(i,k,l) * B(k,l)", "C(i) = T0(i,j,k) * T1(j,k)"),  # numpy's output: letters seen once
    ("ikl->", "C() = A(i,k,l)", "C() = T0(i,j,k)"),
    ("ikl,l->lik", "C(l,i,k) = A(i,k,l) * B(l)", "C(i,j,k) = T0(j,k,i) * T1(i)"),
])
def test_einsum_eager_and_lazy(subscripts, text, planned, fmt):
    rng = np.random.default_rng(5)
    tensor = np.where(rng.random((3, 4, 5)) < 0.4, rng.random((3, 4, 5)), 0.0)
    others = [rng.random(shape) for shape in {"ikl,kj,lj->ij": [(4, 2), (5, 2)], "kil,kj,lj->ij": [(3, 2), (5, 2)],
                                               "ikl,kl": [(4, 5)], "ikl->": [], "ikl,l->lik": [(5,)]}[subscripts]]
    operands = (asp.Tensor.from_numpy(tensor, fmt), *others)
    expected = np.einsum(subscripts, tensor, *others)
    assert build("einsum", operands, subscripts=subscripts)[0] == text
    np.testing.assert_allclose(dense(xp.einsum(subscripts, *operands)), expected)
    lazy = xp.einsum(subscripts, *map(asp.lazy, operands))
    assert [step.expression for step in plan([lazy.node])] == [planned]
    np.testing.assert_allclose(dense(asp.compute(lazy * 2.0)[0]), 2.0 * expected)


def test_einsum_refuses_more_operands_than_its_names_and_bad_subscripts():
    with pytest.raises(asp.AutosparseError, match="at most 3 operands"):
        xp.einsum("i,i,i,i->i", *[np.ones(2)] * 4)
    with pytest.raises(asp.ParseError):
        xp.einsum("ij,j->i", np.ones((2, 2)))


def test_shape_errors_name_the_shapes():
    with pytest.raises(ShapeError, match=r"\(3, 4\), \(3,\)"):
        xp.add(DENSE, np.ones(3))
    with pytest.raises(ShapeError, match="permutation"):
        xp.permute_dims(DENSE, (0,))
    with pytest.raises(ShapeError, match="equal extents"):
        xp.tensordot(DENSE, DENSE, axes=1)


@pytest.mark.parametrize("shape", [(0, 4), (3, 0), (1, 4), (3, 1), (1, 1)])
def test_empty_and_size_one_modes(shape):
    d = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    for a in kinds(d):
        np.testing.assert_allclose(dense(xp.add(a, d)), d + d)
        np.testing.assert_allclose(dense(xp.multiply(a, 3)), 3 * d)
        np.testing.assert_allclose(dense(xp.matmul(a, np.ones(shape[1]))), d @ np.ones(shape[1]))
        np.testing.assert_allclose(dense(xp.sum(a, axis=0)), d.sum(axis=0))
        np.testing.assert_allclose(dense(xp.permute_dims(a, (1, 0))), d.T)


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_index_dtypes(index_dtype):
    a = asp.Tensor.from_numpy(DENSE, "csr", index_dtype=index_dtype)
    np.testing.assert_allclose(dense(xp.matmul(a, DENSE.T.copy())), DENSE @ DENSE.T)
    np.testing.assert_allclose(dense(xp.subtract(a, a)), np.zeros_like(DENSE))


def test_asarray():
    assert xp.asarray(DENSE).format == asp.Tensor.from_numpy(DENSE).format
    np.testing.assert_array_equal(xp.asarray(DENSE, format="csr").to_numpy(), DENSE)
    np.testing.assert_array_equal(xp.asarray(sp.csr_matrix(DENSE)).to_numpy(), DENSE)
    assert xp.asarray([[1, 2]], dtype=np.float32).dtype == np.float32
    tensor = asp.Tensor.from_numpy(DENSE, "csr")
    assert xp.asarray(tensor) is tensor


# ----- numpy's ufuncs on Tensors ---------------------------------------------------------------------------------

OTHER = np.flip(DENSE, 1) - 2 * np.flip(DENSE, 0)  # negative entries, and zeros where both are 0


@pytest.mark.parametrize("fmt", ["csr", "coo", "dense"])
@pytest.mark.parametrize("ufunc, right", [
    (np.maximum, OTHER), (np.minimum, 0.5), (np.add, OTHER), (np.negative, None), (np.abs, None), (np.sqrt, None),
    (np.exp, None), (np.log, None), (np.less, 0.5), (np.greater, OTHER), (np.less_equal, OTHER),
    (np.greater_equal, 2.0), (np.equal, OTHER), (np.not_equal, 0.0), (np.logical_and, OTHER), (np.logical_or, OTHER),
    (np.logical_not, None),
])
def test_numpy_ufuncs_on_tensors_route_to_one_kernel(ufunc, right, fmt, monkeypatch):
    from autosparse.tensor import operations

    called = []
    monkeypatch.setattr(operations, "apply", lambda name, *operands, **options: called.append(name) or
                        asp.api.operators(name, operands, **options))
    a = asp.Tensor.from_numpy(DENSE, fmt)
    operands = (a,) if right is None else (a, asp.Tensor.from_numpy(right, fmt) if np.ndim(right) else right)
    with np.errstate(all="ignore"):
        result, expected = ufunc(*operands), ufunc(*(DENSE,) if right is None else (DENSE, right))
    assert called == ["abs" if ufunc is np.abs else ufunc.__name__]
    if isinstance(result, asp.Tensor):  # sparse: numpy's values in the value type, the fill op(fills)
        fill = ufunc(*(0.0,) * len(operands)) if np.ndim(right) else ufunc(0.0, right)
        assert result.dtype == DENSE.dtype and result.fill == fill and not result.format.is_dense
        np.testing.assert_array_equal(result.to_numpy(), expected.astype(DENSE.dtype))
    else:
        assert type(result) is np.ndarray and result.dtype == expected.dtype
        np.testing.assert_array_equal(result, expected)


def test_ordering_operators_compute_and_equality_stays_refused():
    a, d = asp.Tensor.from_numpy(DENSE, "csr"), DENSE
    lt, gt = a < 0.5, a > a.T.T
    assert type(lt) is np.ndarray and lt.dtype == bool  # 0 < 0.5 is true: a dense result, numpy's bool
    np.testing.assert_array_equal(lt, d < 0.5)
    assert isinstance(gt, asp.Tensor) and gt.fill == 0  # 0 > 0 is false: sparse, 0/1 values
    np.testing.assert_array_equal(gt.to_numpy(), np.zeros_like(d))
    np.testing.assert_array_equal(0.5 <= a, 0.5 <= d)  # reflected: a >= 0.5
    with pytest.raises(asp.AutosparseError, match="np.equal"):
        a == a.T.T  # noqa: B015


@pytest.mark.parametrize("call", [
    lambda a: np.add(a, a, out=np.zeros(DENSE.shape)), lambda a: np.maximum(a, a, where=DENSE > 0),
    lambda a: np.maximum.reduce(a), lambda a: np.add.outer(a, a), lambda a: np.negative.at(a, [0]),
])
def test_ufuncs_with_out_where_or_a_method_refuse_a_sparse_tensor(call):
    with pytest.raises(asp.FormatError, match="called plainly"):
        call(asp.Tensor.from_numpy(DENSE, "csr"))


def test_ufunc_methods_on_a_dense_tensor_run_numpy():
    a = asp.Tensor.from_numpy(DENSE, "dense")
    np.testing.assert_array_equal(np.maximum.reduce(a), np.maximum.reduce(DENSE))
    out = np.zeros(DENSE.shape)
    np.add(a, a, out=out)
    np.testing.assert_array_equal(out, DENSE + DENSE)


# ----- keepdims ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("word", ["sum", "prod", "max", "min", "any", "all"])
@pytest.mark.parametrize("axis", [None, 0, (-1,)])
def test_keepdims_eager_and_lazy(word, axis):
    d = DENSE
    a = asp.Tensor.from_numpy(d, "csr")
    expected = getattr(np, word)(d, axis=axis, keepdims=True)
    for result in (getattr(xp, word)(a, axis=axis, keepdims=True),
                   asp.compute(getattr(xp, word)(asp.lazy(a), axis=axis, keepdims=True))[0]):
        assert dense(result).shape == expected.shape
        np.testing.assert_allclose(dense(result).astype(bool) if expected.dtype == bool else dense(result), expected)


def test_keepdims_text_and_a_lazy_consumer_fuses_it():
    assert build("max", (DENSE,), axis=1, keepdims=True)[0] == "C(i,k) = max(j, A(i,j) * B(k))"
    assert build("sum", (DENSE,), axis=(0, 1), keepdims=True)[0] == "C(k,l) = A(i,j) * B(k,l)"
    assert build("sum", (DENSE,), axis=(), keepdims=True)[0] == "C(i,j) = A(i,j)"
    a = asp.Tensor.from_numpy(DENSE, "csr")
    program = xp.max(asp.lazy(a), axis=1, keepdims=True) * 2
    assert [step.expression for step in plan([program.node])] == ["C(i,j) = max(k, T0(i,k) * T1(j)) * T2()"]
    (y,) = asp.compute(program)
    np.testing.assert_allclose(dense(y), DENSE.max(axis=1, keepdims=True) * 2)


@pytest.mark.parametrize("fmt", ["csr", "coo", "dense"])
def test_keepdims_broadcasts_as_numpys_eager_and_lazy(fmt):
    a = asp.Tensor.from_numpy(DENSE, fmt)
    centred = DENSE - DENSE.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(dense(xp.subtract(a, xp.sum(a, axis=1, keepdims=True))), centred)
    lazy = asp.lazy(a) - xp.sum(asp.lazy(a), axis=1, keepdims=True)
    assert [step.expression for step in plan([lazy.node])] == ["C(i,j) = T0(i,j) - sum(k, T0(i,k))"]
    np.testing.assert_allclose(dense(asp.compute(lazy)[0]), centred)
    scaled = asp.lazy(a) / xp.max(asp.lazy(a), axis=(0, 1), keepdims=True)
    np.testing.assert_allclose(dense(asp.compute(scaled)[0]), DENSE / DENSE.max())
    with pytest.raises(ShapeError, match="together"):  # one kept mode of two stretched: no node reads so
        xp.sum(asp.lazy(a), axis=(0, 1), keepdims=True) * np.ones((3, 1))


@pytest.mark.parametrize("shape", [(0, 4), (1, 1), (3, 1)])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_ufuncs_and_keepdims_on_empty_and_size_one_modes(shape, index_dtype):
    d = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    a = asp.Tensor.from_numpy(d, "csr", index_dtype=index_dtype)
    np.testing.assert_array_equal(np.asarray(dense(np.less(a, 2.0)), bool), d < 2.0)
    np.testing.assert_array_equal(dense(np.maximum(a, a)), d)
    kept = xp.sum(a, axis=0, keepdims=True)
    assert dense(kept).shape == (1, shape[1])
    np.testing.assert_allclose(dense(kept), d.sum(axis=0, keepdims=True))
