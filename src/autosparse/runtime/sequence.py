"""Kernels run one after another in one native call: `run_sequence([(bound, args), ...])`.

Why: a kernel called from Python costs about 3.5 µs around its C even when its arguments are ready (the
ctypes call, the result's array, each operand's address), and a solver's fused step (array/fused.py) calls
several short kernels every iteration: a CG iteration on a 2,000-row matrix is five kernels beside one
sparse product. Where every result is dense, each result's array can be made before any kernel runs, and
the kernels' arguments all gathered first; one call to a small C driver then runs them in order.

The driver only calls: each kernel is the one `BoundCall.run` would call, with the same arguments, so its
result is the same; the first kernel that fails stops the run, and its position and ReturnCode are given
back for the caller to run it again the ordinary way (which raises, or retries as a single call would).
"""

from __future__ import annotations

import ctypes
import functools

from .calls import BoundCall
from .library import load_library

_DRIVER = """#include <stdint.h>
typedef int (*autosparse_kernel_t)(void **, const int64_t *, int64_t *, int64_t *);
int autosparse_sequence(int64_t count, void *const *kernels, void **const *args, const int64_t *const *dims,
                        int64_t *const *sizes, int64_t *const *counters, int64_t *failed) {
    for (int64_t k = 0; k < count; k++) {
        int code = ((autosparse_kernel_t)kernels[k])(args[k], dims[k], sizes[k], counters[k]);
        if (code) {
            *failed = k;
            return code;
        }
    }
    return 0;
}
"""


def run_sequence(calls: list[tuple[BoundCall, object]]) -> tuple[int, int] | None:
    """Each bound call of a dense result, uninstrumented, run with its `args` (`BoundCall.arguments`, the
    result's array in its slot), in order: None when every one returned OK, else the position of the first
    that did not and its code (the later ones did not run)."""
    count = len(calls)
    kernels, args, dims, sizes, counters = (ctypes.c_void_p * count)(), (ctypes.c_void_p * count)(), \
        (ctypes.c_void_p * count)(), (ctypes.c_void_p * count)(), (ctypes.c_void_p * count)()
    for k, (bound, arguments) in enumerate(calls):  # item by item: faster than arrays made from lists
        kernels[k], args[k], dims[k] = bound.call.address, ctypes.addressof(arguments), bound.dims_address
        sizes[k], counters[k] = bound.sizes_address, bound.counters_address
    failed = ctypes.c_int64(-1)
    code = _driver()(ctypes.c_int64(count), kernels, args, dims, sizes, counters, ctypes.byref(failed))
    return None if code == 0 else (failed.value, code)


@functools.cache
def _driver():
    """The driver's C function, loaded once a process (it does no arithmetic: no flag changes what it does)."""
    function = load_library(_DRIVER).autosparse_sequence
    function.restype = ctypes.c_int
    return function
