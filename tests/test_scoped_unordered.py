"""A reduction scoped under an element-wise operator or function (`C(i) = T0() * sum(j, A(i,j) * x(j))`,
TACO's meaning: docs/semantics.md) over an operand stored as coordinates whose rows come back in any order
(unsorted COO, duplicates anywhere): the producer of its temporary cannot sit inside the loop over the rows,
which visits a row once per run, so it gathers every run into a temporary indexed by the row
(`cin.concretize._revisits`) before the element-wise consumer reads each row once. Each result is compared
with numpy on dense copies (duplicates summed, as scipy sums them), on threads and on one. A reduction that
must visit every row (`max` over fill 0) cannot merge a `u~q` Tensor's rows: refused, as without a scope."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.cin.ast import Where
from autosparse.pipeline import kernel as pipeline_kernel

B = np.arange(10.0).reshape(5, 2) - 4
X = np.arange(1.0, 6.0) - 2.5
CASES = {  # expression, its other operands and the dense reference from A's dense copy
    "scaled sum": ("C(i) = T0() * sum(j, A(i,j) * x(j))", {"T0": np.array(2.0), "x": X},
                   lambda a: 2.0 * (a @ X)),
    "relu of a sum": ("C(i) = maximum(sum(j, A(i,j) * x(j)), 0)", {"x": X}, lambda a: np.maximum(a @ X, 0)),
    "minimum of a min": ("C(i) = minimum(T0(i), min(j, A(i,j) + d(j)))", {"T0": np.arange(7.0) - 3, "d": X},
                         lambda a: np.minimum(np.arange(7.0) - 3, (a + X).min(axis=1))),
    "relu of a product": ("C(i,k) = maximum(sum(j, A(i,j) * B(j,k)), 0)", {"B": B}, lambda a: np.maximum(a @ B, 0)),
    "shifted sum": ("C(i) = sum(j, A(i,j) * x(j)) + z(i)", {"x": X, "z": np.arange(7.0)},
                    lambda a: a @ X + np.arange(7.0)),
    "negated max": ("C(i) = -max(j, A(i,j) * x(j))", {"x": X}, lambda a: -(a * X).max(axis=1)),
    "none negative": ("C(i) = logical_not(any(j, less(A(i,j), 0.5)))", {},
                      lambda a: (~(a < 0.5).any(axis=1)).astype(float)),
}
#: Reductions whose identity is not what an absent entry gives (max over fill 0, `any` of `A < 0.5`) visit every
#: row, merging A's rows with the whole dimension: a `u~q` Tensor cannot be merged, and is refused as it is
#: without a scoped reduction (`y(i) = max(j, A(i,j))`); a scipy matrix is converted (not linear in it).
EVERY_ROW = ("negated max", "none negative")
LAYOUTS = ("scipy unsorted", "scipy duplicated", "scipy sorted", "scipy columns unsorted", "from_coo unsorted")


def _coo(layout: str, seed: int = 31, shape=(7, 5), density=0.4) -> sp.coo_matrix:
    """A scipy COO matrix whose rows come out of order (`sp.random` shuffles them), with seven entries
    repeated at its end, canonical, or with its rows in order and each row's columns reversed."""
    matrix = sp.random(*shape, density=density, format="coo", random_state=seed)
    if layout == "scipy duplicated":
        repeat = slice(0, 7)
        return sp.coo_matrix((np.r_[matrix.data, -matrix.data[repeat] / 2], (np.r_[matrix.row, matrix.row[repeat]],
                              np.r_[matrix.col, matrix.col[repeat]])), shape=shape)
    if layout in ("scipy sorted", "scipy columns unsorted"):
        matrix = matrix.tocsr().tocoo()
        order = np.lexsort((-matrix.col if layout == "scipy columns unsorted" else matrix.col, matrix.row))
        return sp.coo_matrix((matrix.data[order], (matrix.row[order], matrix.col[order])), shape=shape)
    return matrix


def _operand(layout: str, fill=0.0, index_dtype=np.int64, **shape):
    """A as the layout gives it: a scipy matrix, or a `u~q` Tensor that keeps the scipy matrix's order."""
    matrix = _coo(layout, **shape)
    if layout.startswith("scipy"):
        return matrix
    return asp.Tensor.from_coo(np.stack([matrix.row, matrix.col]), matrix.data, matrix.shape, format="u~q",
                               index_dtype=index_dtype, fill=fill)


def _dense(value) -> np.ndarray:
    return value.toarray() if sp.issparse(value) else value if isinstance(value, np.ndarray) else value.to_numpy()


@pytest.fixture(params=["threads", "one thread"])
def threads(request, monkeypatch):
    """The default schedule's threads on these small operands (the suite's default), or on none."""
    if request.param == "one thread":
        monkeypatch.setattr(pipeline_kernel, "PARALLEL_MIN_ENTRIES", 1 << 40)
    return request.param


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", CASES)
def test_a_scoped_reduction_over_coordinates_in_any_order_matches_numpy(threads, case, layout):
    text, others, reference = CASES[case]
    fill = np.inf if case == "minimum of a min" and layout == "from_coo unsorted" else 0.0
    a = _operand(layout, fill)
    assert layout in ("scipy sorted", "scipy columns unsorted") or not np.all(np.diff(_coo(layout).row) >= 0)
    if case in EVERY_ROW and layout == "from_coo unsorted":
        with pytest.raises(asp.ScheduleError, match="unordered"):
            asp.evaluate(text, operands={"A": a, **others})
        return
    result = asp.evaluate(text, operands={"A": a, **others})
    np.testing.assert_allclose(_dense(result), reference(_dense(a)))


@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("shape, density", [((7, 5), 0.0), ((7, 5), 1 / 35), ((1, 5), 1.0), ((9, 1), 0.5),
                                            ((3, 11), 0.6)], ids=["empty", "single entry", "one row", "one column",
                                                                   "wide"])
@pytest.mark.parametrize("case", ["scaled sum", "minimum of a min"])
def test_edge_shapes_of_unsorted_coordinates_match_numpy(case, shape, density, index_dtype):
    text, _, _ = CASES[case]
    rows, cols = shape
    x, lower = np.linspace(-1.0, 1.0, cols), np.linspace(-2.0, 0.5, rows)
    others = {"T0": np.array(2.0), "x": x} if case == "scaled sum" else {"T0": lower, "d": x}
    a = _operand("from_coo unsorted", np.inf if case == "minimum of a min" else 0.0, index_dtype,
                 seed=5, shape=shape, density=density)
    dense = _dense(a)
    expected = 2.0 * (dense @ x) if case == "scaled sum" else np.minimum(lower, (dense + x).min(axis=1))
    np.testing.assert_allclose(_dense(asp.evaluate(text, operands={"A": a, **others})), expected)


def test_the_sum_is_gathered_by_row_only_where_rows_repeat_in_no_order():
    """Unsorted COO's rows (`u~q`) put the producer outside the loop over i, into a temporary over i; sorted
    COO's (`uq`, whose runs lowering steps one row at a time) and CSR's keep it inside, a scalar."""
    def producer_outside(fmt):
        cin = asp.Kernel(CASES["scaled sum"][0], formats={"A": fmt, "T0": "", "x": "d", "C": "d"}).cin
        return isinstance(cin, Where)
    assert producer_outside("u~q")
    assert not producer_outside("uq") and not producer_outside("csr")


def test_a_sum_gathered_by_row_reads_unsorted_coordinates_as_stored():
    """Neither a scipy matrix with repeats out of order nor a `u~q` Tensor is converted for `sum(...) + z`,
    which used to merge A's rows with z's: one walk gathers the rows, whatever their order."""
    text, others, reference = CASES["shifted sum"]
    for layout in ("scipy duplicated", "from_coo unsorted"):
        a = _operand(layout)
        with warnings.catch_warnings():
            warnings.simplefilter("error", asp.PerformanceWarning)
            np.testing.assert_allclose(_dense(asp.evaluate(text, operands={"A": a, **others})), reference(_dense(a)))


@pytest.mark.parametrize("text", ["y(i) = max(j, A(i,j))", CASES["negated max"][0]])
def test_unsorted_coordinates_merged_with_every_row_are_refused_before_running(text):
    """Scoped or not, a reduction that visits every row cannot merge unsorted rows: a ScheduleError naming
    the unordered level, raised where the kernel is built."""
    with pytest.raises(asp.ScheduleError, match="unordered"):
        asp.Kernel(text, formats={"A": "u~q"}).source
