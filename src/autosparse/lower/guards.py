"""Where a `where`'s producer may be skipped, and where a reduction may stop: the algebra that lets a fused,
masked program do less work than its steps apart (GraphBLAS's masked pull BFS, `q<!v> = A' lor.land q`).

A consumer `f(m, t)` that an operand `m` decides alone when `m` is `f`'s annihilator (`logical_and(m, t)`
at `m` false, `where(m, t, b)` at `m` false, `m * t` at `m` 0 for integers) needs its temporary `t` only
where `m` is not that value: when `m` reads no temporary, its value is known before the producer runs, so
the producer runs only there (`guards`). Skipped, the temporary keeps its reduction's identity and the
consumer computes `f(annihilator, identity)`, which is the annihilated value the full producer would have
given too: the C that consumes is unchanged.

A law is trusted only where it holds for every value: without a caveat (`logical_and` by False,
`logical_or` by True, `where`'s branch choice), or, in kernels of integers, where the caveat is about inf
and NaN alone (`0 * inf` is NaN in numpy: a float `mask * sum(...)` is not guarded, so a row that sums to
inf or NaN under a 0 mask stays NaN as it was).

A reduction whose operator has a caveat-free annihilator (`any` by True, `all` by False) is decided for
good once its register reaches it (`saturates`): a sequential loop stops there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..cin.ast import accesses
from ..notation.ast import Apply, Mul
from ..notation.operators import REGISTRY, Operator, Value

#: The operators whose annihilator's caveat is about inf and NaN alone, which integers do not have.
_FINITE_ONLY = frozenset({"multiply", "minimum", "maximum"})


@dataclass(frozen=True)
class Guard:
    """The temporaries matter only where `operand` (an expression reading none) is not `value`."""

    operand: object
    value: Value


def guards(expr, temporaries: frozenset[str], integral: bool) -> tuple[Guard, ...]:
    """The guards under which `expr` reads `temporaries` at all (none: it always does), down the one child
    of each operator that reads them, in a kernel of integer values where `integral`."""
    op, args = _operation(expr)
    if op is None:
        return ()
    reading = [k for k, arg in enumerate(args) if _reads(arg, temporaries)]
    if len(reading) != 1:
        return ()
    (side,) = reading
    if op.name == "where":  # where(c, a, b): a matters only where c holds, b only where it does not
        if side == 0:
            return ()
        found = Guard(args[0], side == 2)
    else:
        other = 1 - side
        value = _annihilator(op, other, integral)
        if value is None:
            return ()
        found = Guard(args[other], value)
    return found, *guards(args[side], temporaries, integral)


def saturates(reduce: str) -> Value | None:
    """The value at which a reduction by `reduce` is decided for any further terms (True for `any`, False
    for `all`), where that holds for every value; None for the others."""
    op = REGISTRY.get(reduce)
    if op is None or op.annihilator is None or op.annihilator.caveat:
        return None
    return op.annihilator.value(np.dtype(bool))


def _annihilator(op: Operator, side: int, integral: bool) -> Value | None:
    """`op`'s annihilator at argument `side`, where the law holds for every value of the kernel's type."""
    law = op.annihilator
    if law is None or side not in law.sides or op.arity != 2:
        return None
    if law.caveat and not (integral and op.name in _FINITE_ONLY):
        return None
    return law.value(np.dtype(np.int64 if integral else np.float64))


def _operation(expr) -> tuple[Operator | None, tuple]:
    if isinstance(expr, Mul):
        return REGISTRY["multiply"], (expr.left, expr.right)
    if isinstance(expr, Apply):
        return REGISTRY[expr.op], tuple(expr.args)
    return None, ()


def _reads(expr, temporaries: frozenset[str]) -> bool:
    return any(access.tensor.name in temporaries for access in accesses(expr))
