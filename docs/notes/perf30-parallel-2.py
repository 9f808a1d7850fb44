"""Issue 30, round 3, section "parallel": the default kernels' generated C before and after a change to the
lowering, timed side by side in one process through ctypes (no Python wrapping), at 1 and 2 threads, with
the hand-written SDDMM reference beside them (docs/notes/perf30-parallel-2.md).

    # the C of each tree (the 1-thread C is the same in both: check with cmp)
    PYTHONPATH=<before tree>/src python docs/notes/perf30-parallel-2.py gen before
    PYTHONPATH=<after tree>/src  python docs/notes/perf30-parallel-2.py gen after
    cc -O3 -march=native -shared -fPIC -fopenmp -o ref.so bench/autosparse_bench/reference/sddmm.c
    PYTHONPATH=src BENCH=bench REFSO=ref.so R=7 SCALE=21 [ONLY="spmv sddmm"] taskset -c 2,3 \
        python docs/notes/perf30-parallel-2.py time

Medians (and minima) of R interleaved rounds, ms; results allocated by a kernel are freed after each call.
"""
import ctypes, os, re, subprocess, sys, time

import numpy as np


def gen(out):
    import autosparse as asp
    os.makedirs(out, exist_ok=True)
    KERNELS = {"spmv": ("y(i) = A(i,j) * x(j)", {"A": "csr"}),
               "spmm": ("C(i,k) = A(i,j) * B(j,k)", {"A": "csr"}),
               "sddmm": ("C(i,j) = A(i,j) * B(i,k) * D(k,j)", {"A": "csr", "C": "csr"}),
               "spgemm": ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"}),
               "spgemmu": ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "ds~"}),
               "add": ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr", "C": "csr"})}
    for name, (e, f) in KERNELS.items():
        for t in (1, 2):
            open(f"{out}/{name}{t}.c", "w").write(asp.compile(e, f, num_threads=t).source)


def timing():
    sys.path.insert(0, os.environ["BENCH"])
    from autosparse_bench import data
    R = int(os.environ.get("R", 9))
    FLAGS = ["-O3", "-march=native", "-fPIC", "-shared", "-std=c11", "-fwrapv", "-fopenmp"]
    free = ctypes.CDLL(None).free; free.argtypes = [ctypes.c_void_p]
    def load(path):
        src = open(path).read()
        so = path[:-2] + ".so"
        subprocess.run(["cc", *FLAGS, path, "-o", so], check=True)
        ins = {int(k): n for n, k in re.findall(r"(\w+) = \([^)]*\)args\[(\d+)\]", src)}
        outs = [int(k) for k in re.findall(r"args\[(\d+)\] = \w+;", src)]
        dims = {int(k): n for n, k in re.findall(r"const int64_t (\w+)_dim = dims\[(\d+)\]", src)}
        return ctypes.CDLL(so).autosparse_kernel, ins, outs, dims, len(ins) + len(outs)
    def caller(kernel, arrays, sizes):
        fn, ins, outs, dims, n = kernel
        args = (ctypes.c_void_p * n)(); d = (ctypes.c_int64 * len(dims))(*[sizes[dims[k]] for k in sorted(dims)])
        s = (ctypes.c_int64 * n)(); c = (ctypes.c_int64 * 1)()
        def run():
            for k, name in ins.items(): args[k] = arrays[name].ctypes.data
            for k in outs: args[k] = None
            t0 = time.perf_counter(); rc = fn(args, d, s, c); t = time.perf_counter() - t0
            assert rc == 0, rc
            for k in outs: free(args[k])
            return t
        return run
    ref = ctypes.CDLL(os.environ["REFSO"]).sddmm
    def table(title, calls):
        res = {k: [] for k in calls}
        for f in calls.values(): f()
        for _ in range(R):
            for k, f in calls.items(): res[k].append(f())
        print(f"\n{title}")
        for k, v in res.items(): print(f"  {k:>28}: {np.median(v)*1e3:9.2f} ms  (min {np.min(v)*1e3:.2f})")
    K = {(tree, name, t): load(f"{tree}/{name}{t}.c") for tree in ("before", "after") for name in
         ("spmv", "spmm", "sddmm", "spgemm", "spgemmu", "add") for t in (1, 2)}
    def kernels(name, arrays, sizes):
        calls = {}
        for t in (1, 2):
            for tree in ("before", "after") if t == 2 else ("before",):
                calls[f"{tree} {t}"] = caller(K[(tree, name, t)], arrays, sizes)
        return calls
    def csr(m, p): return {f"{p}_pos2": m.indptr, f"{p}_crd2": m.indices, f"{p}_vals": m.data}
    rng = np.random.default_rng(0)
    S = int(os.environ.get("SCALE", 21))
    mats = {"uniform": lambda n, e, s: data.generate("uniform", n, n, e, seed=s),
            "R-MAT": lambda n, e, s: data.generate("rmat", int(np.log2(n)), edge_factor=max(1, e // n), seed=s)}
    only = os.environ.get("ONLY", "spmv spmm sddmm spgemm add").split()
    for dname, gen in mats.items():
        if "spmv" in only:
            n = 1 << S; m = gen(n, 20 * n // 2 if S > 19 else 10 * n, 1); x = rng.random(m.shape[1]); y = np.zeros(m.shape[0])
            table(f"SpMV {dname} {m.shape[0]} rows {m.nnz} nnz", kernels("spmv", {**csr(m, "A"), "x_vals": x, "y_vals": y}, {"i": m.shape[0], "j": m.shape[1]}))
        if "spmm" in only:
            n = 1 << 17; m = gen(n, 10 * n, 2); B = rng.random((n, 64)); C = np.zeros((n, 64))
            table(f"SpMM {dname} {n} rows {m.nnz} nnz x 64", kernels("spmm", {**csr(m, "A"), "B_vals": B, "C_vals": C}, {"i": n, "j": n, "k": 64}))
        if "sddmm" in only:
            n = 1 << 15 if dname == "R-MAT" else 20000; m = gen(n, 1_000_000, 3); K_ = 32
            c, dd = rng.random((m.shape[0], K_)), rng.random((K_, m.shape[1]))
            calls = kernels("sddmm", {**csr(m, "A"), "B_vals": c, "D_vals": dd}, {"i": m.shape[0], "j": m.shape[1], "k": K_})
            for t in (1, 2):
                def reference(t=t):
                    pos, crd, out = np.empty(m.shape[0] + 1, dtype=np.int32), np.empty(m.nnz, dtype=np.int32), np.empty(m.nnz)
                    P = lambda a: ctypes.c_void_p(a.ctypes.data)
                    t0 = time.perf_counter()
                    ref(m.shape[0], m.shape[1], K_, P(m.indptr), P(m.indices), P(m.data), P(c), P(dd), P(pos), P(crd), P(out), t)
                    return time.perf_counter() - t0
                calls[f"C reference {t} (no alloc)"] = reference
            table(f"SDDMM {dname} {m.shape[0]} rows {m.nnz} nnz K=32", calls)
        if "spgemm" in only:
            n, e = (100_000, 1_000_000) if dname == "uniform" else (1 << 15, 300_000); a, b = gen(n, e, 4), gen(n, e, 5)
            for kind in ("spgemm", "spgemmu"):
                table(f"SpGEMM ({'sorted' if kind == 'spgemm' else 'unsorted'}) {dname} {a.shape[0]} rows {a.nnz} nnz each",
                      kernels(kind, {**csr(a, "A"), **csr(b, "B")}, {"i": a.shape[0], "j": b.shape[1], "k": a.shape[1]}))
        if "add" in only:
            n = 200_000 if dname == "uniform" else 1 << 18; a, b = gen(n, 2_000_000, 6), gen(n, 2_000_000, 7)
            table(f"add {dname} {a.shape[0]} rows {a.nnz}+{b.nnz} nnz", kernels("add", {**csr(a, "A"), **csr(b, "B")}, {"i": a.shape[0], "j": a.shape[1]}))


if __name__ == "__main__":
    gen(sys.argv[2]) if sys.argv[1] == "gen" else timing()
