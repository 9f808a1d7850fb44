"""The runtime: C source → cached shared object → callable, and kernel-allocated memory → numpy arrays.

Generated C is compiled once per machine by the system C compiler and kept in an on-disk cache
(`cache_dir()`), so later processes only `dlopen` it. Results a kernel `malloc`s are handed to numpy
without a copy by `adopt`.
"""

from .buffers import address, adopt
from .cache import cache_dir
from .library import load_library

__all__ = ["address", "adopt", "cache_dir", "load_library"]
