"""Fill values: a Tensor's absent entries are its `fill` (tensor/tensor.py), which survives every way a
tensor is rebuilt (formats, pickling, `.T`, `astype`, cuts); the result's format reads the operands' fills
through `notation.fills.role` (pipeline/result_format.py); and today's `+ - * /` kernels refuse an operand
whose fill is not 0 rather than compute it as 0."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import autosparse as asp
from autosparse import api
from autosparse.errors import FormatError, ScheduleError, ShapeError
from autosparse.format import Format
from autosparse.notation import parse
from autosparse.notation.fills import result_fill
from autosparse.pipeline.result_format import inferred_result_format
from autosparse.tensor.slicing import cut, join

FORMATS_2D = ("dense", "csr", "csc", "coo", "dcsr")
FILLS = (np.inf, 1, -1, 0)


def _array(shape, fill, dtype, seed=0) -> np.ndarray:
    """Random values, about half of them the fill, one an explicit 0 (stored unless the fill is 0)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(-3, 4, size=shape).astype(dtype)
    values[rng.random(shape) < 0.5] = fill
    values.flat[0] = 0
    return values


def _dtypes(fill):
    return (np.float64, np.float32) if np.isinf(fill) else (np.float64, np.float32, np.int64, np.complex128)


@pytest.mark.parametrize("fill", FILLS)
@pytest.mark.parametrize("fmt", FORMATS_2D + ("sss",))
def test_from_numpy_stores_what_is_not_the_fill_and_to_numpy_gives_it_back(fmt, fill):
    for dtype in _dtypes(fill):
        array = _array((3, 4, 2) if fmt == "sss" else (3, 4), fill, dtype)
        tensor = asp.Tensor.from_numpy(array, fmt, fill=fill)
        assert tensor.fill == fill and tensor.fill.dtype == tensor.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(tensor.to_numpy(), array)
        if fmt != "dense":
            assert tensor.nnz == np.count_nonzero(array != fill)
            coords, values = tensor.to_coo()
            assert not np.any(values == fill)


@pytest.mark.parametrize("fill", [np.inf, 1.0, -1.0])
@pytest.mark.parametrize("fmt", FORMATS_2D)
def test_the_fill_survives_pickling_transposes_conversions_and_casts(fmt, fill):
    array = _array((3, 5), fill, np.float64, seed=1)
    tensor = asp.Tensor.from_numpy(array, fmt, fill=fill)
    for copy, expected in [(pickle.loads(pickle.dumps(tensor)), array), (tensor.T, array.T),
                           (tensor.transpose(), array.T), (tensor.astype(np.float32), array.astype(np.float32))]:
        assert copy.fill == fill
        np.testing.assert_array_equal(copy.to_numpy(), expected)
    for other in FORMATS_2D:
        converted = tensor.to_format(other)
        assert converted.fill == fill, other
        np.testing.assert_array_equal(converted.to_numpy(), array)
    assert tensor.kind != asp.Tensor.from_numpy(np.where(array == fill, 0, array), fmt).kind


def test_a_cast_keeps_the_fill_only_where_the_new_dtype_holds_it():
    ones = asp.Tensor.from_numpy(np.array([[1.0, 2.0], [1.0, 1.0]]), "csr", fill=1)
    assert ones.astype(np.int64).fill == 1 and ones.astype(np.int64).fill.dtype == np.int64
    np.testing.assert_array_equal(ones.astype(np.int64).to_numpy(), [[1, 2], [1, 1]])
    with pytest.raises(FormatError, match="inf only fills float"):
        asp.Tensor.from_numpy(np.array([[np.inf, 2.0]]), "csr", fill=np.inf).astype(np.int64)


@pytest.mark.parametrize("fill", [np.inf, 0.0])
def test_prune_drops_explicit_entries_equal_to_the_fill(fill):
    vals = np.array([fill, 2.0, fill, 0.0])
    tensor = asp.Tensor((2, 3), "csr", [{}, {"pos": np.array([0, 2, 4]), "crd": np.array([0, 2, 0, 1])}], vals,
                        fill=fill)
    pruned = tensor.prune()
    assert tensor.nnz == 4 and pruned.nnz == np.count_nonzero(vals != fill) and pruned.fill == fill
    np.testing.assert_array_equal(pruned.to_numpy(), tensor.to_numpy())
    np.testing.assert_array_equal(np.sort(pruned.vals), np.sort(vals[vals != fill]))


@pytest.mark.parametrize("fmt", ["csr", "dcsr", "coo", "dense"])
def test_cut_and_join_keep_the_fill(fmt):
    array = _array((6, 3), np.inf, np.float64, seed=2)
    tensor = asp.Tensor.from_numpy(array, fmt, fill=np.inf)
    pieces = [cut(tensor, 0, 0, 2), cut(tensor, 0, 2, 6)]
    assert all(piece.fill == np.inf for piece in pieces)
    joined = join(pieces, 0)
    assert joined.fill == np.inf
    np.testing.assert_array_equal(joined.to_numpy(), array)
    with pytest.raises(ShapeError, match="one fill"):
        join([pieces[0], asp.Tensor.from_numpy(array[2:], fmt)], 0)


def test_an_empty_an_all_fill_and_a_single_entry_tensor():
    for array in (np.full((0, 3), np.inf), np.full((2, 3), np.inf), np.where(np.eye(1, 3) > 0, 5.0, np.inf)):
        for fmt in FORMATS_2D:
            tensor = asp.Tensor.from_numpy(array, fmt, fill=np.inf)
            np.testing.assert_array_equal(tensor.to_numpy(), array)
            assert fmt == "dense" or tensor.nnz == np.count_nonzero(array != np.inf)


def test_int32_and_int64_indices_keep_the_fill():
    array = _array((4, 4), -1, np.int64, seed=3)
    for index_dtype in (np.int32, np.int64):
        tensor = asp.Tensor.from_numpy(array, "csr", index_dtype=index_dtype, fill=-1)
        assert tensor.index_dtype == index_dtype and tensor.fill == -1
        np.testing.assert_array_equal(tensor.to_numpy(), array)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(FORMATS_2D), st.sampled_from([np.inf, -np.inf, 1.0, 0.0, -2.0]),
       st.integers(1, 5), st.integers(1, 5), st.data())
def test_round_trips_of_any_array(fmt, fill, rows, cols, data):
    values = st.sampled_from([fill, 0.0, 1.0, -2.0, 3.5, np.inf])
    array = np.array(data.draw(st.lists(values, min_size=rows * cols, max_size=rows * cols))).reshape(rows, cols)
    tensor = asp.Tensor.from_numpy(array, fmt, fill=fill)
    np.testing.assert_array_equal(tensor.to_numpy(), array)
    np.testing.assert_array_equal(tensor.to_format("csc").to_numpy(), array)
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(tensor)).T.to_numpy(), array.T)


# ----- what has no fill: scipy, and fills a dtype cannot hold -----------------------------------------------

def test_scipy_gives_fill_0_and_takes_only_fill_0():
    import scipy.sparse as sp

    assert asp.Tensor.from_scipy(sp.random(3, 3, density=0.5, format="csr", random_state=0)).fill == 0
    assert asp.Tensor.from_numpy(np.eye(2), "csr").to_scipy().nnz == 2
    with pytest.raises(FormatError, match="fill 0 for scipy.sparse, .* found fill inf"):
        asp.Tensor.from_numpy(np.eye(2), "csr", fill=np.inf).to_scipy()


@pytest.mark.parametrize("fill,dtype,message", [
    (np.nan, np.float64, "not NaN"),
    (np.inf, np.int64, "inf only fills float"),
    (np.inf, np.complex128, "inf only fills float"),
    (2.5, np.int64, "holds exactly"),
    (0.1, np.float32, "holds exactly"),
    (1j, np.float64, "real fill"),
    ("a", np.float64, "one number"),
    ([1.0], np.float64, "one number"),
    (2**70, np.int64, "one number"),
])
def test_a_fill_the_dtype_cannot_hold_is_refused_before_anything_is_stored(fill, dtype, message):
    with pytest.raises(FormatError, match=message):
        asp.Tensor.from_numpy(np.ones((2, 2), dtype), "csr", fill=fill)
    with pytest.raises(FormatError, match=message):
        asp.Tensor((1,), "s", [{"pos": np.array([0, 1]), "crd": np.array([0])}], np.ones(1, dtype), fill=fill)


def test_bool_arrays_are_stored_as_int64_with_an_integer_fill():
    tensor = asp.Tensor.from_numpy(np.array([[True, False], [True, True]]), "csr", fill=True)
    assert tensor.dtype == np.int64 and tensor.fill == 1 and tensor.nnz == 1


# ----- the result's format and fill from the operands' fills -----------------------------------------------

INF = np.inf
FORMAT_TABLE = [
    # min-plus SpMV: +inf annihilates + and is min's identity: A's pattern, projected
    ("y(i) = min(j, A(i,j) + x(j))", {"A": "dcsr", "x": "d"}, {"A": INF, "x": INF}, "s"),
    ("y(i) = min(j, A(i,j) + x(j))", {"A": "csr", "x": "d"}, {"A": INF, "x": INF}, "d"),
    ("y(i) = min(j, A(i,j) + x(j))", {"A": "dcsr", "x": "s"}, {"A": INF, "x": INF}, "s"),
    # ... but over fill 0, + unions with the dense x and min over 0 is no projection: dense
    ("y(i) = min(j, A(i,j) + x(j))", {"A": "dcsr", "x": "d"}, {}, "d"),
    ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "dense"}, {"A": INF, "B": INF}, "csr"),
    # masks: pattern(M) bounds the product whatever A and B are, and whatever M's fill
    ("C(i,j) = pattern(M(i,j)) * A(i,k) * B(k,j)", {"M": "csr", "A": "dense", "B": "dense"}, {}, "csr"),
    ("C(i,j) = pattern(M(i,j)) * A(i,k) * B(k,j)", {"M": "csr", "A": "csr", "B": "csr"}, {}, "csr"),
    ("C(i,j) = pattern(M(i,j)) * A(i,j)", {"M": "dcsr", "A": "dense"}, {"M": INF}, "dcsr"),
    ("C(i,j) = where(M(i,j), A(i,j), 0)", {"M": "csr", "A": "dense"}, {}, "csr"),
    ("C(i,j) = where(M(i,j), A(i,j), B(i,j))", {"M": "csr", "A": "csr", "B": "csr"}, {}, "csr"),
    ("C(i,j) = where(M(i,j), A(i,j), B(i,j))", {"M": "csr", "A": "csr", "B": "dense"}, {}, "dense"),
    # maximum over 0: neither child drops out, neither decides: a union
    ("C(i,j) = maximum(A(i,j), B(i,j))", {"A": "csr", "B": "csr"}, {}, "csr"),
    ("C(i,j) = maximum(A(i,j), B(i,j))", {"A": "csr", "B": "dense"}, {}, "dense"),
    ("C(i,j) = minimum(A(i,j), B(i,j))", {"A": "csr", "B": "csr"}, {"A": INF, "B": INF}, "csr"),
    ("C(i,j) = maximum(A(i,j), 0)", {"A": "csr"}, {}, "csr"),
    # one operand: kept where the fill is kept, dense where it moves
    ("C(i,j) = exp(A(i,j))", {"A": "csr"}, {}, "dense"),
    ("C(i,j) = abs(A(i,j))", {"A": "csr"}, {}, "csr"),
    ("C(i,j) = -A(i,j)", {"A": "csr"}, {"A": INF}, "dense"),
    ("C(i,j) = -A(i,j)", {"A": "csr"}, {}, "csr"),
    ("C(i,j) = A(i,j) + 1", {"A": "csr"}, {}, "dense"),
    ("C(i,j) = 2 * A(i,j)", {"A": "csr"}, {}, "csr"),
    # reductions project only over their identity
    ("y(i) = sum(j, A(i,j))", {"A": "dcsr"}, {}, "s"),
    ("y(i) = max(j, A(i,j))", {"A": "dcsr"}, {}, "d"),
    ("y(i) = max(j, A(i,j))", {"A": "dcsr"}, {"A": -INF}, "s"),
    ("y(i) = A(i,j)", {"A": "dcsr"}, {"A": 1.0}, "d"),
    ("y(i) = A(i,j)", {"A": "dcsr"}, {}, "s"),
    # a quotient is bounded by its dividend alone
    ("C(i,j) = A(i,j) / B(i,j)", {"A": "csr", "B": "dense"}, {}, "csr"),
    ("C(i,j) = A(i,j) / B(i,j)", {"A": "dense", "B": "csr"}, {}, "dense"),
]


@pytest.mark.parametrize("text,formats,fills,expected", FORMAT_TABLE, ids=lambda v: str(v))
def test_the_result_format_reads_the_fills(text, formats, fills, expected):
    assignment = parse(text)
    formats = {name: asp.Format(fmt, order=len(next(a for a in _accesses(assignment) if a.tensor == name).indices))
               for name, fmt in formats.items()}
    fmt = inferred_result_format(assignment, formats, fills)
    assert fmt == Format(expected, order=len(assignment.lhs.indices)) if expected != "s" else fmt == Format("s")


def _accesses(assignment):
    from autosparse.notation import accesses

    return accesses(assignment.rhs)


def test_the_result_fill_is_the_right_hand_side_s():
    assert result_fill(parse("y(i) = min(j, A(i,j) + x(j))"), {"A": INF, "x": INF}) == INF
    assert result_fill(parse("C(i,j) = pattern(M(i,j)) * A(i,k) * B(k,j)"), {}) == 0


# ----- kernels compute with the fills, autoscheduled ones too (autoschedule/algebra.py) --------------------------

def test_a_kernel_computes_with_an_operand_s_fill_and_so_does_an_autoscheduled_one():
    A = asp.Tensor.from_numpy(np.array([[1.0, np.inf], [np.inf, 2.0]]), "csr", fill=np.inf)
    x = np.ones(2)
    np.testing.assert_array_equal(asp.evaluate("y(i) = A(i,j) * x(j)", A=A, x=x), [np.inf, np.inf])
    np.testing.assert_array_equal(asp.evaluate("y(i) = A(i,j) * x(j)", A=A, x=x, schedule="auto"), [np.inf, np.inf])
    twice = A + A
    assert twice.fill == np.inf
    np.testing.assert_array_equal(twice.to_numpy(), [[2.0, np.inf], [np.inf, 4.0]])
    y = asp.einsum("ij,j->i", asp.Tensor.from_numpy(-np.ones((2, 2)), "csr"),
                   asp.Tensor.from_numpy(np.array([-1.0, 3.0]), "s", fill=-1))
    np.testing.assert_array_equal(y, [-2.0, -2.0])


def test_a_warm_kernel_refuses_a_fill_its_earlier_calls_did_not_have():
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    zeros = asp.Tensor.from_numpy(np.array([[1.0, 0.0], [0.0, 2.0]]), "csr")
    x = np.ones(2)
    np.testing.assert_array_equal(kernel(A=zeros, x=x), [1.0, 2.0])
    np.testing.assert_array_equal(asp.evaluate("y(i) = A(i,j) * x(j)", A=zeros, x=x), [1.0, 2.0])
    infs = asp.Tensor.from_numpy(np.array([[1.0, np.inf], [np.inf, 2.0]]), "csr", fill=np.inf)
    with pytest.raises(ScheduleError, match="Expected A of fill 0 .* but it has fill inf"):
        kernel(A=infs, x=x)
    np.testing.assert_array_equal(asp.evaluate("y(i) = A(i,j) * x(j)", A=infs, x=x), [np.inf, np.inf])


def test_the_cache_keys_tell_fills_apart():
    zeros = asp.Tensor.from_numpy(np.eye(2), "csr")
    ones = asp.Tensor.from_numpy(np.eye(2), "csr", fill=1)
    key = lambda A: api._warm_key("y(i) = A(i,j)", None, None, False, None, None, {"A": A})  # noqa: E731
    assert key(zeros) != key(ones)
    assert zeros.kind != ones.kind


def test_from_coo_takes_a_fill():
    tensor = asp.Tensor.from_coo([[0, 2], [1, 0]], [5.0, 0.0], (3, 2), "csr", fill=np.inf)
    expected = np.full((3, 2), np.inf)
    expected[0, 1], expected[2, 0] = 5.0, 0.0
    assert tensor.fill == np.inf and tensor.nnz == 2
    np.testing.assert_array_equal(tensor.to_numpy(), expected)
    with pytest.raises(FormatError, match="inf only fills float"):
        asp.Tensor.from_coo([[0], [0]], [1], (1, 1), "csr", fill=np.inf)



@pytest.mark.parametrize("fmt", [*FORMATS_2D, "sd", "ds"])
@pytest.mark.parametrize("entries", [0, 1, 40])
def test_coordinates_of_any_fill_are_sorted_natively_where_the_format_stores_only_entries(fmt, entries, monkeypatch):
    """Duplicates summed, every conversion keeping the fill; the compiled sorts serve a fill other than 0 only
    into formats whose values are all entries' (they pad absent ones with 0)."""
    from autosparse.tensor import native

    sorted_natively = []
    monkeypatch.setattr(native, "_installed", [lambda tensor, to, compiled=native._installed[0]:
                                               sorted_natively.append(tensor.fill) or compiled(tensor, to)])
    rng = np.random.default_rng(entries)
    coords, values = rng.integers(0, 5, (2, entries)), rng.random(entries) - 0.5
    tensor = asp.Tensor.from_coo(coords, values, (5, 6), fmt, fill=np.inf)
    expected, stored = np.zeros((5, 6)), np.zeros((5, 6), bool)
    np.add.at(expected, tuple(coords), values)
    stored[tuple(coords)] = True
    expected[~stored] = np.inf
    assert tensor.fill == np.inf
    np.testing.assert_allclose(tensor.to_numpy(), expected)
    assert (np.inf in sorted_natively) == (fmt not in ("dense", "sd"))
    for other in FORMATS_2D:
        converted = tensor.to_format(other)
        assert converted.fill == np.inf
        np.testing.assert_allclose(converted.to_numpy(), expected)


def test_files_and_repr_say_the_fill(tmp_path):
    tensor = asp.Tensor.from_numpy(np.eye(2), "csr", fill=np.inf)
    assert "fill=inf" in repr(tensor) and "fill" not in repr(asp.Tensor.from_numpy(np.eye(2), "csr"))
    with pytest.raises(FormatError, match="fill 0 to write"):
        asp.io.write(tmp_path / "a.mtx", tensor)
