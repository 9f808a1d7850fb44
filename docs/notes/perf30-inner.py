"""Section inner (issue 30): ours (the default kernel, 1 thread) against every peer of the kernels suite on the
suite's data, interleaved in one process, medians of thread-CPU time (docs/notes/perf30-inner.md).

    PYTHONPATH=src:bench python docs/notes/perf30-inner.py spmv,spmv+z,spmm,sddmm,ttm,mttkrp uniform,power-law 0.25 15
"""
import sys, time, statistics, gc
import numpy as np
import autosparse as asp
from autosparse_bench import kernels as K

kern, fams, scale, rounds = sys.argv[1].split(","), sys.argv[2].split(","), float(sys.argv[3]), int(sys.argv[4])
SKIP = ("pydata", "numpy", "autosparse A @")
(mkl, _), (gb, _) = K.load_mkl(), K.load_graphblas()
ref = K.Reference()
sizes = K.SIZES["full"]
for fam in fams:
    for name in kern:
        rng = np.random.default_rng(0)
        if name in ("ttm", "mttkrp"):  # the suite's tensor: its shape, its entries scaled
            shape, nnz = sizes["tensor"]
            m = K.Tensor3.of(K.family_tensor(fam, shape, int(nnz * scale), 0))
            make = K.ttm_case if name == "ttm" else K.mttkrp_case
            case = make(fam, m, sizes["rank"], rng, ref)
        else:
            m = K.family_matrix(fam, int(sizes[name] * scale), K.PER_ROW.get(name, 10), 0)
            case = {"spmv": lambda: K.spmv_case(fam, m, rng, mkl, gb, ref),
                    "spmv+z": lambda: K.spmv_case(fam, m, rng, mkl, gb, ref, shifted=True),
                    "spmm": lambda: K.spmm_case(fam, m, sizes["spmm_cols"], rng, mkl, gb, ref),
                    "sddmm": lambda: K.sddmm_case(fam, m, sizes["sddmm_k"], rng, gb, ref)}[name]()
        kernel = asp.compile(case.expression, formats=case.formats, num_threads=1)
        calls = {"ours": lambda: kernel(**case.operands)}
        checks = {"ours": case.check}
        for p in case.peers:
            if p.call is not None and not p.name.startswith(SKIP):
                calls[p.name], checks[p.name] = p.call, p.check or case.check
        for n, c in calls.items():
            checks[n](c())
        t = {n: [] for n in calls}
        for r in range(rounds):
            order = list(calls.items()); order = order[r % len(order):] + order[:r % len(order)]
            gc.disable()
            for n, c in order:
                s = time.thread_time(); c(); t[n].append(time.thread_time() - s)
            gc.enable()
        med = {n: statistics.median(v) * 1e3 for n, v in t.items()}
        best = min((n for n in med if n != "ours"), key=med.get)
        others = ", ".join(f"{n[:22]}={v:.3f}" for n, v in med.items() if n != "ours")
        print(f"{name:7s} {fam:10s} x{scale:<5} nnz={len(m.vals) if name in ('ttm', 'mttkrp') else m.nnz:>8} ours {med['ours']:8.3f} ms | best {best} "
              f"{med[best]:8.3f} ratio {med[best]/med['ours']:.2f} | {others}", flush=True)
