"""SpMSpV (y = A x, A CSR, x 10% dense as the kernels suite draws it, `coiterate(j, auto)`), before (the
autosparse package of a tree given as argv[1], loaded under another name) and after (the `autosparse` on
PYTHONPATH), with GraphBLAS's A.mxv(x) and scipy's A @ x beside them, at 1 and 2 threads: one process,
contenders interleaved (rotated) over rounds, each sample the median of a short batch; medians of samples.

    PYTHONPATH=$PWD/src:$PWD/bench python docs/notes/perf30-spmspv-4.py /work/main/src [rounds]
"""

import importlib.util
import sys
import time
from pathlib import Path

import graphblas as gb
import numpy as np
import scipy.sparse as sp

import autosparse as after
from autosparse_bench import data, kernels

EXPRESSION, FORMATS = "y(i) = A(i,j) * x(j)", {"A": "csr", "x": "s", "y": "d"}


def load_tree(src: str):
    """The autosparse package of another tree, as module `autosparse_before` (its imports are relative)."""
    init = Path(src) / "autosparse" / "__init__.py"
    spec = importlib.util.spec_from_file_location("autosparse_before", init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["autosparse_before"] = module
    spec.loader.exec_module(module)
    return module


def inputs():
    yield "uniform", kernels.family_matrix("uniform", 2_000_000, 10, 42)
    yield "power-law", kernels.family_matrix("power-law", 2_000_000, 10, 42)
    yield "soc-brightkite", data.load_matrix(data.shipped_data() / "soc-brightkite.mtx.gz")


def sample(f, batch=5):
    times = []
    for _ in range(batch):
        t = time.perf_counter()
        f()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def contenders(m, threads, before):
    rng = np.random.default_rng(0)
    x = np.zeros(m.shape[1])
    chosen = np.sort(rng.choice(m.shape[1], max(1, round(kernels.SPMSPV_DENSITY * m.shape[1])), replace=False))
    x[chosen] = rng.random(len(chosen)) + 0.5
    expected = m @ x
    made = {}
    for name, asp in (("before", before), ("after", after)):
        kernel = asp.compile(EXPRESSION, formats=FORMATS, schedule="coiterate(j, auto)", num_threads=threads)
        A, X = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(x, format="s")
        made[name] = lambda kernel=kernel, A=A, X=X: kernel(A=A, x=X)
    ga, gx = gb.io.from_scipy_sparse(m), gb.Vector.from_coo(chosen, x[chosen], size=len(x))
    made["GraphBLAS"] = lambda: ga.mxv(gx, gb.semiring.plus_times).new()
    column = sp.csc_array(x.reshape(-1, 1))
    made["scipy"] = lambda: m @ column
    for name in ("before", "after"):
        np.testing.assert_allclose(made[name](), expected, rtol=1e-12)
    return made


def main() -> None:
    before = load_tree(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    print("| data | threads | before ms | after ms | GraphBLAS ms | scipy ms | GraphBLAS / before | GraphBLAS / after |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for dataset, m in inputs():
        for threads in (1, 2):
            gb.ss.config["nthreads"] = threads
            made = contenders(m, threads, before)
            got = {name: [] for name in made}
            names = list(made)
            for r in range(rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:
                    made[name]()
                    got[name].append(sample(made[name]))
            ms = {name: 1e3 * float(np.median(v)) for name, v in got.items()}
            print(f"| {dataset} | {threads} | {ms['before']:.2f} | {ms['after']:.2f} | {ms['GraphBLAS']:.2f} | "
                  f"{ms['scipy']:.2f} | {ms['GraphBLAS'] / ms['before']:.2f}× | "
                  f"{ms['GraphBLAS'] / ms['after']:.2f}× |", flush=True)


if __name__ == "__main__":
    main()
