"""Issue 30, round 3, section "parallel": where the default SpGEMM's time goes at 1 and 2 threads. Its
generated C with timestamps (omp_get_wtime, thread 0) inserted before each phase (bound, the single
thread that sizes the arrays, fill, the serial tail: compaction of the threads' chunks, the prefix sum
over pos, the trim), compiled as the kernel is and called through ctypes, beside the whole kernel call
from Python and scipy's product, interleaved (docs/notes/perf30-parallel-2.md).

    PYTHONPATH=src:bench R=7 taskset -c 2,3 python docs/notes/perf30-parallel-2-phases.py [csr|ds~]
"""
import ctypes, subprocess, sys, time, re, os
import numpy as np, scipy.sparse as sp
import autosparse as asp
sys.path.insert(0, os.environ.get("BENCH", "bench"))
from autosparse_bench import data

fmt = sys.argv[1] if len(sys.argv) > 1 else "csr"
rows, nnz = 100_000, 1_000_000
a = data.generate("uniform", rows, rows, nnz, seed=1); b = data.generate("uniform", rows, rows, nnz, seed=2)
MARKS = [("/* bound */", "bound"), ("#pragma omp single", "single"), ("/* fill */", "fill"),
         ("fill_end:;", "fillend"), ("if (failed) return failed;", "serial"), ("args[6] = C_pos2;", "end")]
def instrument(src):
    out, n = [], 0
    names = []
    for line in src.splitlines():
        for mark, name in MARKS:
            if line.strip().startswith(mark):
                out.append(f"if (omp_get_thread_num()==0) T[{len(names)}] = omp_get_wtime();" if name != "serial" and name != "end" else f"T[{len(names)}] = omp_get_wtime();")
                names.append(name)
        out.append(line)
    s = "\n".join(out)
    s = "#include <omp.h>\n" + s.replace("int autosparse_kernel(", "double T[32];\nint autosparse_kernel(", 1)
    s = s.replace("const int64_t i_dim = dims[0];", "T[31]=omp_get_wtime(); const int64_t i_dim = dims[0];", 1)
    return s, names
libs = {}
for threads in (1, 2):
    k = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": fmt}, num_threads=threads)
    src, names = instrument(k.source)
    path = f"/tmp/sg{threads}_{fmt.replace('~','u')}"
    open(path + ".c", "w").write(src)
    subprocess.run(["cc", "-O3", "-march=native", "-fPIC", "-shared", "-std=c11", "-fwrapv", "-fopenmp", path + ".c", "-o", path + ".so"], check=True)
    libs[threads] = (ctypes.CDLL(path + ".so"), names)
free = ctypes.CDLL(None).free; free.argtypes = [ctypes.c_void_p]
inputs = [a.indptr, a.indices, b.indptr, b.indices, a.data, b.data]
def call(lib):
    T = (ctypes.c_double * 32).in_dll(lib, "T")
    for k in range(32): T[k] = 0.0
    args = (ctypes.c_void_p * 12)(*[x.ctypes.data for x in inputs], *([None] * 6))
    dims = (ctypes.c_int64 * 3)(rows, rows, rows); sizes = (ctypes.c_int64 * 12)(); counters = (ctypes.c_int64 * 4)()
    t0 = time.perf_counter(); rc = lib.autosparse_kernel(args, dims, sizes, counters); t1 = time.perf_counter()
    assert rc == 0
    T = (ctypes.c_double * 32).in_dll(lib, "T")
    nnzc = sizes[7]
    t2 = time.perf_counter()
    for p in (6, 7, 8): free(args[p])
    t3 = time.perf_counter()
    return t1 - t0, t3 - t2, [T[i] for i in range(32)], nnzc
kk = {th: asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": fmt}, num_threads=th) for th in (1, 2)}
A, B = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
full = {1: [], 2: [], "scipy": []}
res = {1: [], 2: []}
for r in range(int(os.environ.get("R", 9))):
    for th in (1, 2):
        t0 = time.perf_counter(); C = kk[th](A=A, B=B); full[th].append(time.perf_counter() - t0); del C
        res[th].append(call(libs[th][0]))
    t0 = time.perf_counter(); C = a @ b; full["scipy"].append(time.perf_counter() - t0); del C
print("full calls ms:", {k: round(float(np.median(v)) * 1e3, 1) for k, v in full.items()})
for th in (1, 2):
    names = libs[th][1]
    tot = np.median([x[0] for x in res[th]]) * 1e3; fr = np.median([x[1] for x in res[th]]) * 1e3
    print(f"threads {th}: kernel {tot:.1f} ms, free {fr:.1f} ms, nnz {res[th][0][3]}")
    # phases: from start T[31] through marks
    seq = [(31, "start")] + [(k, n) for k, n in enumerate(names) if res[th][0][2][k]]  # the marks reached
    for (i0, n0), (i1, n1) in zip(seq, seq[1:]):
        d = np.median([x[2][i1] - x[2][i0] for x in res[th]]) * 1e3
        print(f"   {n0:>8} -> {n1:<8} {d:8.2f} ms")
