"""Before/after figures of docs/notes/perf30-convert.md: autosparse's conversions against scipy (matrices)
and pydata sparse / a numpy lexsort (3-D), medians of thread-CPU time on the conversion suite's data.

    PYTHONPATH=src:bench python docs/notes/perf30-convert.py 10000000   # the suite's generated sizes
"""
import sys, time
import numpy as np, scipy.io, scipy.sparse as sp
import sparse
import autosparse as asp
from autosparse_bench.data import shipped_data
DATA = shipped_data()
def med(f, n=9):
    f()
    ts = []
    for _ in range(n):
        t = time.thread_time(); f(); ts.append(time.thread_time() - t)
    return float(np.median(ts))
def canonical(m):
    m = sp.csr_array(m); m.sum_duplicates(); return m
def matrices(size):
    for name in ("bcsstk13", "Groebner_id2003_aug", "memplus", "soc-brightkite"):
        yield name, canonical(scipy.io.mmread(f"{DATA}/{name}.mtx.gz"))
    rng = np.random.default_rng(42); n = size // 10
    r, c = rng.integers(0, n, (2, size))
    yield f"random {n}^2", canonical(sp.coo_array((rng.random(size), (r, c)), shape=(n, n)))
def tensors(size):
    rng = np.random.default_rng(42)
    nnz = size * 3 // 10
    shape = (max(nnz // 100, 1), max(nnz // 200, 1), max(nnz // 400, 1))
    keys = np.unique(rng.integers(0, np.prod(shape, dtype=np.int64), nnz))
    yield "random 3-D", np.array(np.unravel_index(keys, shape)), rng.random(len(keys)), shape
size = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
for name, m in matrices(size):
    coo = m.tocoo(); sh = np.random.default_rng(0).permutation(m.nnz)
    shuffled = sp.coo_array((coo.data[sh], (coo.row[sh], coo.col[sh])), shape=m.shape)
    ours = asp.Tensor.from_scipy(m); ours_coo = ours.to_format("coo")
    rows = [("shuffled scipy COO -> CSR", lambda: asp.Tensor.from_scipy(shuffled), shuffled.tocsr),
            ("CSR -> COO", lambda: ours.to_format("coo"), m.tocoo),
            ("scipy COO -> CSR", lambda: asp.Tensor.from_scipy(coo), coo.tocsr),
            ("COO -> CSR", lambda: ours_coo.to_format("csr"), coo.tocsr),
            ("CSR -> CSC", lambda: ours.to_format("csc"), m.tocsc)]
    for conv, a, b in rows:
        ta, tb = med(a), med(b)
        print(f"{name:22s} {conv:26s} asp {ta*1e3:8.3f} ms  scipy {tb*1e3:8.3f} ms  asp/scipy speed {tb/ta:5.2f}x", flush=True)
for name, coords, vals, shape in tensors(size):
    sh = np.random.default_rng(0).permutation(len(vals))
    t = asp.Tensor.from_coo(coords, vals, shape)
    base = lambda: (lambda o: (coords[:, o], vals[o]))(np.lexsort(coords[::-1]))
    def lex(c=coords[:, sh], v=vals[sh]):
        o = np.lexsort(c[::-1]); return c[:, o], v[o]
    pc = sparse.COO(coords, vals, shape=shape, sorted=True, has_duplicates=False)
    cs, vs = coords[:, sh], vals[sh]
    sparse.COO(cs, vs, shape=shape).asformat("gcxs", compressed_axes=(0,))
    rows = [("COO tensor -> CSF", lambda: t.to_format("csf"), lambda: pc.asformat("gcxs", compressed_axes=(0,)), lex),
            ("shuffled coords -> CSF", lambda: asp.Tensor.from_coo(cs, vs, shape, format="csf"),
             lambda: sparse.COO(cs, vs, shape=shape).asformat("gcxs", compressed_axes=(0,)), lex)]
    for conv, a, b, c in rows:
        ta, tb, tc = med(a, 5), med(b, 5), med(c, 5)
        print(f"{name:22s} {conv:26s} asp {ta*1e3:8.3f} ms  pydata {tb*1e3:8.3f} ms  asp/pydata speed {tb/ta:5.2f}x  lexsort {tc*1e3:8.3f} ms  asp/lexsort {tc/ta:5.2f}x", flush=True)
