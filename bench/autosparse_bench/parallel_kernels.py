"""Parallel kernels at 1 and 2 threads beside their peers at the same thread counts, in one process on the
same data, with the bandwidth scaling of a plain copy at 1 and 2 threads beside them (the memory-traffic
floor these memory-bound kernels share):

- SpMV on a uniform and an R-MAT power-law matrix (rows skewed towards the first ones, as in graphs,
  where a static split of rows gives one thread most of the nonzeros): the row loop in parallel
  (`parallelize(i)`), Senanayake et al.'s row split (`split(i, i0, i1, 2048)`, tiles in parallel) and the
  load-balanced schedule (`collapse(i, j, f); pos(f, fp, A(i,j)); split(fp, p0, p1, 65536)`, chunks of
  nonzeros in parallel with atomic flushes of each row's sum), beside the serial default, scipy, MKL
  and GraphBLAS;
- SpMM against MKL, GraphBLAS and the hand-written C reference built with OpenMP; SDDMM against the C
  reference (its result written into the operand's pattern);
- SpGEMM with its rows unsorted, as `A @ B` gives it (`ds~`; threads count their rows, one sizes the
  arrays, threads fill their rows), and into sorted CSR as a variant, and TTM into a
  dense-compressed-dense result, against the serial default schedule, and SpGEMM against scipy, MKL and
  GraphBLAS, each unsorted and sorted where it gives both;
- element-wise add of two CSR matrices (the default schedule at each thread count) against scipy and
  GraphBLAS.

MKL (sparse_dot_mkl) and GraphBLAS (python-graphblas) run at the thread count of the row: each call sets
it first, as both keep one process-wide count. After each table, the fastest peer at each thread count
(the peers run at that count: scipy at 1) and its time over ours.

    autosparse bench scaling [--kernel spmv spmm ...] [--repeat 11] [--quick]

Sizes: SpMV 2^21 rows with 20 M nonzeros; SpMM 100,000² with 1,000,000 nonzeros times 100,000 × 64;
SDDMM 20,000² with 1,000,000 nonzeros, K = 32; SpGEMM two 100,000² with 1,000,000 each; TTM 2,000³ with
1,000,000; add two 200,000² with 2,000,000 each (--quick: a tenth, SpMV an eighth), working sets far
beyond the 512 KiB L2 per core. Each result is checked before timing; medians of --repeat samples as
every suite times them (autosparse_bench/timing.py); ratio = contender time / autosparse's at the same
thread count.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

import autosparse as asp
from . import data, kernel_suite_parser, machine
from .kernels import Reference, graphblas_plain, load_graphblas, load_mkl, ptr
from .records import Records, source_hash
from .timing import compare, fastest

ROWS = "parallelize(i, cpu_thread, no_races)"
SPMV = "y(i) = A(i,j) * x(j)"
ROW_SPLIT = "split(i, i0, i1, 2048); parallelize(i0, cpu_thread, no_races)"
BALANCED = "collapse(i, j, f); pos(f, fp, A(i,j)); split(fp, p0, p1, 65536); parallelize(p0, cpu_thread, atomics)"


def _matrix(rows: int, nnz: int, seed: int) -> sp.csr_array:
    return data.generate("uniform", rows, rows, nnz, seed=seed)


def _medians(contenders: dict, repeat: int) -> dict[str, float]:
    timings = compare({name: (call, None) for name, (_, call, _) in contenders.items()}, repeat)
    return {name: timing.seconds * 1e3 for name, timing in timings.items()}


def _table(args, kernel: str, dataset: str, details: str, medians: dict[str, float], contenders: dict,
           nnz: int) -> None:
    """Print the medians as a table and record them; `contenders` maps a name to (threads, call, the
    autosparse kernel it calls or None)."""
    print(f"\n{kernel}, {dataset} {details}, medians of {args.repeat}\n")
    print("| contender | threads | ms | vs autosparse at equal threads |")
    print("|---|---:|---:|---:|")
    mine = {threads: medians[name] for name, (threads, _, _) in contenders.items()
            if contender_role(name, threads) == "ours"}
    for name, (threads, _, _) in contenders.items():
        print(f"| {name} | {threads} | {medians[name]:.2f} | {medians[name] / mine[threads]:.2f}× |")
    _record(args, kernel, dataset, medians, contenders, nnz)
    print("\n| threads | autosparse ms | fastest peer | its ms | fastest peer / ours |\n|---:|---:|---|---:|---:|")
    for threads in (1, 2):
        found = fastest_peer(medians, contenders, threads)
        cells = ["none", "n/a", "n/a"] if found is None else \
            [found[0], f"{found[1]:.2f}", f"{found[1] / mine[threads]:.2f}×"]
        print(f"| {threads} | {mine[threads]:.2f} | " + " | ".join(cells) + " |")
    print(f"\nautosparse 2 threads vs 1: {mine[1] / mine[2]:.2f}×")


def contender_role(name: str, threads: int) -> str:
    """What contender `name` is to the group of `threads`: ours (autosparse's parallel schedule at that
    count), a bound (a plain copy), a variant (another autosparse schedule or count) or a peer."""
    if name == f"autosparse {threads}":
        return "ours"
    if name.startswith("copy"):
        return "bound"
    return "variant" if name.startswith(("autosparse", "row split", "load-balanced")) else "peer"


def fastest_peer(medians: dict[str, float], contenders: dict, threads: int) -> tuple[str, float] | None:
    """The fastest peer run at `threads` (name, ms), or None."""
    return fastest({name: medians[name] for name, (count, _, _) in contenders.items()
                    if count == threads and contender_role(name, threads) == "peer"})


def _record(args, kernel: str, dataset: str, medians: dict[str, float], contenders: dict, nnz: int) -> None:
    """Each thread count its own group, autosparse's parallel schedule at that count the one compared
    with; the 2-thread group also holds autosparse at 1 thread, for the scaling."""
    for threads in (1, 2):
        group = f"{dataset}, {threads} thread{'s' * (threads > 1)}"
        for name, (count, _, compiled) in contenders.items():
            if count == threads or (threads == 2 and name == "autosparse 1"):
                args.records.timing(kernel, group, name, medians[name] / 1e3,
                                    role=contender_role(name, threads), threads=count, nnz=nnz,
                                    **({"source": source_hash(compiled)} if compiled is not None else {}))


def spmv(args, rng, ref: Reference, mkl, gb) -> None:
    scale, nnz = (18, 2_500_000) if args.quick else (21, 20_000_000)
    n = 1 << scale
    matrices = {"uniform random": _matrix(n, nnz, args.seed),
                "R-MAT power law": data.generate("rmat", scale, edge_factor=nnz >> scale, seed=args.seed)}
    for name, matrix in matrices.items():
        x = rng.random(n)
        A = asp.Tensor.from_scipy(matrix)
        expected = matrix @ x
        kernels = {"autosparse serial kernel": (1, asp.compile(SPMV, {"A": "csr"}, num_threads=1))}
        for threads in (1, 2):
            for label, schedule in (("autosparse", ROWS), ("row split", ROW_SPLIT), ("load-balanced", BALANCED)):
                kernels[f"{label} {threads}"] = (threads, asp.compile(SPMV, {"A": "csr"}, schedule=schedule,
                                                                     num_threads=threads))
        contenders = {}
        for label, (threads, kernel) in kernels.items():
            np.testing.assert_allclose(kernel(A=A, x=x), expected, rtol=1e-10)
            contenders[label] = (threads, lambda k=kernel: k(A=A, x=x), kernel)
        contenders["scipy A @ x"] = (1, lambda: matrix @ x, None)
        ga, gx = (gb.io.from_scipy_sparse(matrix), gb.Vector.from_dense(x)) if gb is not None else (None, None)
        for threads in (1, 2):
            if mkl is not None:
                call = _mkl(mkl, threads, lambda m=matrix, v=x: mkl.dot_product_mkl(m, v))
                np.testing.assert_allclose(call(), expected, rtol=1e-10)
                contenders[f"MKL {threads}"] = (threads, call, None)
            if gb is not None:
                call = _graphblas(gb, threads, lambda: ga.mxv(gx, gb.semiring.plus_times).new())
                np.testing.assert_allclose(graphblas_plain(gb, call()), expected, rtol=1e-10)
                contenders[f"GraphBLAS {threads}"] = (threads, call, None)
        contenders.update(_copies(matrix.data.nbytes + matrix.indices.nbytes))
        heaviest = int(np.diff(matrix.indptr).max())
        half = int(matrix.indptr[n // 2])
        medians = _medians(contenders, args.repeat)
        _table(args, "SpMV", name, f"{n:,}² with {matrix.nnz:,} nonzeros (heaviest row {heaviest:,}, first half of "
               f"the rows {half / max(matrix.nnz, 1):.0%} of the nonzeros)", medians, contenders, matrix.nnz)
        _scaling(medians)


def spmm(args, rng, ref: Reference, mkl, gb) -> None:
    rows, nnz, cols = 100_000 // args.scale, 1_000_000 // args.scale, 64
    m = _matrix(rows, nnz, args.seed)
    b = rng.random((rows, cols))
    expected = m @ b
    A, B = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(b)
    if gb is not None:
        ga, gdense = gb.io.from_scipy_sparse(m), gb.Matrix.from_dense(b)
    function = ref.function("spmm", "spmm")
    contenders = {}
    for threads in (1, 2):
        kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr"}, schedule=ROWS, num_threads=threads)
        np.testing.assert_allclose(kernel(A=A, B=B), expected, rtol=1e-12)
        contenders[f"autosparse {threads}"] = (threads, lambda k=kernel: k(A=A, B=B), kernel)

        def reference(t=threads):
            out = np.empty((rows, cols))
            function(rows, cols, ptr(m.indptr), ptr(m.indices), ptr(m.data), ptr(b), ptr(out), t)
            return out
        np.testing.assert_allclose(reference(), expected, rtol=1e-12)
        contenders[f"C reference {threads}"] = (threads, reference, None)
        if mkl is not None:
            call = _mkl(mkl, threads, lambda: mkl.dot_product_mkl(m, b))
            np.testing.assert_allclose(call(), expected, rtol=1e-12)
            contenders[f"MKL {threads}"] = (threads, call, None)
        if gb is not None:
            call = _graphblas(gb, threads, lambda: ga.mxm(gdense, gb.semiring.plus_times).new())
            np.testing.assert_allclose(graphblas_plain(gb, call()).toarray(), expected, rtol=1e-12)
            contenders[f"GraphBLAS {threads}"] = (threads, call, None)
    _table(args, "SpMM", "uniform random", f"{rows:,}² with {m.nnz:,} nonzeros × dense {rows:,} × {cols}",
           _medians(contenders, args.repeat), contenders, m.nnz)


def sddmm(args, rng, ref: Reference, mkl, gb) -> None:
    rows, nnz, k = 20_000 // args.scale, 1_000_000 // args.scale, 32
    m = _matrix(rows, nnz, args.seed)
    c, d = rng.random((rows, k)), rng.random((k, rows))
    B, C, D = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(c), asp.Tensor.from_numpy(d)
    function = ref.function("sddmm", "sddmm")
    contenders, results = {}, []
    for threads in (1, 2):
        kernel = asp.compile("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "A": "csr"}, schedule=ROWS,
                             num_threads=threads)
        results.append(kernel(B=B, C=C, D=D).to_scipy().data)
        contenders[f"autosparse {threads}"] = (threads, lambda q=kernel: q(B=B, C=C, D=D), kernel)

        def reference(t=threads):
            pos, crd, out = np.empty(rows + 1, dtype=np.int32), np.empty(m.nnz, dtype=np.int32), np.empty(m.nnz)
            function(rows, rows, k, ptr(m.indptr), ptr(m.indices), ptr(m.data), ptr(c), ptr(d), ptr(pos), ptr(crd),
                     ptr(out), t)
            return out
        results.append(reference())
        contenders[f"C reference {threads}"] = (threads, reference, None)
    for result in results[1:]:
        np.testing.assert_allclose(result, results[0], rtol=1e-12)
    _table(args, "SDDMM", "uniform random", f"{rows:,}² with {m.nnz:,} nonzeros, K = {k}",
           _medians(contenders, args.repeat), contenders, m.nnz)


def _mkl(mkl, threads: int, call):
    """`call` with MKL's thread count set first (MKL keeps one process-wide count)."""
    def with_threads():
        mkl.mkl_set_num_threads(threads)
        return call()
    return with_threads


def _graphblas(gb, threads: int, call):
    """`call` with GraphBLAS's thread count set first (a process-wide setting too)."""
    def with_threads():
        gb.ss.config["nthreads"] = threads
        return call()
    return with_threads


def _sorted(product: sp.csr_array) -> sp.csr_array:
    """`product` with each row's columns in order (scipy and MKL leave them as their products made them)."""
    product.sort_indices()
    return product


def _copies(nbytes: int) -> dict:
    """A plain copy of `nbytes` at 1 and 2 threads beside the kernels: the memory-bandwidth scaling the
    machine allows (numpy releases the GIL while it copies)."""
    source, target = np.ones(nbytes, dtype=np.uint8), np.empty(nbytes, dtype=np.uint8)
    half, pool = nbytes // 2, ThreadPoolExecutor(2)

    def two():
        for future in [pool.submit(np.copyto, target[:half], source[:half]),
                       pool.submit(np.copyto, target[half:], source[half:])]:
            future.result()
    return {"copy of the same bytes 1": (1, lambda: np.copyto(target, source), None),
            "copy of the same bytes 2": (2, two, None)}


def _same_csr(result: asp.Tensor, expected: sp.csr_array) -> None:
    """A CSR result (its rows sorted here where it left them unsorted, `ds~`) equal to scipy's (sorted)
    product, array by array."""
    mine = _sorted(result.to_scipy())
    np.testing.assert_array_equal(mine.indptr, expected.indptr)
    np.testing.assert_array_equal(mine.indices, expected.indices)
    np.testing.assert_allclose(mine.data, expected.data, rtol=1e-12)


def spgemm(args, rng, ref: Reference, mkl, gb) -> None:
    rows, nnz = 100_000 // args.scale, 1_000_000 // args.scale
    a, b = _matrix(rows, nnz, args.seed), _matrix(rows, nnz, args.seed + 1)
    expected = a @ b
    expected.sort_indices()
    A, B = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    if gb is not None:
        ga, gb_b = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
    serial = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "ds~"}, num_threads=1)
    _same_csr(serial(A=A, B=B), expected)
    contenders = {"autosparse serial kernel": (1, lambda: serial(A=A, B=B), serial)}
    for threads in (1, 2):
        for label, result in (("autosparse", "ds~"), ("autosparse sorted", "csr")):
            kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": result}, schedule=ROWS,
                                 num_threads=threads)
            _same_csr(kernel(A=A, B=B), expected)
            contenders[f"{label} {threads}"] = (threads, lambda k=kernel: k(A=A, B=B), kernel)
        if mkl is not None:
            for label, sort in (("unsorted", False), ("sorted", True)):
                call = _mkl(mkl, threads, lambda s=sort: mkl.dot_product_mkl(a, b, reorder_output=s))
                _same_csr(asp.Tensor.from_scipy(_sorted(sp.csr_array(call()))), expected)
                contenders[f"MKL {threads} ({label} output)"] = (threads, call, None)
        if gb is not None:
            product = _graphblas(gb, threads, lambda: ga.mxm(gb_b, gb.semiring.plus_times).new())
            exported = _graphblas(gb, threads, lambda p=product: gb.io.to_scipy_sparse(p(), "csr"))
            _same_csr(asp.Tensor.from_scipy(graphblas_plain(gb, product())), expected)
            _same_csr(asp.Tensor.from_scipy(exported()), expected)
            contenders[f"GraphBLAS {threads} (product, rows possibly unsorted)"] = (threads, product, None)
            contenders[f"GraphBLAS {threads} (exported to sorted scipy)"] = (threads, exported, None)

    contenders["scipy A @ B, unsorted"] = (1, lambda: a @ b, None)
    contenders["scipy A @ B, sorted"] = (1, lambda: _sorted(a @ b), None)
    contenders.update(_copies(expected.nnz * 12))
    medians = _medians(contenders, args.repeat)
    _table(args, "SpGEMM", "uniform random", f"{rows:,}² × {rows:,}² with {a.nnz:,} and {b.nnz:,} nonzeros, rows "
           f"unsorted as `A @ B` leaves them ({expected.nnz:,} nonzeros)", medians, contenders, a.nnz)
    _scaling(medians)


def ttm(args, rng, ref: Reference, mkl, gb) -> None:
    """TTM into a dense-compressed-dense result, assembled by the threads (rows of i)."""
    size, nnz, rank = 2_000 // args.scale, 1_000_000 // args.scale, 16
    made = data.generate("uniform_tensor", (size,) * 3, nnz, seed=args.seed)
    B = asp.Tensor.from_coo(made.coords, made.vals, made.shape, "dss")
    C = rng.random((rank, size))
    formats = {"B": "dss", "C": "dense", "A": "dsd"}
    serial = asp.compile("A(i,j,k) = B(i,j,l) * C(k,l)", formats, num_threads=1)
    expected = serial(B=B, C=C)
    contenders = {"autosparse serial kernel": (1, lambda: serial(B=B, C=C), serial)}
    for threads in (1, 2):
        kernel = asp.compile("A(i,j,k) = B(i,j,l) * C(k,l)", formats, schedule=ROWS, num_threads=threads)
        np.testing.assert_array_equal(kernel(B=B, C=C).vals, expected.vals)
        contenders[f"autosparse {threads}"] = (threads, lambda k=kernel: k(B=B, C=C), kernel)
    contenders.update(_copies(len(expected.vals) * 8))
    medians = _medians(contenders, args.repeat)
    _table(args, "TTM", "uniform random", f"{size:,}³ with {B.nnz:,} nonzeros × dense {rank} × {size:,} into dsd "
           f"({len(expected.vals):,} values)", medians, contenders, B.nnz)
    _scaling(medians)


def add(args, rng, ref: Reference, mkl, gb) -> None:
    """C = A + B, all CSR, with the default schedule at each thread count."""
    rows, nnz = 200_000 // args.scale, 2_000_000 // args.scale
    a, b = _matrix(rows, nnz, args.seed), _matrix(rows, nnz, args.seed + 1)
    expected = _sorted(a + b)
    A, B = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    formats = {"A": "csr", "B": "csr", "C": "csr"}
    serial = asp.compile("C(i,j) = A(i,j) + B(i,j)", formats, num_threads=1)
    _same_csr(serial(A=A, B=B), expected)
    contenders = {"autosparse serial kernel": (1, lambda: serial(A=A, B=B), serial)}
    if gb is not None:
        ga, gb_b = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
    for threads in (1, 2):
        kernel = asp.compile("C(i,j) = A(i,j) + B(i,j)", formats, num_threads=threads)
        _same_csr(kernel(A=A, B=B), expected)
        contenders[f"autosparse {threads}"] = (threads, lambda k=kernel: k(A=A, B=B), kernel)
        if gb is not None:
            call = _graphblas(gb, threads, lambda: ga.ewise_add(gb_b, gb.binary.plus).new())
            _same_csr(asp.Tensor.from_scipy(graphblas_plain(gb, call())), expected)
            contenders[f"GraphBLAS {threads}"] = (threads, call, None)
    contenders["scipy A + B"] = (1, lambda: a + b, None)
    contenders.update(_copies(expected.nnz * 12))
    medians = _medians(contenders, args.repeat)
    _table(args, "Add", "uniform random", f"{rows:,}² + {rows:,}² with {a.nnz:,} and {b.nnz:,} nonzeros into "
           f"sorted CSR ({expected.nnz:,} nonzeros)", medians, contenders, a.nnz)
    _scaling(medians)


def _scaling(medians: dict[str, float]) -> None:
    copy = medians["copy of the same bytes 1"] / medians["copy of the same bytes 2"]
    print(f"autosparse 2 threads vs the serial kernel: {medians['autosparse serial kernel'] / medians['autosparse 2']:.2f}×; "
          f"copy bandwidth scaling 2 vs 1 thread: {copy:.2f}×")


KERNELS = {"spmv": spmv, "spmm": spmm, "sddmm": sddmm, "spgemm": spgemm, "ttm": ttm, "add": add}


def main(argv: list[str] | None = None) -> None:
    parser = kernel_suite_parser(__doc__, KERNELS, repeat=11, quick_help="a tenth of the sizes")
    args = parser.parse_args(argv)
    args.records = Records(args.json)
    args.scale = 10 if args.quick else 1
    rng = np.random.default_rng(args.seed)
    (mkl, mkl_note), (gb, gb_note) = load_mkl(), load_graphblas()
    print(f"- machine: {machine.describe()}")
    for note in (mkl_note, gb_note):
        if note:
            print(f"- {note}")
    ref = Reference(openmp=True)
    for name in machine.progress(args.kernel, "kernels"):
        KERNELS[name](args, rng, ref, mkl, gb)


if __name__ == "__main__":
    main()
