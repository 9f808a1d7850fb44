"""autosparse: a sparse tensor algebra compiler with automatic asymptotic scheduling.

This module is the public API; see ARCHITECTURE.md's public contract for the names it promises.
"""

from . import array
from .api import Kernel, autoschedule, compile, einsum, evaluate
from .array import compute, fused, lazy
from .config import fp_contract, memory_limit, num_threads, set_fp_contract, set_memory_limit, set_num_threads
from .errors import (AutosparseError, CacheWarning, CompileError, FormatError, MemoryLimitError, ParseError,
                     PerformanceWarning, RangeError, ScheduleError, ShapeError)
from .format import Format, Layout, register_level
from .io import read, write
from .schedule import Schedule
from .tensor import Tensor

__version__ = "0.1.0"


def __getattr__(name: str):
    # `asp.distributed` without importing it (and Dask's client code) for every user
    if name == "distributed":
        import importlib

        return importlib.import_module(".distributed", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AutosparseError", "CacheWarning", "CompileError", "autoschedule", "Format", "FormatError", "Kernel", "Layout",
    "MemoryLimitError", "ParseError", "PerformanceWarning", "RangeError", "Schedule", "ScheduleError", "ShapeError",
    "Tensor", "array", "compile", "compute", "einsum", "evaluate", "fp_contract", "fused", "lazy", "memory_limit", "num_threads", "read", "register_level",
    "set_fp_contract", "set_memory_limit", "set_num_threads", "write",
]
