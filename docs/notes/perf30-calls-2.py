"""The sorted scipy COO -> CSR figures of docs/notes/perf30-calls-2.md: `Tensor.from_scipy` of a canonical
coo_array (10 M entries, 1,000,000²) against scipy's `tocsr`, interleaved, thread CPU time, medians.

    PYTHONPATH=src python docs/notes/perf30-calls-2.py ROUNDS [int32|int64]   # coordinates' dtype
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp

n = 10_000_000
rng = np.random.default_rng(42)
r, c = rng.integers(0, n // 10, (2, n))
m = sp.csr_array(sp.coo_array((rng.random(n), (r, c)), shape=(n // 10, n // 10)))
m.sum_duplicates()
coo = m.tocoo()
if len(sys.argv) > 2:
    coo = sp.coo_array((coo.data, (coo.row.astype(sys.argv[2]), coo.col.astype(sys.argv[2]))), shape=coo.shape)
    coo.has_canonical_format = True
print(coo.row.dtype, coo.has_canonical_format)


def timed(f) -> float:
    start = time.thread_time()
    f()
    return time.thread_time() - start


ours, scipy = [], []
for _ in range(int(sys.argv[1])):
    ours.append(timed(lambda: asp.Tensor.from_scipy(coo)))
    scipy.append(timed(coo.tocsr))
print(f"ours {statistics.median(ours) * 1e3:.1f} ms (min {min(ours) * 1e3:.1f})  scipy {statistics.median(scipy) * 1e3:.1f} "
      f"(min {min(scipy) * 1e3:.1f})  speed ratio of medians {statistics.median(scipy) / statistics.median(ours):.2f}")
