"""CIN + dtypes -> a loaded kernel: lowering, then the runtime, memoised for the process.

The memo is keyed by everything that decides the C (the CIN, every tensor's value and index dtype, the
operands whose coordinates it checks, the instrumentation and the thread count), so kernels of equal CIN
share one specialisation, and a repeated `evaluate` skips lowering and the C compiler both.
"""

from __future__ import annotations

from ..cin import Stmt
from ..lower.kernel import generate
from ..runtime import LoadedKernel, load_kernel
from ..runtime.abi import Types

_memo: dict[tuple, LoadedKernel] = {}


def specialise(cin: Stmt, types: Types, instrument: bool, num_threads: int | None) -> LoadedKernel:
    key = (cin, tuple(sorted(types.values.items())), tuple(sorted(types.indices.items())), types.checked, instrument,
           num_threads)
    kernel = _memo.get(key)
    if kernel is None:
        kernel = _memo[key] = load_kernel(generate(cin, types, instrument, num_threads))
    return kernel
