"""Contraction on against off, in one process: each kernel compiled both ways (`set_fp_contract`), warm
calls timed interleaved over rounds (thread-CPU time, one thread), medians; then the largest relative
difference from numpy's float64 result each way.

    PYTHONPATH=src:bench python docs/notes/perf30-fma-4.py [rounds]
"""

import statistics
import sys
import time

import numpy as np
import scipy.sparse as sp

import autosparse as asp

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
rng = np.random.default_rng(0)
A = sp.random(60_000, 60_000, density=2e-4, format="csr", random_state=rng)  # 720k entries
T = asp.Tensor.from_coo(rng.integers(0, [300, 300, 300], size=(400_000, 3)).T, rng.random(400_000),
                        (300, 300, 300), format="csf")
Td = T.to_numpy()
At = asp.Tensor.from_scipy(A)
B32, B64 = rng.random((60_000, 32)), rng.random((300, 32))
C32, D32 = rng.random((60_000, 32)), rng.random((32, 60_000))
x, v = rng.random(60_000), rng.random(300)

CASES = {  # name: (expression, formats, operands, numpy's result)
    "spmv": ("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "dense", "y": "dense"}, {"A": At, "x": x},
             lambda: A @ x),
    "spmm": ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "dense", "C": "dense"}, {"A": At, "B": B32},
             lambda: A @ B32),
    "sddmm": ("S(i,j) = A(i,j) * C(i,k) * D(k,j)", {"A": "csr", "C": "dense", "D": "d1d0", "S": "csr"},
              {"A": At, "C": C32, "D": asp.Tensor.from_numpy(D32, format="d1d0")}, None),
    "ttv": ("Y(i,j) = T(i,j,k) * v(k)", {"T": "csf", "v": "dense", "Y": "ds"}, {"T": T, "v": v}, None),
    "ttm": ("Y(i,j,l) = T(i,j,k) * B(k,l)", {"T": "csf", "B": "dense", "Y": "dense"}, {"T": T, "B": B64},
            lambda: np.einsum("ijk,kl->ijl", Td, B64)),
    "mttkrp": ("M(i,l) = T(i,j,k) * B(j,l) * C(k,l)", {"T": "csf", "B": "dense", "C": "dense", "M": "dense"},
               {"T": T, "B": B64, "C": B64}, lambda: np.einsum("ijk,jl,kl->il", Td, B64, B64)),
}


def kernels(expression, formats):
    built = {}
    for on in (True, False):
        asp.set_fp_contract(on)
        built[on] = asp.compile(expression, formats=formats, num_threads=1)
    asp.set_fp_contract(None)
    return built


def timed(kernel, operands):
    start = time.thread_time()
    kernel(**operands)
    return time.thread_time() - start


print(f"| kernel | on (ms) | off (ms) | off / on | max rel. diff. on | max rel. diff. off |")
print("|---|---:|---:|---:|---:|---:|")
for name, (expression, formats, operands, reference) in CASES.items():
    built = kernels(expression, formats)
    for kernel in built.values():
        kernel(**operands)  # compile, warm
    samples = {True: [], False: []}
    for _ in range(ROUNDS):
        for on in (True, False) if _ % 2 else (False, True):
            samples[on].append(timed(built[on], operands))
    on, off = (statistics.median(samples[k]) * 1e3 for k in (True, False))
    diffs = ["", ""]
    if reference is not None:
        expected = np.asarray(reference())
        for k, setting in enumerate((True, False)):
            got = np.asarray(built[setting](**operands))
            diffs[k] = f"{np.max(np.abs(got - expected) / np.maximum(np.abs(expected), 1e-300)):.2e}"
    print(f"| {name} | {on:.2f} | {off:.2f} | {off / on:.3f} | {diffs[0]} | {diffs[1]} |", flush=True)
