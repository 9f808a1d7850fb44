"""Reductions mean what they mean in TACO: an index summed over the smallest subexpression holding its
uses. The scoping itself (text -> scoped tree, printing back), `sum(j, e)` and `∑j` for other scopes,
and kernels of scoped expressions against numpy with explicit per-term sums, over formats, schedules
and the edge inputs (empty, one entry, explicit zeros, size-1 dimensions)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.notation import parse

# text -> the scoped reading, printed (TACO's makeReductionNotation sums each reduction over every term
# that uses it; a product whose factors use it is summed whole)
SCOPES = [
    ("y(i) = A(i,j) * x(j) + z(i)", "y(i) = sum(j, A(i,j) * x(j)) + z(i)"),
    ("r(i) = b(i) - A(i,j) * x(j)", "r(i) = b(i) - sum(j, A(i,j) * x(j))"),
    ("a(i) = b(i) + c(j,i) + d(i)", "a(i) = b(i) + sum(j, c(j,i)) + d(i)"),
    ("y(i) = 2 * A(i,j) * x(j) + z(i)", "y(i) = sum(j, 2 * A(i,j) * x(j)) + z(i)"),
    ("y(i) = A(i,j) * x(j) + B(i,k) * w(k)", "y(i) = sum(j, A(i,j) * x(j)) + sum(k, B(i,k) * w(k))"),
    ("y(i) = c(i) * (a(i) + B(i,j))", "y(i) = c(i) * (a(i) + sum(j, B(i,j)))"),
    ("s() = a(i) + 2", "s() = sum(i, a(i)) + 2"),
    ("y(i) = x(j) + v(j) + z(i)", "y(i) = sum(j, x(j)) + sum(j, v(j)) + z(i)"),
    # the whole right-hand side: implicit, as before
    ("y(i) = A(i,j) * x(j)", "y(i) = A(i,j) * x(j)"),
    ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"),
    ("y(i) = A(i,j) * x(j) + B(i,j) * w(j)", "y(i) = A(i,j) * x(j) + B(i,j) * w(j)"),
    ("y(i) = (A(i,j) + B(i,j)) * c(j)", "y(i) = (A(i,j) + B(i,j)) * c(j)"),
    ("y(i) = -B(i,j)", "y(i) = -B(i,j)"),
    ("y(i) = c(i) * B(i,j)", "y(i) = c(i) * B(i,j)"),
    # explicit scopes
    ("a(i) = sum(j, b(i) + c(j,i))", "a(i) = sum(j, b(i) + c(j,i))"),
    ("y(i) = ∑j A(i,j) * x(j) + z(i)", "y(i) = sum(j, A(i,j) * x(j)) + z(i)"),
    ("y(i) = sum(j, A(i,j)) * sum(k, B(i,k))", "y(i) = sum(j, A(i,j)) * sum(k, B(i,k))"),
]


@pytest.mark.parametrize("text, scoped", SCOPES)
def test_each_reduction_sums_the_smallest_subexpression_holding_its_uses(text, scoped):
    assignment = parse(text)
    assert str(assignment) == scoped
    assert parse(str(assignment)) == assignment


def test_an_explicit_sum_over_everything_keeps_its_scope():
    """`sum(j, b(i) + c(j,i))` is the old reading: b is added once per j."""
    assignment = parse("a(i) = sum(j, b(i) + c(j,i))")
    assert not assignment.scoped and assignment.reduction_indices == (asp.notation.IndexVar("j"),)


@pytest.mark.parametrize("text, message, column", [
    ("y(i) = sum(i, x(i))", "over an index not in the output", 15),
    ("y(i) = sum(j, x(i))", "used in its body", 15),
    ("y(i) = sum(j, x(j)) + w(i,j)", "used only inside it", 15),
    ("y(i) = sum(j x(j))", "Expected ','", 14),
    ("y(i) = ∑ (x(i))", "Expected a name", 10),
])
def test_bad_sums_are_parse_errors_with_the_column(text, message, column):
    with pytest.raises(asp.ParseError, match=message) as error:
        parse(text)
    assert error.value.column == column


@pytest.mark.parametrize("text, message", [
    ("y(i) = 1e400 * x(i)", "overflows"),
    ("y(i) = " + "9" * 5000 + " * x(i)", "overflows"),
    ("y(i) = " + "(" * 330 + "x(i)" + ")" * 330, "nested at most 200 deep"),
    ("y(i) = " + " + ".join(["x(i)"] * 500), "nested at most 200 deep"),
])
def test_numbers_and_depths_that_do_not_fit_are_parse_errors(text, message):
    with pytest.raises(asp.ParseError, match=message):
        parse(text)


def test_integer_literals_past_int64_are_the_nearest_double_as_in_numpy():
    assert parse("y(i) = 1180591620717411303424 * x(i)").rhs.left.value == 2.0 ** 70
    assert parse("y(i) = 99999999999999999999999 * x(i)").rhs.left.value == float(99999999999999999999999)
    assert parse("y(i) = 9223372036854775807 * x(i)").rhs.left.value == 2 ** 63 - 1


# ----- kernels against numpy with the sums written out -------------------------------------------------

def _sparse(rng, shape, density, case):
    """A random matrix of `shape` for an input case: random, empty, one entry, explicit zeros."""
    if case == "empty":
        return sp.csr_matrix(shape)
    if case == "one-entry":
        m = sp.dok_matrix(shape)
        if shape[0] and shape[1]:
            m[rng.integers(shape[0]), rng.integers(shape[1])] = 1.5
        return m.tocsr()
    m = sp.random(*shape, density=density, format="csr", random_state=rng, data_rvs=lambda n: rng.integers(1, 9, n) / 4)
    if case == "explicit-zeros" and m.nnz:
        m.data[::2] = 0.0
    return m


def _operands(case, n=7, m=5):
    """Operands by role: A, B (n×m), C (m×n), D (n×n), x, w (m), z, u (n); size-1 shrinks a dimension."""
    rng = np.random.default_rng(11)
    if case == "size-1":
        m = 1
    return {"A": _sparse(rng, (n, m), 0.4, case), "B": _sparse(rng, (n, m), 0.4, case),
            "C": _sparse(rng, (m, n), 0.4, case), "D": _sparse(rng, (n, n), 0.3, case),
            "x": rng.integers(1, 5, m) / 2.0, "w": rng.integers(-3, 3, m) / 2.0,
            "z": rng.integers(1, 5, n) / 2.0, "u": rng.integers(-3, 3, n) / 4.0}


def _dense(value):
    return value.toarray() if sp.issparse(value) else value


# expression, numpy with every sum written out, the sparse operands' formats to try, result formats
KERNELS = [
    ("y(i) = A(i,j) * x(j) + z(i)", lambda o: o["A"] @ o["x"] + o["z"], ["csr", "dense", "dcsr", "coo"],
     ["dense", "s"]),
    ("y(i) = 2 * A(i,j) * x(j) + z(i)", lambda o: 2 * (o["A"] @ o["x"]) + o["z"], ["csr", "coo"], ["dense"]),
    ("r(i) = z(i) - A(i,j) * x(j)", lambda o: o["z"] - o["A"] @ o["x"], ["csr", "dcsr"], ["dense", "s"]),
    ("a(i) = z(i) + C(j,i) + u(i)", lambda o: o["z"] + _dense(o["C"]).sum(0) + o["u"], ["csr", "csc", "dense"],
     ["dense", "s"]),
    ("a(i) = sum(j, z(i) + C(j,i))", lambda o: o["C"].shape[0] * o["z"] + _dense(o["C"]).sum(0), ["csr", "dense"],
     ["dense"]),
    ("y(i) = A(i,j) * x(j) + B(i,k) * w(k)", lambda o: o["A"] @ o["x"] + o["B"] @ o["w"], ["csr", "dcsr"],
     ["dense", "s"]),
    ("y(i) = z(i) * (u(i) + A(i,j))", lambda o: o["z"] * (o["u"] + _dense(o["A"]).sum(1)), ["csr", "dcsr"],
     ["dense", "s"]),
    ("s() = (A(i,j) * x(j) + z(i)) * u(i)", lambda o: float(((o["A"] @ o["x"] + o["z"]) * o["u"]).sum()),
     ["csr", "coo"], [None]),
    ("s() = A(i,j) + 2", lambda o: float(_dense(o["A"]).sum() + 2), ["csr", "dense"], [None]),
    ("y(i) = A(i,j) * (x(j) + C(j,k) * u(k)) + B(i,l) * w(l)",  # nested and sibling sums: three temporaries
     lambda o: o["A"] @ (o["x"] + o["C"] @ o["u"]) + o["B"] @ o["w"], ["csr", "dcsr"], ["dense"]),
    ("E(i,j) = A(i,k) * C(k,j) + D(i,j)", lambda o: _dense(o["A"] @ o["C"] + o["D"]), ["csr", "dcsr"],
     ["csr", "dense"]),
    ("E(i,j) = D(i,j) + A(j,k) * C(k,i)", lambda o: _dense(o["D"] + (o["A"] @ o["C"]).T), ["csr"], ["csr", "dense"]),
]
CASES = ["random", "empty", "one-entry", "explicit-zeros", "size-1"]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("expression, expected, operand_formats, results", KERNELS,
                         ids=[k[0] for k in KERNELS])
def test_scoped_kernels_match_numpy(expression, expected, operand_formats, results, case):
    operands = _operands(case)
    names = {a.tensor for a in asp.notation.accesses(parse(expression).rhs)}
    want = expected(operands)
    for fmt in operand_formats:
        given = {n: (asp.Tensor.from_scipy(v).to_format(fmt) if sp.issparse(v) else v)
                 for n, v in operands.items() if n in names}
        for result in results:
            got = asp.evaluate(expression, format=result, **given)
            got = got.to_numpy() if isinstance(got, asp.Tensor) else got
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=f"{expression} {fmt} {result}")


def test_the_default_schedule_computes_a_scoped_sum_in_a_register():
    k = asp.compile("y(i) = A(i,j) * x(j) + z(i)", formats={"A": "csr"}, num_threads=1)  # parallel: test_threads
    assert str(k.cin) == "∀i where(y(i) = t() + z(i), ∀j t() += A(i,j) * x(j))"
    k = asp.compile("a(i) = z(i) + C(j,i) + u(i)", formats={"C": "csr"})  # C's rows come first: a workspace
    assert str(k.cin) == "where(∀i a(i) = z(i) + t(i) + u(i), ∀j ∀i t(i) += C(j,i))"


@pytest.mark.parametrize("schedule", [
    "parallelize(i, cpu_thread, no_races)",
    "split(i, i0, i1, 2)",
    "∀i where(y(i) = t() + z(i), ∀j t() += A(i,j) * x(j))",
    "∀i where(y(i) = z(i) + w(), ∀j w() += x(j) * A(i,j))",
    "where(∀i y(i) = v(i) + z(i), ∀i ∀j v(i) += A(i,j) * x(j))",
    "∀i y(i) = ∑j A(i,j) * x(j) + z(i)",  # a sum in CIN text: a where producer into a scalar
    "∀i y(i) = z(i) + sum(j, x(j) * A(i,j))",
])
def test_schedules_of_a_scoped_expression_compute_it(schedule):
    o = _operands("random")
    k = asp.compile("y(i) = A(i,j) * x(j) + z(i)", formats={"A": "csr"}, schedule=schedule, num_threads=2)
    np.testing.assert_allclose(k(A=o["A"], x=o["x"], z=o["z"]), o["A"] @ o["x"] + o["z"], rtol=1e-12)


def test_nested_sums_in_cin_text_become_nested_producers():
    o = _operands("random")
    k = asp.compile("y(i) = A(i,j) * (x(j) + C(j,k) * u(k))", formats={"A": "csr", "C": "csr"},
                    schedule="∀i y(i) = ∑j A(i,j) * (x(j) + ∑k C(j,k) * u(k))")
    assert str(k.cin) == "∀i where(y(i) = t(), ∀j where(t() += A(i,j) * (x(j) + t1()), ∀k t1() += C(j,k) * u(k)))"
    np.testing.assert_allclose(k(A=o["A"], x=o["x"], C=o["C"], u=o["u"]), o["A"] @ (o["x"] + o["C"] @ o["u"]))


def test_a_schedule_computing_the_old_reading_is_refused():
    """Summing z with A·x over j is another expression: `sum(j, A(i,j) * x(j) + z(i))`."""
    old = "∀i ∀j y(i) += A(i,j) * x(j) + z(i)"
    with pytest.raises(asp.ScheduleError, match="Expected a schedule computing"):
        asp.compile("y(i) = A(i,j) * x(j) + z(i)", formats={"A": "csr"}, schedule=old)
    o = _operands("random")
    k = asp.compile("y(i) = sum(j, A(i,j) * x(j) + z(i))", formats={"A": "csr"}, schedule=old)
    np.testing.assert_allclose(k(A=o["A"], x=o["x"], z=o["z"]), o["A"] @ o["x"] + o["A"].shape[1] * o["z"])


def test_einsum_and_operators_are_unchanged():
    o = _operands("random")
    np.testing.assert_allclose(asp.einsum("ij,j->i", asp.Tensor.from_scipy(o["A"]), o["x"]), o["A"] @ o["x"])


# ----- the peers' own expectations ----------------------------------------------------------------------

def test_tensora_sums_a_reduction_over_its_own_term():
    """Tensora's test_sum_non_adjacent: b and d are added once (b + Σⱼ c(j,·) + d)."""
    b, d = np.array([1.0, 2.0, 3.0]), np.array([7.0, 8.0, 9.0])
    c = asp.Tensor.from_numpy(np.array([[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]]), format="csr")
    np.testing.assert_array_equal(asp.evaluate("a(i) = b(i) + c(j,i) + d(i)", b=b, c=c, d=d), [11, 17, 23])


_V = {name: np.arange(1.0, 5.0) * (n + 1) for n, name in enumerate("bcde")}
_M = {"B": np.arange(12.0).reshape(4, 3) - 5, "C": np.arange(12.0).reshape(4, 3) % 5}


@pytest.mark.parametrize("expression, expected", [
    # TACO's makeReductionNotation cases (test/tests-... "accelerateNotation"), as values
    ("s() = b(i) * c(i)", lambda: _V["b"] @ _V["c"]),
    ("s() = b(i) * c(i) * d(i)", lambda: (_V["b"] * _V["c"] * _V["d"]).sum()),
    ("s() = b(i) * c(j)", lambda: _V["b"].sum() * _V["c"].sum()),
    ("s() = b(i) * c(j) * d(k)", lambda: _V["b"].sum() * _V["c"].sum() * _V["d"].sum()),
    ("s() = b(i) + c(j)", lambda: _V["b"].sum() + _V["c"].sum()),
    ("s() = b(i) + c(i)", lambda: _V["b"].sum() + _V["c"].sum()),
    ("s() = b(i) * c(i) + d(j) * e(j)", lambda: _V["b"] @ _V["c"] + _V["d"] @ _V["e"]),
    ("s() = b(i) * c(i) + d(i) * e(j)", lambda: _V["b"] @ _V["c"] + _V["d"].sum() * _V["e"].sum()),
    ("s() = B(i,j) * C(i,j)", lambda: (_M["B"] * _M["C"]).sum()),
    ("a(i) = B(i,j) * c(j)", lambda: _M["B"] @ _V["c"][:3]),
])
def test_taco_reduction_notation_cases(expression, expected):
    operands = {**_V, **{n: asp.Tensor.from_numpy(m, format="csr") for n, m in _M.items()}}
    if "B(i,j) * c(j)" in expression:
        operands["c"] = _V["c"][:3]
    names = {a.tensor for a in asp.notation.accesses(parse(expression).rhs)}
    got = asp.evaluate(expression, **{n: v for n, v in operands.items() if n in names})
    np.testing.assert_allclose(got, expected(), rtol=1e-12)


# ----- random scoped expressions against a numpy interpreter of the scoped tree ---------------------------------

from hypothesis import HealthCheck, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from autosparse.notation import Add, Literal, Mul, Neg, Sub, Sum  # noqa: E402

_EXTENTS = {"i": 3, "j": 4, "k": 2}
_OPERANDS = {"a": "i", "b": "j", "c": "k", "A": "ij", "B": "jk", "C": "ik", "D": "ji"}


@st.composite
def _texts(draw, depth=3):
    """Expression text over the operands above, with `sum(index, …)` drawn in at random."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.integers(0, 5)) == 0:
            return str(draw(st.integers(1, 3)))
        name = draw(st.sampled_from(sorted(_OPERANDS)))
        return f"{name}({','.join(_OPERANDS[name])})"
    kind = draw(st.sampled_from(["+", "-", "*", "neg", "sum"]))
    if kind == "neg":
        return f"-({draw(_texts(depth - 1))})"
    if kind == "sum":
        return f"sum({draw(st.sampled_from('ijk'))}, {draw(_texts(depth - 1))})"
    return f"({draw(_texts(depth - 1))} {kind} {draw(_texts(depth - 1))})"


def _value(expr, arrays):
    """(array, its indices) of a scoped expression, with numpy alone: sums are the tree's."""
    if isinstance(expr, Literal):
        return np.asarray(float(expr.value)), ()
    if isinstance(expr, asp.notation.Access):
        return arrays[expr.tensor], expr.indices
    if isinstance(expr, Neg):
        value, indices = _value(expr.operand, arrays)
        return -value, indices
    if isinstance(expr, Sum):
        return _summed(*_value(expr.body, arrays), expr.index)
    (left, li), (right, ri) = _value(expr.left, arrays), _value(expr.right, arrays)
    indices = tuple(dict.fromkeys((*li, *ri)))
    left, right = _aligned(left, li, indices), _aligned(right, ri, indices)
    return {Add: np.add, Sub: np.subtract, Mul: np.multiply}[type(expr)](left, right), indices


def _summed(value, indices, index):
    if index not in indices:  # a sum over an index the body does not use adds it once per coordinate
        return value * _EXTENTS[index.name], indices
    return value.sum(axis=indices.index(index)), tuple(i for i in indices if i != index)


def _aligned(value, indices, target):
    value = np.transpose(value, [indices.index(i) for i in target if i in indices]) if indices else value
    return value.reshape([_EXTENTS[i.name] if i in indices else 1 for i in target])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(text=_texts(), out=st.sampled_from(["", "i", "j", "ij", "ji"]), seed=st.integers(0, 2**16),
       fmt=st.sampled_from(["dense", "csr", "dcsr", "coo"]), density=st.sampled_from([0.0, 0.5, 1.0]),
       sparse_result=st.booleans())
def test_random_scoped_expressions_match_a_numpy_interpreter(text, out, seed, fmt, density, sparse_result):
    expression = f"Z({','.join(out)}) = {text}"
    try:
        assignment = parse(expression)
    except asp.ParseError:
        assume(False)
    rng = np.random.default_rng(seed)
    arrays = {name: np.round(rng.random(tuple(_EXTENTS[i] for i in idx)) * (rng.random(
        tuple(_EXTENTS[i] for i in idx)) < density) * 8) / 4 for name, idx in _OPERANDS.items()}
    used = {a.tensor for a in asp.notation.accesses(assignment.rhs)}
    operands = {n: (asp.Tensor.from_numpy(arrays[n], format=fmt) if len(_OPERANDS[n]) == 2 else arrays[n])
                for n in used}
    value, indices = _value(assignment.rhs, arrays)
    for index in assignment.reduction_indices:  # implicit: over the whole right-hand side
        value, indices = _summed(value, indices, index)
    expected = _aligned(value, indices, assignment.lhs.indices)
    expected = np.broadcast_to(expected, tuple(_EXTENTS[i.name] for i in assignment.lhs.indices))
    result = "s" * len(out) if sparse_result and out else None
    try:
        got = asp.evaluate(expression, format=result, **operands)
    except asp.ScheduleError:  # storage orders no loop order can follow: refused, never wrong
        return
    got = got.to_numpy() if isinstance(got, asp.Tensor) else np.asarray(got)
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10, err_msg=expression)

