"""Element-wise add, multiply and CSR + CSC: a compiled autosparse kernel (on Tensors built beforehand)
beside scipy and GraphBLAS (held to the same threads), in interleaved rounds, medians. With 1 thread
the figures are the calling thread's CPU time (ms), with 2 the wall time; the minor page faults per call
come with them, since a call that faults in its result costs 2-3x one that reuses the heap.

    PYTHONPATH=src:bench python -W ignore docs/notes/perf30-elementwise.py THREADS [ROUNDS]

(`-W ignore`: the CSC operand is converted on every call, which autosparse warns about.) Matrices are
the kernels suite's generated families at 500,000 nonzeros: `family_matrix(family, 500000, 10, seed)`.
"""

import resource
import sys
import time

import graphblas as gb
import numpy as np
import scipy.sparse as sp

import autosparse as asp
from autosparse_bench.kernels import family_matrix


def contenders(a, b):
    ta, tb = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    b_csc = sp.csc_array(b)
    tb_csc = asp.Tensor.from_scipy(b_csc)
    ga, gb_b = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
    csr = {"A": "csr", "B": "csr", "C": "csr"}
    add = asp.compile("C(i,j) = A(i,j) + B(i,j)", formats=csr)
    multiply = asp.compile("C(i,j) = A(i,j) * B(i,j)", formats=csr)
    add_csc = asp.compile("C(i,j) = A(i,j) + B(i,j)", formats={**csr, "B": "csc"})
    for kernel, operand, expected in ((add, tb, a + b), (multiply, tb, a.multiply(b)), (add_csc, tb_csc, a + b)):
        assert abs(kernel(A=ta, B=operand).to_scipy() - expected).max() < 1e-12
    return {"add ours": lambda: add(A=ta, B=tb), "add scipy": lambda: a + b,
            "add GrB": lambda: ga.ewise_add(gb_b, gb.binary.plus).new(),
            "mul ours": lambda: multiply(A=ta, B=tb), "mul scipy": lambda: a.multiply(b),
            "mul GrB": lambda: ga.ewise_mult(gb_b, gb.binary.times).new(),
            "csr+csc ours": lambda: add_csc(A=ta, B=tb_csc), "csr+csc scipy": lambda: a + b_csc}


def measure(calls, rounds, clock):
    times, faults = ({name: [] for name in calls} for _ in range(2))
    for call in calls.values():
        call()
    for _ in range(rounds):
        for name, call in calls.items():
            before, start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, clock()
            call()
            times[name].append(clock() - start)
            faults[name].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    return times, faults


def main(threads: int, rounds: int) -> None:
    asp.set_num_threads(threads)
    gb.ss.config["nthreads"] = threads
    clock = time.thread_time if threads == 1 else time.perf_counter
    for family in ("uniform", "power-law", "banded"):
        calls = contenders(family_matrix(family, 500000, 10, 1), family_matrix(family, 500000, 10, 2))
        times, faults = measure(calls, rounds, clock)
        print(f"{family} ({threads}t):", "  ".join(f"{k} {np.median(v) * 1e3:.2f}" for k, v in times.items()))
        print("   minor faults per call:", "  ".join(f"{k} {int(np.median(v))}" for k, v in faults.items()), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 21)
