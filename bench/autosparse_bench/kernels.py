"""Kernel speed of autosparse beside its peers (scipy, MKL, GraphBLAS, Tensora, pydata sparse, hand-written C),
on the same data in one process.

Why: the compiler's promise is native kernels that a user does not have to write. This script times the
kernels of the papers (SpMV, SpGEMM, SpMM, SDDMM, TTV, TTM, MTTKRP) compiled with the default schedule on
one thread, against what a user would otherwise reach for: scipy.sparse, MKL (through sparse_dot_mkl),
SuiteSparse:GraphBLAS (through python-graphblas), Tensora, pydata `sparse`, and the plain serial loop nest
a programmer would write in C (autosparse_bench/reference/*.c, compiled here with `cc -O3 -march=native`).
Every result, ours and the peers', is checked against a scipy/numpy computation once before anything is
timed; a wrong autosparse result is reported as FAIL and the run goes on.

    autosparse bench kernels                         # generated data at full size (several minutes)
    autosparse bench kernels --quick                 # small generated data (smoke test, under a minute)
    autosparse bench kernels --kernel spmv spgemm    # some kernels only (also: compile)
    autosparse bench kernels --data soc-brightkite med   # also real files of ../shared/data

Every result is checked once before anything is timed, and contenders are timed as every suite times
them (autosparse_bench/timing.py): after an untimed warm-up call, --repeat samples interleaved round-robin,
each one call or, under --min-sample seconds (20 ms), the mean of a batch of calls lasting about that
long; a peer whose first timed call exceeds --budget seconds is timed by that call alone (the "runs"
column shows it). Only the call of an already-compiled kernel on already-converted operands is timed,
allocation of the result included.
Everything runs serially: BLAS, MKL, GraphBLAS and numba are held to one thread, and so is autosparse
(`set_num_threads(1)`: its default schedule then has no parallel loop). With `--threads 2` (the suite
`kernels-2t`), autosparse, MKL, GraphBLAS and the C references that take a thread count (SpMM, SDDMM) run
at 2 threads, with autosparse's default schedule choosing its parallel loops as a user's call would;
scipy, Tensora, pydata, numpy and the other C references stay serial: they are what a user of those
libraries gets. Start-up and call overhead do not depend on threads, and are measured at 1 only.
GraphBLAS's operands are built before timing, as MKL's and Tensora's are; its result is timed as the
GraphBLAS object `.new()` returns (a product's rows may be left unsorted, "jumbled", until read).
SpGEMM is timed twice: as `A @ B` gives it, rows unsorted (`ds~`), against the peers' unsorted products
(scipy's `A @ B`, MKL's, GraphBLAS's `mxm`); and into sorted CSR ("SpGEMM sorted") against the peers
that sort (scipy + `sort_indices`, MKL's `reorder_output`, GraphBLAS exported to scipy, Tensora, C).
After the table of every contender, one row per case names the fastest peer and its time over ours.
Ours is also timed as an array user spells it (`A @ x`, `A + B`: role "variant"), and on operands whose
storage order disagrees with the kernel's (a CSC B, a scipy COO A passed on every call), beside scipy.
Ratios are peer time / autosparse time: above 1 autosparse is faster.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import gc
import glob
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp
import sparse
import tensora
from tensora.compile import allocate_taco_structure, take_ownership_of_arrays, tensor_cdefs

import autosparse as asp
from autosparse_bench import data, machine
from autosparse_bench.records import Records, add_option, source_hash
from autosparse_bench.timing import Mismatch, Timing, compare, fastest, interleaved

ROOT = Path(__file__).resolve().parents[2]  # the checkout, when run from one
DATA = data.shipped_data()
REFERENCE = Path(__file__).resolve().parent / "reference"
KERNELS = ("spmv", "spmv+z", "spmspv", "spmspv-csc", "spgemm", "spgemm-sorted", "spmm", "sddmm", "add", "multiply",
           "spgemm-csc", "add-csc", "spmv-coo", "ttv", "ttm", "mttkrp", "compile")
#: The generated families (autosparse_bench.data): square matrices, then 3-D tensors.
MATRIX_FAMILIES = ("uniform", "power-law", "banded", "stencil-2d", "stencil-3d")
TENSOR_FAMILIES = ("uniform", "power-law")

# Generated data: about this many nonzeros per matrix kernel (uniform: `per_row` a row); dense widths; the
# 3-D tensors' shape and nnz.
SIZES = {
    "full": dict(spmv=2_000_000, **{"spmv+z": 2_000_000}, spmspv=2_000_000, spgemm=200_000, spmm=1_000_000, sddmm=1_000_000, add=2_000_000,
                 multiply=2_000_000, spmm_cols=64, sddmm_k=32, tensor=((1_000, 1_000, 4_000), 2_000_000), rank=16),
    "quick": dict(spmv=200_000, **{"spmv+z": 200_000}, spmspv=200_000, spgemm=40_000, spmm=100_000, sddmm=100_000, add=200_000,
                  multiply=200_000, spmm_cols=64, sddmm_k=32, tensor=((100, 100, 400), 100_000), rank=16),
}
PER_ROW = {"sddmm": 50}  # uniform rows; 10 otherwise
SPMSPV_DENSITY = 0.1


def family_matrix(family: str, nnz: int, per_row: int, seed: int) -> sp.csr_array:
    """A square matrix of `family` with about `nnz` nonzeros, from the disk cache once drawn."""
    if family == "uniform":
        n = max(16, nnz // per_row)
        return data.generate("uniform", n, n, nnz, seed=seed)
    if family == "power-law":  # R-MAT draws 16 edges a vertex, a few merged
        return data.generate("rmat", max(4, round(math.log2(max(nnz, 16) / 16))), seed=seed)
    if family == "banded":
        return data.generate("banded", max(16, nnz // 17), 8, seed=seed)
    if family == "stencil-2d":
        side = max(4, round(math.sqrt(nnz / 5)))
        return data.generate("stencil", side, side)
    if family == "stencil-3d":
        side = max(3, round((nnz / 7) ** (1 / 3)))
        return data.generate("stencil", side, side, side)
    raise ValueError(f"no matrix family {family!r}")


def family_tensor(family: str, shape: tuple[int, int, int], nnz: int, seed: int) -> data.SparseTensor:
    return data.generate("uniform_tensor" if family == "uniform" else "powerlaw_tensor", shape, nnz, seed=seed)


# A peer's dense intermediate above this many bytes is not attempted (pydata's SDDMM forms C @ D), nor a
# TTM whose dense output is larger than DENSE_OUTPUT_LIMIT (every contender allocates its own).
DENSE_LIMIT = 4 << 30
DENSE_OUTPUT_LIMIT = 1 << 30


# ---------------------------------------------------------------------------------------------------
# Peers that need loading: MKL, GraphBLAS and the C reference

def load_mkl(threads: int = 1):
    """sparse_dot_mkl with MKL held to `threads`, or (None, why not)."""
    libraries = sorted(glob.glob(os.path.join(sys.prefix, "lib", "libmkl_rt.so*")))
    if libraries and "MKL_RT" not in os.environ:
        os.environ["MKL_RT"] = libraries[-1]
    try:
        import sparse_dot_mkl
        sparse_dot_mkl.mkl_set_num_threads(threads)
        held = sparse_dot_mkl.mkl_get_max_threads()
    except Exception as error:  # ImportError, OSError from the loader, MKL's own errors
        return None, f"MKL: n/a, sparse_dot_mkl did not load ({type(error).__name__}: {error}); " \
                     f"install with `pip install sparse_dot_mkl mkl`"
    if held != threads:
        return None, f"MKL: n/a, it runs {held} threads when asked for {threads}"
    return sparse_dot_mkl, None


def load_graphblas(threads: int = 1):
    """python-graphblas (SuiteSparse:GraphBLAS) held to `threads`, or (None, why not)."""
    try:
        import graphblas
        graphblas.ss.config["nthreads"] = threads
        held = graphblas.ss.config["nthreads"]
    except Exception as error:  # ImportError, or the SuiteSparse library failing to load
        return None, f"GraphBLAS: n/a, python-graphblas did not load ({type(error).__name__}: {error}); " \
                     f"install with `pip install python-graphblas`"
    if held != threads:
        return None, f"GraphBLAS: n/a, it runs {held} threads when asked for {threads}"
    return graphblas, None


def graphblas_plain(gb, result):
    """A GraphBLAS result as scipy or numpy holds it, for the checks (a vector dense, with zeros where it
    stores nothing); any other result as it is."""
    if isinstance(result, gb.Vector):
        return result.to_dense(fill_value=0.0)
    if isinstance(result, gb.Matrix):
        return gb.io.to_scipy_sparse(result, "csr")
    return result


class Reference:
    """The hand-written C kernels of autosparse_bench/reference, compiled once into a temporary directory."""

    FLAGS = ("-O3", "-march=native", "-shared", "-fPIC")

    def __init__(self, openmp: bool = False, threads: int = 1):
        """`openmp`: build with -fopenmp, so that the references that take a thread count use them;
        `threads`: the count the kernels suite passes them."""
        self.flags = (*self.FLAGS, "-fopenmp") if openmp else self.FLAGS
        self.threads = threads
        self.directory = Path(tempfile.mkdtemp(prefix="autosparse-bench-ref-"))
        atexit.register(shutil.rmtree, self.directory, True)
        self.libraries: dict[str, ctypes.CDLL] = {}

    def function(self, file: str, name: str, restype=None):
        if file not in self.libraries:
            target = self.directory / f"{file}.so"
            command = [os.environ.get("CC", "cc"), *self.flags, "-o", str(target), str(REFERENCE / f"{file}.c")]
            subprocess.run(command, check=True)
            self.libraries[file] = ctypes.CDLL(str(target))
        function = getattr(self.libraries[file], name)
        function.restype = restype
        return function


def ptr(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


# ---------------------------------------------------------------------------------------------------
# Tensora operands built from numpy arrays (its own constructors walk every entry in Python), and results
# read back the same way. Checked against Tensora's constructors at start-up.

#: C's malloc: Tensora releases the arrays its tensors own with C's free.
LIBC = ctypes.CDLL(None)
LIBC.malloc.restype, LIBC.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]


def tensora_tensor(levels, vals: np.ndarray, dims: tuple[int, ...]) -> tensora.Tensor:
    """A Tensora tensor from taco level arrays: `levels` has None for a dense level, (pos, crd) else. The
    arrays are copied into malloc'ed memory that the tensor then owns as it owns a kernel's output
    (`take_ownership_of_arrays`, public in tensora.compile): freed when the tensor is collected."""
    modes = tuple(0 if level is None else 1 for level in levels)
    cffi_tensor = allocate_taco_structure(modes, dims, tuple(range(len(dims))))
    indices = tensor_cdefs.cast("int32_t***", cffi_tensor.indices)
    for number, level in enumerate(levels):
        for slot, array in enumerate(level or ()):
            indices[number][slot] = _malloced_copy(np.ascontiguousarray(array, dtype=np.int32), "int32_t*")
    cffi_tensor.vals = _malloced_copy(np.ascontiguousarray(vals, dtype=np.float64), "double*")
    take_ownership_of_arrays(cffi_tensor)
    return tensora.Tensor(cffi_tensor)


def _malloced_copy(array: np.ndarray, pointer_type: str):
    """A copy of `array` in memory from C's malloc, as a cffi pointer: what C's free, which Tensora calls on
    the arrays a tensor owns, may release."""
    address = LIBC.malloc(max(array.nbytes, 1))
    if not address:
        raise MemoryError(f"malloc of {array.nbytes:,} bytes for a Tensora operand failed")
    ctypes.memmove(address, array.ctypes.data, array.nbytes)
    return tensor_cdefs.cast(pointer_type, address)


def tensora_arrays(tensor: tensora.Tensor):
    """(levels, vals) of a Tensora tensor in identity mode order, as numpy copies."""
    cffi_tensor, count = tensor.cffi_tensor, 1
    indices = tensor_cdefs.cast("int32_t***", cffi_tensor.indices)
    levels = []
    for number, (mode, dim) in enumerate(zip(tensor.modes, tensor.dimensions)):
        if mode == tensora.Mode.dense:
            levels.append(None)
            count *= dim
        else:
            pos = np.frombuffer(tensor_cdefs.buffer(indices[number][0], (count + 1) * 4), dtype=np.int32).copy()
            count = int(pos[-1])
            crd = np.frombuffer(tensor_cdefs.buffer(indices[number][1], count * 4), dtype=np.int32).copy()
            levels.append((pos, crd))
    vals = np.frombuffer(tensor_cdefs.buffer(cffi_tensor.vals, count * 8), dtype=np.float64).copy()
    return levels, vals


def tensora_dense(array: np.ndarray) -> tensora.Tensor:
    return tensora_tensor([None] * array.ndim, array.ravel(), array.shape)


def tensora_csr(m: sp.csr_array) -> tensora.Tensor:
    return tensora_tensor([None, (m.indptr, m.indices)], m.data, m.shape)


def check_tensora_conversions() -> None:
    """Abort unless the fast Tensora constructors agree with Tensora's own on small data."""
    rng = np.random.default_rng(7)
    m = data.uniform(30, 20, 80, seed=7)
    mine, theirs = tensora_csr(m), tensora.Tensor.from_scipy_sparse(m, format="ds")
    small = data.uniform_tensor((6, 5, 7), 60, seed=7)
    coords, vals, shape = small.coords, small.vals, small.shape
    tensor = tensora_tensor(csf_levels(coords, shape), vals, shape)
    reference = tensora.Tensor.from_soa(tuple(coords), vals, dimensions=shape, format="sss")
    dense = rng.random((4, 3))
    for ours, peer in ((mine, theirs), (tensor, reference), (tensora_dense(dense), tensora.Tensor.from_numpy(dense))):
        if ours.to_dok(explicit_zeros=True) != peer.to_dok(explicit_zeros=True):
            sys.exit("MISMATCH: the benchmark's Tensora constructor disagrees with Tensora's own")
        levels, vals = tensora_arrays(ours)
        if not np.array_equal(vals, np.asarray(peer.taco_vals)):
            sys.exit("MISMATCH: the benchmark's Tensora reader disagrees with Tensora's own")


# ---------------------------------------------------------------------------------------------------
# Data

def csf_levels(coords: np.ndarray, shape) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (pos, crd) arrays of every level of CSF, built from lexicographically sorted unique coords."""
    order, nnz = coords.shape
    levels, parents = [], np.zeros(nnz, dtype=np.int64)  # per entry: position of its node one level up
    count = 1
    for level in range(order):
        prefix = coords[: level + 1]
        new = np.ones(nnz, dtype=bool)
        if nnz:
            new[1:] = np.any(prefix[:, 1:] != prefix[:, :-1], axis=0)
        starts = np.flatnonzero(new)
        crd = coords[level, starts].astype(np.int32)
        pos = np.zeros(count + 1, dtype=np.int32)
        np.cumsum(np.bincount(parents[starts], minlength=count), out=pos[1:])
        levels.append((pos, crd))
        parents, count = np.cumsum(new) - 1, len(starts)
    return levels


# ---------------------------------------------------------------------------------------------------
# Checks: every result as numpy arrays, compared with a scipy/numpy reference

def close(values, expected) -> bool:
    values, expected = np.asarray(values), np.asarray(expected)
    scale = float(np.abs(expected).max()) if expected.size else 1.0
    return values.shape == expected.shape and np.allclose(values, expected, rtol=1e-9, atol=1e-12 * max(scale, 1.0))


def as_dense(result, shape) -> np.ndarray:
    if isinstance(result, asp.Tensor):
        if result.format != asp.Format("d" * len(shape)):
            raise Mismatch(f"expected a dense result, but found format {result.format}")
        return result.to_numpy()
    if isinstance(result, tensora.Tensor):
        return tensora_arrays(result)[1].reshape(shape)
    if isinstance(result, sparse.SparseArray):
        return result.todense()
    if sp.issparse(result):
        return result.toarray().reshape(shape)
    return np.asarray(result).reshape(shape)


def as_csr(result, shape, sorted_rows: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pos, crd, vals) of a CSR result; rows sorted here unless `sorted_rows` demands they already are."""
    if isinstance(result, asp.Tensor) and not (result.format == asp.Format("ds~") and not sorted_rows):
        if result.format != asp.Format("ds"):
            raise Mismatch(f"expected a CSR result, but found format {result.format}")
        level = result.levels[1]
        pos, crd, vals = level["pos"], level["crd"], result.vals
    elif isinstance(result, tensora.Tensor):
        levels, vals = tensora_arrays(result)
        pos, crd = levels[1]
    elif isinstance(result, tuple):
        pos, crd, vals = result
    else:
        if isinstance(result, (sparse.SparseArray, asp.Tensor)):  # a Tensor here: rows unsorted (ds~)
            result = result.to_scipy_sparse() if isinstance(result, sparse.SparseArray) else result.to_scipy()
        result = sp.csr_array(result)
        if not sorted_rows:
            result = result.copy()
            result.sort_indices()
        pos, crd, vals = result.indptr, result.indices, result.data
    if sorted_rows:
        owner = np.repeat(np.arange(len(pos) - 1), np.diff(pos))
        keys = owner.astype(np.int64) * shape[1] + crd
        if np.any(keys[1:] <= keys[:-1]):
            raise Mismatch("rows are not sorted (or hold duplicate columns)")
    return np.asarray(pos), np.asarray(crd), np.asarray(vals)


def dense_check(expected: np.ndarray) -> Callable[[Any], None]:
    def check(result):
        values = as_dense(result, expected.shape)
        if not close(values, expected):
            bad = np.argmax(np.abs(values - expected)) if values.shape == expected.shape else None
            raise Mismatch(f"values differ (shape {values.shape}, expected {expected.shape}; worst at flat "
                           f"index {bad})")
    return check


def csr_check(expected: sp.csr_array, sorted_rows: bool) -> Callable[[Any], None]:
    """A CSR result against `expected`, by value: stored zeros may differ (autosparse keeps the zeros that
    cancellation produces, scipy's SpGEMM drops them). With `sorted_rows`, rows must be strictly sorted."""
    scale = max(float(np.abs(expected.data).max()) if expected.nnz else 1.0, 1.0)

    def check(result):
        pos, crd, vals = as_csr(result, expected.shape, sorted_rows)
        if len(pos) != expected.shape[0] + 1 or pos[-1] != len(crd) or len(crd) != len(vals):
            raise Mismatch(f"malformed CSR arrays ({len(pos)} positions, {len(crd)} coordinates, {len(vals)} values)")
        got = sp.csr_array((vals, crd, pos), shape=expected.shape)
        extra = len(crd) - expected.nnz
        difference = abs(got - expected)
        if difference.nnz and difference.max() > 1e-9 * scale:
            raise Mismatch(f"values differ by up to {difference.max():.3g} ({len(crd):,} entries stored, "
                           f"{expected.nnz:,} nonzeros expected)")
        if extra < 0:
            raise Mismatch(f"{-extra:,} entries fewer than expected")
    return check


# ---------------------------------------------------------------------------------------------------
# Cases

@dataclass
class Peer:
    name: str
    call: Callable[[], Any] | None  # None: n/a
    check: Callable[[Any], None] | None = None
    note: str = ""  # why n/a, or a remark printed under the table


@dataclass
class Case:
    kernel: str
    dataset: str
    expression: str
    formats: dict[str, str]
    operands: dict[str, Any]  # autosparse operands, already Tensors
    check: Callable[[Any], None]
    peers: list[Peer]
    targets: list[tuple[str, tuple[str, ...], float]] = field(default_factory=list)  # (label, peers, min ratio)
    notes: list[str] = field(default_factory=list)
    schedule: str | None = None  # ours: the default schedule unless a case names one
    # Ours as an array user spells it (`A @ x`), timed beside the compiled kernel as role "variant".
    spellings: dict[str, Callable[[], Any]] = field(default_factory=dict)


TENSORA_BACKENDS = (("tensora (llvm)", tensora.BackendCompiler.llvm), ("tensora (cffi)", tensora.BackendCompiler.cffi))
TENSORA = tuple(name for name, _ in TENSORA_BACKENDS)


def tensora_peers(expression: str, formats: dict[str, str], operands: dict[str, tensora.Tensor], check) -> list[Peer]:
    peers = []
    for name, backend in TENSORA_BACKENDS:
        try:
            method = tensora.tensor_method(expression, formats, backend)
        except Exception as error:
            why = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
            peers.append(Peer(name, None, note=f"tensora (both backends): no kernel for `{expression}` with formats "
                                                f"{formats} ({why})"))
            continue
        peers.append(Peer(name, (lambda m=method: m(**operands)), check))
    return peers


def mkl_peer(mkl, call, check) -> Peer:
    return Peer("MKL (sparse_dot_mkl)", call if mkl else None, check, note="" if mkl else "MKL: n/a (see above)")


def graphblas_peer(gb, name: str, make: Callable[[Any], Callable[[], Any]], check) -> Peer:
    """`name`, the GraphBLAS call `make(gb)` returns (its operands built there, before timing), its result
    checked as scipy or numpy holds it; n/a without GraphBLAS."""
    if gb is None:
        return Peer(name, None, note="GraphBLAS: n/a (see above)")
    return Peer(name, make(gb), lambda result: check(graphblas_plain(gb, result)))


def spmv_case(dataset: str, m: sp.csr_array, rng, mkl, gb, ref: Reference, shifted: bool = False) -> Case:
    """y = A x, or with `shifted` y = A x + z: a sum over j scoped to the product (TACO's reading), which
    the default schedule keeps in a register per row."""
    x = rng.random(m.shape[1])
    rows = m.shape[0]
    z = rng.random(rows) if shifted else np.zeros(rows)
    expected = m @ x + z
    check = dense_check(expected)
    spmv = ref.function("spmv", "spmv")

    def reference():
        y = np.empty(rows)
        spmv(rows, ptr(m.indptr), ptr(m.indices), ptr(m.data), ptr(x), ptr(y))
        return y

    expression = "y(i) = A(i,j) * x(j) + z(i)" if shifted else "y(i) = A(i,j) * x(j)"
    plus = (lambda y: y + z) if shifted else (lambda y: y)
    tm, tx = tensora_csr(m), tensora_dense(x)
    row, pm = np.repeat(np.arange(rows), np.diff(m.indptr)), sparse.GCXS.from_scipy_sparse(m)
    given = {"A": tm, "x": tx, **({"z": tensora_dense(z)} if shifted else {})}
    written = " + z" if shifted else ""
    peers = [Peer(f"scipy A @ x{written}", lambda: plus(m @ x), check),
             Peer("numpy (bincount over entries)",
                  lambda: plus(np.bincount(row, m.data * x[m.indices], minlength=rows)), check),
             Peer(f"pydata A @ x{written}", lambda: plus(pm @ x), check),
             *tensora_peers(expression, {"y": "d", "A": "ds", "x": "d", **({"z": "d"} if shifted else {})}, given,
                            check)]
    if not shifted:
        peers.append(Peer("C reference", reference, check))
    peers.append(mkl_peer(mkl, lambda: plus(mkl.dot_product_mkl(m, x)), check))

    def graphblas(gb):
        ga, gx = gb.io.from_scipy_sparse(m), gb.Vector.from_dense(x)
        if shifted:
            gz = gb.Vector.from_dense(z)
            return lambda: ga.mxv(gx, gb.semiring.plus_times).new().ewise_add(gz, gb.binary.plus).new()
        return lambda: ga.mxv(gx, gb.semiring.plus_times).new()
    peers.append(graphblas_peer(gb, f"GraphBLAS A.mxv(x){' + z' if shifted else ''}", graphblas, check))
    operands = {"A": asp.Tensor.from_scipy(m), "x": asp.Tensor.from_numpy(x)}
    if shifted:
        return Case("SpMV + z", dataset, expression, {"A": "csr", "x": "d", "z": "d", "y": "d"},
                    {**operands, "z": asp.Tensor.from_numpy(z)}, check, peers,
                    [("SpMV + z ≥ 0.95× scipy", ("scipy A @ x + z",), 0.95),
                     ("SpMV + z ≥ 0.9× Tensora", TENSORA, 0.9)])
    return Case("SpMV", dataset, expression, {"A": "csr", "x": "d", "y": "d"}, operands, check, peers,
                [("SpMV ≥ 0.95× scipy", ("scipy A @ x",), 0.95), ("SpMV ≥ 0.9× Tensora", TENSORA, 0.9),
                 ("SpMV ≥ 0.9× C reference", ("C reference",), 0.9)],
                spellings={"autosparse A @ x": lambda a=operands["A"]: a @ x})


def spmspv_case(dataset: str, m: sp.csr_array, rng, mkl, gb, ref: Reference, by_column: bool = False) -> Case:
    """y = A x with x sparse (SPMSPV_DENSITY of its entries): ours chooses how rows meet x per call. With
    `by_column`, A is held by column by every contender that can (scipy's CSC, GraphBLAS's by-column matrix,
    Tensora's d1s0): x's entries push A's columns into y, instead of A's rows pulling x."""
    x = np.zeros(m.shape[1])
    chosen = rng.choice(m.shape[1], max(1, int(round(SPMSPV_DENSITY * m.shape[1]))), replace=False)
    x[chosen] = rng.random(len(chosen)) + 0.5
    expected = m @ x
    check = dense_check(expected)
    a = sp.csc_array(m) if by_column else m
    column, coords = sp.csc_array(x.reshape(-1, 1)), np.flatnonzero(x)
    pm, px = sparse.GCXS.from_scipy_sparse(a), sparse.COO.from_numpy(x)
    tx = tensora_tensor([(np.array([0, len(coords)]), coords)], x[coords], x.shape)
    ta = tensora.Tensor.from_scipy_sparse(a, format="d1s0") if by_column else tensora_csr(m)
    layout = " (A CSC)" if by_column else ""
    peers = [Peer(f"scipy A @ x{layout} (x sparse)", lambda: a @ column, check),
             Peer(f"pydata A @ x{layout}", lambda: pm @ px, check),
             *tensora_peers("y(i) = A(i,j) * x(j)", {"y": "d", "A": "d1s0" if by_column else "ds", "x": "s"},
                            {"A": ta, "x": tx}, check)]

    def graphblas(gb):  # from_scipy_sparse keeps the layout: a CSC array gives a matrix held by column
        ga, gx = gb.io.from_scipy_sparse(a), gb.Vector.from_coo(coords, x[coords], size=len(x))
        return lambda: ga.mxv(gx, gb.semiring.plus_times).new()
    peers.append(graphblas_peer(gb, f"GraphBLAS A.mxv(x){layout} (x sparse)", graphblas, check))
    kernel = "SpMSpV CSC" if by_column else "SpMSpV"
    return Case(kernel, dataset, "y(i) = A(i,j) * x(j)", {"A": "csc" if by_column else "csr", "x": "s", "y": "d"},
                {"A": asp.Tensor.from_scipy(a), "x": asp.Tensor.from_numpy(x, format="s")}, check, peers,
                [(f"{kernel} ≥ 0.9× scipy", (f"scipy A @ x{layout} (x sparse)",), 0.9)],
                schedule="coiterate(j, auto)")


def elementwise_case(kernel: str, dataset: str, a: sp.csr_array, b: sp.csr_array, gb) -> Case:
    """C = A + B or A ∘ B, all CSR."""
    add = kernel == "Add"
    expected = data.canonical(a + b if add else a.multiply(b))
    check = csr_check(expected, True)
    pa, pb = sparse.GCXS.from_scipy_sparse(a), sparse.GCXS.from_scipy_sparse(b)
    expression = f"C(i,j) = A(i,j) {'+' if add else '*'} B(i,j)"
    peers = [Peer("scipy A + B" if add else "scipy A.multiply(B)", (lambda: a + b) if add else (lambda: a.multiply(b)),
                  csr_check(expected, False)),
             Peer("pydata A + B" if add else "pydata A * B", (lambda: pa + pb) if add else (lambda: pa * pb),
                  csr_check(expected, False)),
             *tensora_peers(expression, {"C": "ds", "A": "ds", "B": "ds"}, {"A": tensora_csr(a), "B": tensora_csr(b)},
                            check)]

    def graphblas(gb):
        ga, gb_b = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
        if add:
            return lambda: ga.ewise_add(gb_b, gb.binary.plus).new()
        return lambda: ga.ewise_mult(gb_b, gb.binary.times).new()
    peers.append(graphblas_peer(gb, f"GraphBLAS A.{'ewise_add' if add else 'ewise_mult'}(B)", graphblas,
                                csr_check(expected, False)))
    ta, tb = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    spelled = (lambda: ta + tb) if add else (lambda: ta * tb)
    return Case(kernel, dataset, expression, {"A": "csr", "B": "csr", "C": "csr"}, {"A": ta, "B": tb}, check, peers,
                [(f"{kernel} ≥ 0.9× scipy", (peers[0].name,), 0.9)],
                spellings={f"autosparse A {'+' if add else '*'} B": spelled})


def spgemm_case(dataset: str, a: sp.csr_array, b: sp.csr_array, rng, mkl, gb, ref: Reference,
                sorted_rows: bool = False) -> Case:
    """C = A B with rows as `A @ B` leaves them, unsorted (`ds~`, as scipy's, MKL's and GraphBLAS's
    products), against the peers' unsorted products; with `sorted_rows`, into sorted CSR against the
    peers that sort theirs."""
    expected = data.canonical(a @ b)
    check = csr_check(expected, sorted_rows)
    rows, cols = a.shape[0], b.shape[1]
    oa, ob = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b)
    if not sorted_rows:
        peers = [Peer("scipy A @ B", lambda: a @ b, check),
                 Peer("pydata A @ B", (lambda pa=sparse.GCXS.from_scipy_sparse(a), pb=sparse.GCXS.from_scipy_sparse(b):
                                       pa @ pb), check),
                 mkl_peer(mkl, lambda: mkl.dot_product_mkl(a, b), check),
                 graphblas_peer(gb, "GraphBLAS A.mxm(B)", lambda gb: _graphblas_product(gb, a, b), check)]
        notes = ["SpGEMM: every result's rows as its library leaves them (unsorted), checked after sorting; "
                 "GraphBLAS's product is timed as the GraphBLAS matrix `.new()` returns, its rows possibly left "
                 "jumbled until read."]
        return Case("SpGEMM", dataset, "C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "ds~"},
                    {"A": oa, "B": ob}, check, peers, [("SpGEMM ≥ 0.8× scipy", ("scipy A @ B",), 0.8)], notes,
                    spellings={"autosparse A @ B": lambda: oa @ ob})
    symbolic = ref.function("spgemm", "spgemm_symbolic", ctypes.c_int64)
    numeric = ref.function("spgemm", "spgemm_numeric", ctypes.c_int)

    def reference():
        pos = np.empty(rows + 1, dtype=np.int32)
        nnz = symbolic(rows, cols, ptr(a.indptr), ptr(a.indices), ptr(b.indptr), ptr(b.indices), ptr(pos))
        if nnz < 0 or nnz >= 2**31:
            raise MemoryError("the C reference SpGEMM ran out of memory or int32 positions")
        crd, vals = np.empty(nnz, dtype=np.int32), np.empty(nnz)
        if numeric(rows, cols, ptr(a.indptr), ptr(a.indices), ptr(a.data), ptr(b.indptr), ptr(b.indices),
                   ptr(b.data), ptr(pos), ptr(crd), ptr(vals)):
            raise MemoryError("the C reference SpGEMM ran out of memory")
        return pos, crd, vals

    def scipy_sorted():
        c = a @ b
        c.sort_indices()
        return c

    def exported(gb):
        product = _graphblas_product(gb, a, b)
        return lambda: gb.io.to_scipy_sparse(product(), "csr")
    ta, tb = tensora_csr(a), tensora_csr(b)
    peers = [Peer("scipy A @ B + sort_indices", scipy_sorted, check),
             *tensora_peers("C(i,j) = A(i,k) * B(k,j)", {"C": "ds", "A": "ds", "B": "ds"}, {"A": ta, "B": tb}, check),
             Peer("C reference", reference, check),
             mkl_peer(mkl, lambda: mkl.dot_product_mkl(a, b, reorder_output=True), check),
             graphblas_peer(gb, "GraphBLAS A.mxm(B) to sorted scipy", exported, check)]
    notes = ["SpGEMM sorted: every result's rows sorted, by the library (MKL's `reorder_output`, GraphBLAS's export "
             "to scipy arrays, which sorts them) or by `sort_indices` after scipy's product.",
             "Tensora 0.6 has no workspaces, so it has no kernel for CSR × CSR → CSR with rows as the outer "
             "loop (Gustavson needs a scatter into a dense row)."]
    return Case("SpGEMM sorted", dataset, "C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"},
                {"A": oa, "B": ob}, check, peers,
                [("SpGEMM sorted ≥ 0.8× scipy + sort", ("scipy A @ B + sort_indices",), 0.8),
                 ("SpGEMM sorted ≥ 0.9× Tensora", TENSORA, 0.9), ("SpGEMM sorted ≥ 0.9× C reference", ("C reference",), 0.9)],
                notes)


def _graphblas_product(gb, a: sp.csr_array, b: sp.csr_array) -> Callable[[], Any]:
    """GraphBLAS's A B, its operands built now (before timing)."""
    ga, gb_b = gb.io.from_scipy_sparse(a), gb.io.from_scipy_sparse(b)
    return lambda: ga.mxm(gb_b, gb.semiring.plus_times).new()


def spmm_case(dataset: str, m: sp.csr_array, cols: int, rng, mkl, gb, ref: Reference) -> Case:
    b = rng.random((m.shape[1], cols))
    expected = m @ b
    check = dense_check(expected)
    spmm = ref.function("spmm", "spmm")
    rows = m.shape[0]

    def reference():
        c = np.empty((rows, cols))
        spmm(rows, cols, ptr(m.indptr), ptr(m.indices), ptr(m.data), ptr(b), ptr(c), ref.threads)
        return c

    tm, tb = tensora_csr(m), tensora_dense(b)
    pm = sparse.GCXS.from_scipy_sparse(m)
    peers = [Peer("scipy A @ B", lambda: m @ b, check),
             Peer("pydata A @ B", lambda: pm @ b, check),
             mkl_peer(mkl, lambda: mkl.dot_product_mkl(m, b), check),
             *tensora_peers("C(i,j) = A(i,k) * B(k,j)", {"C": "dd", "A": "ds", "B": "dd"}, {"A": tm, "B": tb}, check),
             Peer("C reference", reference, check)]

    def graphblas(gb):
        ga, gb_b = gb.io.from_scipy_sparse(m), gb.Matrix.from_dense(b)
        return lambda: ga.mxm(gb_b, gb.semiring.plus_times).new()
    peers.append(graphblas_peer(gb, "GraphBLAS A.mxm(B) (B dense)", graphblas, check))
    om = asp.Tensor.from_scipy(m)
    return Case("SpMM", dataset, "C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "dense", "C": "dense"},
                {"A": om, "B": asp.Tensor.from_numpy(b)}, check, peers,
                [("SpMM ≥ 0.9× Tensora", TENSORA, 0.9), ("SpMM ≥ 0.9× C reference", ("C reference",), 0.9)],
                spellings={"autosparse A @ B": lambda: om @ b})


def sddmm_case(dataset: str, m: sp.csr_array, k: int, rng, gb, ref: Reference) -> Case:
    rows, cols = m.shape
    c, d = rng.random((rows, k)), rng.random((k, cols))
    row = np.repeat(np.arange(rows), np.diff(m.indptr))
    vals = np.empty(m.nnz)
    for start in range(0, m.nnz, 1 << 18):  # in chunks: (nnz, k) temporaries
        part = slice(start, start + (1 << 18))
        vals[part] = m.data[part] * np.einsum("nk,kn->n", c[row[part]], d[:, m.indices[part]])
    expected = sp.csr_array((vals, m.indices, m.indptr), shape=m.shape)
    check = csr_check(expected, True)
    sddmm, d_columns = ref.function("sddmm", "sddmm_dt"), np.ascontiguousarray(d.T)

    def reference():
        pos, crd, out = np.empty(rows + 1, dtype=np.int32), np.empty(m.nnz, dtype=np.int32), np.empty(m.nnz)
        sddmm(rows, cols, k, ptr(m.indptr), ptr(m.indices), ptr(m.data), ptr(c), ptr(d_columns), ptr(pos), ptr(crd),
              ptr(out), ref.threads)
        return pos, crd, out

    pm = sparse.COO.from_scipy_sparse(m)
    if rows * cols * 8 <= DENSE_LIMIT:
        pydata = Peer("pydata sparse.einsum", lambda: sparse.einsum("ij,ik,kj->ij", pm, c, d), check)
    else:
        pydata = Peer("pydata sparse.einsum", None, note=f"pydata: n/a, sparse.einsum forms the dense C @ D "
                                                          f"({rows * cols * 8 / 2**30:.1f} GiB)")
    tm, tc, td = tensora_csr(m), tensora_dense(c), tensora_dense(d)
    peers = [pydata,
             *tensora_peers("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"A": "ds", "B": "ds", "C": "dd", "D": "dd"},
                            {"B": tm, "C": tc, "D": td}, check),
             Peer("C reference", reference, check)]

    def graphblas(gb):
        """(C @ D)<B>, masked by B's pattern, times B. D is given by columns (Dᵀ's rows, built before
        timing): the masked dot-product method wants it so, and takes seconds rather than milliseconds
        on a D by rows."""
        gm, gc = gb.io.from_scipy_sparse(m), gb.Matrix.from_dense(c)
        gd = gb.Matrix.from_dense(np.ascontiguousarray(d.T)).T
        return lambda: gm.ewise_mult(gc.mxm(gd, gb.semiring.plus_times).new(mask=gm.S), gb.binary.times).new()
    peers.append(graphblas_peer(gb, "GraphBLAS B * (C @ D)<B>", graphblas, check))
    # Ours reads D by columns, as GraphBLAS and the C reference are given it: each dot product then streams
    # a column of D instead of striding down it. Tensora reads it by rows, as the spelling "autosparse, D by
    # rows" does.
    expression = "A(i,j) = B(i,j) * C(i,k) * D(k,j)"
    tb, tc_, td_rows = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(c), asp.Tensor.from_numpy(d)
    by_rows = asp.compile(expression, formats={"B": "csr", "C": "dense", "D": "dense", "A": "csr"})
    return Case("SDDMM", dataset, expression,
                {"B": "csr", "C": "dense", "D": "d1d0", "A": "csr"},
                {"B": tb, "C": tc_, "D": td_rows.to_format("d1d0")},
                check, peers,
                [("SDDMM ≥ 0.9× Tensora", TENSORA, 0.9), ("SDDMM ≥ 0.9× C reference", ("C reference",), 0.9)],
                notes=["ours reads D by columns (`d1d0`), as GraphBLAS and the C reference are given it; Tensora "
                       "reads it by rows, as the spelling \"autosparse, D by rows\" does"],
                spellings={"autosparse, D by rows": lambda: by_rows(B=tb, C=tc_, D=td_rows)})


def spgemm_csc_case(dataset: str, a: sp.csr_array, b: sp.csr_array) -> Case:
    """C = A B with B stored by columns: the kernel converts the operand whose order disagrees, per call."""
    b_csc = sp.csc_array(b)
    expected = data.canonical(a @ b)
    oa, ob = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b_csc)
    peers = [Peer("scipy A @ B (B CSC)", lambda: a @ b_csc, csr_check(expected, False))]
    return Case("SpGEMM CSR×CSC", dataset, "C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csc", "C": "ds~"},
                {"A": oa, "B": ob}, csr_check(expected, False), peers,
                [("SpGEMM CSR×CSC ≥ 0.8× scipy", ("scipy A @ B (B CSC)",), 0.8)],
                spellings={"autosparse A @ B": lambda: oa @ ob})


def add_csc_case(dataset: str, a: sp.csr_array, b: sp.csr_array) -> Case:
    """C = A + B with B stored by columns."""
    b_csc = sp.csc_array(b)
    expected = data.canonical(a + b)
    oa, ob = asp.Tensor.from_scipy(a), asp.Tensor.from_scipy(b_csc)
    peers = [Peer("scipy A + B (B CSC)", lambda: a + b_csc, csr_check(expected, False))]
    sorted_csr = csr_check(expected, True)

    def check(result):  # `A + B` converts the operand with fewer entries: its result may come as CSC
        sorted_csr(result.to_format("csr") if isinstance(result, asp.Tensor) else result)

    return Case("Add CSR+CSC", dataset, "C(i,j) = A(i,j) + B(i,j)", {"A": "csr", "B": "csc", "C": "csr"},
                {"A": oa, "B": ob}, check, peers,
                [("Add CSR+CSC ≥ 0.9× scipy", ("scipy A + B (B CSC)",), 0.9)],
                spellings={"autosparse A + B": lambda: oa + ob})


def spmv_coo_case(dataset: str, m: sp.csr_array, rng) -> Case:
    """y = A x with A a scipy COO matrix, as `mmread` returns it, passed on every call: the kernel
    converts it each time, as scipy's `A @ x` does."""
    coo, x = sp.coo_matrix(m), rng.random(m.shape[1])
    check = dense_check(m @ x)
    return Case("SpMV COO operand", dataset, "y(i) = A(i,j) * x(j)", {"A": "csr", "x": "d", "y": "d"},
                {"A": coo, "x": x}, check, [Peer("scipy A @ x (A COO)", lambda: coo @ x, check)],
                [("SpMV COO operand ≥ 0.9× scipy", ("scipy A @ x (A COO)",), 0.9)])


class Tensor3:
    """A 3-D tensor in every form the peers take, built once per data set."""

    def __init__(self, coords: np.ndarray, vals: np.ndarray, shape: tuple[int, int, int]):
        self.coords, self.vals, self.shape = coords, vals, shape
        self.levels = csf_levels(coords, shape)
        self.ours = asp.Tensor.from_coo(coords, vals, shape, format="csf")
        self.pydata = sparse.COO(coords, vals, shape=shape, has_duplicates=False, sorted=True)
        self.tensora = tensora_tensor(self.levels, vals, shape)

    @classmethod
    def of(cls, tensor: data.SparseTensor) -> "Tensor3":
        if len(tensor.shape) != 3:
            raise ValueError(f"Expected a 3-D tensor, but found shape {tensor.shape}")
        return cls(tensor.coords, tensor.vals, tensor.shape)

    def arrays(self) -> list[ctypes.c_void_p]:
        return [ptr(a) for level in self.levels for a in level] + [ptr(self.vals)]


def ttv_case(dataset: str, t: Tensor3, rng, ref: Reference) -> Case:
    (i, j, k), (I, J, K) = t.coords, t.shape
    c = rng.random(K)
    expected = data.canonical(sp.coo_array((t.vals * c[k], (i, j)), shape=(I, J)))
    check = csr_check(expected, True)
    ttv = ref.function("ttv", "ttv")
    fibers = len(t.levels[1][1])

    def reference():
        pos, crd, out = np.empty(I + 1, dtype=np.int32), np.empty(fibers, dtype=np.int32), np.empty(fibers)
        ttv(I, *t.arrays(), ptr(c), ptr(pos), ptr(crd), ptr(out))
        return pos, crd, out

    fiber = np.repeat(np.arange(fibers), np.diff(t.levels[2][0]))
    fiber_i = np.repeat(t.levels[0][1], np.diff(t.levels[1][0]))
    row_pos = np.r_[0, np.cumsum(np.bincount(fiber_i, minlength=I))]

    def numpy_ttv():  # the fibers' sums, in CSR over the fibers' (i, j)
        return sp.csr_array((np.bincount(fiber, t.vals * c[k], minlength=fibers), t.levels[1][1], row_pos),
                            shape=(I, J))

    peers = [Peer("pydata sparse.einsum", lambda: sparse.einsum("ijk,k->ij", t.pydata, c), check),
             Peer("numpy (bincount over fibers)", numpy_ttv, check),
             *tensora_peers("A(i,j) = B(i,j,k) * c(k)", {"A": "ds", "B": "sss", "c": "d"},
                            {"B": t.tensora, "c": tensora_dense(c)}, check),
             Peer("C reference", reference, check)]
    return Case("TTV", dataset, "A(i,j) = B(i,j,k) * c(k)", {"B": "csf", "c": "d", "A": "csr"},
                {"B": t.ours, "c": asp.Tensor.from_numpy(c)}, check, peers,
                [("TTV ≥ 0.9× Tensora", TENSORA, 0.9), ("TTV ≥ 0.9× C reference", ("C reference",), 0.9)])


def ttm_case(dataset: str, t: Tensor3, rank: int, rng, ref: Reference) -> Case | None:
    (i, j, k), (I, J, K) = t.coords, t.shape
    cm = rng.random((K, rank))
    fibers = sp.csr_array((t.vals, (i * J + j, k)), shape=(I * J, K))
    expected = (fibers @ cm).reshape(I, J, rank)
    check = dense_check(expected)
    ttm = ref.function("ttm", "ttm")

    def reference():
        out = np.zeros((I, J, rank))  # calloc, as autosparse allocates its dense results
        ttm(J, rank, *t.arrays(), ptr(cm), ptr(out))
        return out

    peers = [Peer("pydata sparse.einsum", lambda: sparse.einsum("ijk,kl->ijl", t.pydata, cm), check),
             *tensora_peers("A(i,j,l) = B(i,j,k) * C(k,l)", {"A": "ddd", "B": "sss", "C": "dd"},
                            {"B": t.tensora, "C": tensora_dense(cm)}, check),
             Peer("C reference", reference, check)]
    return Case("TTM", dataset, "A(i,j,l) = B(i,j,k) * C(k,l)", {"B": "csf", "C": "dense", "A": "dense"},
                {"B": t.ours, "C": asp.Tensor.from_numpy(cm)}, check, peers,
                [("TTM ≥ 0.9× Tensora", TENSORA, 0.9), ("TTM ≥ 0.9× C reference", ("C reference",), 0.9)])


def mttkrp_case(dataset: str, t: Tensor3, rank: int, rng, ref: Reference) -> Case:
    (i, j, k), (I, J, K) = t.coords, t.shape
    cm, dm = rng.random((J, rank)), rng.random((K, rank))
    owner = sp.csr_array((np.ones(len(i)), (i, np.arange(len(i)))), shape=(I, len(i)))
    expected = owner @ (t.vals[:, None] * cm[j] * dm[k])
    check = dense_check(expected)
    plain, factored = ref.function("mttkrp", "mttkrp"), ref.function("mttkrp", "mttkrp_factored", ctypes.c_int)

    def reference(function):
        def call():
            out = np.zeros((I, rank))
            if function(rank, *t.arrays(), ptr(cm), ptr(dm), ptr(out)):
                raise MemoryError("the C reference MTTKRP ran out of memory")
            return out
        return call

    def numpy_mttkrp():
        out = np.zeros((I, rank))
        np.add.at(out, i, t.vals[:, None] * cm[j] * dm[k])
        return out

    peers = [Peer("pydata sparse.einsum", lambda: sparse.einsum("ijk,jl,kl->il", t.pydata, cm, dm), check),
             Peer("numpy (np.add.at over entries)", numpy_mttkrp, check),
             *tensora_peers("A(i,l) = B(i,j,k) * C(j,l) * D(k,l)", {"A": "dd", "B": "sss", "C": "dd", "D": "dd"},
                            {"B": t.tensora, "C": tensora_dense(cm), "D": tensora_dense(dm)}, check),
             Peer("C reference", reference(plain), check),
             Peer("C reference, factored", reference(factored), check,
                  note="C reference, factored: C(j,l) hoisted out of the k loop through an L-vector (SPLATT); "
                       "a different schedule than the default, for information, not a target")]
    return Case("MTTKRP", dataset, "A(i,l) = B(i,j,k) * C(j,l) * D(k,l)",
                {"B": "csf", "C": "dense", "D": "dense", "A": "dense"},
                {"B": t.ours, "C": asp.Tensor.from_numpy(cm), "D": asp.Tensor.from_numpy(dm)}, check, peers,
                [("MTTKRP ≥ 0.9× Tensora", TENSORA, 0.9), ("MTTKRP ≥ 0.9× C reference", ("C reference",), 0.9)])


def matrix_cases(dataset: str, matrix, partner, sizes, wanted, rng, mkl, gb, ref):
    """The matrix kernels, one case at a time, each building its data on demand: `matrix(kernel)` is the
    operand for a kernel, `partner(kernel)` the second sparse operand of SpGEMM and the element-wise ones."""
    cases = {"spmv": lambda: spmv_case(dataset, matrix("spmv"), rng, mkl, gb, ref),
             "spmv+z": lambda: spmv_case(dataset, matrix("spmv+z"), rng, mkl, gb, ref, shifted=True),
             "spmspv": lambda: spmspv_case(dataset, matrix("spmspv"), rng, mkl, gb, ref),
             "spmspv-csc": lambda: spmspv_case(dataset, matrix("spmspv"), rng, mkl, gb, ref, by_column=True),
             "spgemm": lambda: spgemm_case(dataset, matrix("spgemm"), partner("spgemm"), rng, mkl, gb, ref),
             "spgemm-sorted": lambda: spgemm_case(dataset, matrix("spgemm"), partner("spgemm"), rng, mkl, gb, ref,
                                                  sorted_rows=True),
             "spmm": lambda: spmm_case(dataset, matrix("spmm"), sizes["spmm_cols"], rng, mkl, gb, ref),
             "sddmm": lambda: sddmm_case(dataset, matrix("sddmm"), sizes["sddmm_k"], rng, gb, ref),
             "add": lambda: elementwise_case("Add", dataset, matrix("add"), partner("add"), gb),
             "multiply": lambda: elementwise_case("Multiply", dataset, matrix("multiply"), partner("multiply"), gb),
             "spgemm-csc": lambda: spgemm_csc_case(dataset, matrix("spgemm"), partner("spgemm")),
             "add-csc": lambda: add_csc_case(dataset, matrix("add"), partner("add")),
             "spmv-coo": lambda: spmv_coo_case(dataset, matrix("spmv"), rng)}
    yield from (make for name, make in cases.items() if name in wanted)


def tensor_cases(dataset: str, make_tensor, sizes, wanted, rng, ref):
    holder: dict[str, Tensor3] = {}

    def tensor() -> Tensor3:
        if "t" not in holder:
            holder["t"] = make_tensor()
        return holder["t"]

    if "ttv" in wanted:
        yield lambda: ttv_case(dataset, tensor(), rng, ref)
    if "ttm" in wanted:
        def ttm():
            t = tensor()
            size = t.shape[0] * t.shape[1] * sizes["rank"] * 8
            if size > DENSE_OUTPUT_LIMIT:
                return f"TTM on {dataset}: skipped, its dense output would take {size / 2**30:.1f} GiB"
            return ttm_case(dataset, t, sizes["rank"], rng, ref)
        yield ttm
    if "mttkrp" in wanted:
        yield lambda: mttkrp_case(dataset, tensor(), sizes["rank"], rng, ref)


def all_cases(args, mkl, gb, ref):
    base = SIZES["quick" if args.quick else "full"]
    wanted = set(args.kernel)
    rng = np.random.default_rng(args.seed)
    for scale in args.scales:  # a sweep over sizes: the report plots runtime against nonzeros
        sizes = {key: int(value * scale) if key in KERNELS else value for key, value in base.items()}
        label = "" if scale == 1 else f" ×{scale:g}"
        for family in args.matrices:
            def matrix(kernel, family=family, seed=args.seed, sizes=sizes):
                return family_matrix(family, sizes[kernel], PER_ROW.get(kernel, 10), seed)

            def partner(kernel, family=family, seed=args.seed + 1, sizes=sizes):  # SpGEMM's A·B, A + B: two draws
                return family_matrix(family, sizes[kernel], PER_ROW.get(kernel, 10), seed)

            yield from matrix_cases(family + label, matrix, partner, sizes, wanted, rng, mkl, gb, ref)
        shape, nnz = base["tensor"]
        for family in args.tensors:
            def tensor(family=family, nnz=max(1, int(nnz * scale))):
                return Tensor3.of(family_tensor(family, shape, nnz, args.seed))

            yield from tensor_cases(f"{family} 3-D{label}", tensor, sizes, wanted, rng, ref)
    for path in args.files:
        if path.name.endswith((".mtx", ".mtx.gz")):
            holder = {}

            def real(kernel=None, path=path, holder=holder):
                if "m" not in holder:
                    holder["m"] = data.load_matrix(path)
                return holder["m"]

            def partner(kernel, real=real):
                m = real()
                square = m.shape[0] == m.shape[1]
                if kernel == "spgemm":  # A·A, or A·Aᵀ for a rectangular A
                    return m if square else data.canonical(m.T)
                return data.canonical(m.T) if square else m  # A + Aᵀ and A ∘ Aᵀ: two patterns

            yield from matrix_cases(data.name_of(path), real, partner, sizes, wanted, rng, mkl, gb, ref)
        else:
            yield from tensor_cases(data.name_of(path), lambda path=path: Tensor3.of(data.load_tensor(path)), sizes,
                                    wanted, rng, ref)


# ---------------------------------------------------------------------------------------------------
# Timing

def record(records: Records, case: Case, ours: Timing, peers: dict[str, Timing], sources: dict) -> None:
    """One record per contender of a case: what the report tabulates and plots (ours spelled as an
    operator: role "variant")."""
    nnz = max((t.nnz for t in case.operands.values() if isinstance(t, asp.Tensor) and not t.format.is_dense),
              default=0)
    kernel = sources.get(case.kernel)
    for name, timing in {"autosparse": ours, **peers}.items():
        role = "ours" if name == "autosparse" else "variant" if name in case.spellings else "peer"
        records.timing(case.kernel, case.dataset, name, timing.seconds, role=role,
                       status=timing.status, detail=timing.detail, nnz=nnz,
                       **({"source": source_hash(kernel)} if name == "autosparse" and kernel else {}))


def run_case(case: Case, args, sources: dict) -> tuple[Timing, dict[str, Timing]]:
    """Compile and check ours (its kernel kept in `sources` by kernel name), then time it, and its
    operator spellings, beside every peer (timing.compare). The spellings' timings come back with the
    peers'."""
    ours = Timing()
    contenders = {}
    try:
        # at the suite's thread count (`--threads`), as its threaded peers
        kernel = asp.compile(case.expression, formats=case.formats, schedule=case.schedule, num_threads=args.threads)
        kernel(**case.operands)  # the first call specialises and compiles (or loads from the cache)
        sources[case.kernel] = kernel
        contenders["autosparse"] = ((lambda: kernel(**case.operands)), case.check)
        contenders.update((name, (call, case.check)) for name, call in case.spellings.items())
    except Exception as error:
        ours.status, ours.detail = "FAIL", f"{type(error).__name__}: {error}"
        print(f"FAIL autosparse {case.kernel} on {case.dataset}: {ours.detail}", file=sys.stderr)
        traceback.print_exc()
    contenders.update((peer.name, (peer.call, peer.check)) for peer in case.peers if peer.call is not None)
    timings = compare(contenders, args.repeat, budget=args.budget, min_sample=args.min_sample)
    for name, timing in timings.items():
        if timing.status:
            print(f"{timing.status} {name} on {case.kernel}, {case.dataset}: {timing.detail}", file=sys.stderr)
    if "autosparse" in timings:
        ours = timings.pop("autosparse")
        if ours.status:  # our own result disagreed or our call raised
            ours.status = "FAIL"
    peers = {peer.name: timings.get(peer.name) or Timing(status="n/a", detail=peer.note) for peer in case.peers}
    peers.update((name, timings.get(name) or Timing(status="FAIL", detail="ours failed")) for name in case.spellings)
    return ours, peers


# ---------------------------------------------------------------------------------------------------
# Compile time and cached start-up, in fresh processes

NEW_KERNEL = r"""
import json, sys, time
import numpy as np, scipy.sparse as sp
start = time.perf_counter()
import autosparse as asp
imported = time.perf_counter() - start
tag = sys.argv[1]
m = sp.random(1000, 1000, density=0.01, format="csr", random_state=0)
x = np.ones(1000)
A, X = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(x)
start = time.perf_counter()
k = asp.compile(f"y{tag}(i) = A{tag}(i,j) * x{tag}(j)", formats={f"A{tag}": "csr", f"x{tag}": "d", f"y{tag}": "d"})
y = k(**{f"A{tag}": A, f"x{tag}": X})
ready = time.perf_counter() - start
assert np.allclose(y, m @ x)
print(json.dumps({"import": imported, "ready": ready}))
"""


def child(tag: str, cache: str) -> dict[str, float]:
    env = {**os.environ, "AUTOSPARSE_CACHE_DIR": cache}
    done = subprocess.run([sys.executable, "-c", NEW_KERNEL, tag], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the child process failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def startup_rows(args) -> list[tuple[str, float, int, float | None]]:
    """(measurement, median seconds, runs, target seconds or None)."""
    stamp = f"{os.getpid()}x{time.time_ns() % 10**9}"
    new, warm = [], []
    with tempfile.TemporaryDirectory(prefix="autosparse-bench-cache-") as base:
        for n in range(args.repeat):  # a brand-new kernel: empty cache directory, unique names
            new.append(child(f"n{stamp}r{n}", os.path.join(base, f"new{n}"))["ready"])
        cached = os.path.join(base, "cached")
        child(f"c{stamp}", cached)  # the earlier process that compiles and caches
        runs = [child(f"c{stamp}", cached) for _ in range(args.repeat)]
        # A new kernel in an already warm process (the pipeline and cc, no first-import costs).
        previous = os.environ.get("AUTOSPARSE_CACHE_DIR")
        m = sp.random(1000, 1000, density=0.01, format="csr", random_state=0)
        x = np.ones(1000)
        A, X = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(x)
        try:
            for n in range(args.repeat):
                os.environ["AUTOSPARSE_CACHE_DIR"] = os.path.join(base, f"warm{n}")
                tag = f"w{stamp}r{n}"
                start = time.perf_counter()
                k = asp.compile(f"y{tag}(i) = A{tag}(i,j) * x{tag}(j)",
                                formats={f"A{tag}": "csr", f"x{tag}": "d", f"y{tag}": "d"})
                k(**{f"A{tag}": A, f"x{tag}": X})
                warm.append(time.perf_counter() - start)
        finally:
            if previous is None:
                os.environ.pop("AUTOSPARSE_CACHE_DIR", None)
            else:
                os.environ["AUTOSPARSE_CACHE_DIR"] = previous
    median = statistics.median
    return [
        ("new SpMV kernel, fresh process and empty cache: compile + first call", median(new), len(new), 0.5),
        ("new SpMV kernel, warm process and empty cache: compile + first call", median(warm), len(warm), None),
        ("`import autosparse` in a fresh process", median(r["import"] for r in runs), len(runs), None),
        ("kernel cached by an earlier process: ready (compile + first call) after import",
         median(r["ready"] for r in runs), len(runs), 0.05),
    ]


#: The per-call overhead case: a warm SpMV this small is nearly all fixed cost (issue 30's target: ours
#: within 2× of scipy's `A @ x`).
OVERHEAD_SIDE, OVERHEAD_NNZ = 100, 1_000
OVERHEAD_KERNEL, OVERHEAD_DATASET = "per-call overhead", f"SpMV on {OVERHEAD_NNZ:,} nonzeros"
#: Its contenders: ours as a compiled kernel (the one compared with), then as evaluate and `A @ x`.
OVERHEAD_ROLES = {"autosparse compiled kernel": "ours", "autosparse evaluate": "variant",
                  "autosparse A @ x": "variant", "scipy A @ x": "peer", "C reference through ctypes": "peer"}


def call_overhead(repeat: int, calls: int = 2000) -> dict[str, float]:
    """Seconds per warm call of a small SpMV (median of `repeat` batches of `calls`), each contender's
    result checked first: the fixed cost of a call, what a loop over many small products pays."""
    m = data.uniform(OVERHEAD_SIDE, OVERHEAD_SIDE, OVERHEAD_NNZ, seed=0)
    x = np.random.default_rng(0).random(OVERHEAD_SIDE)
    A, X = asp.Tensor.from_scipy(m), asp.Tensor.from_numpy(x)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr", "x": "d", "y": "d"}, num_threads=1)
    spmv = Reference().function("spmv", "spmv")

    def reference():
        y = np.empty(OVERHEAD_SIDE)
        spmv(OVERHEAD_SIDE, ptr(m.indptr), ptr(m.indices), ptr(m.data), ptr(x), ptr(y))
        return y

    calls_of = {"autosparse compiled kernel": lambda: kernel(A=A, x=X),
                "autosparse evaluate": lambda: asp.evaluate("y(i) = A(i,j) * x(j)", A=A, x=X, num_threads=1),
                "autosparse A @ x": lambda: A @ x, "scipy A @ x": lambda: m @ x,
                "C reference through ctypes": reference}
    check = dense_check(m @ x)
    for call in calls_of.values():
        check(call())
    samples = interleaved(calls_of, dict.fromkeys(calls_of, calls), repeat)
    return {name: statistics.median(seconds) for name, seconds in samples.items()}


def overhead_table(overhead: dict[str, float], records: Records) -> str:
    """The per-call overhead as a table in µs, each contender over scipy's `A @ x`, and its records."""
    scipy_call = overhead["scipy A @ x"]
    lines = [f"\n| warm SpMV on {OVERHEAD_NNZ:,} nonzeros ({OVERHEAD_SIDE}×{OVERHEAD_SIDE}) | µs per call | "
             f"/ scipy A @ x (target for ours: ≤ 2×) |", "|---|---:|---:|"]
    for name, seconds in overhead.items():
        lines.append(f"| {name} | {seconds * 1e6:,.2f} | {seconds / scipy_call:.2f}× |")
        records.timing(OVERHEAD_KERNEL, OVERHEAD_DATASET, name, seconds, role=OVERHEAD_ROLES[name],
                       nnz=OVERHEAD_NNZ)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------
# Report

def ratio(value: float) -> str:
    return f"{value:,.2f}×"


def ms(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e3:,.2f}"


def git_state() -> str:
    def git(*words):
        return subprocess.run(["git", *words], cwd=ROOT, capture_output=True, text=True, check=False).stdout
    commit = git("rev-parse", "--short", "HEAD").strip() or "unknown"
    dirty = git("status", "--short", "--", "src", "bench").rstrip()
    location = Path(asp.__file__).resolve().parent
    if location != ROOT / "src" / "autosparse":
        return f"{commit} (HEAD of this checkout); autosparse imported from {location}"
    return commit + (f" (uncommitted changes: {', '.join(line[3:] for line in dirty.splitlines())})"
                     if dirty else "")


def header(args, loading_notes: list[str]) -> str:
    lines = [
        "# Kernels" + (f" at {args.threads} threads" if args.threads > 1 else ""), "",
        f"- command: `{sys.argv[0]} {shlex.join(sys.argv[1:])}`",
        f"- commit: {git_state()}",
        f"- machine: {machine.describe()}",
        f"- ms = median of {args.repeat} samples after a warm-up, round-robin across contenders (rotated each "
        f"round); a sample is one call, or the mean of a batch of calls lasting about {args.min_sample * 1e3:g} ms "
        f"for faster calls (a peer whose first timed call exceeds {args.budget:g} s is timed by that one call); ratio = peer "
        f"time / autosparse time (> 1: autosparse is faster); " + (
            "all serial (1 thread for BLAS, MKL, GraphBLAS, numba)" if args.threads == 1 else
            f"autosparse, MKL, GraphBLAS and the SpMM and SDDMM C references at {args.threads} threads; scipy, "
            f"Tensora, pydata, numpy and the other C references serial"),
        *(f"- {note}" for note in loading_notes if note),
    ]
    return "\n".join(lines)


def fastest_peer_row(case: Case, ours: Timing, peers: dict[str, Timing]) -> str:
    """A row of the fastest-peer table: the case's fastest timed peer (ours spelled as an operator is no
    peer) and its time over ours."""
    found = fastest({peer.name: None if peers[peer.name].status else peers[peer.name].seconds for peer in case.peers})
    label = "FAIL" if ours.status == "FAIL" else ms(ours.seconds)
    if found is None:
        return f"| {case.dataset} | {case.kernel} | {label} | none timed | n/a | n/a |"
    name, seconds = found
    share = ratio(seconds / ours.seconds) if ours.seconds and not ours.status else "n/a"
    return f"| {case.dataset} | {case.kernel} | {label} | {name} | {ms(seconds)} | {share} |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small generated data (smoke test, < 60 s)")
    parser.add_argument("--repeat", type=int, default=7, help="timed samples per contender (default: %(default)s)")
    parser.add_argument("--kernel", nargs="+", choices=KERNELS, default=list(KERNELS), metavar="NAME",
                        help=f"kernels to run, of {', '.join(KERNELS)} (default: all)")
    parser.add_argument("--matrices", nargs="*", choices=MATRIX_FAMILIES, default=list(MATRIX_FAMILIES),
                        metavar="FAMILY", help=f"generated matrix families, of {', '.join(MATRIX_FAMILIES)} "
                                               f"(default: all)")
    parser.add_argument("--tensors", nargs="*", choices=TENSOR_FAMILIES, default=list(TENSOR_FAMILIES),
                        metavar="FAMILY", help=f"generated 3-D tensor families, of {', '.join(TENSOR_FAMILIES)} "
                                               f"(default: all)")
    parser.add_argument("--scales", nargs="+", type=float, default=[1.0], metavar="S",
                        help="also generate each input at these fractions (or multiples) of its size, for runtime "
                             "against size (default: 1)")
    parser.add_argument("--data", nargs="+", default=[], metavar="NAME|PATH",
                        help="also run on these files: a path to any .mtx/.tns (gzipped or not), or the NAME of "
                             "NAME.mtx.gz / NAME.tns.gz in --data-dir (matrices: matrix kernels; 3-D tensors: "
                             "tensor kernels)")
    parser.add_argument("--data-dir", default=str(DATA), help="folder of real data (default: %(default)s)")
    parser.add_argument("--no-generated", action="store_true", help="only the --data files, no generated data")
    parser.add_argument("--budget", type=float, default=10.0,
                        help="seconds above which a peer's warm-up call is its only sample (default: %(default)s)")
    parser.add_argument("--min-sample", type=float, default=0.02,
                        help="calls faster than this many seconds are timed in batches that last about this long "
                             "(default: %(default)s)")
    parser.add_argument("--seed", type=int, default=42, help="seed of the generated data (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1, choices=(1, 2),
                        help="threads of autosparse, MKL, GraphBLAS and the threaded C references (default: %(default)s)")
    parser.add_argument("--sources", metavar="DIR", help="write the C of each autosparse kernel into DIR")
    add_option(parser)
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    args.files = []
    for name in args.data:
        found = [path for path in (Path(name), *(Path(args.data_dir) / f"{name}{suffix}" for suffix in (".mtx.gz", ".tns.gz")))
                 if path.is_file() and path.name.endswith((".mtx", ".mtx.gz", ".tns", ".tns.gz"))]
        if not found:
            parser.error(f"{name} is neither a .mtx/.tns file nor NAME.mtx.gz / NAME.tns.gz in {args.data_dir}")
        args.files.extend(found)
    if args.no_generated:
        args.matrices, args.tensors = [], []
    if args.threads > 1:  # start-up and call overhead: measured by the serial run
        args.kernel = [kernel for kernel in args.kernel if kernel != "compile"]

    asp.set_num_threads(args.threads)
    (mkl, mkl_note), (gb, gb_note) = load_mkl(args.threads), load_graphblas(args.threads)
    check_tensora_conversions()
    ref = Reference(openmp=args.threads > 1, threads=args.threads)
    print(header(args, [mkl_note, gb_note]), flush=True)
    print("\n| dataset | kernel | autosparse ms | peer | peer ms | peer/autosparse | runs |\n"
          "|---|---|---:|---|---:|---:|---|", flush=True)

    verdicts: list[tuple[str, str, str, str]] = []  # (target, dataset, measured, verdict)
    notes: list[str] = []
    failures: list[str] = []
    sources: dict[str, asp.Kernel] = {}
    wrong: list[str] = []
    records = Records(args.json)
    best: list[str] = []  # the fastest-peer table's rows
    for make in machine.progress(all_cases(args, mkl, gb, ref), "cases"):
        case = make()
        if isinstance(case, str):
            notes.append(case)
            continue
        ours, peers = run_case(case, args, sources)
        record(records, case, ours, peers, sources)
        label = f"FAIL ({ours.detail})" if ours.status == "FAIL" else ms(ours.seconds)
        if ours.status == "FAIL":
            failures.append(f"{case.kernel} on {case.dataset}: {ours.detail}")
        for peer in [*case.peers, *(Peer(name, None) for name in case.spellings)]:
            timing = peers[peer.name]
            if timing.status:
                cells = ["n/a" if timing.status == "n/a" else timing.status, "n/a", "-"]
            else:
                share = ratio(timing.seconds / ours.seconds) if ours.seconds else "n/a"
                cells = [ms(timing.seconds), share, f"{ours.runs}/{timing.runs}"]
            print(f"| {case.dataset} | {case.kernel} | {label} | {peer.name} | " + " | ".join(cells) + " |", flush=True)
            if timing.status == "WRONG":
                wrong.append(f"{peer.name} on {case.kernel}, {case.dataset}: {timing.detail}")
            note = timing.detail if timing.status else peer.note
            if note and note not in notes:
                notes.append(note if timing.status != "WRONG" else f"{peer.name} on {case.kernel}: WRONG, {note}")
        notes.extend(n for n in case.notes if n not in notes)
        best.append(fastest_peer_row(case, ours, peers))
        for target, names, minimum in case.targets:
            measured = [peers[n].seconds / ours.seconds for n in names
                        if n in peers and not peers[n].status and ours.seconds]
            if ours.status == "FAIL":
                verdicts.append((target, case.dataset, "autosparse failed", "MISS"))
            elif not measured:
                verdicts.append((target, case.dataset, "peer n/a", "n/a"))
            else:
                worst = min(measured)  # against the fastest of the named peers
                verdicts.append((target, case.dataset, ratio(worst), "PASS" if worst >= minimum else "MISS"))
        case = None
        gc.collect()

    if best:
        print("\nThe fastest peer per case (ratio > 1: autosparse is faster)\n\n"
              "| dataset | kernel | autosparse ms | fastest peer | its ms | fastest peer / ours |\n"
              "|---|---|---:|---|---:|---:|\n" + "\n".join(best), flush=True)
    if notes:
        print("\nNotes:\n" + "\n".join(f"- {n}" for n in notes), flush=True)

    if "compile" in args.kernel:
        print("\n| compile / start-up | median ms | runs | target | verdict |\n|---|---:|---:|---:|---|", flush=True)
        for label, seconds, runs, target in startup_rows(args):
            verdict = "-" if target is None else ("PASS" if seconds <= target else "MISS")
            goal = "-" if target is None else f"≤ {target * 1e3:g} ms"
            print(f"| {label} | {seconds * 1e3:,.{1 if seconds >= 1e-3 else 3}f} | {runs} | {goal} | {verdict} |",
                  flush=True)
            if target is not None:
                verdicts.append((label, "-", f"{seconds * 1e3:,.1f} ms", verdict))
        overhead = call_overhead(args.repeat)
        print(overhead_table(overhead, records), flush=True)
        share = overhead["autosparse compiled kernel"] / overhead["scipy A @ x"]
        verdicts.append((f"warm SpMV on {OVERHEAD_NNZ:,} nonzeros ≤ 2× scipy's call", "-", ratio(share),
                         "PASS" if share <= 2 else "MISS"))

    print("\n| target | dataset | measured | verdict |\n|---|---|---:|---|")
    for target, dataset, measured, verdict in verdicts:
        print(f"| {target} | {dataset} | {measured} | {verdict} |")
    print("\n(Tensora targets are judged against the faster of its two backends.)")
    print("\n| kernel | autosparse source (sha256, first 12) |\n|---|---|")
    for name, kernel in sources.items():
        print(f"| {name} | {source_hash(kernel)} |")
    if failures:
        print("\nautosparse failures:\n" + "\n".join(f"- {f}" for f in failures))
    if wrong:
        print("\nresults that disagree with the reference:\n" + "\n".join(f"- {w}" for w in wrong))
    if args.sources:
        folder = Path(args.sources)
        folder.mkdir(parents=True, exist_ok=True)
        for name, kernel in sources.items():
            (folder / f"{name.lower()}.c").write_text(kernel.source)
    if failures or wrong:
        sys.exit(1)


if __name__ == "__main__":
    main()
