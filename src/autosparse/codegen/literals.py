"""Python numbers → C constants of a kernel's value type, which C reads back as exactly the value numpy
would compute with.

A literal takes the kernel's value type, as numpy's weak Python scalars take the dtype of the array they
meet: `2 * a(i)` over int64 is int64 arithmetic (wrapping, as the kernels are built with -fwrapv), over
float32 float32 arithmetic. A float is written as its `repr`, the shortest decimal that reads back as the
same double (C's reading is correctly rounded too), cast to `float` where the kernel is float32 (numpy
rounds the double to float32 the same way); inf and NaN come from math.h. An integer that int64 cannot
hold is refused in an int64 kernel and becomes the nearest double elsewhere, as numpy does.

A literal is a C AST expression (`c_ast`); printed as an operand (`printer.operand`) it reads:

    c_literal(3, "int64_t")        →  INT64_C(3)
    c_literal(-2**63, "int64_t")   →  INT64_MIN          (the constant 9223372036854775808 has no signed type)
    c_literal(0.1, "float")        →  ((float)0.1)
    c_literal(1e23, "double")      →  1e+23
    c_literal(-inf, "double")      →  (-INFINITY)
    c_literal(1+2j, "double _Complex") →  CMPLX(1.0, 2.0)
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..errors import RangeError
from . import names
from .c_ast import CType, Expr, Literal, Var, call, cast, ctype

INT64_MIN, INT64_MAX = -2**63, 2**63 - 1  # as tensor.dtypes has them (codegen imports no tensor)
INT64, FLOAT32, COMPLEX = (names.value_type(t) for t in (np.int64, np.float32, np.complex128))


def c_literal(value: int | float | complex, value_type: "CType | str") -> Expr:
    """`value` as a C constant of the kernel's `value_type` (a C type from codegen.names)."""
    value_type = ctype(value_type)
    if isinstance(value, numbers.Integral):
        return _integer(int(value), value_type)
    if value_type == INT64:
        raise RangeError(f"Expected an integer literal in a kernel of int64 values, but found {value!r}")
    if isinstance(value, numbers.Real):
        return _real(float(value), value_type)
    return call("CMPLX", _double(value.real), _double(value.imag))


def _integer(value: int, value_type: CType) -> Expr:
    if value_type != INT64:
        return _real(_as_double(value), value_type)
    if not INT64_MIN <= value <= INT64_MAX:
        raise RangeError(f"Expected an integer literal that int64 holds (the kernel computes in int64), "
                         f"but found {_shown(value)}")
    if value == INT64_MIN:
        return Var("INT64_MIN")
    return call("INT64_C", value) if value >= 0 else -call("INT64_C", -value)


def _as_double(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        raise RangeError(f"Expected an integer literal that a double holds, but found {_shown(value)}") from None


def _shown(value: int) -> str:
    """A long integer by its size: Python refuses to print one of more than 4,300 digits."""
    return str(value) if value.bit_length() <= 128 else f"an integer of {value.bit_length()} bits"


def _real(value: float, value_type: CType) -> Expr:
    if value_type == COMPLEX:
        return call("CMPLX", _double(value), 0.0)
    return cast("float", _double(value)) if value_type == FLOAT32 else _double(value)


def _double(value: float) -> Expr:
    if math.isnan(value):
        return -Var("NAN") if math.copysign(1.0, value) < 0 else Var("NAN")
    if math.isinf(value):
        return Var("INFINITY") if value > 0 else -Var("INFINITY")
    return Literal(value)
