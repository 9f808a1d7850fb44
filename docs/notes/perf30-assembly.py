"""The measurements of perf30-assembly.md: sparse results' assembly against scipy, MKL and GraphBLAS.

    PYTHONPATH=src:bench python docs/notes/perf30-assembly.py products ROUNDS THREADS [CASE,...]
    PYTHONPATH=src:bench python docs/notes/perf30-assembly.py sums ROUNDS THREADS [CASE,...]
    PYTHONPATH=src:bench python docs/notes/perf30-assembly.py faults CALLS [PAUSE_SECONDS]

`products` and `sums` time A @ A (SpGEMM) and A + B (B uniform with A's shape and nonzeros) in rounds,
every contender once per round (interleaved), and print medians of wall time and of the process's CPU
time (user + sys, from getrusage: the machine is shared, so CPU time is the serial figure to read), sys
time and minor faults. autosparse gets Tensors built beforehand, so its figures are the call's. `faults`
calls one SpGEMM kernel (R-MAT 2^15, 24 M entries) CALLS times, pausing between calls, and prints each
call's CPU and sys time, its minor faults and the (machine-wide) transparent-huge-page counters: how the run-to-run spread was found.
"""

from __future__ import annotations

import gc
import resource
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse_bench import data

SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
ADD = "C(i,j) = A(i,j) + B(i,j)"


def _usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, r.ru_minflt


def _timed(run):
    gc.collect()
    u0, s0, f0 = _usage()
    t0 = time.perf_counter()
    out = run()
    wall = time.perf_counter() - t0
    u1, s1, f1 = _usage()
    del out
    return wall, (u1 - u0) + (s1 - s0), s1 - s0, f1 - f0


def _matrices(kind: str):
    shipped = data.shipped_data()
    if kind == "products":
        yield "soc-epinions", data.load_matrix(shipped / "soc-epinions.mtx.gz")
        yield "rmat15", data.generate("rmat", 15, 8)
    else:
        yield "bcsstk13", data.load_matrix(shipped / "bcsstk13.mtx.gz")
        yield "rmat16", data.generate("rmat", 16, 16)
    yield "uniform200k", data.generate("uniform", 200_000, 200_000, 1_000_000)


def _peers(kind: str, a, b, threads: int) -> dict:
    peers = {"scipy": (lambda: a @ b) if kind == "products" else (lambda: a + b)}
    if kind == "products":
        peers["scipy+sort"] = lambda: (a @ b).sort_indices()
        try:
            import sparse_dot_mkl
            sparse_dot_mkl.mkl_set_num_threads(threads)
            peers["mkl"] = lambda: sparse_dot_mkl.dot_product_mkl(a, b)
        except ImportError:
            pass
    try:
        import graphblas as gb
        gb.ss.config["nthreads"] = threads
        ga, gb_ = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
        peers["graphblas"] = ((lambda: gb.semiring.plus_times(ga @ gb_).new()) if kind == "products"
                              else (lambda: ga.ewise_add(gb_).new()))
    except ImportError:
        pass
    return peers


def compare(kind: str, rounds: int, threads: int, only: set[str] | None) -> None:
    for name, matrix in _matrices(kind):
        if only and name not in only:
            continue
        a = sp.csr_matrix(matrix)
        a.data = np.random.default_rng(0).random(a.nnz)
        if kind == "products":
            b = a
        else:
            b = sp.csr_matrix(data.generate("uniform", *a.shape, a.nnz, seed=1))
            b.data = np.random.default_rng(1).random(b.nnz)
        A, B = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
        runs = {}
        for result in ("csr", "ds~"):
            kernel = asp.compile(SPGEMM if kind == "products" else ADD, {"A": "csr", "B": "csr", "C": result},
                                 num_threads=threads)
            runs[f"autosparse {result}"] = lambda kernel=kernel: kernel(A=A, B=B)
        runs.update(_peers(kind, a, b, threads))
        for run in runs.values():
            run()
        samples = {label: [] for label in runs}
        for _ in range(rounds):
            for label, run in runs.items():
                samples[label].append(_timed(run))
        print(f"{name}: {a.shape[0]} rows, {a.nnz} nonzeros, {threads} thread(s), medians of {rounds}")
        for label, taken in samples.items():
            wall, cpu, system, faults = (statistics.median(s[k] for s in taken) for k in range(4))
            print(f"  {label:16s} wall {wall * 1e3:8.1f} ms  cpu {cpu * 1e3:8.1f} ms  sys {system * 1e3:6.1f} ms"
                  f"  minor faults {faults:7.0f}")


THP_COUNTERS = ("thp_fault_alloc", "compact_stall", "pgfault")


def _vmstat() -> dict[str, int]:
    with open("/proc/vmstat") as lines:
        values = dict(line.split() for line in lines)
    return {key: int(values.get(key, 0)) for key in THP_COUNTERS}


def faults(calls: int, pause: float) -> None:
    a = sp.csr_matrix(data.generate("rmat", 15, 8))
    A = asp.Tensor.from_scipy(a)
    kernel = asp.compile(SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, num_threads=1)
    kernel(A=A, B=A)
    for _ in range(calls):
        gc.collect()
        before, counters = resource.getrusage(resource.RUSAGE_SELF), _vmstat()
        cpu = time.thread_time()
        result = kernel(A=A, B=A)
        cpu = time.thread_time() - cpu
        after, changed = resource.getrusage(resource.RUSAGE_SELF), _vmstat()
        del result
        print(f"cpu {cpu * 1e3:6.0f} ms  sys {(after.ru_stime - before.ru_stime) * 1e3:5.0f} ms  "
              f"minor faults {after.ru_minflt - before.ru_minflt}  "
              + "  ".join(f"{key} {changed[key] - counters[key]}" for key in THP_COUNTERS))
        time.sleep(pause)


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "faults":
        faults(int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 0.0)
    else:
        compare(mode, int(sys.argv[2]), int(sys.argv[3]), set(sys.argv[4].split(",")) if len(sys.argv) > 4 else None)
