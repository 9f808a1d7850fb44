"""Zero-copy results: memory a kernel allocated → a numpy array that frees it.

A kernel that cannot know its output size in advance (a sparse result's `crd` and `vals`) grows
its arrays with C `malloc`/`realloc` and returns the pointers. `adopt` wraps such a block as a
numpy array without copying it; the block goes back to libc's `free` when the array (and every view
of it) is garbage collected.
"""

from __future__ import annotations

import ctypes

import numpy as np

_free = ctypes.CDLL(None).free
_free.argtypes = [ctypes.c_void_p]
_free.restype = None


class _Allocation:
    """Owns one malloc'ed block: numpy keeps it as the array's base, and it frees the block when collected."""

    def __init__(self, address: int, length: int, dtype: np.dtype):
        self.address = address
        self.__array_interface__ = {
            "version": 3, "data": (address, False), "shape": (length,), "typestr": dtype.str, "descr": dtype.descr,
        }

    def __del__(self, free=_free) -> None:  # `free` bound now: module globals may be gone at interpreter exit
        free(self.address)


def address(array: np.ndarray) -> int:
    """The address of a contiguous array's data, to pass to a kernel. `ctypes.c_char.from_buffer` finds
    it several times faster than `array.ctypes.data` (which matters for a call that lasts microseconds),
    but takes only writeable, non-empty buffers."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError):
        return array.ctypes.data


def adopt(address: int, length: int, dtype: np.dtype) -> np.ndarray:
    """The `length` elements of `dtype` at `address` (from C `malloc`) as an array that owns and frees them."""
    dtype = np.dtype(dtype)
    if not address or not length:
        if address:
            _free(address)
        return np.empty(0, dtype=dtype)
    return np.asarray(_Allocation(address, length, dtype))
