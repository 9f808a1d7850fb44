"""Section inner (issue 30): versions of one generated kernel (C files saved from kernel.source, e.g. before and
after a change) built with the kernels' flags and called through ctypes on the same arrays of the kernels
suite; thread-CPU time, interleaved medians (docs/notes/perf30-inner.md). The dense result is zeroed inside
the timing, as the caller does.

    PYTHONPATH=src:bench python docs/notes/perf30-inner-harness.py spmm power-law 0.25 21 \\
        old=spmm_old.c:-fwrapv new=spmm_new.c:-fwrapv
"""
import sys, ctypes, subprocess, tempfile, time, statistics, numpy as np
from autosparse_bench import kernels as K
kind, fam, scale, rounds = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
variants = sys.argv[5:]   # name=file.c[:extraflags]
key = {"spmv": "spmv", "spmvz": "spmv+z", "spmm": "spmm", "sddmm": "sddmm"}[kind]
m = K.family_matrix(fam, int(K.SIZES["full"][key] * scale), K.PER_ROW.get(key, 10), 0)
rng = np.random.default_rng(0)
n, c = m.shape
P = lambda a: a.ctypes.data
if kind in ("spmv", "spmvz"):
    x, z = rng.random(c), rng.random(n); y = np.empty(n)
    args = [m.indptr, m.indices, m.data, x] + ([z] if kind == "spmvz" else []) + [y]
    dims = [n, c]; expect = lambda: m @ x + (z if kind == "spmvz" else 0); out = lambda: y
elif kind == "spmm":
    b = rng.random((c, 64)); C = np.zeros((n, 64))
    args = [m.indptr, m.indices, m.data, b, C]; dims = [n, c, 64]; expect = lambda: m @ b; out = lambda: C
    def reset(): C[:] = 0
else:
    cc, d = rng.random((n, 32)), rng.random((32, c))
    import os
    dd = np.ascontiguousarray(d.T) if os.environ.get('DCOLS') else d
    args = [m.indptr, m.indices, m.data, cc, dd, None, None, None]; dims = [n, c, 32]
    row = np.repeat(np.arange(n), np.diff(m.indptr))
    expect = lambda: m.data * np.einsum("nk,kn->n", cc[row], d[:, m.indices])
argv = (ctypes.c_void_p * 8)(*[P(a) if a is not None else None for a in args])
dimv = (ctypes.c_int64 * 4)(*dims); sizes = (ctypes.c_int64 * 8)(); counters = (ctypes.c_int64 * 64)()
libc = ctypes.CDLL(None)
fns = {}
for v in variants:
    name, rest = v.split("=", 1); f, _, extra = rest.partition(":")
    so = f"{tempfile.mkdtemp()}/{name}.so"
    subprocess.run(["gcc", "-O3", "-march=native", "-fPIC", "-shared", "-std=c11", *extra.split(), f, "-o", so],
                   check=True)
    fn = ctypes.CDLL(so).autosparse_kernel; fn.restype = ctypes.c_int; fns[name] = fn
def call(fn):
    if kind == "spmm": C[:] = 0
    r = fn(argv, dimv, sizes, counters); assert r == 0, r
    if kind == "sddmm":
        vals = np.ctypeslib.as_array(ctypes.cast(argv[7], ctypes.POINTER(ctypes.c_double)), (m.nnz,)).copy()
        for s in (5, 6, 7): libc.free(ctypes.c_void_p(argv[s]))
        return vals
    return out()
for nm, fn in fns.items():
    assert np.allclose(call(fn), expect()), nm
t = {nm: [] for nm in fns}
for r in range(rounds):
    for nm, fn in list(fns.items())[r % len(fns):] + list(fns.items())[:r % len(fns)]:
        s = time.thread_time(); call(fn); t[nm].append(time.thread_time() - s)
print(kind, fam, scale, " ".join(f"{nm}={statistics.median(v)*1e3:.3f}ms" for nm, v in t.items()))
