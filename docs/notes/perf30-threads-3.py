"""SpMSpV (x 10% dense, `coiterate(j, auto)` as the kernels suite runs it) before (a tree given as argv[1])
and after (argv[2]), at 1 and 2 threads, with GraphBLAS's A.mxv(x) beside each: each round runs one
fresh process per tree, alternating, and the figures are medians over rounds of each process's median.

    python docs/notes/perf30-threads-3.py /work/main/src /work/wt-threads/src [rounds]
"""

import json
import os
import subprocess
import sys

CHILD = r'''
import json, os, sys, time
import numpy as np, scipy.sparse as sp
import autosparse as asp
import graphblas as gb
n, per_row, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
gb.ss.config["nthreads"] = threads
rng = np.random.default_rng(0)
rows = np.repeat(np.arange(n), per_row)
m = sp.csr_array((rng.random(len(rows)) + 0.5, (rows, rng.integers(0, n, len(rows)))), shape=(n, n))
m.sum_duplicates()
x = np.zeros(n); chosen = rng.choice(n, n // 10, replace=False); x[chosen] = rng.random(len(chosen)) + 0.5
A, X = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(x, format="s")
k = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr", "x": "s", "y": "d"}, schedule="coiterate(j, auto)",
                num_threads=threads)
ga, gx = gb.io.from_scipy_sparse(m), gb.Vector.from_coo(chosen, x[chosen], size=n)
assert np.allclose(k(A=A, x=X), m @ x)
def median(f, repeat=15):
    f(); times = []
    for _ in range(repeat):
        t = time.perf_counter(); f(); times.append(time.perf_counter() - t)
    return float(np.median(times))
ours = median(lambda: k(A=A, x=X))
theirs = median(lambda: ga.mxv(gx, gb.semiring.plus_times).new())
print(json.dumps({"ours": ours, "graphblas": theirs, "parallel": k.ran_parallel}))
'''


def run(src: str, n: int, per_row: int, threads: int) -> dict:
    env = {**os.environ, "PYTHONPATH": src, "OMP_WAIT_POLICY": "passive",
           "AUTOSPARSE_CACHE_DIR": "/tmp/cache-threads-bench"}
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), str(per_row), str(threads)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    before, after = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    import numpy as np
    for n, per_row in ((200_000, 10), (100_000, 20)):
        for threads in (1, 2):
            got = {"before": [], "after": [], "gb": []}
            for _ in range(rounds):
                for name, src in (("before", before), ("after", after)):
                    r = run(src, n, per_row, threads)
                    got[name].append(r["ours"])
                    got["gb"].append(r["graphblas"])
            med = {k: float(np.median(v)) * 1e3 for k, v in got.items()}
            print(f"n={n:,} nnz/row={per_row} threads={threads}: before {med['before']:.2f} ms, after "
                  f"{med['after']:.2f} ms, GraphBLAS {med['gb']:.2f} ms; GraphBLAS/ours before "
                  f"{med['gb'] / med['before']:.2f}x, after {med['gb'] / med['after']:.2f}x", flush=True)


if __name__ == "__main__":
    main()
