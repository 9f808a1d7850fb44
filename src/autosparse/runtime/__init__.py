"""The runtime: C source → cached shared object → callable, and kernel-allocated memory → numpy arrays.

Generated C is compiled once per machine by the system C compiler and kept in an on-disk cache
(`cache_dir()`), so later processes only `dlopen` it. Results a kernel `malloc`s are handed to numpy
without a copy by `adopt`. A loaded kernel is called through `calls.KernelCall`, which marshals the
operands and decodes the return code as the kernel's `KernelSource` declares.
"""

from .buffers import address, adopt
from .cache import cache_dir
from .calls import BoundCall, KernelCall, LoadedKernel, load_kernel
from .library import load_library
from .sequence import run_sequence

__all__ = ["BoundCall", "KernelCall", "LoadedKernel", "address", "adopt", "cache_dir", "load_kernel", "load_library", "run_sequence"]
