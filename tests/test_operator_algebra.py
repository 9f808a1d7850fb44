"""Every law the registry declares holds for its numpy function (notation/operators.py), on random
values with inf and NaN where the law claims them; and fill_of / role tables (notation/fills.py)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from autosparse.errors import AutosparseError, ScheduleError
from autosparse.notation import parse
from autosparse.notation.fills import Role, fill_of, result_fill, role
from autosparse.notation.operators import FUNCTIONS, REDUCTIONS, REGISTRY, dtype_of, fold, get

FLOATS = st.floats(allow_nan=True, allow_infinity=True, width=64)
FINITE = st.floats(-1e6, 1e6).map(lambda x: float(round(x)))  # small integers: + and * stay exact
INTS = st.integers(-(1 << 62), 1 << 62)
BOOLS = st.booleans()

# the value kinds each law is checked on: where a caveat excludes inf or NaN, only finite values
STRATEGIES = {"f": FLOATS, "i": INTS, "b": BOOLS}
_ORDERED_OR_ARITH = ("add", "subtract", "multiply", "divide", "minimum", "maximum")


def same(a, b) -> bool:
    """Equal, NaN equal to NaN."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind == "f" and b.dtype.kind == "f" and np.isnan(a) and np.isnan(b):
        return True
    return bool(a == b)


def kinds(op):
    return "b" if op.name.startswith("logical") else "fib" if op.name in ("minimum", "maximum") else "fi"


LAWFUL = [op for op in REGISTRY.values() if op.identity or op.annihilator]


@pytest.mark.parametrize("op", [op for op in LAWFUL if op.identity], ids=lambda op: op.name)
@pytest.mark.parametrize("kind", "fib")
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_identity(op, kind, data):
    dtype = {"f": np.float64, "i": np.int64, "b": np.bool_}[kind]
    e = op.identity.value(np.dtype(dtype))
    if kind not in kinds(op) or e is None:
        return
    x = dtype(data.draw(STRATEGIES[kind]))  # no identity has a caveat on inf or NaN
    for side in op.identity.sides:
        args = (e, x) if side == 0 else (x, e)
        with np.errstate(all="ignore"):
            assert same(op.numpy(*args), x), (op.name, side, x)
        assert op.is_identity(e, side)


@pytest.mark.parametrize("op", [op for op in LAWFUL if op.annihilator], ids=lambda op: op.name)
@pytest.mark.parametrize("kind", "fib")
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_annihilator(op, kind, data):
    dtype = {"f": np.float64, "i": np.int64, "b": np.bool_}[kind]
    z = op.annihilator.value(np.dtype(dtype))
    if kind not in kinds(op) or z is None:
        return
    # every annihilator's caveat excludes NaN (and inf where it says so): checked on finite values
    x = dtype(data.draw(st.floats(-1e300, 1e300) if kind == "f" else STRATEGIES[kind]))
    if op.name == "divide":
        x = x if x != 0 else dtype(1)
    for side in op.annihilator.sides:
        args = (z, x) if side == 0 else (x, z)
        with np.errstate(all="ignore"):
            assert same(op.numpy(*args), z), (op.name, side, x)
        assert op.is_annihilator(z, side)


def test_caveats_are_real():
    """The caveats name values that do break the laws (so the tests above exclude them for a reason)."""
    with np.errstate(all="ignore"):
        assert np.isnan(np.multiply(0.0, np.inf))
        assert np.isnan(np.add(np.inf, -np.inf))
    assert np.isnan(np.minimum(np.nan, -np.inf)) and np.isnan(np.maximum(np.nan, np.inf))
    assert np.isnan(np.minimum(np.nan, np.inf))  # NaN propagates through the identity too: same() accepts it


@pytest.mark.parametrize("op", [op for op in REGISTRY.values() if op.idempotent], ids=lambda op: op.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_idempotent(op, data):
    for kind in kinds(op):
        x = np.asarray(data.draw(STRATEGIES[kind]))
        assert same(op.numpy(x, x), x)


def test_not_idempotent():
    assert not any(REGISTRY[name].idempotent for name in ("add", "multiply", "subtract", "divide"))
    assert np.add(1.0, 1.0) != 1.0 and np.multiply(2.0, 2.0) != 2.0


@pytest.mark.parametrize("op", [op for op in REGISTRY.values() if op.commutative], ids=lambda op: op.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_commutative(op, data):
    for kind in kinds(op):
        x, y = (np.asarray(data.draw(STRATEGIES[kind])) for _ in range(2))
        with np.errstate(all="ignore"):
            assert same(op.numpy(x, y), op.numpy(y, x))


@pytest.mark.parametrize("op", [op for op in REGISTRY.values() if op.associative], ids=lambda op: op.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_associative(op, data):
    for kind in kinds(op):
        draw = FINITE if kind == "f" and op.name in ("add", "multiply") else STRATEGIES[kind]
        if kind == "i" and op.name in ("add", "multiply"):
            draw = st.integers(-1000, 1000)
        x, y, z = (np.asarray(data.draw(draw)) for _ in range(3))
        if op.name == "multiply" and kind == "f":
            x, y, z = (np.asarray(float(v) % 1000) for v in (x, y, z))
        assert same(op.numpy(op.numpy(x, y), z), op.numpy(x, op.numpy(y, z)))


DISTRIBUTIVE = [(op, REGISTRY[other]) for op in REGISTRY.values() for other in sorted(op.distributes_over)]


@pytest.mark.parametrize("op,over", DISTRIBUTIVE, ids=lambda o: o.name)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_distributes(op, over, data):
    """a op (b over c) = (a op b) over (a op c), on both sides (every distributing operator commutes)."""
    for kind in kinds(op):
        draw = st.integers(-1000, 1000).map(float) if kind == "f" else \
            st.integers(-1000, 1000) if kind == "i" else STRATEGIES[kind]
        a, b, c = (np.asarray(data.draw(draw)) for _ in range(3))
        assert same(op.numpy(a, over.numpy(b, c)), over.numpy(op.numpy(a, b), op.numpy(a, c)))
        assert op.commutative


def test_declarations():
    """The registry covers the issue's operators, and the reductions and their words."""
    assert set(REGISTRY) >= {"add", "subtract", "multiply", "divide", "negative", "minimum", "maximum",
                             "logical_and", "logical_or", "logical_not", "abs", "sqrt", "exp", "log", "less",
                             "less_equal", "greater", "greater_equal", "equal", "not_equal", "where", "pattern"}
    assert {word: op.name for word, op in REDUCTIONS.items()} == {
        "sum": "add", "prod": "multiply", "min": "minimum", "max": "maximum", "any": "logical_or",
        "all": "logical_and"}
    assert not {"add", "subtract", "multiply", "divide", "negative"} & set(FUNCTIONS)
    assert REGISTRY["subtract"].is_identity(0, 1) and not REGISTRY["subtract"].is_identity(0, 0)
    assert REGISTRY["divide"].is_annihilator(0.0, 0) and not REGISTRY["divide"].is_annihilator(0.0, 1)
    assert REGISTRY["minimum"].is_identity(np.iinfo(np.int64).max) and REGISTRY["minimum"].is_identity(np.inf)
    assert not REGISTRY["minimum"].is_identity(np.float32(3.0)) and REGISTRY["minimum"].identity.value(
        np.dtype(complex)) is None
    with pytest.raises(AutosparseError, match="'fmin'"):
        get("fmin")


@pytest.mark.parametrize("name,dtypes,expected", [
    ("add", (np.int64, np.float32), np.float64), ("less", (np.float64, np.float64), np.bool_),
    ("divide", (np.int64, np.int64), np.float64), ("sqrt", (np.float32,), np.float32),
    ("logical_or", (np.float64, np.bool_), np.bool_), ("pattern", (np.float64,), np.bool_),
    ("where", (np.bool_, np.float32, np.float32), np.float32)])
def test_result_dtype(name, dtypes, expected):
    assert REGISTRY[name].result_dtype(*dtypes) == expected


def test_fold():
    assert fold(REGISTRY["exp"], 0.0) == 1.0 and fold(REGISTRY["log"], 0.0) == -np.inf
    assert fold(REGISTRY["pattern"], 3.0) == False  # noqa: E712 (a fill is not stored)
    assert dtype_of(True) == np.bool_ and dtype_of(np.inf) == np.float64


# --- fill_of and role ---------------------------------------------------------------------------------

INF = np.inf
A, N, D = Role.ANNIHILATES, Role.NEITHER, Role.DROPS


@pytest.mark.parametrize("text,fills,fill", [
    ("y(i) = min(j, A(i,j) + d(j))", {"A": INF, "d": INF}, INF),      # min-plus over +inf
    ("y(i) = A(i,j) * x(j)", {}, 0),
    ("C(i,j) = pattern(M(i,j)) * A(i,j)", {"M": 5.0}, 0),             # a mask: pattern reads no value
    ("C(i,j) = exp(A(i,j))", {}, 1.0),                                 # exp moves fill 0 to 1
    ("C(i,j) = maximum(A(i,j), 0)", {"A": -1.0}, 0.0),
    ("y(i) = any(j, logical_and(A(i,j), q(j)))", {"A": False, "q": False}, False),
    ("y(i) = max(j, A(i,j))", {"A": 3.0}, 3.0),                        # idempotent over any fill
    ("y(i) = prod(j, A(i,j))", {}, 0),                                 # prod over its annihilator
    ("C(i,j) = where(M(i,j), A(i,j), 7)", {"M": False}, 7),
    ("y(j) = logical_not(pattern(v(j))) * A(j,i) * q(i)", {}, 0),
])
def test_fill_of(text, fills, fill):
    assert same(result_fill(parse(text), fills), fill)


@pytest.mark.parametrize("text,fills", [
    ("y(i) = A(i,j) * x(j)", {"A": 1, "x": 1}),                       # a sum over fill 1: n, not a fill
    ("y(i) = min(j, prod(k, B(i,j,k)) + 1)", {"B": 2}),
])
def test_fill_of_refuses_a_reduction_over_a_fill_it_neither_drops_nor_repeats(text, fills):
    with pytest.raises(ScheduleError, match="fill"):
        result_fill(parse(text), fills)


def node(text, *path):
    expr = parse(text).rhs
    for n in path:
        expr = expr.children()[n]
    return expr


@pytest.mark.parametrize("text,path,fills,roles", [
    ("C(i,j) = A(i,j) * B(i,j)", (), {}, (A, A)),
    ("C(i,j) = A(i,j) + B(i,j)", (), {}, (D, D)),
    ("C(i,j) = A(i,j) - B(i,j)", (), {}, (N, D)),                      # 0 - b is -b: the left is no identity
    ("C(i,j) = A(i,j) / B(i,j)", (), {}, (A, N)),
    ("C(i,j) = A(i,j) * B(i,j)", (), {"A": INF}, (N, A)),
    ("y(i) = min(j, A(i,j) + d(j))", (0,), {"A": INF, "d": INF}, (A, A)),   # +inf annihilates +
    ("y(i) = min(j, A(i,j) + d(j))", (), {"A": INF, "d": INF}, (D,)),        # ... and drops out of min
    ("y(i) = min(j, A(i,j))", (), {"A": 0.0}, (N,)),
    ("C(i,j) = minimum(A(i,j), B(i,j))", (), {"A": INF, "B": -INF}, (D, A)),
    ("C(i,j) = maximum(A(i,j), B(i,j))", (), {}, (N, N)),
    ("C(i,j) = maximum(A(i,j), 0)", (), {}, (A, N)),                   # relu: the other child is constant
    ("C(i,j) = exp(A(i,j))", (), {}, (A,)),
    ("C(i,j) = pattern(M(i,j)) * A(i,j)", (), {"M": INF}, (A, A)),     # a mask intersects
    ("y(j) = logical_not(pattern(v(j))) * q(j)", (), {}, (D, A)),      # a complemented mask does not bound
    ("C(i,j) = where(M(i,j), A(i,j), 0)", (), {"M": False}, (A, N, N)),
    ("C(i,j) = where(M(i,j), A(i,j), B(i,j))", (), {"M": False}, (N, N, N)),
    ("C(i,j) = logical_or(A(i,j), B(i,j))", (), {"A": True, "B": False}, (A, D)),
])
def test_role(text, path, fills, roles):
    expr = node(text, *path)
    assert tuple(role(expr, n, fills) for n in range(len(expr.children()))) == roles


def test_role_of_a_constant_child_is_neither():
    assert role(node("C(i,j) = A(i,j) * 2"), 1, {}) is Role.NEITHER
    assert fill_of(node("C(i,j) = A(i,j) * 2"), {"A": 1.5}) == 3.0
