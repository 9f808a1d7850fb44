"""Benchmark inputs that look like users' data: seeded generators, the shipped real files, any path.

Matrices come back as canonical scipy CSR (sorted, no duplicates) and tensors as (coords, vals, shape)
with duplicates summed, so every contender starts from the same entries. A generator's output is a pure
function of its name and parameters (seeded numpy Generators), cached on disk as .npz under
$AUTOSPARSE_BENCH_DATA (default ~/.cache/autosparse-bench): a large R-MAT graph takes seconds to draw,
and a suite re-runs the same inputs many times.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from autosparse.io import read

#: Bump when a generator changes what it draws: cached files of the old version are then ignored.
VERSION = 1


@dataclass(frozen=True)
class SparseTensor:
    """A tensor of any order as coordinates (order × nnz, int64, sorted row-major, unique) and values."""

    coords: np.ndarray
    vals: np.ndarray
    shape: tuple[int, ...]

    @property
    def nnz(self) -> int:
        return len(self.vals)


# --- matrices --------------------------------------------------------------------------------------------

def uniform(rows: int, cols: int, nnz: int, seed: int = 0) -> sp.csr_array:
    """Exactly `nnz` entries at uniformly random distinct positions (int32 indices)."""
    rng = np.random.default_rng(seed)
    keys = _distinct(rng, rows * cols, nnz)
    row, col = np.divmod(keys, cols)
    return canonical(sp.csr_array((rng.random(len(keys)) + 0.5, (row, col)), shape=(rows, cols)))


def rmat(scale: int, edge_factor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
         seed: int = 0) -> sp.csr_array:
    """A 2^scale-vertex R-MAT graph with Graph500's parameters (edge factor 16; a, b, c = 0.57, 0.19,
    0.19): power-law degrees, the skew real graphs have. Duplicate edges are merged."""
    rng = np.random.default_rng(seed)
    edges = edge_factor << scale
    rows = np.zeros(edges, dtype=np.int64)
    cols = np.zeros(edges, dtype=np.int64)
    for bit in range(scale):
        u = rng.random(edges)
        rows |= (u >= a + b).astype(np.int64) << bit
        cols |= (((u >= a) & (u < a + b)) | (u >= a + b + c)).astype(np.int64) << bit
    return _csr(rows, cols, (1 << scale, 1 << scale), rng)


def banded(n: int, bandwidth: int = 8, seed: int = 0) -> sp.csr_array:
    """Every entry within `bandwidth` of the diagonal: the pattern of 1-D discretisations."""
    rng = np.random.default_rng(seed)
    offsets = list(range(-bandwidth, bandwidth + 1))
    matrix = sp.diags([rng.random(n - abs(k)) + 0.5 for k in offsets], offsets, shape=(n, n), format="csr")
    return canonical(matrix)


def stencil(*sides: int) -> sp.csr_array:
    """The finite-difference Laplacian on a 2-D or 3-D grid of `sides` (5- or 7-point stencil): the
    FEM-like matrices of simulations, about 2·dims + 1 entries a row."""
    if len(sides) not in (2, 3):
        raise ValueError(f"Expected a 2-D or 3-D grid, but found sides {sides}")
    line = lambda n: sp.diags([-np.ones(n - 1), 2 * np.ones(n), -np.ones(n - 1)], [-1, 0, 1])
    matrix = sp.csr_array((1, 1))
    for k, side in enumerate(sides):
        term = line(side)
        before, after = int(np.prod(sides[:k], dtype=np.int64)), int(np.prod(sides[k + 1:], dtype=np.int64))
        term = sp.kron(sp.kron(sp.identity(before), term), sp.identity(after))
        matrix = term if k == 0 else matrix + term
    return canonical(matrix)


def _distinct(rng, total: int, count: int) -> np.ndarray:
    """`count` distinct sorted integers of [0, total) drawn uniformly (all of them when count ≥ total)."""
    if count >= total:
        return np.arange(total)
    if count > total // 4:  # dense: choosing is cheaper than drawing again and again
        return np.sort(rng.choice(total, count, replace=False))
    keys = np.unique(rng.integers(0, total, int(count * 1.1) + 16))
    while len(keys) < count:
        keys = np.union1d(keys, rng.integers(0, total, count - len(keys) + 16))
    return np.sort(rng.choice(keys, count, replace=False))


def _csr(rows, cols, shape, rng) -> sp.csr_array:
    matrix = sp.csr_array((rng.random(len(rows)) + 0.5, (rows, cols)), shape=shape)
    return canonical(matrix)


def canonical(matrix) -> sp.csr_array:
    """Sorted, duplicates summed, int32 indices where they fit (what scipy and the C references take)."""
    matrix = sp.csr_array(matrix, dtype=np.float64)
    matrix.sum_duplicates()
    matrix.sort_indices()
    if max(matrix.shape[1], matrix.nnz) < 2**31:
        matrix.indices, matrix.indptr = matrix.indices.astype(np.int32), matrix.indptr.astype(np.int32)
    return matrix


# --- tensors ---------------------------------------------------------------------------------------------

def powerlaw_tensor(shape: tuple[int, ...], nnz: int, exponent: float = 1.2, seed: int = 0) -> SparseTensor:
    """A FROSTT-like tensor: each mode's coordinates drawn from a Zipf-like law over the mode (index k
    with weight (k + 1)^-exponent, randomly relabelled), as user × item × time data are: a few slices
    hold many nonzeros, most hold few. Duplicates are summed, so nnz comes out somewhat lower."""
    rng = np.random.default_rng(seed)
    coords = []
    for size in shape:
        weights = np.arange(1, size + 1, dtype=np.float64) ** -exponent
        drawn = rng.choice(size, nnz, p=weights / weights.sum())
        coords.append(rng.permutation(size)[drawn])
    return _unique(np.stack(coords), rng.random(nnz) + 0.5, tuple(shape))


def uniform_tensor(shape: tuple[int, ...], nnz: int, seed: int = 0) -> SparseTensor:
    """Exactly `nnz` entries at uniformly random distinct coordinates."""
    rng = np.random.default_rng(seed)
    keys = _distinct(rng, int(np.prod(shape, dtype=np.int64)), nnz)
    return SparseTensor(np.stack(np.unravel_index(keys, shape)).astype(np.int64), rng.random(len(keys)) + 0.5,
                        tuple(shape))


def _unique(coords: np.ndarray, vals: np.ndarray, shape: tuple[int, ...]) -> SparseTensor:
    linear = np.ravel_multi_index(tuple(coords), shape)
    keys, inverse = np.unique(linear, return_inverse=True)
    summed = np.zeros(len(keys))
    np.add.at(summed, inverse, vals)
    return SparseTensor(np.stack(np.unravel_index(keys, shape)).astype(np.int64), summed, shape)


# --- files -----------------------------------------------------------------------------------------------

def shipped_data() -> Path:
    """$AUTOSPARSE_DATA, else the `shared/data` folder beside the checkout this module runs from."""
    if "AUTOSPARSE_DATA" in os.environ:
        return Path(os.environ["AUTOSPARSE_DATA"])
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def shipped(kind: str) -> list[Path]:
    """The shipped files of `kind` ("mtx" or "tns"), sorted by name; none when the folder is absent."""
    folder = shipped_data()
    return sorted(folder.glob(f"*.{kind}.gz")) + sorted(folder.glob(f"*.{kind}")) if folder.is_dir() else []


def load_matrix(path: "str | Path") -> sp.csr_array:
    """A .mtx file (gzipped or not) as canonical CSR (symmetric files expanded)."""
    return canonical(read(path, format="csr").to_scipy())


def load_tensor(path: "str | Path") -> SparseTensor:
    """A .tns file (gzipped or not), duplicates summed."""
    tensor = read(path)
    coords, vals = tensor.to_coo()
    return _unique(np.asarray(coords, dtype=np.int64), np.asarray(vals, dtype=np.float64), tuple(tensor.shape))


def name_of(path: "str | Path") -> str:
    name = Path(path).name
    for suffix in (".gz", ".mtx", ".tns"):
        name = name.removesuffix(suffix)
    return name


# --- the disk cache --------------------------------------------------------------------------------------

def cache_folder() -> Path:
    return Path(os.environ.get("AUTOSPARSE_BENCH_DATA", Path.home() / ".cache" / "autosparse-bench"))


GENERATORS: dict[str, Callable] = {"uniform": uniform, "rmat": rmat, "banded": banded, "stencil": stencil,
                                   "powerlaw_tensor": powerlaw_tensor, "uniform_tensor": uniform_tensor}


def generate(generator: str, *args, **kwargs):
    """`GENERATORS[generator](*args, **kwargs)`, from the disk cache when an earlier call drew it."""
    key = json.dumps([VERSION, generator, args, sorted(kwargs.items())], default=list)
    path = cache_folder() / f"{generator}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.npz"
    if path.exists():
        try:
            return _from_npz(np.load(path))
        except (OSError, ValueError, KeyError):  # a file cut short by a crash: draw it again
            pass
    made = GENERATORS[generator](*args, **kwargs)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp.npz")
    _to_npz(partial, made)
    os.replace(partial, path)
    return made


def _to_npz(path: Path, made) -> None:
    if isinstance(made, SparseTensor):
        np.savez(path, coords=made.coords, vals=made.vals, shape=np.array(made.shape))
    else:
        np.savez(path, indptr=made.indptr, indices=made.indices, data=made.data, shape=np.array(made.shape))


def _from_npz(stored):
    shape = tuple(int(s) for s in stored["shape"])
    if "coords" in stored:
        return SparseTensor(stored["coords"], stored["vals"], shape)
    return sp.csr_array((stored["data"], stored["indices"], stored["indptr"]), shape=shape)
