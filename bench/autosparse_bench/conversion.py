"""Conversion throughput of autosparse beside its peers (Tensora, scipy), on the same data in one process.

Why: converting between formats is the first cost every user pays (a file read, a scipy matrix handed
over, the format a kernel wants), and autosparse promises numpy-vectorised conversions that do not copy
when they need not. This script measures that promise against what a user would otherwise reach for, and
checks every result (ours and the peers') against the input's entries, so a fast wrong answer aborts the
run instead of winning it.

    autosparse bench conversion           # 4 real matrices, the real 3-D tensors, 10 M-nnz generated data
    autosparse bench conversion --quick   # generated data at 1 M nonzeros (CI)
    autosparse bench conversion --all     # every matrix and tensor of the data folder

Throughput is input nonzeros per second: the median of --repeat samples, timed as every suite times
them (autosparse_bench/timing.py) except that the checked first call is also the first timed one (no JIT to
warm up): a first call longer than --budget seconds is the only sample (Tensora converts in pure Python
and takes about half a minute a call on the generated matrix); the "runs" column shows it.
Each peer uses its own natural path; "n/a" marks a conversion the peer does not offer. scipy has no
tensors of three modes: the 3-D rows compare with pydata `sparse`, whose COO -> GCXS (compressed along
the first mode, the others linearised) is the same work as CSF's — sort the coordinates (its COO
constructor sorts a linearised key and sums duplicates), then compress — and with Tensora's CSF.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from itertools import chain
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
import sparse
import tensora

import autosparse as asp
from autosparse_bench import machine
from autosparse_bench.machine import progress
from autosparse_bench.data import shipped_data
from autosparse_bench.records import Records, add_option
from autosparse_bench.timing import Mismatch, compare

# A stiffness matrix, one with explicit zeros, a rectangular one and the largest graph.
DEFAULT_MATRICES = ("bcsstk13", "memplus", "Groebner_id2003_aug", "soc-brightkite")
DATA = shipped_data()


def sorted_entries(coords: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort(coords[::-1])
    return coords[:, order].astype(np.int64), values[order]


def tensora_entries(tensor: tensora.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The stored entries of a Tensora tensor, read from its taco level arrays."""
    paths, count = [], 1
    for kind, arrays, mode in zip(tensor.modes, tensor.taco_indices, tensor.mode_ordering):
        if kind == tensora.Mode.dense:
            dim = tensor.dimensions[mode]
            owner, coord = np.repeat(np.arange(count), dim), np.tile(np.arange(dim), count)
        else:
            pos, coord = np.asarray(arrays[0]), np.asarray(arrays[1], dtype=np.int64)
            owner = np.repeat(np.arange(count), np.diff(pos))
        paths, count = [p[owner] for p in paths] + [coord], len(coord)
    coords = np.empty((tensor.order, count), dtype=np.int64)
    coords[list(tensor.mode_ordering)] = paths
    return coords, np.asarray(tensor.taco_vals)


def entries(result, order: int) -> tuple[np.ndarray, np.ndarray]:
    """Any conversion's result as (coords of shape (order, nnz), values), sorted lexicographically."""
    if isinstance(result, asp.Tensor):
        return sorted_entries(*result.to_coo())
    if sp.issparse(result):
        coo = result.tocoo()
        return sorted_entries(np.vstack([coo.row, coo.col]), coo.data)
    if isinstance(result, tensora.Tensor):
        return sorted_entries(*tensora_entries(result))
    if isinstance(result, sparse.SparseArray):
        coo = result.asformat("coo")
        return sorted_entries(coo.coords, coo.data)
    if isinstance(result, dict):  # Tensora's to_dok
        coords = np.fromiter(chain.from_iterable(result), dtype=np.int64, count=len(result) * order)
        return sorted_entries(coords.reshape(len(result), order).T, np.fromiter(result.values(), dtype=float))
    raise TypeError(f"Expected a tensor, scipy.sparse array or dict, but found {type(result).__name__}")


def checker(reference, fmt: str | None = None, peer: bool = False):
    """A check (timing.Check) that a result holds exactly the reference entries and, when `fmt` is given,
    is an autosparse tensor in that format. A peer's result may lack the explicit zeros (Tensora's
    to_format drops them)."""
    def check(result) -> None:
        coords, values = entries(result, len(reference[0]))
        if fmt is not None and result.format != asp.Format(fmt, order=result.order):
            raise Mismatch(f"expected format {fmt}, but found {result.format}")
        expected = reference
        if peer and len(values) != len(reference[1]):
            kept = reference[1] != 0
            expected = (reference[0][:, kept], reference[1][kept])
        if not (np.array_equal(coords, expected[0]) and np.allclose(values, expected[1], rtol=1e-12, atol=0)):
            raise Mismatch(f"{coords.shape[1]} entries, {expected[0].shape[1]} expected; coordinates or values differ")
    return check


def matrix_cases(m: sp.csr_array):
    """(conversion, autosparse call, the format it must produce, [(peer, call or None for n/a)])."""
    coo = m.tocoo()
    shuffle = np.random.default_rng(0).permutation(m.nnz)
    shuffled = sp.coo_array((coo.data[shuffle], (coo.row[shuffle], coo.col[shuffle])), shape=m.shape)
    ours, tensora_csr = asp.Tensor.from_scipy(m), tensora.Tensor.from_scipy_sparse(m, format="ds")
    if not np.shares_memory(ours.vals, m.data):
        sys.exit("MISMATCH: Tensor.from_scipy copied a canonical CSR matrix")
    ours_coo = ours.to_format("coo")
    return [
        ("scipy CSR -> CSR (no copy)", lambda: asp.Tensor.from_scipy(m), "csr",
         [("tensora from_scipy_sparse", lambda: tensora.Tensor.from_scipy_sparse(m, format="ds"))]),
        ("shuffled scipy COO -> CSR", lambda: asp.Tensor.from_scipy(shuffled), "csr",
         [("scipy tocsr", shuffled.tocsr),
          ("tensora from_scipy_sparse", lambda: tensora.Tensor.from_scipy_sparse(shuffled, format="ds"))]),
        ("CSR -> scipy CSR", ours.to_scipy, None, [("tensora", None)]),
        ("CSR -> COO", lambda: ours.to_format("coo"), "coo",
         [("scipy tocoo", m.tocoo), ("tensora to_dok", lambda: tensora_csr.to_dok(explicit_zeros=True))]),
        ("scipy COO -> CSR", lambda: asp.Tensor.from_scipy(coo), "csr", [("scipy tocsr", coo.tocsr)]),
        ("COO -> CSR", lambda: ours_coo.to_format("csr"), "csr",
         [("scipy tocsr", coo.tocsr),
          ("tensora from_soa", lambda: tensora.Tensor.from_soa((coo.row, coo.col), coo.data, dimensions=m.shape,
                                                               format="ds"))]),
        ("CSR -> DCSR (ss)", lambda: ours.to_format("dcsr"), "dcsr",
         [("tensora to_format", lambda: tensora_csr.to_format("ss"))]),
        ("CSR -> CSC", lambda: ours.to_format("csc"), "csc",
         [("scipy tocsc", m.tocsc), ("tensora to_format", lambda: tensora_csr.to_format("d1s0"))]),
    ]


def tensor_cases(coords: np.ndarray, values: np.ndarray, shape: tuple[int, ...]):
    """The 3-D conversions, as `matrix_cases`; scipy has no 3-D tensors (see the module's docstring)."""
    ours_coo = asp.Tensor.from_coo(coords, values, shape)
    ours_csf = ours_coo.to_format("csf")
    soa = tuple(coords)
    tensora_csf = tensora.Tensor.from_soa(soa, values, dimensions=shape, format="sss")
    pydata_coo = sparse.COO(coords, values, shape=shape, sorted=True, has_duplicates=False)
    shuffle = np.random.default_rng(0).permutation(len(values))
    shuffled, shuffled_values = coords[:, shuffle], values[shuffle]
    return [
        ("COO -> CSF", lambda: ours_coo.to_format("csf"), "csf",
         [("pydata COO -> GCXS", lambda: pydata_coo.asformat("gcxs", compressed_axes=(0,))),
          ("tensora from_soa", lambda: tensora.Tensor.from_soa(soa, values, dimensions=shape, format="sss"))]),
        ("shuffled coordinates -> CSF", lambda: asp.Tensor.from_coo(shuffled, shuffled_values, shape, format="csf"),
         "csf", [("pydata COO(...) -> GCXS", lambda: sparse.COO(shuffled, shuffled_values, shape=shape)
                  .asformat("gcxs", compressed_axes=(0,)))]),
        ("CSF -> COO", lambda: ours_csf.to_format("coo"), "coo",
         [("tensora to_dok", lambda: tensora_csf.to_dok(explicit_zeros=True))]),
    ]


def canonical_csr(matrix) -> sp.csr_array:
    matrix = sp.csr_array(matrix)
    matrix.sum_duplicates()
    return matrix


def datasets(args):
    """(name, nnz, reference entries, cases) per data set, built one at a time to bound the memory used."""
    data = Path(args.data)
    matrices = sorted(data.glob("*.mtx.gz"))
    if not args.all:
        matrices = [p for p in matrices if p.name.removesuffix(".mtx.gz") in DEFAULT_MATRICES]
    for path in matrices:  # read by scipy, so the reference does not depend on autosparse's reader
        m = canonical_csr(scipy.io.mmread(path))
        yield path.name.removesuffix(".mtx.gz"), m.nnz, entries(m, 2), matrix_cases(m)
    rng = np.random.default_rng(42)
    n = max(args.size // 10, 1)
    rows, cols = rng.integers(0, n, (2, args.size))
    m = canonical_csr(sp.coo_array((rng.random(args.size), (rows, cols)), shape=(n, n)))
    yield f"random {n:,}² matrix", m.nnz, entries(m, 2), matrix_cases(m)
    del m
    for path in sorted(data.glob("*.tns.gz")):
        tensor = asp.read(path)
        coords, values = tensor.to_coo()
        yield path.name.removesuffix(".tns.gz"), len(values), sorted_entries(coords, values), \
            tensor_cases(coords, values, tensor.shape)
    nnz = args.size * 3 // 10
    shape = (max(nnz // 100, 1), max(nnz // 200, 1), max(nnz // 400, 1))
    keys = np.unique(rng.integers(0, np.prod(shape, dtype=np.int64), nnz))
    coords, values = np.array(np.unravel_index(keys, shape)), rng.random(len(keys))
    yield "random {}×{}×{} tensor".format(*shape), len(keys), (coords, values), tensor_cases(coords, values, shape)


def rate(nnz: int, seconds: float) -> float:
    return nnz / seconds / 1e6


def ratio(value: float) -> str:
    return f"{value:,.1f}×" if value >= 1 else f"{value:.2f}×"


def header(args) -> str:
    return "\n".join([
        "# Conversion throughput", "",
        f"- command: `{sys.argv[0]} {shlex.join(sys.argv[1:])}`",
        f"- machine: {machine.describe()}",
        f"- M nnz/s = million input nonzeros per second, median of {args.repeat} interleaved samples (one when "
        f"the first call exceeds {args.budget:g} s); runs = autosparse/peer", "",
        "| dataset | nnz | conversion | autosparse M nnz/s | peer | peer M nnz/s | autosparse/peer | runs |",
        "|---|---:|---|---:|---|---:|---:|---|",
    ])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(DATA), help="folder of .mtx.gz and .tns.gz files (default: %(default)s)")
    parser.add_argument("--all", action="store_true", help="every matrix of --data, not the default four")
    parser.add_argument("--size", type=int, default=10_000_000,
                        help="nonzeros of the generated matrix; the generated 3-D tensor gets 3/10 of them")
    parser.add_argument("--quick", action="store_true", help="same as --size 1000000 (for CI)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per measurement (default: %(default)s)")
    parser.add_argument("--budget", type=float, default=10.0,
                        help="seconds above which the warm-up run is the only sample (default: %(default)s)")
    add_option(parser)
    args = parser.parse_args(argv)
    if args.quick:
        args.size = 1_000_000
    records = Records(args.json)
    print(header(args), flush=True)
    failures = []
    for name, nnz, reference, cases in progress(datasets(args), "data sets"):
        for conversion, ours, fmt, peers in cases:
            contenders = {"autosparse": (ours, checker(reference, fmt)),
                          **{peer: (call, checker(reference, peer=True)) for peer, call in peers if call is not None}}
            timings = compare(contenders, args.repeat, budget=args.budget, warm_up=False)
            for contender, timing in timings.items():
                records.timing(conversion, name, contender, timing.seconds, role="ours" if contender == "autosparse" else "peer",
                               status=timing.status, nnz=nnz)
                if timing.status:
                    failures.append(f"{timing.status} {name}, {conversion}, {contender}: {timing.detail}")
            mine = timings["autosparse"]
            for peer, _ in peers:
                theirs = timings.get(peer)
                cells = [peer, "n/a", "n/a", f"{mine.runs}/-"]
                if theirs is not None and theirs.seconds and mine.seconds:
                    cells = [peer, f"{rate(nnz, theirs.seconds):,.2f}", ratio(theirs.seconds / mine.seconds),
                             f"{mine.runs}/{theirs.runs}"]
                ours_rate = f"{rate(nnz, mine.seconds):,.2f}" if mine.seconds else mine.status
                print(f"| {name} | {nnz:,} | {conversion} | {ours_rate} | " + " | ".join(cells) + " |", flush=True)
    if failures:
        print("\n" + "\n".join(f"- {failure}" for failure in failures))
        sys.exit(1)

if __name__ == "__main__":
    main()
