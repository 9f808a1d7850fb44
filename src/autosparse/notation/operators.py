"""The operators of index notation, each declared once with its algebra.

Every stage that must know what an absent entry does to an expression (lattices, zero elimination, the
result's format, the autoschedulers) reads it here: an operator's identity (the value that drops out:
`x + 0`, `min(x, +inf)`), its annihilator (the value that decides the result alone: `x * 0`,
`x or True`), idempotence (`min(x, x) = x`, so a reduction over repeated fills is the fill), and which
operators it distributes over (`a * (b + c)`, `a + min(b, c)`), each on the sides where it holds. The
numpy function is the meaning, and the tests' oracle: every declared law is checked against it.

NaN and infinities: the element-wise operators mean what numpy's mean, so `minimum`/`maximum` propagate
NaN (numpy's `minimum`, not C's `fmin`). Laws hold for every value except where a law's `caveat` says,
in the architecture's words for `x * 0 -> 0`: a kernel keeps NaN and Inf out of the entries where the
caveat applies, or gets the sparse answer rather than numpy's (0 * inf is NaN in numpy, 0 in a sparse
product that never reads the absent 0).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ..codegen import functions as c
from ..errors import AutosparseError

Value = object  # a Python or numpy scalar
ByDtype = Callable[[np.dtype], Value]  # the law's value for a dtype, None where the dtype has none


@dataclass(frozen=True, slots=True)
class Law:
    """A value that acts the same on every argument at `sides` (argument positions): an identity leaves
    the other argument, an annihilator is the result. `caveat` says which values break it."""

    value: ByDtype
    sides: tuple[int, ...] = (0, 1)
    caveat: str = ""

    def holds(self, value: Value, side: int) -> bool:
        """Whether `value`, at argument `side`, is this law's value for its own dtype."""
        if side not in self.sides:
            return False
        expected = self.value(dtype_of(value))
        return expected is not None and bool(expected == value)


@dataclass(frozen=True, slots=True)
class Operator:
    """One operator: its arity, its numpy meaning, and the algebra stages may rely on.

    `function`: written `name(a, b)` in the notation (numpy's and the array API's name); otherwise it has
    a symbol (`+ - * /`, unary `-`). `reduction`: the word of its reduction in the notation (`sum(j, e)`,
    `min(j, e)`), or None. `reads_values`: False for `pattern`, which is 1 wherever its operand is stored
    and reads no value, so its fill is False whatever its operand's fill."""

    name: str
    arity: int
    numpy: Callable
    identity: Law | None = None
    annihilator: Law | None = None
    idempotent: bool = False
    commutative: bool = False
    associative: bool = False
    distributes_over: frozenset[str] = frozenset()
    reduction: str | None = None
    function: bool = True
    reads_values: bool = True
    c: Callable | None = None  # (value type, *operands' C) -> C (codegen/functions.py); None: a symbol lowering prints

    def result_dtype(self, *dtypes) -> np.dtype:
        """numpy's result type for operands of `dtypes` (comparisons and logicals give bool, division and
        the transcendental functions of integers float64)."""
        with np.errstate(all="ignore"):
            return np.asarray(self.numpy(*(np.zeros(1, dtype) for dtype in dtypes))).dtype

    def is_identity(self, value: Value, side: int = 0) -> bool:
        return self.identity is not None and self.identity.holds(value, side)

    def is_annihilator(self, value: Value, side: int = 0) -> bool:
        return self.annihilator is not None and self.annihilator.holds(value, side)


def dtype_of(value: Value) -> np.dtype:
    """The dtype a scalar fill has: numpy's for numpy scalars, int64/float64/bool/complex128 for Python's."""
    return np.asarray(value).dtype


def fold(op: Operator, *values: Value) -> Value:
    """`op` applied to fills through its numpy function (log(0) is -inf, quietly, as in a kernel); the
    pattern of a fill is False, since a fill is what is not stored."""
    if not op.reads_values:
        return np.bool_(False)
    with np.errstate(all="ignore"):
        return op.numpy(*values)[()]


def _pattern(x):
    """1 (True) where the operand is stored: applied to stored values it is True everywhere, and absent
    entries take its fill, False."""
    return np.ones(np.shape(x), bool)


# --- the laws' values per dtype -----------------------------------------------------------------------

def _constant(value) -> ByDtype:
    return lambda dtype: value


def _top(dtype: np.dtype) -> Value:
    """The largest value of `dtype`: +inf, the integer maximum, True; None for complex (unordered)."""
    return _bound(dtype, np.inf, "max", True)


def _bottom(dtype: np.dtype) -> Value:
    return _bound(dtype, -np.inf, "min", False)


def _bound(dtype: np.dtype, real, integer: str, boolean: bool) -> Value:
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return boolean
    if dtype.kind in "iu":
        return getattr(np.iinfo(dtype), integer)
    return real if dtype.kind == "f" else None


def _infinity(dtype: np.dtype) -> Value:
    """+inf annihilates + only for floats, and only where -inf and NaN stay out (inf + -inf is NaN)."""
    return np.inf if np.dtype(dtype).kind == "f" else None


_NONFINITE = "holds where no operand is inf or NaN (0 * inf is NaN)"
_NAN = "NaN propagates (numpy's minimum/maximum), so NaN is no exception to the identity but breaks the annihilator"
_ORDERED = "no identity for complex values (unordered)"

_SYMBOLS = dict(function=False)

_OPERATORS = (
    Operator("add", 2, np.add, Law(_constant(0)), Law(_infinity, caveat="no -inf or NaN meets it"),
             commutative=True, associative=True, distributes_over=frozenset({"minimum", "maximum"}),
             reduction="sum", **_SYMBOLS),
    Operator("subtract", 2, np.subtract, Law(_constant(0), (1,)), **_SYMBOLS),
    Operator("multiply", 2, np.multiply, Law(_constant(1)), Law(_constant(0), caveat=_NONFINITE),
             commutative=True, associative=True, distributes_over=frozenset({"add", "subtract"}),
             reduction="prod", **_SYMBOLS),
    Operator("divide", 2, np.true_divide, Law(_constant(1), (1,)),
             Law(_constant(0), (0,), caveat="0 / b is 0 only where b is neither 0 nor NaN"), **_SYMBOLS),
    Operator("negative", 1, np.negative, **_SYMBOLS),
    Operator("minimum", 2, np.minimum, Law(_top, caveat=f"{_NAN}; {_ORDERED}"), Law(_bottom, caveat=_NAN),
             idempotent=True, commutative=True, associative=True, distributes_over=frozenset({"maximum"}),
             reduction="min", c=c.minimum),
    Operator("maximum", 2, np.maximum, Law(_bottom, caveat=f"{_NAN}; {_ORDERED}"), Law(_top, caveat=_NAN),
             idempotent=True, commutative=True, associative=True, distributes_over=frozenset({"minimum"}),
             reduction="max", c=c.maximum),
    Operator("logical_and", 2, np.logical_and, Law(_constant(True), caveat="the result is bool: x and True is bool(x)"),
             Law(_constant(False)), idempotent=True, commutative=True, associative=True,
             distributes_over=frozenset({"logical_or"}), reduction="all", c=c.logical_and),
    Operator("logical_or", 2, np.logical_or, Law(_constant(False), caveat="the result is bool: x or False is bool(x)"),
             Law(_constant(True)), idempotent=True, commutative=True, associative=True,
             distributes_over=frozenset({"logical_and"}), reduction="any", c=c.logical_or),
    Operator("logical_not", 1, np.logical_not, c=c.logical_not),
    Operator("abs", 1, np.abs, c=c.absolute),
    Operator("sqrt", 1, np.sqrt, c=c.libm("sqrt")),
    Operator("exp", 1, np.exp, c=c.libm("exp")),
    Operator("log", 1, np.log, c=c.libm("log")),
    Operator("less", 2, np.less, c=c.binary("<")),
    Operator("less_equal", 2, np.less_equal, c=c.binary("<=")),
    Operator("greater", 2, np.greater, c=c.binary(">")),
    Operator("greater_equal", 2, np.greater_equal, c=c.binary(">=")),
    Operator("equal", 2, np.equal, commutative=True, c=c.binary("==")),
    Operator("not_equal", 2, np.not_equal, commutative=True, c=c.binary("!=")),
    Operator("where", 3, np.where, c=c.where),
    Operator("pattern", 1, _pattern, reads_values=False),
)

REGISTRY: Mapping[str, Operator] = {op.name: op for op in _OPERATORS}

#: The reduction words of the notation (`sum`, `prod`, `min`, `max`, `any`, `all`) -> their operator.
REDUCTIONS: Mapping[str, Operator] = {op.reduction: op for op in _OPERATORS if op.reduction}

#: The function words of the notation (`maximum`, `exp`, `where`, `pattern` …) -> their operator.
FUNCTIONS: Mapping[str, Operator] = {op.name: op for op in _OPERATORS if op.function}


def get(name: str) -> Operator:
    """The operator called `name`; an AutosparseError naming the known ones otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise AutosparseError(f"Expected an operator among {sorted(REGISTRY)}, but found {name!r}") from None
