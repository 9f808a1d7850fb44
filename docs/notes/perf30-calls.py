"""The figures of docs/notes/perf30-calls.md: warm per-call overhead, and each kernel at 1 and 2 threads.

    PYTHONPATH=src python docs/notes/perf30-calls.py overhead      # this checkout
    PYTHONPATH=<checkout before>/src python docs/notes/perf30-calls.py overhead
    PYTHONPATH=src python docs/notes/perf30-calls.py threads       # needs ~2 GB

`overhead`: µs per warm call, the calling thread's CPU time (a shared machine preempts it; thread time does
not count that), 15 interleaved rounds of N calls; min and median. `threads`: ms per call at 1 and 2 threads
on 1-2 M stored entries, interleaved rounds; wall time, and the process's CPU time (both threads): on cores
other work shares, the CPU time says whether two threads split the work without adding to it.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp


def overhead(calls: int = 1000, rounds: int = 15) -> None:
    a = sp.random(100, 100, density=0.1, format="csr", random_state=0)  # 1,000 entries
    b = sp.random(100, 100, density=0.05, format="csr", random_state=1)
    x = np.random.default_rng(0).random(100)
    A, B = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    spmv = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr", "x": "d", "y": "d"})
    paths = {
        "scipy a @ x": lambda: a @ x,
        "compiled kernel k(A=A, x=x)": lambda: spmv(A=A, x=x),
        "evaluate (SpMV)": lambda: asp.evaluate("y(i) = A(i,j) * x(j)", A=A, x=x),
        "A @ x": lambda: A @ x,
        "scipy a @ b": lambda: a @ b,
        "A @ B": lambda: A @ B,
        "scipy a + b": lambda: a + b,
        "A + B": lambda: A + B,
    }
    np.testing.assert_allclose(spmv(A=A, x=x), a @ x)
    np.testing.assert_allclose((A @ B).to_numpy(), (a @ b).toarray())
    np.testing.assert_allclose((A + B).to_numpy(), (a + b).toarray())
    times = {name: [] for name in paths}
    for f in paths.values():
        for _ in range(200):
            f()
    for _ in range(rounds):
        for name, f in paths.items():
            start = time.thread_time()
            for _ in range(calls):
                f()
            times[name].append((time.thread_time() - start) / calls * 1e6)
    for name, seconds in times.items():
        print(f"{name:30s} min {min(seconds):7.2f}  median {statistics.median(seconds):7.2f} µs")


def _random_csr(n: int, nnz: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    return sp.coo_matrix((rng.random(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n)).tocsr()


def _random_sss(shape, nnz: int, seed: int) -> asp.Tensor:
    rng = np.random.default_rng(seed)
    coords = np.stack([rng.integers(0, extent, nnz) for extent in shape])
    return asp.Tensor.from_coo(coords, rng.random(nnz), shape, format="sss")


def threads(rounds: int = 15) -> None:
    rng = np.random.default_rng(0)
    A, B = (asp.Tensor.from_scipy(_random_csr(200_000, 1_500_000, seed)) for seed in (0, 1))
    S = asp.Tensor.from_scipy(_random_csr(20_000, 200_000, 2))  # its square: ~2 M products
    X = _random_sss((2000, 2000, 2000), 1_500_000, 3)
    cases = {
        "SpMV": ("y(i) = A(i,j) * x(j)", {"A": "csr"}, {"A": A, "x": rng.random(200_000)}),
        "SpMM": ("C(i,k) = A(i,j) * B(j,k)", {"A": "csr"}, {"A": A, "B": rng.random((200_000, 8))}),
        "SDDMM": ("C(i,j) = A(i,j) * B(i,k) * D(k,j)", {"A": "csr"},
                  {"A": A, "B": rng.random((200_000, 8)), "D": rng.random((8, 200_000))}),
        "SpGEMM": ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr"}, {"A": S, "B": S}),
        "MTTKRP": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "sss"},
                   {"B": X, "C": rng.random((2000, 8)), "D": rng.random((2000, 8))}),
        "TTM (ssd result)": ("A(i,j,k) = B(i,j,l) * C(k,l)", {"B": "sss", "A": "ssd"},
                             {"B": X, "C": rng.random((4, 2000))}),
        "add": ("C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csr"}, {"A": A, "B": B}),
        "multiply": ("C(i,j) = A(i,j) * B(i,j)", {"A": "csr", "B": "csr"}, {"A": A, "B": B}),
    }
    for name, (expression, formats, operands) in cases.items():
        kernels = {count: asp.compile(expression, formats, num_threads=count) for count in (1, 2)}
        one, two = (kernels[count](**operands) for count in (1, 2))
        if isinstance(one, np.ndarray):
            np.testing.assert_allclose(one, two)
        else:
            assert one.nnz == two.nnz
            np.testing.assert_allclose(one.vals, two.vals)
        wall, cpu = {1: [], 2: []}, {1: [], 2: []}
        for _ in range(rounds):
            for count, kernel in kernels.items():
                process, start = time.process_time(), time.perf_counter()
                kernel(**operands)
                wall[count].append((time.perf_counter() - start) * 1e3)
                cpu[count].append((time.process_time() - process) * 1e3)
        w1, w2, c1, c2 = (statistics.median(m[count]) for m in (wall, cpu) for count in (1, 2))
        print(f"{name:17s} parallel at 2: {kernels[2].ran_parallel!s:5s}  "
              f"wall {w1:8.2f} / {w2:8.2f} ms (x{w1 / w2:4.2f})  CPU {c1:8.2f} / {c2:8.2f} ms (2t/1t {c2 / c1:4.2f})", flush=True)


if __name__ == "__main__":
    print(f"load average {os.getloadavg()[0]:.1f} on {len(os.sched_getaffinity(0))} cores")
    {"overhead": overhead, "threads": threads}[sys.argv[1]]()
