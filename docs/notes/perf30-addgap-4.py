"""Issue 30, round 5: the same Add kernel called directly (asp.compile) and through its operator (A + B), beside
scipy, interleaved in one process, at 1 and 2 threads, on a 5 M-entry 2-D stencil. Run:
PYTHONPATH=src python docs/notes/perf30-addgap-4.py"""
import statistics
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp
n = 1000
I = sp.identity(n); T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
a = sp.csr_array(sp.kron(I, T) + sp.kron(T, I)); a.data[:] = np.random.default_rng(0).random(a.nnz)
b = a.copy(); b.data[:] = np.random.default_rng(1).random(b.nnz)
print("nnz", a.nnz)
ta, tb = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
for threads in (1, 2):
    asp.set_num_threads(threads)
    k = asp.compile("C(i,j) = A(i,j) + B(i,j)", formats={"A": "csr", "B": "csr", "C": "csr"}, num_threads=threads)
    r1 = k(A=ta, B=tb); r2 = ta + tb
    print(threads, r1.format, r2.format)
    calls = {"direct": lambda: k(A=ta, B=tb), "operator": lambda: ta + tb, "scipy": lambda: a + b}
    t = {name: [] for name in calls}
    for _ in range(15):
        for name, f in calls.items():
            s = time.perf_counter(); f(); t[name].append(time.perf_counter() - s)
    print({name: round(statistics.median(v) * 1e3, 3) for name, v in t.items()})
