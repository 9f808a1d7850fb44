"""Co-iteration strategies and layouts (Zhao et al.) beside each other and beside peers, on the same data
in one process: the three measurements the paper's evaluation rests on.

1. SpMSpV, y(i) = A(i,j) x(j), A in CSR and x a compressed vector: how operands meet decides everything.
   The two-finger merge (TACO's, and our default) steps through x once per row: rows × nnz(x) + nnz(A)
   steps. Finding A's coordinates in x instead costs nnz(A) lookups plus, for a hash table or bitmap,
   nnz(x) insertions once. `coiterate(j, auto)` chooses from the operands' segment lengths, with no trial
   runs; the claim to check is that it lands within 10% of the best fixed strategy on nearly every input
   and well above the merge default overall. Inputs: R-MAT power-law and uniform random matrices (16
   entries per row on average) and every matrix of ../shared/data, each with a vector of --density (10%)
   at random positions. Peers: scipy.sparse (A @ x with x dense: the work a dense vector would cost;
   A @ x with x a sparse column: its sparse × sparse product), Tensora (TACO's merge) and pydata sparse.
2. TTM, C(i,j,r) = A(i,j,k) B(k,r) with R = 16, A in CSF and C sharing A's first two levels (dense in r):
   the loop over A's slices runs in parallel (threads write disjoint blocks of C), which TACO cannot do.
   Serial against 2 threads, on generated tensors (uniform and skewed) and the shipped .tns files.
3. SpMV on BCSR: a matrix of dense b × b blocks stored as blocks (one column index per block, dense
   inner loops) against the same matrix in CSR (ours, scipy's) and scipy's own BSR.

    autosparse bench coiteration                  # all three, generated and shipped data (several minutes)
    autosparse bench coiteration --quick          # small generated inputs only (smoke test)
    autosparse bench coiteration --only spmspv    # one part: spmspv, ttm or bcsr

Each contender's result is checked against scipy/numpy once before anything is timed; contenders are
timed as every suite times them (autosparse_bench/timing.py): medians of --repeat samples interleaved
round-robin after an untimed warm-up call, a contender whose first timed call exceeds --budget seconds
timed by that call alone. Only calls of compiled kernels on converted operands are timed.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import sparse

import autosparse as asp
from . import data
from . import machine
from .machine import progress
from .records import Records, add_option, source_hash
from .timing import Mismatch, compare
from .kernels import DATA, tensora_tensor

import tensora

STRATEGIES = ("merge", "gallop", "binary", "hash", "bitmap")
SPMSPV = "y(i) = A(i,j) * x(j)"


def inputs(args, rng):
    scales = (12, 14) if args.quick else (14, 16)
    for scale in scales:
        yield f"power-law 2^{scale}", data.generate("rmat", scale, seed=scale)
        yield f"uniform 2^{scale}", data.generate("uniform", 1 << scale, 1 << scale, 16 << scale, seed=scale)
    if args.quick:
        return
    for path in sorted(Path(args.data).glob("*.mtx.gz")):
        yield data.name_of(path), data.load_matrix(path)


def sparse_vector(rng, n: int, density: float) -> np.ndarray:
    x = np.zeros(n)
    chosen = rng.choice(n, max(1, int(round(density * n))), replace=False)
    x[chosen] = rng.random(len(chosen)) + 0.5
    return x


def contenders(A: sp.csr_array, x: np.ndarray) -> dict:
    """name -> a call computing y (dense), ours first."""
    ours_A, ours_x = asp.Tensor.from_scipy(A), asp.Tensor.from_numpy(x, format="s")
    calls = {}
    for strategy in (*STRATEGIES, "auto"):
        schedule = None if strategy == "merge" else f"coiterate(j, {strategy})"
        kernel = asp.compile(SPMSPV, formats={"A": "csr", "x": "s"}, schedule=schedule)
        calls[strategy] = (lambda k=kernel: k(A=ours_A, x=ours_x)), kernel
    column = sp.csc_array(x.reshape(-1, 1))
    calls["scipy (x dense)"] = (lambda: A @ x), None
    calls["scipy (x sparse)"] = (lambda: A @ column), None
    coords = np.flatnonzero(x)
    t_A = tensora_tensor([None, (A.indptr, A.indices)], A.data, A.shape)
    t_x = tensora_tensor([(np.array([0, len(coords)]), coords)], x[coords], x.shape)
    method = tensora.tensor_method(SPMSPV, {"A": "ds", "x": "s", "y": "d"}, tensora.BackendCompiler.llvm)
    calls["tensora"] = (lambda: method(A=t_A, x=t_x)), None
    p_A, p_x = sparse.GCXS.from_scipy_sparse(A), sparse.COO.from_numpy(x)
    calls["pydata"] = (lambda: p_A @ p_x), None
    return calls


def dense(result) -> np.ndarray:
    if isinstance(result, tensora.Tensor):
        return np.asarray(result.to_numpy())
    if hasattr(result, "todense"):
        return np.asarray(result.todense()).ravel()
    if hasattr(result, "toarray"):
        return np.asarray(result.toarray()).ravel()
    return np.asarray(result).ravel()


def measure(calls: dict, expected: np.ndarray, args, result=dense) -> dict[str, float | None]:
    """Median seconds per contender (timing.compare); None for one whose result, as `result` reads it,
    differs from `expected` (reported on stderr)."""
    def check(outcome):
        if not np.allclose(result(outcome), expected, rtol=1e-9, atol=1e-9):
            raise Mismatch("differs from scipy")
    timings = compare({name: (call, check) for name, (call, _) in calls.items()}, args.repeat, budget=args.budget)
    for name, timing in timings.items():
        if timing.status:
            print(f"  {timing.status}: {name}: {timing.detail}", file=sys.stderr)
    return {name: timing.seconds for name, timing in timings.items()}


def record(args, kernel: str, dataset: str, medians: dict[str, float | None], calls: dict, ours: str, variants=(),
           **extra) -> None:
    """Each contender's median; autosparse's (those with a kernel in `calls`) with their source hash."""
    for name, seconds in medians.items():
        role = "ours" if name == ours else "variant" if name in variants else "peer"
        compiled = calls[name][1]
        args.records.timing(kernel, dataset, name, seconds, role=role, **extra,
                            **({"source": source_hash(compiled)} if compiled is not None else {}))


def geomean(values) -> float:
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def spmspv(args, rng) -> None:
    print(f"## SpMSpV, x {args.density:.0%} dense\n")
    names = (*STRATEGIES, "auto", "scipy (x dense)", "scipy (x sparse)", "tensora", "pydata")
    print("| input | rows | nnz(A) | nnz(x) | " + " | ".join(names) + " | auto chose | best fixed / auto | merge / auto |")
    print("|" + "---|" * (len(names) + 7))
    within, speedups, rows_out = 0, [], 0
    for name, A in progress(inputs(args, rng), "SpMSpV inputs"):
        x = sparse_vector(rng, A.shape[1], args.density)
        calls = contenders(A, x)
        medians = measure(calls, A @ x, args)
        chosen = calls["auto"][1].chosen.body.coiterate.default.value
        fixed = {s: medians[s] for s in STRATEGIES if medians[s] is not None}
        best = min(fixed.values())
        auto = medians["auto"]
        cells = " | ".join("FAIL" if medians[n] is None else f"{medians[n] * 1e3:.3f}" for n in names)
        print(f"| {name} | {A.shape[0]:,} | {A.nnz:,} | {np.count_nonzero(x):,} | {cells} | {chosen} | "
              f"{best / auto:.2f} | {medians['merge'] / auto:.2f} |", flush=True)
        record(args, "SpMSpV", name, medians, calls, "auto", STRATEGIES, nnz=A.nnz, chose=chosen)
        rows_out += 1
        within += auto <= 1.1 * best
        speedups.append(medians["merge"] / auto)
    print(f"\nauto within 10% of the best fixed strategy on {within} of {rows_out} inputs; geometric-mean speedup "
          f"over the merge default {geomean(speedups):.2f}x\n")


TTM = "C(i,j,r) = A(i,j,k) * B(k,r)"


def tensors(args, rng):
    """(name, coords, shape) of 3-D tensors: generated uniform and skewed ones, then the shipped files."""
    n, nnz = (200, 400_000) if args.quick else (1000, 8_000_000)
    shape = (n, n, n)
    yield f"uniform {n}^3", np.stack([rng.integers(0, d, nnz) for d in shape]), shape
    yield f"skewed {n}^3", np.stack([np.floor(d * rng.random(nnz) ** 2).astype(np.int64) for d in shape]), shape
    if args.quick:
        return
    for path in sorted(Path(args.data).glob("*.tns.gz")):
        tensor = asp.read(str(path))
        coords, _ = tensor.to_coo()
        yield path.name.removesuffix(".tns.gz"), coords.astype(np.int64), tensor.shape


def ttm(args, rng) -> None:
    print("## TTM, R = 16, C sharing A's first two levels; 2 threads against 1\n")
    print("| tensor | shape | nnz | fibers | serial ms | parallel ms | speedup |")
    print("|---|---|---|---|---|---|---|")
    speedups = []
    for name, coords, shape in progress(tensors(args, rng), "TTM tensors"):
        A = asp.Tensor.from_coo(coords, rng.random(coords.shape[1]) + 0.5, shape, format="sss")
        B = rng.random((shape[2], 16))
        formats = {"A": "sss", "B": "dense", "C": "ssd"}
        serial = asp.compile(TTM, formats=formats, num_threads=1)
        parallel = asp.compile(TTM, formats=formats, schedule="parallelize(i, cpu_thread, no_races)", num_threads=2)
        expected = serial(A=A, B=B).vals
        calls = {"serial": ((lambda: serial(A=A, B=B)), serial), "parallel": ((lambda: parallel(A=A, B=B)), parallel)}
        medians = measure(calls, expected, args, result=lambda c: c.vals)
        record(args, "TTM, 2 threads", name, medians, calls, "parallel", ("serial",), nnz=A.nnz)
        fibers = len(A.levels[1]["crd"])
        speedup = medians["serial"] / medians["parallel"]
        speedups.append(speedup)
        print(f"| {name} | {'×'.join(map(str, shape))} | {A.nnz:,} | {fibers:,} | {medians['serial'] * 1e3:.2f} | "
              f"{medians['parallel'] * 1e3:.2f} | {speedup:.2f} |", flush=True)
    print(f"\ngeometric-mean parallel speedup {geomean(speedups):.2f}x\n")


def blocked_matrix(rng, block_rows: int, per_row: int, b: int) -> sp.csr_array:
    """A matrix of dense b × b blocks, `per_row` of them in each block row at random block columns."""
    cols = rng.integers(0, block_rows, (block_rows, per_row))
    pattern = sp.csr_array((np.ones(block_rows * per_row), (np.repeat(np.arange(block_rows), per_row), cols.ravel())),
                           shape=(block_rows, block_rows))
    pattern.sum_duplicates()
    blocks = sp.kron(pattern, np.ones((b, b)), format="csr")
    blocks.data = rng.random(blocks.nnz) + 0.5
    return sp.csr_array(blocks)


def bcsr(args, rng) -> None:
    print("## SpMV on BCSR against CSR\n")
    names = ("bcsr (ours)", "csr (ours)", "scipy csr", "scipy bsr")
    print("| matrix | rows | nnz | block | " + " | ".join(names) + " | csr / bcsr |")
    print("|" + "---|" * (len(names) + 5))
    cases = [(f"blocked 2^{s}, {b}×{b}", blocked_matrix(rng, (1 << s) // b, 8, b), b)
             for s in ((12,) if args.quick else (14, 17)) for b in (4, 8)]
    for name, A, b in progress(cases, "BCSR matrices"):
        x = rng.random(A.shape[1])
        ours_bcsr = asp.Tensor.from_scipy(A, format=f"bcsr({b})")
        ours_csr = asp.Tensor.from_scipy(A)
        spmv = "y(i) = A(i,j) * x(j)"
        blocked = asp.compile(spmv, formats={"A": f"bcsr({b})"})
        plain = asp.compile(spmv, formats={"A": "csr"})
        bsr = sp.bsr_array(A, blocksize=(b, b))
        calls = {names[0]: ((lambda: blocked(A=ours_bcsr, x=x)), blocked), names[1]: ((lambda: plain(A=ours_csr, x=x)), plain),
                 names[2]: ((lambda: A @ x), None), names[3]: ((lambda: bsr @ x), None)}
        medians = measure(calls, A @ x, args)
        record(args, "SpMV on BCSR", name, medians, calls, names[0], names[1:2], nnz=A.nnz)
        cells = " | ".join(f"{medians[n] * 1e3:.3f}" for n in names)
        print(f"| {name} | {A.shape[0]:,} | {A.nnz:,} | {b}×{b} | {cells} | {medians[names[1]] / medians[names[0]]:.2f} |",
              flush=True)
    print()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", choices=("spmspv", "ttm", "bcsr"), default=("spmspv", "ttm", "bcsr"))
    parser.add_argument("--density", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--budget", type=float, default=2.0)
    parser.add_argument("--data", default=str(DATA))
    parser.add_argument("--seed", type=int, default=0)
    add_option(parser)
    args = parser.parse_args(argv)
    args.records = Records(args.json)
    rng = np.random.default_rng(args.seed)
    print(f"# `autosparse bench coiteration {' '.join(sys.argv[1:] if argv is None else argv)}`")
    print(f"- machine: {machine.describe()}\n- medians of {args.repeat}, times in ms\n")
    for part in ("spmspv", "ttm", "bcsr"):
        if part in args.only:
            {"spmspv": spmspv, "ttm": ttm, "bcsr": bcsr}[part](args, rng)


if __name__ == "__main__":
    main()
