"""`asp.fused`: a function traced once per kinds of its arguments and replayed; its results equal the eager
function's and numpy's on every kind of operand, a new kind traces again, and what a trace cannot see (values,
in Python's control flow or in `compute`) is refused instead of baked into later calls."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import autosparse as asp
from autosparse import api

xp = asp.array


def dense(value) -> np.ndarray:
    if sp.issparse(value):
        return value.toarray()
    return value.to_numpy() if isinstance(value, asp.Tensor) else np.asarray(value)


def operand(kind: str, values: np.ndarray):
    """`values` (a matrix) as an operand of `kind`: a Tensor format, a numpy array or a scipy matrix."""
    if kind == "numpy":
        return values
    if kind.startswith("scipy-"):
        return sp.csr_array(values) if kind == "scipy-csr" else sp.coo_array(values)
    return asp.Tensor.from_numpy(values, kind)


def sample(shape, seed: int, density: float = 0.4) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(shape) < density, rng.random(shape) + 0.5, 0.0)


def _scaled_product(a, x, z, d):
    return xp.add(xp.multiply(d, xp.matmul(a, x)), z)


def _two_results(a, x):
    y = xp.matmul(a, x)
    return y, xp.vecdot(y, y)


SHAPES = [(0, 3), (1, 1), (1, 4), (5, 1), (6, 4)]


@pytest.mark.parametrize("kind", ["csr", "csc", "coo", "dcsr", "dense", "numpy", "scipy-csr", "scipy-coo"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_a_fused_step_equals_the_eager_one_and_numpy(kind, shape):
    values = sample(shape, sum(shape))
    a, x, z = operand(kind, values), np.arange(1.0, shape[1] + 1), np.full(shape[0], 0.25)
    step = asp.fused(_scaled_product)
    for d in (0.5, 2.0, 0.0):  # one trace, values changing between calls
        expected = d * (values @ x) + z
        np.testing.assert_allclose(dense(step(a, x, z, d)), expected)
        np.testing.assert_allclose(dense(_scaled_product(a, x, z, d)), expected)
    assert step.traces == 1


@pytest.mark.parametrize("values", [np.zeros((4, 3)), np.array([[0.0, 0.0], [0.0, 7.0]]), sample((5, 5), 3, 1.0)],
                         ids=["all-zero", "single-entry", "full"])
def test_a_fused_step_of_two_results_over_edge_cases(values):
    a = asp.Tensor.from_numpy(values, "csr")
    x = np.linspace(-1.0, 1.0, values.shape[1])
    y, yy = asp.fused(_two_results)(a, x)
    np.testing.assert_allclose(y, values @ x)
    assert yy == pytest.approx(float((values @ x) @ (values @ x)))


def test_explicit_zeros_are_read_as_values():
    matrix = sp.csr_array((np.array([0.0, 2.0, 0.0]), np.array([0, 1, 2]), np.array([0, 2, 3])), shape=(2, 3))
    a = asp.Tensor.from_scipy(matrix)
    np.testing.assert_allclose(asp.fused(_scaled_product)(a, np.ones(3), np.zeros(2), 1.0), [2.0, 0.0])


def test_a_new_kind_of_argument_traces_again_and_like_ones_do_not():
    step = asp.fused(_scaled_product)
    x = np.ones(4)
    csr = asp.Tensor.from_numpy(sample((3, 4), 1), "csr")
    step(csr, x, np.zeros(3), 1.0)
    step(asp.Tensor.from_numpy(sample((3, 4), 2), "csr"), np.arange(4.0), np.ones(3), 3.0)
    assert step.traces == 1
    step(asp.Tensor.from_numpy(sample((3, 4), 1), "coo"), x, np.zeros(3), 1.0)  # another format
    step(asp.Tensor.from_numpy(sample((5, 4), 1), "csr"), x, np.zeros(5), 1.0)  # another shape
    step(csr, x.astype(np.float32), np.zeros(3), 1.0)  # another dtype
    assert step.traces == 4


def test_arguments_that_are_one_value_trace_apart_from_two_values():
    step = asp.fused(lambda x, y: xp.add(xp.multiply(x, 2.0), y))
    x, y = np.arange(3.0), np.ones(3)
    np.testing.assert_allclose(step(x, x), 3 * x)
    np.testing.assert_allclose(step(x, y), 2 * x + 1)
    np.testing.assert_allclose(step(y, y), 3 * y)
    assert step.traces == 2


def test_arrays_changed_in_place_are_read_anew():
    captured = np.ones(3)
    step = asp.fused(lambda x: xp.add(x, captured))
    x = np.arange(3.0)
    np.testing.assert_allclose(step(x), x + 1)
    x[:] = 10.0
    captured[:] = 5.0
    np.testing.assert_allclose(step(x), [15.0, 15.0, 15.0])


def test_results_are_typed_as_eagerly():
    a = asp.Tensor.from_numpy(sample((4, 4), 5), "csr")
    x = np.arange(4.0)
    step = asp.fused(lambda a, x: (xp.less(xp.matmul(a, x), 1.0), xp.multiply(a, 2.0), x, xp.sum(x)))
    less, scaled, same, total = step(a, x)
    assert less.dtype == bool
    np.testing.assert_array_equal(less, dense(a) @ x < 1.0)
    assert isinstance(scaled, asp.Tensor) and scaled.format == a.format
    np.testing.assert_allclose(dense(scaled), 2 * dense(a))
    assert same is x  # an argument given back is the argument
    assert total == 6.0 and not isinstance(total, np.ndarray)


def test_a_number_argument_is_an_array_of_numpys_type_for_it():
    step = asp.fused(lambda x, s: xp.multiply(x, s))
    x = np.arange(3, dtype=np.float32)
    assert step(x, 2.0).dtype == np.float64  # as np.asarray(2.0) * x
    assert xp.multiply(x, 2.0).dtype == np.float32  # eagerly, a number is typed weakly
    assert asp.fused(lambda x: xp.multiply(x, 2.0))(x).dtype == np.float32  # and so is one written in the step


def test_the_step_runs_its_kernels_only_after_the_first_call():
    a = asp.Tensor.from_numpy(sample((6, 6), 7), "csr")
    step = asp.fused(_scaled_product)
    step(a, np.ones(6), np.ones(6), 1.0)
    before = set(api._kernels)
    for k in range(3):
        step(a, np.full(6, float(k)), np.ones(6), 0.5)
    assert set(api._kernels) == before
    assert step.expressions(a, np.ones(6), np.ones(6), 1.0) == ("C(i) = T0() * sum(j, T1(i,j) * T2(j)) + T3(i)",)


def test_values_cannot_steer_a_trace():
    x = np.arange(3.0)
    with pytest.raises(TypeError, match="no value until it is computed"):
        asp.fused(lambda x: x if xp.sum(x) > 1 else -x)(x)
    with pytest.raises(TypeError, match="inside a fused function"):
        asp.fused(lambda x: asp.compute(xp.add(x, 1.0)))(x)
    with pytest.raises(TypeError, match="no value until it is computed"):
        np.asarray(asp.lazy(x) + 1)
    with pytest.raises(TypeError, match="no value until it is computed"):
        float(xp.sum(asp.lazy(x)))
    # compute works again after a failed trace
    np.testing.assert_allclose(asp.compute(asp.lazy(x) + 1)[0], x + 1)


def test_a_fused_function_on_lazy_arrays_records_into_their_program():
    a, x = asp.Tensor.from_numpy(sample((4, 4), 8), "csr"), np.arange(4.0)
    step = asp.fused(_scaled_product)
    program = step(asp.lazy(a), x, np.zeros(4), 2.0)
    assert isinstance(program, asp.array.LazyArray) and step.traces == 0
    np.testing.assert_allclose(asp.compute(program)[0], 2 * dense(a) @ x)


def test_a_fused_step_autoschedules_each_kernel_as_evaluate_does():
    a = asp.Tensor.from_numpy(sample((8, 8), 9), "csr")
    b = asp.Tensor.from_numpy(sample((8, 8), 10), "csr")
    step = asp.fused(schedule="auto")(lambda a, b: xp.add(xp.matmul(a, b), b))
    np.testing.assert_allclose(dense(step(a, b)), dense(a) @ dense(b) + dense(b))


def test_an_array_read_from_outside_and_given_back_is_that_array():
    matrix = sp.csr_array(np.eye(3))
    step = asp.fused(lambda x: (asp.lazy(matrix), xp.matmul(matrix, x)))
    given, product = step(np.arange(3.0))
    assert given is matrix
    np.testing.assert_allclose(product, np.arange(3.0))


def _scaled_and_shifted_by_the_square(x):
    square = xp.vecdot(x, x)
    return xp.multiply(x, square), xp.add(x, square), square


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_an_order_0_result_read_by_later_kernels_is_an_array_they_call_warm(monkeypatch, dtype):
    """A number would take the kernels' general path, converting it on every call (CG's step sizes)."""
    x = np.arange(1.0, 4.0, dtype=dtype)
    step = asp.fused(_scaled_and_shifted_by_the_square)
    general, original = [], asp.Kernel._call_general
    monkeypatch.setattr(asp.Kernel, "_call_general", lambda kernel, operands: general.append(1) or
                        original(kernel, operands))
    for run in (lambda: step(x), lambda: asp.compute(*_scaled_and_shifted_by_the_square(asp.lazy(x)))):
        run()
        general.clear()
        scaled, shifted, total = run()
        assert not general
        assert total == 14.0 and isinstance(total, float)
        assert scaled.dtype == shifted.dtype == dtype
        np.testing.assert_allclose(scaled, 14.0 * x)
        np.testing.assert_allclose(shifted, x + 14.0)


def _flagged(x, y):
    flag = xp.any(xp.greater(x, 0.5))
    return flag, xp.multiply(flag, y), xp.add(xp.multiply(xp.all(xp.greater(y, 0.5)), x), y)


def test_order_0_logical_results_replay_as_computed():
    """A logical order-0 step (any, all) is bool where its kernel's values are float: it is converted once
    computed, never before (a replay read a copy the kernel never wrote: False, zeros)."""
    step = asp.fused(_flagged)
    x, y = np.array([0.1, 0.9, 0.2]), np.array([1.0, 2.0, 3.0])
    for _ in range(3):
        got, expected = step(x, y), _flagged(x, y)
        assert got[0] is expected[0] or got[0] == expected[0] and isinstance(got[0], (bool, np.bool_))
        for value, want in zip(got[1:], expected[1:]):
            np.testing.assert_array_equal(value, want)
    assert bool(got[0]) and list(got[1]) == [1.0, 2.0, 3.0]


def test_learned_kernels_follow_the_thread_count():
    """A replay calls the kernel evaluate would call: another thread count is another choice."""
    step = asp.fused(_scaled_product)
    a = asp.Tensor.from_numpy(sample((40, 40), 3), "csr")
    try:
        for threads in (2, 1, 2):
            asp.set_num_threads(threads)
            for _ in range(2):
                np.testing.assert_allclose(step(a, np.ones(40), np.ones(40), 0.5), 0.5 * (dense(a) @ np.ones(40)) + 1)
    finally:
        asp.set_num_threads(None)
    trace = next(iter(step._traces.values()))
    assert sorted(key[0] for key in trace.learned) == [1, 2]


def test_a_sparse_result_is_no_native_call(sequences):
    """An assembled (sparse) result's size is known only once its kernel has run: such a step runs alone."""
    step = asp.fused(lambda a, b: xp.multiply(xp.add(a, b), 2.0))
    a, b = (asp.Tensor.from_numpy(sample((6, 5), seed), "csr") for seed in (1, 2))
    for _ in range(3):
        got = step(a, b)
    assert isinstance(got, asp.Tensor) and sequences == []
    np.testing.assert_allclose(got.to_numpy(), 2.0 * (dense(a) + dense(b)))


# ----- random programs: eager, lazy (compute), fused and numpy agree --------------------------------------------

def _vectors(depth: int = 3):
    """Recipes of an m-vector program over M (m × n), x (n), y (m) and a number s."""
    leaves = st.sampled_from([("y",), ("Mx",)])
    return st.recursive(leaves, lambda inner: st.one_of(
        st.tuples(st.sampled_from(["add", "subtract", "multiply"]), inner, inner),
        st.tuples(st.sampled_from(["scale", "relu", "MMt"]), inner)), max_leaves=depth + 1)


def _interpret(recipe, ns, M, x, y, s):
    kind, *parts = recipe
    args = [_interpret(part, ns, M, x, y, s) for part in parts]
    if kind == "y":
        return y
    if kind == "Mx":
        return ns.matmul(M, x)
    if kind in ("add", "subtract", "multiply"):
        return getattr(ns, kind)(*args)
    if kind == "scale":
        return ns.multiply(s, args[0])
    if kind == "relu":
        return ns.maximum(args[0], 0.0)
    return ns.matmul(M, ns.matmul(ns.matrix_transpose(M), args[0]))  # MMt: a product of products


class _Numpy:
    matmul, add, subtract, multiply, maximum, sum, vecdot = (np.matmul, np.add, np.subtract, np.multiply, np.maximum,
                                                             np.sum, np.vecdot)
    matrix_transpose = staticmethod(lambda a: a.T)


@settings(max_examples=25, deadline=None)
@given(recipe=_vectors(), output=st.sampled_from(["vector", "sum", "dot"]),
       kind=st.sampled_from(["csr", "coo", "dcsr", "dense", "numpy", "scipy-csr"]),
       shape=st.sampled_from([(4, 3), (1, 5), (5, 1), (3, 3)]), seed=st.integers(0, 2**16))
def test_random_programs_agree_eager_lazy_fused_and_numpy(recipe, output, kind, shape, seed):
    rng = np.random.default_rng(seed)
    values = sample(shape, seed)
    M = operand(kind, values)
    x, s = rng.standard_normal(shape[1]), float(rng.standard_normal())

    def program(ns, M, x, y, s):
        vector = _interpret(recipe, ns, M, x, y, s)
        return vector if output == "vector" else ns.sum(vector) if output == "sum" else ns.vecdot(vector, y)

    step = asp.fused(lambda M, x, y, s: program(xp, M, x, y, s))
    for _ in range(2):  # the second call replays the trace on new values
        y = rng.standard_normal(shape[0])
        expected = program(_Numpy, values, x, y, s)
        eager = program(xp, M, x, y, s)
        (lazily,) = asp.compute(program(xp, asp.lazy(M), asp.lazy(x), asp.lazy(y), s))
        for got in (eager, lazily, step(M, x, y, s)):
            np.testing.assert_allclose(dense(got), expected, rtol=1e-9, atol=1e-12)
    assert step.traces == 1


@pytest.mark.parametrize("bad", ["abc", None, 10**400, np.array([object()] * 3), np.array(["a", "b", "c"])],
                         ids=["text", "None", "huge", "objects", "strings"])
def test_values_numpy_cannot_hold_as_numbers_are_refused_alike_eager_lazy_and_fused(bad):
    y = np.ones(3)
    for run in (lambda: xp.add(bad, y), lambda: asp.compute(xp.add(asp.lazy(bad), y)),
                lambda: asp.compute(xp.add(asp.lazy(y), bad)),
                lambda: asp.fused(lambda x, y: xp.add(x, y))(bad, y)):
        with pytest.raises((asp.FormatError, asp.RangeError), match="Expected"):  # a huge number: RangeError eagerly
            run()
