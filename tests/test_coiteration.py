"""Co-iteration strategies (Zhao et al.): every strategy × kernel × operand order against numpy (each kernel
and each order by default, the whole product with `-m grid`), the legality checks, the instrumented
complexity of each strategy, and `auto`."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import autosparse as asp
from autosparse.cin import parse_cin
from autosparse.cin.ast import Strategy
from autosparse.coiterate.findable import findable
from conftest import densified
from kernel_cases import stratified

STRATEGIES = ("merge", "gallop", "binary", "hash", "bitmap")
ORDERS = {"s": 1, "s-": -1, "s~": 0}  # the vector formats, by sibling order


def _vector(rng, n, density, explicit_zero=False):
    v = np.where(rng.random(n) < density, rng.integers(1, 9, n).astype(float), 0.0)
    if explicit_zero and v.any():
        coords = np.flatnonzero(v)
        values = v[coords].copy()
        values[0] = 0.0  # stored, but zero
        return coords, values
    return np.flatnonzero(v), v[np.flatnonzero(v)]


def _vectors(n, seed):
    """Vector data sets of length n: random ones, an empty one, a single entry, a full one, explicit zeros."""
    rng = np.random.default_rng(seed)
    cases = [_vector(rng, n, d) for d in (0.2, 0.5, 0.9)]
    cases.append((np.zeros(0, dtype=np.int64), np.zeros(0)))
    cases.append((np.array([n - 1]), np.array([3.0])))
    cases.append((np.arange(n), np.arange(1.0, n + 1)))
    cases.append(_vector(rng, n, 0.5, explicit_zero=True))
    return cases


def _tensor(coords, values, n, fmt):
    return asp.Tensor.from_coo(np.asarray(coords).reshape(1, -1), values, (n,), format=fmt)


def _dense(coords, values, n):
    d = np.zeros(n)
    d[coords] = values
    return d


def _schedules(index: str, names: tuple[str, ...]):
    """Each strategy for all operands, and for each operand alone."""
    for strategy in STRATEGIES:
        yield f"coiterate({index}, {strategy})"
        for name in names:
            yield f"coiterate({index}, {strategy}, {name})"


def _compile_or_refuse(expression, formats, schedule):
    try:
        kernel = asp.compile(expression, formats=formats, schedule=schedule)
        kernel.source  # generated (and checked) now
        return kernel
    except asp.ScheduleError:
        return None


VECTOR_KERNELS = {
    "z() = a(i) * b(i)": lambda a, b, c: np.einsum("i,i->", a, b),
    "z(i) = a(i) * b(i)": lambda a, b, c: a * b,
    "z(i) = a(i) + b(i)": lambda a, b, c: a + b,
    "z() = a(i) * b(i) * c(i)": lambda a, b, c: np.einsum("i,i,i->", a, b, c),
    "z(i) = a(i) * b(i) + c(i)": lambda a, b, c: a * b + c,
    "z(i) = a(i) * (b(i) + c(i))": lambda a, b, c: a * (b + c),
    "z(i) = a(i) + b(i) + c(i)": lambda a, b, c: a + b + c,
}


VECTOR_PAIRS = (("s", "s"), ("s", "s-"), ("s-", "s~"), ("s~", "s"))


def _vector_grid() -> list:
    """Every kernel and every pair of sibling orders by default (a stratified sample of their combinations,
    each of which compiles every strategy); the rest under `-m grid`."""
    return [pytest.param(*p.values[1], p.values[0], marks=p.marks, id=f"{'-'.join(p.values[1])}-{p.values[0]}")
            for p in stratified((list(VECTOR_KERNELS), VECTOR_PAIRS), len(VECTOR_KERNELS), "coiteration vectors")]


@pytest.mark.parametrize("fa, fb, expression", _vector_grid())
def test_every_strategy_on_vectors_equals_numpy(expression, fa, fb):
    n = 23
    names = tuple(t for t in "abc" if f"{t}(" in expression)
    formats = {"a": fa, "b": fb, "c": "s", "z": "d" if "z(i)" in expression else ""}
    data = list(zip(_vectors(n, 1), _vectors(n, 2)[::-1], _vectors(n, 3)))
    accepted = 0
    for schedule in _schedules("i", names):
        kernel = _compile_or_refuse(expression, {k: v for k, v in formats.items() if k in names + ("z",)}, schedule)
        if kernel is None:
            continue
        accepted += 1
        for case in data:
            dense = [_dense(c, v, n) for c, v in case]
            operands = {name: _tensor(*case[k], n, formats[name]) for k, name in enumerate("abc") if name in names}
            result = kernel(**operands)
            np.testing.assert_allclose(densified(result), VECTOR_KERNELS[expression](*dense), err_msg=schedule)
    assert accepted >= 2  # hash and bitmap for every operand suit any unique one


@pytest.mark.parametrize("fa, fb", list(itertools.product(ORDERS, repeat=2)))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_legality_follows_the_operands_order(fa, fb, strategy):
    """b found while a drives: merge and gallop need both sorted, binary needs b sorted, hash and
    bitmap need nothing but uniqueness."""
    kernel = _compile_or_refuse("z() = a(i) * b(i)", {"a": fa, "b": fb}, f"coiterate(i, {strategy}, b)")
    a, b = ORDERS[fa], ORDERS[fb]
    legal = {"merge": a != 0 and b != 0, "gallop": a != 0 and b != 0, "binary": b != 0,
             "hash": True, "bitmap": True}[strategy]
    assert (kernel is not None) == legal


def test_seqiter_on_an_unsorted_operand_is_a_schedule_error():
    with pytest.raises(asp.ScheduleError, match="gallop.*unordered"):
        asp.compile("z() = a(i) * b(i)", formats={"a": "s", "b": "s~"}, schedule="coiterate(i, gallop, b)").source
    with pytest.raises(asp.ScheduleError, match="hash.*repeat"):
        asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "ds", "x": "u"}, schedule="coiterate(j, hash, x)").source
    with pytest.raises(asp.ScheduleError, match="merge.*unordered"):  # a schedule given runs as given
        asp.compile("z() = a(i) * b(i)", formats={"a": "s", "b": "s~"}, schedule="coiterate(i, merge, b)").source
    # the default schedule merges b sorted (tests/test_unsorted.py)
    assert asp.compile("z() = a(i) * b(i)", formats={"a": "s", "b": "s~"}).conversions == {
        "b": (asp.Format("s~"), asp.Format("s"))}


def test_the_default_schedule_merges_opposite_orders():
    """An increasing and a decreasing operand: one walked, the other searched backwards, resuming."""
    kernel = asp.compile("z() = a(i) * b(i)", formats={"a": "s", "b": "s-"})
    a, b = np.arange(1.0, 11.0), np.arange(10.0, 0.0, -1.0)
    a[::3] = 0
    assert kernel(a=asp.Tensor.from_numpy(a, format="s"), b=asp.Tensor.from_numpy(b, format="s-")) == a @ b


def test_an_unknown_strategy_or_operand_is_refused():
    with pytest.raises(asp.ScheduleError, match="merge, gallop"):
        asp.compile("z() = a(i) * b(i)", formats={"a": "s", "b": "s"}, schedule="coiterate(i, sideways)")
    with pytest.raises(asp.ScheduleError, match="not read"):
        asp.compile("z() = a(i) * b(i)", formats={"a": "s", "b": "s"}, schedule="coiterate(i, hash, q)")


def test_appending_out_of_order_is_refused():
    with pytest.raises(asp.ScheduleError, match="appends"):
        asp.compile("z(i) = a(i) + b(i)", formats={"a": "s", "b": "s", "z": "s"}, schedule="coiterate(i, hash)").source
    with pytest.raises(asp.ScheduleError, match="increasing order"):  # CIN given runs as given
        asp.compile("z(i) = a(i)", formats={"a": "s~", "z": "s"}, schedule="∀i z(i) = a(i)").source
    # the default schedule appends from a sorted (tests/test_unsorted.py)
    assert asp.compile("z(i) = a(i)", formats={"a": "s~", "z": "s"}).conversions == {"a": (asp.Format("s~"), asp.Format("s"))}


def test_the_three_way_product_of_mixed_orders():
    """Fig. 11: a walked increasing, b searched backwards (decreasing), c hashed (unordered)."""
    n = 50
    rng = np.random.default_rng(7)
    vectors = [_vector(rng, n, d) for d in (0.4, 0.6, 0.7)]
    a, b, c = (_tensor(*v, n, f) for v, f in zip(vectors, ("s", "s-", "s~")))
    kernel = asp.compile("z() = a(i) * b(i) * c(i)", formats={"a": "s", "b": "s-", "c": "s~"},
                         schedule="coiterate(i, gallop, b); coiterate(i, hash, c)")
    expected = np.einsum("i,i,i->", *(_dense(*v, n) for v in vectors))
    assert kernel(a=a, b=b, c=c) == pytest.approx(expected)
    assert "b_p1 = b_p1_end - 1" in kernel.source  # the backwards search starts at the segment's end
    assert "c_l1_hash" in kernel.source


def _matrix(rng, shape, density):
    m = np.where(rng.random(shape) < density, rng.integers(1, 9, shape).astype(float), 0.0)
    m[0, :] = 0.0  # an empty row
    return m


@pytest.mark.parametrize("fa", ["ds", "ds-", "ds~", "ss", "s-s~"])
@pytest.mark.parametrize("fx", list(ORDERS))
def test_spmspv_every_strategy(fa, fx):
    rng = np.random.default_rng(3)
    A = _matrix(rng, (9, 31), 0.3)
    xs = [_dense(*v, 31) for v in _vectors(31, 4)]
    formats = {"A": fa, "x": fx}
    for schedule in _schedules("j", ("A", "x")):
        kernel = _compile_or_refuse("y(i) = A(i,j) * x(j)", formats, schedule)
        if kernel is None:
            continue
        for x in xs:
            y = kernel(A=asp.Tensor.from_numpy(A, format=fa), x=asp.Tensor.from_numpy(x, format=fx))
            np.testing.assert_allclose(densified(y), A @ x, err_msg=schedule)


@pytest.mark.parametrize("fc", ["dense", "csr"])
@pytest.mark.parametrize("shape", [(7, 11, 5), (1, 6, 1), (4, 1, 3)])
def test_inner_product_spgemm_every_strategy(fc, shape):
    m, k, n = shape
    rng = np.random.default_rng(5)
    A, B = _matrix(rng, (m, k), 0.4), _matrix(rng, (k, n), 0.4)
    formats = {"A": "csr", "B": "d1s0", "C": fc}
    for schedule in _schedules("k", ("A", "B")):
        kernel = _compile_or_refuse("C(i,j) = A(i,k) * B(k,j)", formats, "reorder(i, j, k); " + schedule)
        assert kernel is not None, schedule
        C = kernel(A=asp.Tensor.from_numpy(A, format="csr"), B=asp.Tensor.from_numpy(B, format="d1s0"))
        np.testing.assert_allclose(densified(C), A @ B, err_msg=schedule)


@pytest.mark.parametrize("fa, fb", [("ds", "ds"), ("ds-", "ds~"), ("ds~", "ds")])
@pytest.mark.parametrize("op", ["+", "*"])
def test_elementwise_matrices_every_strategy(fa, fb, op):
    rng = np.random.default_rng(6)
    A, B = _matrix(rng, (6, 13), 0.4), _matrix(rng, (6, 13), 0.5)
    expected = A + B if op == "+" else A * B
    for schedule in _schedules("j", ("A", "B")):
        kernel = _compile_or_refuse(f"C(i,j) = A(i,j) {op} B(i,j)", {"A": fa, "B": fb}, schedule)
        if kernel is None:
            continue
        C = kernel(A=asp.Tensor.from_numpy(A, format=fa), B=asp.Tensor.from_numpy(B, format=fb))
        np.testing.assert_allclose(densified(C), expected, err_msg=schedule)


# --- complexity, from the instrumented counts ---------------------------------------------------------

def _spmspv_counts(strategy, A, x):
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr", "x": "s"},
                         schedule=f"coiterate(j, {strategy})", instrument=True)
    y = kernel(A=asp.Tensor.from_numpy(A, format="csr"), x=asp.Tensor.from_numpy(x, format="s"))
    np.testing.assert_allclose(densified(y), A @ x)
    return kernel.counts


@pytest.fixture(scope="module")
def spmspv_inputs():
    rng = np.random.default_rng(11)
    A = _matrix(rng, (300, 2000), 0.01)
    x = np.where(rng.random(2000) < 0.3, 1.0, 0.0)
    return A, x


def test_hash_spmspv_is_linear(spmspv_inputs):
    A, x = spmspv_inputs
    rows, nnz_a, nnz_x = A.shape[0], np.count_nonzero(A), np.count_nonzero(x)
    counts = _spmspv_counts("hash", A, x)
    assert counts["∀j build x(j)"] == nnz_x  # built once: x's segment never changes
    assert counts["∀i dense"] + counts["∀j walk A(i,j)"] + counts["∀j build x(j)"] <= nnz_a + nnz_x + rows
    assert counts.get("∀j probe x(j)", 0) <= 4 * nnz_a  # a half-empty table: a few probes per lookup


def test_bitmap_spmspv_is_linear(spmspv_inputs):
    A, x = spmspv_inputs
    counts = _spmspv_counts("bitmap", A, x)
    assert counts["∀j walk A(i,j)"] == np.count_nonzero(A)
    assert counts["∀j build x(j)"] == np.count_nonzero(x)


def test_merge_spmspv_walks_the_vector_per_row(spmspv_inputs):
    A, x = spmspv_inputs
    counts = _spmspv_counts("merge", A, x)
    rows_met = sum(1 for row in A if row.any())
    assert counts["∀j merge"] > rows_met * np.count_nonzero(x) / 4  # the vector is stepped through per row
    assert counts["∀j merge"] <= np.count_nonzero(A) + A.shape[0] * np.count_nonzero(x)


def test_binary_and_gallop_spmspv_are_logarithmic(spmspv_inputs):
    A, x = spmspv_inputs
    nnz_x, lengths = np.count_nonzero(x), np.count_nonzero(A, axis=1)
    binary = _spmspv_counts("binary", A, x)
    assert binary["∀j bisect x(j)"] <= lengths.sum() * (np.ceil(np.log2(nnz_x + 1)) + 1)
    gallop = _spmspv_counts("gallop", A, x)
    steps = gallop.get("∀j leap x(j)", 0) + gallop.get("∀j bisect x(j)", 0)
    bound = sum(2 * n * (np.log2(1 + nnz_x / n) + 1) for n in lengths if n)
    assert steps <= bound
    assert steps < nnz_x * np.count_nonzero(lengths) / 4  # far less than a merge


# --- the legality checks (Z3) --------------------------------------------------------------------------

@pytest.mark.parametrize("order", [1, -1, 0])
@pytest.mark.parametrize("driver", [1, -1, 0])
def test_findable_answers_from_properties(order, driver):
    for unique in (True, False):
        assert findable(Strategy.HASH, order, unique, driver) == unique
        assert findable(Strategy.BITMAP, order, unique, driver) == unique
        assert findable(Strategy.BINARY, order, unique, driver) == (unique and order != 0)
        for resuming in (Strategy.MERGE, Strategy.GALLOP):
            assert findable(resuming, order, unique, driver) == (unique and order != 0 and driver != 0)


# --- auto ------------------------------------------------------------------------------------------------

def test_auto_chooses_from_the_operands():
    rng = np.random.default_rng(12)
    A = _matrix(rng, (400, 3000), 0.01)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr", "x": "s"}, schedule="coiterate(j, auto)")
    with pytest.raises(asp.ScheduleError, match="call the kernel"):
        kernel.source
    chosen = {}
    for density in (0.0005, 0.5):
        x = np.where(rng.random(3000) < density, 1.0, 0.0)
        y = kernel(A=asp.Tensor.from_numpy(A, format="csr"), x=asp.Tensor.from_numpy(x, format="s"))
        np.testing.assert_allclose(densified(y), A @ x)
        chosen[density] = kernel.chosen.body.coiterate.default
    assert chosen[0.0005] in (Strategy.MERGE, Strategy.GALLOP)  # a few entries: step through them
    assert chosen[0.5] in (Strategy.HASH, Strategy.BITMAP)  # a dense vector: build once, look up


def test_auto_never_chooses_an_illegal_strategy():
    rng = np.random.default_rng(13)
    A = _matrix(rng, (50, 200), 0.05)
    x = np.where(rng.random(200) < 0.01, 1.0, 0.0)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr", "x": "s~"}, schedule="coiterate(j, auto)")
    y = kernel(A=asp.Tensor.from_numpy(A, format="csr"), x=asp.Tensor.from_numpy(x, format="s~"))
    np.testing.assert_allclose(densified(y), A @ x)
    assert kernel.chosen.body.coiterate.default in (Strategy.BINARY, Strategy.HASH, Strategy.BITMAP)


# --- the CIN marks and the format spellings --------------------------------------------------------------

def test_the_coiterate_mark_round_trips_through_cin_text():
    kernel = asp.compile("z() = a(i) * b(i) * c(i)", formats={"a": "s", "b": "s-", "c": "s~"},
                         schedule="coiterate(i, gallop, b); coiterate(i, hash, c)")
    text = str(kernel.cin)
    assert "@coiterate(merge, b=gallop, c=hash)" in text
    formats = {"a": asp.Format("s"), "b": asp.Format("s-"), "c": asp.Format("s~"), "z": asp.Format("")}
    assert str(parse_cin(text, formats)) == text


@pytest.mark.parametrize("spec", ["ds-", "ds~", "s-s~", "u~q", "u-q", "d1s0-", "s~s-"])
def test_decreasing_and_unordered_levels_store_and_round_trip(spec):
    rng = np.random.default_rng(14)
    m = _matrix(rng, (8, 9), 0.4)
    tensor = asp.Tensor.from_numpy(m, format=spec)
    assert str(tensor.format) == spec
    np.testing.assert_array_equal(tensor.to_numpy(), m)
    again = asp.Tensor(tensor.shape, spec, tensor.levels, tensor.vals)  # validated from outside
    np.testing.assert_array_equal(again.to_numpy(), m)


def test_orders_are_validated():
    levels = [{}, {"pos": np.array([0, 3]), "crd": np.array([0, 2, 1])}]
    with pytest.raises(asp.FormatError, match="decreasing"):
        asp.Tensor((1, 4), "ds-", levels, np.ones(3))
    with pytest.raises(asp.FormatError, match="sorted coordinates"):
        asp.Tensor((1, 4), "ds", levels, np.ones(3))
    asp.Tensor((1, 4), "ds~", levels, np.ones(3))
    duplicated = [{}, {"pos": np.array([0, 3]), "crd": np.array([2, 0, 2])}]
    with pytest.raises(asp.FormatError, match="unique"):
        asp.Tensor((1, 4), "ds~", duplicated, np.ones(3))
    with pytest.raises(asp.FormatError, match="mark"):
        asp.Format("ds+")


# --- random inputs -----------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 40), seed=st.integers(0, 2**16), strategy=st.sampled_from(STRATEGIES),
       fa=st.sampled_from(list(ORDERS)), fb=st.sampled_from(list(ORDERS)), op=st.sampled_from(["+", "*"]),
       who=st.sampled_from([None, "a", "b"]))
def test_random_vectors_and_strategies(n, seed, strategy, fa, fb, op, who):
    rng = np.random.default_rng(seed)
    (ca, va), (cb, vb) = _vector(rng, n, rng.random()), _vector(rng, n, rng.random())
    schedule = f"coiterate(i, {strategy}{f', {who}' if who else ''})"
    kernel = _compile_or_refuse(f"z(i) = a(i) {op} b(i)", {"a": fa, "b": fb, "z": "dense"}, schedule)
    if kernel is None:
        assert 0 in (ORDERS[fa], ORDERS[fb]) or ORDERS[fa] != ORDERS[fb]  # sorted alike: every strategy runs
        return
    z = kernel(a=_tensor(ca, va, n, fa), b=_tensor(cb, vb, n, fb))
    a, b = _dense(ca, va, n), _dense(cb, vb, n)
    np.testing.assert_allclose(densified(z), a + b if op == "+" else a * b)


def test_schedule_auto_chooses_the_coiteration_too():
    """evaluate(..., schedule="auto"): the autoscheduler's pick, each loop co-iterating as auto chooses."""
    rng = np.random.default_rng(15)
    A = _matrix(rng, (200, 1500), 0.01)
    x = np.where(rng.random(1500) < 0.5, 1.0, 0.0)
    operands = {"A": asp.Tensor.from_numpy(A, format="csr"), "x": asp.Tensor.from_numpy(x, format="s")}
    y = asp.evaluate("y(i) = A(i,j) * x(j)", schedule="auto", **operands)
    np.testing.assert_allclose(densified(y), A @ x)
    from autosparse.api.kernel import Kernel
    # one thread: under a parallel row loop a table would be shared, so only searches are chosen (test_threads)
    kernel = Kernel("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "s"}, coiteration="auto", num_threads=1)
    kernel(**operands)
    assert kernel.chosen.body.coiterate.default in (Strategy.HASH, Strategy.BITMAP)
    assert kernel.chosen.coiterate.default is Strategy.MERGE  # the row loop co-iterates nothing
    with pytest.raises(asp.ScheduleError, match="coiteration"):
        Kernel("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "s"}, coiteration="sometimes")
