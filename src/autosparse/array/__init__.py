"""autosparse.array: the array API's functions on sparse and dense operands (`functions.py`: eager, one
kernel each), semirings for `matmul` (`semirings.py`), and lazy programs (`lazy.py`: `lazy`, `compute`),
which plan.py fuses into as few kernels as its rule allows."""

from .functions import (abs, add, all, any, asarray, divide, equal, exp, greater, greater_equal, less, less_equal,
                        log, logical_and, logical_not, logical_or, matmul, matrix_transpose, max, maximum, min,
                        minimum, multiply, negative, not_equal, permute_dims, prod, sqrt, subtract, sum, tensordot,
                        vecdot, where)
from .lazy import LazyArray, compute, lazy
from .semirings import SEMIRINGS, Semiring, lor_land, max_plus, max_times, min_plus, plus_times

__all__ = [
    "LazyArray", "SEMIRINGS", "Semiring", "abs", "add", "all", "any", "asarray", "compute", "divide", "equal", "exp",
    "greater", "greater_equal", "less", "less_equal", "lazy", "log", "logical_and", "logical_not", "logical_or",
    "lor_land", "matmul", "matrix_transpose", "max", "max_plus", "max_times", "maximum", "min", "min_plus", "minimum",
    "multiply", "negative", "not_equal", "permute_dims", "plus_times", "prod", "sqrt", "subtract", "sum", "tensordot",
    "vecdot", "where",
]
