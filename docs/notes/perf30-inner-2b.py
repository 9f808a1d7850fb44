"""Section inner, part b (issue 30, round 3): a dense result zeroed by the kernel, row by row, and allocated
uninitialised by the caller ("after"), against the same kernel zeroed by the caller ("before": the lowering's
row owner switched off) and the kernels suite's peers, interleaved in one process, medians of thread-CPU time.

    PYTHONPATH=src:bench python docs/notes/perf30-inner-2b.py spmm,spmv uniform,power-law 0.25 15 [threads]
"""
import gc
import statistics
import sys
import time

import numpy as np

import autosparse as asp
from autosparse.lower import kernel as lowering
from autosparse.pipeline import specialise
from autosparse_bench import kernels as K

kern, fams, scale, rounds = sys.argv[1].split(","), sys.argv[2].split(","), float(sys.argv[3]), int(sys.argv[4])
threads = int(sys.argv[5]) if len(sys.argv) > 5 else 1
clock = time.thread_time if threads == 1 else time.perf_counter
SKIP = ("pydata", "numpy", "autosparse A @")
(mkl, _), (gb, _) = K.load_mkl(), K.load_graphblas()
ref = K.Reference()
sizes = K.SIZES["full"]
owner = lowering._row_owner


def compiled(case, zeroing: bool):
    """The default kernel, warm, with or without the kernel's own zeroing."""
    lowering._row_owner = owner if zeroing else (lambda stmt, target: None)
    specialise._memo.clear()  # the process's memo would hand the other variant back
    try:
        kernel = asp.compile(case.expression, formats=case.formats, num_threads=threads)
        case.check(kernel(**case.operands))
        assert ("memset(" in kernel.source) == zeroing, f"zeroing={zeroing}: the kernel was cached"
    finally:
        lowering._row_owner = owner
    return kernel


for fam in fams:
    for name in kern:
        rng = np.random.default_rng(0)
        m = K.family_matrix(fam, int(sizes[name] * scale), K.PER_ROW.get(name, 10), 0)
        case = {"spmv": lambda: K.spmv_case(fam, m, rng, mkl, gb, ref),
                "spmm": lambda: K.spmm_case(fam, m, sizes["spmm_cols"], rng, mkl, gb, ref)}[name]()
        before, after = compiled(case, False), compiled(case, True)
        calls = {"before": lambda: before(**case.operands), "after": lambda: after(**case.operands)}
        checks = {"before": case.check, "after": case.check}
        for p in case.peers:
            if p.call is not None and not p.name.startswith(SKIP):
                calls[p.name], checks[p.name] = p.call, p.check or case.check
        for n, c in calls.items():
            checks[n](c())
        t = {n: [] for n in calls}
        for r in range(rounds):
            order = list(calls.items())
            order = order[r % len(order):] + order[:r % len(order)]
            gc.disable()
            for n, c in order:
                s = clock()
                c()
                t[n].append(clock() - s)
            gc.enable()
        med = {n: statistics.median(v) * 1e3 for n, v in t.items()}
        best = min((n for n in med if n not in ("before", "after")), key=med.get)
        others = ", ".join(f"{n[:22]}={v:.3f}" for n, v in med.items() if n not in ("before", "after"))
        print(f"{name:5s} {fam:10s} x{scale:<5} t={threads} before {med['before']:8.3f} after {med['after']:8.3f} ms | "
              f"best {best} {med[best]:8.3f}: ratio before {med[best] / med['before']:.2f} after "
              f"{med[best] / med['after']:.2f} | {others}", flush=True)
