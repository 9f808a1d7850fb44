"""CIN + dtypes -> a loaded kernel: lowering, then the runtime, memoised for the process.

The memo is keyed by everything that decides the C (the CIN, every tensor's value and index dtype, the
operands whose coordinates it checks, the instrumentation and the thread count) and by floating-point
contraction, which decides how the C is built, so kernels of equal CIN share one specialisation, a repeated
`evaluate` skips lowering and the C compiler both, and a kernel specialised after `set_fp_contract` is built
the new way.
"""

from __future__ import annotations

from ..cin import Stmt
from ..config import fp_contract
from ..lower.kernel import generate
from ..runtime import LoadedKernel, load_kernel
from ..runtime.abi import Types

_memo: dict[tuple, LoadedKernel] = {}


def specialise(cin: Stmt, types: Types, instrument: bool, num_threads: int | None) -> LoadedKernel:
    key = (cin, tuple(sorted(types.values.items())), tuple(sorted(types.indices.items())), types.checked, instrument,
           num_threads, fp_contract())
    kernel = _memo.get(key)
    if kernel is None:
        kernel = _memo[key] = load_kernel(generate(cin, types, instrument, num_threads))
    return kernel
