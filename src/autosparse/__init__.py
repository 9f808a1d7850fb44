"""autosparse: a sparse tensor algebra compiler with automatic asymptotic scheduling.

This module is the public API; see ARCHITECTURE.md's public contract for the names it promises.
"""

from .config import memory_limit, set_memory_limit
from .errors import AutosparseError, FormatError, MemoryLimitError, ParseError, ShapeError
from .format import Format, register_level
from .io import read, write
from .tensor import Tensor

__version__ = "0.1.0"

__all__ = [
    "AutosparseError", "Format", "FormatError", "MemoryLimitError", "ParseError", "ShapeError", "Tensor", "memory_limit",
    "read", "register_level", "set_memory_limit", "write",
]
