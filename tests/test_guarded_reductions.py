"""A `where`'s producer guarded by the consumer's annihilating operand (`logical_and(mask, any(...))`, an
integer `mask * sum(...)`, `where(mask, min(...), inf)`), and `any`/`all` loops that stop once decided
(lower/guards.py), against numpy on dense copies, across formats and thread settings; and the C, that the
guard and the break are where claimed and nowhere else."""

import numpy as np
import pytest

import autosparse as asp
from autosparse.cin.ast import TensorVar, default_access, tensors
from autosparse.format import Format
from autosparse.lower.guards import Guard, guards, saturates
from autosparse.lower.kernel import generate
from autosparse.notation.ast import Apply, IndexVar, Mul
from autosparse.pipeline import kernel as pipeline_kernel
from autosparse.runtime.abi import Types

BFS = "C(i) = logical_and(less(L(i), z()), any(j, logical_and(A(i,j), q(j))))"
MASKED_SUM = "y(i) = m(i) * sum(j, A(i,j) * x(j))"
MASKED_MIN = "y(i) = where(m(i), min(j, A(i,j) + d(j)), b())"
FORMATS = ["csr", "dcsr", "coo", "dense"]


@pytest.fixture(params=["one thread", "threads"])
def threads(request, monkeypatch):
    """Small kernels on one thread (the default threshold), or the default schedule's parallel loops."""
    if request.param == "threads":
        monkeypatch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", 0)
    return 2


def dense(value) -> np.ndarray:
    return value.to_numpy() if isinstance(value, asp.Tensor) else np.asarray(value)


def pattern(rng, shape, density) -> np.ndarray:
    """A matrix of 0/1 floats, about `density` of them 1; the first row empty, the last full (where there
    are two rows)."""
    values = (rng.random(shape) < density).astype(np.float64)
    if shape[0] > 1:
        values[0], values[-1] = 0, 1
    return values


SHAPES = [(7, 5), (1, 4), (5, 1), (0, 3), (4, 0)]  # size-1, empty and non-square dimensions


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mask", ["d", "s"])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_bfs_step(fmt, mask, shape, threads):
    rng = np.random.default_rng(sum(shape))
    A, q = pattern(rng, shape, 0.4), (rng.random(shape[1]) < 0.5).astype(np.float64)
    levels = rng.integers(-1, 3, shape[0]).astype(np.float64)  # -1: not yet visited
    result = asp.evaluate(BFS, num_threads=threads, A=asp.Tensor.from_numpy(A, fmt),
                          L=asp.Tensor.from_numpy(levels, mask), z=np.float64(0), q=q)
    expected = (levels < 0) & (A.astype(bool) & q.astype(bool)).any(axis=1)
    np.testing.assert_array_equal(dense(result).astype(np.float64), expected.astype(np.float64))


@pytest.mark.parametrize("fmt", ["csr", "coo"])
def test_the_bfs_step_into_a_sparse_result(fmt, threads):
    """A result assembled in phases: the counting ones run the guard too."""
    rng = np.random.default_rng(9)
    A, q = pattern(rng, (9, 6), 0.4), (rng.random(6) < 0.5).astype(np.float64)
    levels = np.array([-1.0, 0, -1, 2, -1, -1, 1, -1, -1])
    result = asp.evaluate(BFS, format="s", num_threads=threads, A=asp.Tensor.from_numpy(A, fmt),
                          L=asp.Tensor.from_numpy(levels, "s"), z=np.float64(0), q=q)
    assert isinstance(result, asp.Tensor)
    expected = (levels < 0) & (A.astype(bool) & q.astype(bool)).any(axis=1)
    np.testing.assert_array_equal(result.to_numpy(), expected.astype(np.float64))
    c = source(BFS, {"A": fmt, "L": "s", "z": "", "q": "d", "C": "s"})
    producers = c.split("/* produce t */")[1:]
    assert len(producers) >= 2  # the count's and the fill's, in each case of the merge over L
    assert all(part.lstrip().startswith("if (") for part in producers)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mask", ["d", "s"])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_an_integer_masked_sum(fmt, mask, index_dtype, threads):
    rng = np.random.default_rng(5)
    A = rng.integers(-3, 4, (8, 6)) * (rng.random((8, 6)) < 0.5)
    A[0] = 0
    x, m = rng.integers(-2, 3, 6), rng.integers(0, 2, 8) * rng.integers(1, 4, 8)
    m[0], m[-1] = 2, 0  # a kept empty row, a masked one
    result = asp.evaluate(MASKED_SUM, num_threads=threads, A=asp.Tensor.from_numpy(A, fmt, index_dtype=index_dtype),
                          m=asp.Tensor.from_numpy(m, mask), x=x)
    np.testing.assert_array_equal(dense(result), m * (A @ x))


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mask", ["d", "s"])
def test_a_float_masked_sum_keeps_nan_where_the_mask_is_0(fmt, mask, threads):
    """0 * inf is NaN: a float mask does not guard the sum, so a row that sums to inf or NaN under a stored
    0 is NaN, as numpy has it (no contract keeps NaN and Inf out of stored values); under an absent entry of
    a sparse mask it is 0, the sparse answer the loops gave before (ARCHITECTURE.md: `x * 0` in co-iteration)."""
    A = np.array([[1.0, np.inf, 0], [np.nan, 0, 2], [0, 3, 0], [np.inf, 0, 0], [0, 0, 0]])
    x, m = np.array([1.0, 2.0, -1.0]), np.array([0.0, 0.0, 0.0, 2.0, 1.0])
    stored = asp.Tensor.from_numpy(m, mask)
    if mask == "s":  # a stored 0 in the mask's first two entries
        stored = asp.Tensor.from_coo([[0, 1, 3, 4]], m[[0, 1, 3, 4]], shape=(5,), format="s")
    result = asp.evaluate(MASKED_SUM, num_threads=threads, A=asp.Tensor.from_numpy(A, fmt), m=stored, x=x)
    with np.errstate(invalid="ignore"):
        expected = m * (A @ x)
    assert np.isnan(expected[:2]).all()
    np.testing.assert_array_equal(dense(result), expected)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mask", ["d", "s"])
@pytest.mark.parametrize("shape", SHAPES)
def test_a_masked_min_plus(fmt, mask, shape, threads):
    rng = np.random.default_rng(sum(shape) + 1)
    stored = rng.random(shape) < 0.5
    A = np.where(stored, rng.uniform(0, 3, shape).round(2), np.inf)
    d, m = rng.uniform(0, 2, shape[1]).round(2), (rng.random(shape[0]) < 0.6).astype(np.float64)
    result = asp.evaluate(MASKED_MIN, num_threads=threads, A=asp.Tensor.from_numpy(A, fmt, fill=np.inf),
                          m=asp.Tensor.from_numpy(m, mask), d=d, b=np.float64(np.inf))
    expected = np.where(m != 0, np.min(A + d, axis=1, initial=np.inf), np.inf)
    np.testing.assert_array_equal(dense(result), expected)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("reduction", ["any", "all"])
@pytest.mark.parametrize("shape", SHAPES)
def test_any_and_all_alone(fmt, reduction, shape, threads):
    rng = np.random.default_rng(sum(shape) + 2)
    A = pattern(rng, shape, 0.5) * rng.uniform(-2, 2, shape).round(1)
    if shape[0] > 1 and shape[1]:
        A[-1] = np.where(A[-1] == 0, 0.5, A[-1])  # a full row, whose all is True
    result = asp.evaluate(f"y(i) = {reduction}(j, A(i,j))", num_threads=threads, A=asp.Tensor.from_numpy(A, fmt))
    expected = getattr(np, reduction)(A != 0, axis=1)
    np.testing.assert_array_equal(dense(result).astype(np.float64), expected.astype(np.float64))


def source(expression: str, formats: dict, dtype=np.float64, fills=None, **options) -> str:
    """The C of one thread's kernel with every tensor of `dtype` values."""
    cin = pipeline_kernel.Kernel(expression, formats, num_threads=1, fills=fills, **options).cin
    names = [name for name, var in tensors(cin).items() if not var.temporary]
    types = Types({n: np.dtype(dtype) for n in names}, {n: np.dtype(np.int32) for n in names})
    return generate(cin, types, num_threads=1).source


def produced(c: str) -> str:
    """The C from the producer's comment to the consumer's."""
    return c[c.index("/* produce"):c.index("/* consume")]


def test_the_bfs_step_guards_its_any_by_the_mask_and_breaks_at_the_first_true():
    c = produced(source(BFS, {"A": "csr", "L": "d", "z": "", "q": "d", "C": "d"}))
    assert "if (L_vals[i_] < z_vals[0]) {" in c
    assert c.index("if (L_vals") < c.index("for (") < c.index("break;")
    assert "if (acc1) break;" in c


def test_an_all_breaks_at_the_first_false():
    assert "if (!acc1) break;" in source("y(i) = all(j, A(i,j))", {"A": "dense", "y": "d"})


def test_an_integer_masked_sum_is_guarded_and_a_float_one_is_not():
    formats = {"A": "csr", "m": "d", "x": "d", "y": "d"}
    assert "if (m_vals[i_] != INT64_C(0)) {" in produced(source(MASKED_SUM, formats, np.int64))
    floats = produced(source(MASKED_SUM, formats))
    assert "if (" not in floats and "break" not in floats


def test_a_where_guards_the_branch_that_reads_the_reduction():
    c = produced(source(MASKED_MIN, {"A": "csr", "m": "d", "d": "d", "b": "", "y": "d"}, fills={"A": np.inf}))
    assert "if (m_vals[i_]) {" in c and "break" not in c  # min has no caveat-free annihilator
    other = produced(source("y(i) = where(m(i), b(), min(j, A(i,j) + d(j)))",
                            {"A": "csr", "m": "d", "d": "d", "b": "", "y": "d"}, fills={"A": np.inf}))
    assert "if (!m_vals[i_]) {" in other


def test_a_parallel_any_does_not_break():
    c = source("y() = any(j, x(j))", {"x": "d", "y": ""}, schedule="parallelize(j, cpu_thread, temporary)")
    assert "reduction(||: acc1)" in c and "break" not in c
    kernel = asp.compile("y() = any(j, x(j))", {"x": "d", "y": ""}, num_threads=2,
                         schedule="parallelize(j, cpu_thread, temporary)")
    assert kernel(x=np.array([0.0, 0, 1, 0])) == 1


def test_a_sum_neither_guards_nor_breaks():
    c = source("y(i) = z(i) + sum(j, A(i,j) * x(j))", {"A": "csr", "z": "d", "x": "d", "y": "d"})
    assert "if (" not in produced(c) and "break" not in c


def _read(name: str, order: int = 1):
    var = TensorVar(name, Format("d" * order), temporary=name.startswith("t"))
    return default_access(var, tuple(IndexVar(f"i{k}") for k in range(order)), write=False)


def test_guards_follow_the_laws():
    m, n, t = _read("m"), _read("n"), _read("t", 0)
    temporaries = frozenset({"t"})
    assert guards(Apply("logical_and", (m, t)), temporaries, False) == (Guard(m, False),)
    assert guards(Apply("logical_or", (t, m)), temporaries, False) == (Guard(m, True),)
    assert guards(Mul(m, t), temporaries, False) == ()  # 0 * inf is NaN
    assert guards(Mul(m, t), temporaries, True) == (Guard(m, 0),)
    assert guards(Apply("where", (m, n, t)), temporaries, False) == (Guard(m, True),)
    assert guards(Apply("where", (t, m, n)), temporaries, False) == ()
    assert guards(Apply("logical_and", (m, Apply("logical_and", (n, t)))), temporaries, False) == \
        (Guard(m, False), Guard(n, False))
    assert guards(Apply("logical_and", (t, Apply("logical_not", (t,)))), temporaries, False) == ()
    assert guards(Apply("minimum", (m, t)), temporaries, False) == ()  # NaN breaks min's annihilator
    assert [saturates(op) for op in ("logical_or", "logical_and", "add", "minimum")] == [True, False, None, None]
