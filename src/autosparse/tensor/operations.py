"""The hook through which a Tensor's operators reach compiled kernels.

A Tensor's `@`, `+`, `-`, `*`, unary `-` and `sum` each compile one kernel, but kernels are built floors
above tensor/ (api evaluates expressions), which tensor/ may never import. So api installs one function
here when it is imported — autosparse's facade imports api, so a user always has it — and the operators
call it by the numpy name of what they compute.
"""

from __future__ import annotations

from typing import Protocol

from ..errors import AutosparseError

#: The operations whose results numpy types bool (comparisons, logical functions, any and all): the hook
#: computes them in the operands' value type (a Tensor stores no bool, design31.md risk 7) and gives a dense
#: result as numpy's bool array.
LOGICAL = frozenset({"less", "less_equal", "greater", "greater_equal", "equal", "not_equal", "logical_and",
                     "logical_or", "logical_not", "any", "all"})

#: The element-wise operations numpy's ufuncs of the same names compute (`abs`: np.absolute).
UFUNCS = frozenset({"add", "subtract", "multiply", "divide", "negative", "matmul", "maximum", "minimum", "abs", "sqrt",
                    "exp", "log", *(LOGICAL - {"any", "all"})})

#: The operations the hook computes, by numpy's names.
OPERATIONS = UFUNCS | {"dot", "sum", "any", "all"}


class ArrayOperations(Protocol):
    """Computes `name` (one of OPERATIONS) of the operands, numpy's way, as one compiled kernel; `axis`
    only for "sum". Operands: Tensors, numpy arrays, scipy.sparse matrices or numbers."""

    def __call__(self, name: str, operands: tuple, axis: int | tuple[int, ...] | None = None) -> object: ...


_installed: list[ArrayOperations] = []


def install(operations: ArrayOperations) -> None:
    """Make `operations` compute every Tensor operator from now on (api calls this once)."""
    _installed[:] = [operations]


def apply(name: str, *operands, axis: int | tuple[int, ...] | None = None) -> object:
    if not _installed:
        raise AutosparseError(f"Expected the array operations to be installed before computing {name}: "
                              f"import autosparse (which compiles the operators' kernels)")
    return _installed[0](name, operands, axis)
