"""A scipy coo_matrix given to a kernel computing in CSR is read as it is stored (issue 30, section coo):
coordinates in any order, repeated ones summed, with no conversion and no PerformanceWarning, wherever
the result is dense and linear in it; elsewhere it is converted, as before. Each result is compared with
numpy on the matrix's dense copy (scipy sums repeated coordinates)."""

import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as hs

import autosparse as asp
from autosparse.pipeline import conversions
from autosparse.pipeline import kernel as pipeline_kernel
from autosparse.runtime import calls
from autosparse.runtime.abi import ReturnCode, raise_failure
from autosparse.pipeline.conversions import linear_in
from autosparse.runtime.conversion import checked_coordinates
from autosparse.notation import parse
from kernel_cases import stratified

SPMV = "y(i) = A(i,j) * x(j)"
KERNELS = {  # expression, formats, the dense reference from A's dense copy and the dense operand
    "spmv": (SPMV, {"A": "csr"}, lambda a, d: a @ d[:, 0]),
    "spmv-transposed": ("y(j) = A(i,j) * x(i)", {"A": "csr"}, lambda a, d: a.T @ d[:, 0]),
    "spmm": ("C(i,k) = A(i,j) * X(j,k)", {"A": "csr", "X": "dd"}, lambda a, d: a @ d),
    "scaled sum": ("y(i) = -(2 * A(i,j) * x(j))", {"A": "csr"}, lambda a, d: -2 * (a @ d[:, 0])),
}
CASES = ("unsorted", "duplicated", "empty", "single entry", "explicit zeros", "size-1 rows", "size-1 columns")


def _coo(case: str, index_dtype, seed: int = 0) -> sp.coo_matrix:
    rng = np.random.default_rng(seed)
    shape = {"size-1 rows": (1, 7), "size-1 columns": (6, 1), "empty": (0, 5)}.get(case, (6, 9))
    nnz = {"empty": 0, "single entry": 1}.get(case, 20)
    row, col = rng.integers(0, shape[0], nnz) if shape[0] else np.zeros(0, int), rng.integers(0, shape[1], nnz)
    if case == "duplicated":
        row, col = np.concatenate([row, row[:7]]), np.concatenate([col, col[:7]])
    vals = rng.integers(-4, 5, len(row)).astype(float)
    if case == "explicit zeros":
        vals[::3] = 0
    return _matrix(vals, row.astype(index_dtype), col.astype(index_dtype), shape)


def _matrix(vals, row, col, shape) -> sp.coo_matrix:
    """A scipy coo matrix holding these very arrays (scipy would narrow int64 indices that fit in int32)."""
    matrix = sp.coo_matrix((vals, (row, col)), shape=shape)
    matrix.coords = (row, col)
    return matrix


def _operands(expression, formats, matrix, rng):
    name = "X" if "X" in formats else "x"
    extent = matrix.shape[0] if "x(i)" in expression else matrix.shape[1]
    dense = rng.integers(-3, 4, (extent, 3)).astype(float)
    return {"A": matrix, name: dense if name == "X" else dense[:, 0].copy()}, dense


@pytest.fixture
def no_conversion(monkeypatch):
    """Any conversion of an operand, or a PerformanceWarning, fails the test."""
    def converted(*args):
        raise AssertionError("the operand was converted")
    monkeypatch.setattr(conversions, "native_conversion", converted)
    with warnings.catch_warnings():
        warnings.simplefilter("error", asp.PerformanceWarning)
        yield


@pytest.mark.parametrize("kernel, case, index_dtype, threads",
                         stratified([list(KERNELS), CASES, [np.int32, np.int64], [1, 2]], 16, "coo operands"))
def test_coo_operand_is_read_as_stored(kernel, case, index_dtype, threads, no_conversion):
    expression, formats, reference = KERNELS[kernel]
    matrix = _coo(case, index_dtype)
    operands, dense = _operands(expression, formats, matrix, np.random.default_rng(1))
    result = asp.Kernel(expression, formats=formats, num_threads=threads)(**operands)
    np.testing.assert_array_equal(result, reference(matrix.toarray(), dense))


def _row_ordered(matrix: sp.coo_matrix) -> sp.coo_matrix:
    """The same entries with rows in order and columns in any order within a row, repeats kept."""
    order = np.argsort(matrix.row, kind="stable")
    return _matrix(matrix.data[order], matrix.row[order], matrix.col[order], matrix.shape)


def _kernels_run(spmv: asp.Kernel) -> list[asp.Kernel]:
    """The kernels a Kernel built to read its coordinate operands as stored, one per format it met."""
    return [kernel for kernel in spmv._as_stored_kernels.values() if kernel is not None]


@pytest.mark.parametrize("case, index_dtype, threads",
                         stratified([("sorted",) + CASES, [np.int32, np.int64], [1, 2]], 12, "coo rows in order"))
def test_rows_in_order_split_at_rows(case, index_dtype, threads, no_conversion):
    """Rows in order (scipy's `coo_matrix(csr)`, or any order of columns within a row, repeats included):
    read as sorted `coo` by a kernel that checks the coordinates and the rows' order where it reads them,
    with no pass of its own; on threads, whose rows the threads split without atomic sums (on operands of
    any size: conftest); exact on integer values."""
    matrix = _coo("unsorted" if case == "sorted" else case, index_dtype, seed=3)
    matrix = sp.coo_matrix(matrix.tocsr()) if case == "sorted" else _row_ordered(matrix)
    assert matrix.row.dtype == index_dtype or case == "sorted"
    x = np.random.default_rng(4).integers(-3, 4, matrix.shape[1]).astype(float)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    np.testing.assert_array_equal(spmv(A=matrix, x=x), matrix.toarray() @ x)
    kernel, = _kernels_run(spmv)
    assert kernel.formats["A"] == asp.Format("coo", order=2) and "atomic update" not in kernel.source
    assert kernel._checked == {"A"}
    assert spmv.ran_parallel is (threads == 2 and matrix.nnz > 0)


@pytest.mark.parametrize("case, index_dtype", stratified([CASES[:2], [np.int32, np.int64]], 4, "coo rows any order"))
def test_rows_out_of_order_stay_sequential(case, index_dtype, no_conversion):
    """Rows out of order are read as `u~q`, sequentially even where threads are allowed (adding into y
    atomically or into copies of it measured no faster: autoparallel), after the `coo` kernel that took
    them as in order found they are not and the pass checked them."""
    matrix = _coo(case, index_dtype, seed=3)
    assert np.any(np.diff(matrix.row) < 0)
    x = np.random.default_rng(4).integers(-3, 4, matrix.shape[1]).astype(float)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=2)
    np.testing.assert_array_equal(spmv(A=matrix, x=x), matrix.toarray() @ x)
    assert {str(k.formats["A"]): k._checked for k in _kernels_run(spmv)} == {"uq": {"A"}, "u~q": frozenset()}
    assert not spmv.ran_parallel


@pytest.mark.parametrize("index_dtype, threads", [(np.int32, 2), (np.int64, 1)])
def test_rows_in_order_merge_as_stored(index_dtype, threads, no_conversion):
    """y = A x + z merges A's rows with z's, which needs them in order: rows in order are read as stored
    (columns in any order and repeats within a row are summed by the row's loop), a row left empty
    taking z's alone. Rows out of order are gathered by row first: test_a_merge_with_z_checks_the_rows_order."""
    matrix = _row_ordered(_coo("duplicated", index_dtype, seed=7))
    x, z = np.arange(9.0), np.arange(7.0)
    matrix.resize(7, 9)  # row 6 empty
    spmv = asp.Kernel("y(i) = A(i,j) * x(j) + z(i)", formats={"A": "csr"}, num_threads=threads)
    np.testing.assert_array_equal(spmv(A=matrix, x=x, z=z), matrix.toarray() @ x + z)


def test_large_operand_on_two_threads_is_read_as_stored(no_conversion):
    """Over PARALLEL_MIN_ENTRIES (the default's threshold) rows in order run on threads."""
    rng = np.random.default_rng(2)
    n, nnz = 3000, 1 << 17
    matrix = sp.coo_matrix((rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    x = rng.random(n)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=2)
    np.testing.assert_allclose(spmv(A=matrix, x=x), matrix @ x)
    assert not spmv.ran_parallel
    np.testing.assert_allclose(spmv(A=_row_ordered(matrix), x=x), matrix @ x)
    assert spmv.ran_parallel


def test_sorted_coordinates_split_at_rows():
    """A COO Tensor in row order: threads split at rows, with no atomics (the default schedule's
    no_races), and an explicit no_races over unsorted rows is refused."""
    matrix = _coo("duplicated", np.int64, seed=5)
    tensor = asp.Tensor.from_coo(np.stack([matrix.row, matrix.col]), matrix.data, matrix.shape, format="coo")
    x = np.arange(9.0)
    spmv = asp.Kernel(SPMV, formats={"A": "coo", "y": "d"}, num_threads=2)
    np.testing.assert_array_equal(spmv(A=tensor, x=x), matrix.toarray() @ x)
    assert spmv.ran_parallel and "atomic" not in spmv.source
    with pytest.raises(asp.ScheduleError, match="use atomics or temporary"):
        _ = asp.Kernel(SPMV, formats={"A": "u~q"}, schedule="parallelize(i, cpu_thread, no_races)",
                       num_threads=2).source


def test_a_later_change_of_the_matrix_is_seen(no_conversion):
    matrix, x = _coo("unsorted", np.int32), np.arange(9.0)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"})
    np.testing.assert_array_equal(spmv(A=matrix, x=x), matrix.toarray() @ x)
    matrix.data *= 3
    matrix.row[:] = matrix.row[::-1].copy()
    matrix.col[0] = 8
    np.testing.assert_array_equal(spmv(A=matrix, x=x), matrix.toarray() @ x)
    assert spmv.warm_calls == 0


def test_elsewhere_it_is_converted():
    """Not linear in A: repeated coordinates are summed first."""
    matrix = _coo("duplicated", np.int32)
    a, x = matrix.toarray(), np.arange(9.0)
    with pytest.warns(asp.PerformanceWarning, match="converted on every call"):
        result = asp.Kernel("y(i) = A(i,j) * A(i,j) * x(j)", formats={"A": "csr"})(A=matrix, x=x)
    np.testing.assert_array_equal(result, (a * a) @ x)


def test_a_sparse_result_converts():
    matrix = _coo("duplicated", np.int32)
    with pytest.warns(asp.PerformanceWarning):
        result = asp.Kernel("B(i,j) = A(i,j) * 2", formats={"A": "csr", "B": "csr"})(A=matrix)
    np.testing.assert_array_equal(result.to_numpy(), 2 * matrix.toarray())


@pytest.mark.parametrize("change", ["mixed index dtypes", "unsigned indices", "strided"])
def test_arrays_it_cannot_read_as_they_are_are_converted(change):
    matrix = _coo("unsorted", np.int32)
    x = np.arange(9.0)
    row, col = matrix.row, matrix.col  # set as `coords`: scipy's row/col setters would cast them back
    if change == "mixed index dtypes":
        matrix.coords = (row, col.astype(np.int64))
    elif change == "unsigned indices":
        matrix.coords = (row.astype(np.uint32), col.astype(np.uint32))
    elif change == "strided":
        matrix.coords = (np.repeat(row, 2)[::2], col)
    assert (matrix.row.dtype, matrix.col.dtype) != (np.int32, np.int32) or not matrix.row.flags.c_contiguous
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", asp.PerformanceWarning)
        result = asp.Kernel(SPMV, formats={"A": "csr"})(A=matrix, x=x)
    np.testing.assert_array_equal(result, matrix.toarray() @ x)


@pytest.mark.parametrize("mode, bad, index_dtype, threads, rows",
                         stratified([[0, 1], [-1, "extent", "past int32"], [np.int32, np.int64], [1, 2],
                                     ["in order", "any order"]], 10, "coo bounds"))
def test_coordinates_out_of_range_are_refused(mode, bad, index_dtype, threads, rows):
    matrix = _coo("unsorted", index_dtype)
    matrix = _row_ordered(matrix) if rows == "in order" else matrix
    if bad == "past int32":  # negative as int32: read as unsigned, past any extent
        bad = -(2 ** 31) if index_dtype is np.int32 else 2 ** 40
    coordinates = matrix.col if mode else matrix.row
    coordinates[5] = matrix.shape[mode] if bad == "extent" else bad
    with pytest.raises(asp.FormatError, match=f"mode-{mode} coordinates in"), \
            pytest.warns(asp.PerformanceWarning):
        asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)(A=matrix, x=np.arange(9.0))


@pytest.mark.parametrize("kernel, mode, bad, where, index_dtype, threads", stratified(
    [["spmv", "spmv-transposed", "spmm"], [0, 1], [-1, "extent", "huge"], ["first", "middle", "last"],
     [np.int32, np.int64], [1, 2]], 12, "coo bounds where read"))
def test_coordinates_out_of_range_are_refused_where_read(kernel, mode, bad, where, index_dtype, threads):
    """A bad coordinate of either mode, anywhere among the entries, of rows in any order: the kernel that
    checks coordinates where it loads them (one thread) or the pass before it (threads) refuses it, and
    the call raises the FormatError naming the mode, as a conversion would; nothing reads out of bounds."""
    expression, formats, _ = KERNELS[kernel]
    matrix = _coo("unsorted", index_dtype, seed=11)
    operands, _ = _operands(expression, formats, matrix, np.random.default_rng(2))
    huge = np.iinfo(index_dtype).min if index_dtype is np.int32 else 2 ** 62
    coordinates = matrix.col if mode else matrix.row
    at = {"first": 0, "middle": matrix.nnz // 2, "last": matrix.nnz - 1}[where]
    coordinates[at] = {-1: -1, "extent": matrix.shape[mode], "huge": huge}[bad]
    with pytest.raises(asp.FormatError, match=f"mode-{mode} coordinates in"), \
            pytest.warns(asp.PerformanceWarning):
        asp.Kernel(expression, formats=formats, num_threads=threads)(**operands)


@pytest.mark.parametrize("mode, index_dtype", [(0, np.int32), (1, np.int64)])
def test_the_kernel_itself_refuses_a_coordinate_out_of_range(mode, index_dtype, no_conversion):
    """The kernel's own check, with no pass before it: its error names the operand (the largest row past
    the extent, last: still in order)."""
    matrix, x = _row_ordered(_coo("duplicated", index_dtype, seed=12)), np.arange(9.0)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=1)
    np.testing.assert_array_equal(spmv(A=matrix, x=x), matrix.toarray() @ x)
    kernel, = _kernels_run(spmv)
    (matrix.col if mode else matrix.row)[-1] = matrix.shape[mode] + 1
    unchecked = conversions.coordinates_as_stored(matrix, asp.Format("ds"), checked_by_kernel=True)
    with pytest.raises(asp.FormatError, match="coordinate of A within its shape, but one is negative or past"):
        kernel(A=unchecked, x=x)


@pytest.mark.parametrize("kernel, case, index_dtype", stratified(
    [list(KERNELS), ("sorted", "unsorted", "duplicated", "empty", "single entry", "size-1 rows", "size-1 columns"),
     [np.int32, np.int64]], 8, "coo checked where read"))
def test_checked_where_read_equals_scipy(kernel, case, index_dtype, no_conversion):
    """One thread: the coordinates are read once, by the kernel that checks them, where the rows are in
    order; out of order, once more by the pass, for the unchecked `u~q` kernel."""
    expression, formats, reference = KERNELS[kernel]
    matrix = _coo("unsorted" if case == "sorted" else case, index_dtype, seed=13)
    matrix = _row_ordered(matrix) if case == "sorted" else matrix
    operands, dense = _operands(expression, formats, matrix, np.random.default_rng(3))
    spmv = asp.Kernel(expression, formats=formats, num_threads=1)
    np.testing.assert_array_equal(spmv(**operands), reference(matrix.toarray(), dense))
    in_order = bool(np.all(np.diff(matrix.row) >= 0))
    built = {str(k.formats["A"]): k._checked for k in _kernels_run(spmv)}
    assert built == ({"uq": {"A"}} if in_order else {"uq": {"A"}, "u~q": frozenset()})


@settings(max_examples=40, deadline=None)
@given(hs.sampled_from([np.int32, np.int64]), hs.sampled_from([0, 1, 5, 2 ** 31 - 1, 2 ** 31, 2 ** 40]),
       hs.lists(hs.tuples(hs.integers(-2, 6), hs.integers(-2, 6)), max_size=40), hs.booleans())
def test_checked_coordinates_as_numpy_sees_them(index_dtype, extent, entries, large):
    """The native check against numpy: None where a coordinate is negative or not below its extent (one
    past the index type's range included), else whether the rows never decrease."""
    if large:  # coordinates near the index type's largest
        entries = [(r + np.iinfo(index_dtype).max - 6, c) for r, c in entries]
    row, col = (np.array([e[k] for e in entries], dtype=index_dtype) for k in (0, 1))
    shape = (extent, 5)
    expected = None if np.any((row < 0) | (row >= extent) | (col < 0) | (col >= 5)) else bool(np.all(np.diff(row) >= 0))
    assert checked_coordinates(shape, row, col) == expected


@settings(max_examples=25, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 4), hs.integers(0, 3), hs.integers(-3, 3)), max_size=30))
def test_any_coordinates_any_order(entries):
    row, col, vals = (np.array(column, dtype=dtype) for column, dtype in
                      zip(zip(*entries), (np.int32, np.int32, float))) if entries else \
        (np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
    matrix = sp.coo_matrix((vals, (row, col)), shape=(5, 4))
    x = np.array([1.0, -2.0, 3.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error", asp.PerformanceWarning)
        np.testing.assert_array_equal(asp.evaluate(SPMV, A=matrix, x=x), matrix.toarray() @ x)


@pytest.mark.parametrize("expression, linear", [
    ("y(i) = A(i,j) * x(j)", True),
    ("y(i) = -(A(i,j) * x(j)) + B(i,j) * x(j)", True),
    ("y(i) = A(i,j) / z(j)", True),
    ("y(i) = x(j) / A(i,j)", False),
    ("y(i) = A(i,j) * A(i,j)", False),
    ("y(i) = B(i,j) * x(j)", False),
])
def test_linear_in(expression, linear):
    assert linear_in(parse(expression).rhs, "A") is linear


@pytest.mark.parametrize("schedule", ["auto", "coiterate(j, auto)", "split(i, i0, i1, 4)"])
def test_other_schedules_give_the_same_values(schedule):
    """Only the default schedule reads a scipy COO operand as stored; an autoscheduled, a strategy-only and
    a hand-written schedule convert it (with the warning) and compute the same values."""
    matrix, x = _coo("duplicated", np.int32), np.arange(9.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", asp.PerformanceWarning)
        if schedule == "auto":  # chosen for the call's operands
            got = asp.evaluate(SPMV, schedule="auto", A=matrix, x=x)
        else:
            got = asp.compile(SPMV, formats={"A": "csr"}, schedule=schedule)(A=matrix, x=x)
    np.testing.assert_allclose(got, matrix.toarray() @ x, rtol=1e-12)


@pytest.fixture
def seen(monkeypatch):
    """What reading a scipy COO operand took: the passes over its coordinates (`checked_coordinates`,
    the conversion's own check included) and the kernels' failures (their ReturnCodes, in order)."""
    record = {"passes": 0, "failures": []}

    def passed(*args):
        record["passes"] += 1
        return checked_coordinates(*args)
    monkeypatch.setattr(conversions, "checked_coordinates", passed)

    def failed(code, source):
        record["failures"].append(ReturnCode(code))
        raise_failure(code, source)
    monkeypatch.setattr(calls, "raise_failure", failed)
    return record


def _rows_with_decrease(where: str, index_dtype, threads: int) -> sp.coo_matrix:
    """Rows in order (runs of repeated rows, columns in any order) but for one decrease where asked: at the
    first entry, in the middle, at the last, or between the two threads' shares (rows all distinct, so the
    share of thread 1 starts at position ceil(nnz / 2), `RowSplit.deal`); or none ("in order")."""
    rng = np.random.default_rng(21)
    shape, nnz = (40, 9), 31
    distinct = where == "thread boundary"
    row = np.sort(rng.choice(np.arange(1, 39), nnz, replace=not distinct))
    col = rng.integers(0, shape[1], nnz)
    at = {"first": 0, "middle": nnz // 2, "last": nnz - 1, "thread boundary": (nnz + 1) // 2}.get(where)
    if where == "first":
        row[0] = 39
    elif at is not None:
        row[at] = 0
    assert threads == 1 or where != "thread boundary" or row[at - 1] > row[at]
    return _matrix(rng.integers(-4, 5, nnz).astype(float), row.astype(index_dtype), col.astype(index_dtype), shape)


@pytest.mark.parametrize("where, index_dtype, threads", stratified(
    [["in order", "first", "middle", "last", "thread boundary"], [np.int32, np.int64], [1, 2]], 12, "coo order"))
def test_rows_taken_as_in_order_are_checked(where, index_dtype, threads, no_conversion, seen):
    """The `coo` kernel takes the rows as in order and checks it where it reads them, on one thread and on
    two; one decrease anywhere, the pair across the threads' shares included, fails it (OUT_OF_ORDER), its
    result is dropped and the pass picks sequential `u~q`; the next call starts with the pass. Either way the
    values are scipy's, and no pass reads rows in order."""
    matrix = _rows_with_decrease(where, index_dtype, threads)
    x = np.random.default_rng(22).integers(-3, 4, matrix.shape[1]).astype(float)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    for _ in range(2):  # the second call warm, and checked again
        np.testing.assert_array_equal(spmv(A=matrix, x=x), matrix.toarray() @ x)
    in_order = where == "in order"
    expected = {"passes": 0, "failures": []} if in_order else {"passes": 2, "failures": [ReturnCode.OUT_OF_ORDER]}
    assert seen == expected
    assert spmv.ran_parallel is (threads == 2 and in_order)
    assert sorted(str(k.formats["A"]) for k in _kernels_run(spmv)) == (["uq"] if in_order else ["uq", "u~q"])


@pytest.mark.parametrize("where, bad, index_dtype", stratified(
    [["first", "middle", "last"], [-1, "extent"], [np.int32, np.int64]], 4, "coo order bounds"))
def test_bad_coordinates_of_rows_taken_as_in_order(where, bad, index_dtype, seen):
    """Rows in order but for a bad one, on threads: the `coo` kernel refuses it where it reads it, or a -1
    after the first entry as a decrease, which the pass then refuses; either way the call raises the
    FormatError naming the mode, as a conversion would."""
    matrix = _rows_with_decrease("in order", index_dtype, 2)
    at = {"first": 0, "middle": matrix.nnz // 2, "last": matrix.nnz - 1}[where]
    matrix.row[at] = -1 if bad == -1 else matrix.shape[0]
    with pytest.raises(asp.FormatError, match="mode-0 coordinates in"), pytest.warns(asp.PerformanceWarning):
        asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=2)(A=matrix, x=np.arange(9.0))
    decrease = bad == -1 and where != "first"
    assert seen["failures"] == [ReturnCode.OUT_OF_ORDER if decrease else ReturnCode.COORDINATE_OUT]


def test_small_calls_on_a_threaded_kernel_run_on_one(monkeypatch, no_conversion, seen):
    """A call too small for threads (under PARALLEL_MIN_ENTRIES) on a 2-thread Kernel runs the checked `coo`
    kernel on one: no pass."""
    monkeypatch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", 1 << 16)
    matrix, x = _rows_with_decrease("in order", np.int32, 2), np.arange(9.0)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=2)
    np.testing.assert_array_equal(spmv(A=matrix, x=x), matrix @ x)
    assert seen == {"passes": 0, "failures": []} and [str(k.formats["A"]) for k in _kernels_run(spmv)] == ["uq"]
    assert not spmv.ran_parallel


@pytest.mark.parametrize("where, threads", [("in order", 1), ("in order", 2), ("last", 1), ("thread boundary", 2)])
def test_a_merge_with_z_checks_the_rows_order(where, threads, seen):
    """y = A x + z merges A's rows with z's, which needs them in order: taken as in order and checked where
    read, with no pass (on one thread too); out of order, the kernel fails, the pass finds them so, and A
    is read as stored (`u~q`) by a kernel that sums A x into a workspace over the rows before adding z
    (`cin.concretize._revisits`): no conversion."""
    matrix = _rows_with_decrease(where, np.int64, threads)
    x, z = np.arange(9.0), np.arange(40.0)
    spmv = asp.Kernel("y(i) = A(i,j) * x(j) + z(i)", formats={"A": "csr"}, num_threads=threads)
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always", asp.PerformanceWarning)
        np.testing.assert_array_equal(spmv(A=matrix, x=x, z=z), matrix.toarray() @ x + z)
    assert not any("converted on every call" in str(w.message) for w in warned)
    assert seen["failures"] == ([] if where == "in order" else [ReturnCode.OUT_OF_ORDER])
    assert seen["passes"] == (where != "in order")


def _reading_runs(monkeypatch) -> list:
    """The readings each call ran, in order: the inner kernels' formats of A and whether they check it."""
    runs, run = [], pipeline_kernel.Kernel._run

    def recorded(kernel, operands):
        if type(operands.get("A")) is asp.Tensor:
            runs.append((str(kernel.formats["A"]), "checked" if kernel._checked else "passed"))
        return run(kernel, operands)
    monkeypatch.setattr(pipeline_kernel.Kernel, "_run", recorded)
    return runs


SEQUENCES = {  # per call: the readings run, the passes, the failures
    "in order": [("in order", [("uq", "checked")], 0, [])] * 3,
    "shuffled": [("shuffled", [("uq", "checked"), ("u~q", "passed")], 1, [ReturnCode.OUT_OF_ORDER])]
    + [("shuffled", [("u~q", "passed")], 1, [])] * 2,
    "shuffled, then in order": [("shuffled", [("uq", "checked"), ("u~q", "passed")], 1, [ReturnCode.OUT_OF_ORDER]),
                                ("shuffled", [("u~q", "passed")], 1, []),
                                ("in order", [("uq", "passed")], 1, []),  # the pass forgets the hint
                                ("in order", [("uq", "checked")], 0, [])],
}


@pytest.mark.parametrize("sequence, threads, index_dtype", stratified(
    [list(SEQUENCES), [1, 2], [np.int32, np.int64]], 6, "coo order hint"))
def test_rows_out_of_order_are_remembered(sequence, threads, index_dtype, monkeypatch, no_conversion, seen):
    """One Kernel called again and again: rows out of order fail the checked `coo` kernel once, then the pass
    comes first (and picks `u~q`) until it finds them in order, after which the checked kernel comes first
    again. Each call's values are scipy's."""
    runs = _reading_runs(monkeypatch)
    ordered = _rows_with_decrease("in order", index_dtype, threads)
    shuffled = _matrix(ordered.data[::-1].copy(), ordered.row[::-1].copy(), ordered.col[::-1].copy(), ordered.shape)
    x = np.random.default_rng(23).integers(-3, 4, ordered.shape[1]).astype(float)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=threads)
    for rows, readings, passes, failures in SEQUENCES[sequence]:
        matrix = ordered if rows == "in order" else shuffled
        runs.clear()
        seen.update(passes=0, failures=[])
        np.testing.assert_array_equal(spmv(A=matrix, x=x), matrix @ x)
        assert (runs, seen["passes"], seen["failures"]) == (readings, passes, failures)
        assert spmv.ran_parallel is (threads == 2 and rows == "in order")


def test_two_threads_calling_one_kernel_get_their_own_values(no_conversion):
    """Calls from two Python threads on one Kernel, rows in order and shuffled interleaved: the hint one call
    leaves may send the other to the pass or to the checked kernel, and each still gets its own product."""
    ordered = _rows_with_decrease("in order", np.int64, 2)
    shuffled = _matrix(ordered.data[::-1].copy(), ordered.row[::-1].copy(), ordered.col[::-1].copy(), ordered.shape)
    x = np.arange(9.0)
    spmv = asp.Kernel(SPMV, formats={"A": "csr"}, num_threads=2)
    with ThreadPoolExecutor(2) as pool:
        got = list(pool.map(lambda matrix: spmv(A=matrix, x=x), [ordered, shuffled] * 20))
    for result, matrix in zip(got, [ordered, shuffled] * 20):
        np.testing.assert_array_equal(result, matrix @ x)
