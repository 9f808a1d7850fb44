"""A tensor split along one mode into chunks, each an ordinary Tensor of its own.

Chunk k holds the entries whose coordinate in `mode` is in [bounds[k], bounds[k+1]), that coordinate
re-based to zero, so a kernel runs on a chunk as on any tensor. Cuts fall where they balance stored
entries (nonzeros, not rows: a power-law matrix's heavy rows would otherwise land in one chunk).
"""

from __future__ import annotations

import numbers
import os
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from ..errors import AutosparseError, FormatError, ShapeError
from ..format import Format
from ..format.spec import as_format
from ..io import describe, read
from ..tensor import Tensor
from ..tensor.slicing import cut, join


@dataclass(frozen=True)
class TensorFile:
    """A chunk still in its file: what planning needs to know of it (from the file's header), and
    `load` for the worker that runs it, so the client never holds the entries and a lost worker's chunk
    is read again."""

    path: str
    format: Format
    shape: tuple[int, ...]
    nnz: int  # entry lines (a symmetric .mtx file stores about half its entries)
    dtype: np.dtype

    @classmethod
    def of(cls, path: "str | os.PathLike", format=None) -> "TensorFile":
        """Workers read the file by its absolute path (on a cluster: a filesystem they share). A chunk's
        extent must be stated (a .tns file's `# shape:` line, as `autosparse.write` puts it): its
        trailing empty rows would otherwise go missing, and every later chunk's rows move up."""
        shape, nnz, dtype, stated = describe(path)
        if not stated:
            raise ShapeError(f"Expected a '# shape:' line in {path}: a chunk's extent cannot be told from its "
                             f"coordinates (write chunks with autosparse.write)")
        default = "coo" if str(path).endswith((".tns", ".tns.gz")) else "csr"
        return cls(str(Path(path).resolve()), as_format(format or default, len(shape)), shape, nnz, dtype)

    @property
    def order(self) -> int:
        return len(self.shape)

    def load(self) -> Tensor:
        tensor = read(self.path, self.format)
        if tensor.shape != self.shape:
            raise ShapeError(f"Expected {self.path} to hold a tensor of shape {self.shape}, but found {tensor.shape}")
        return tensor


@dataclass(frozen=True)
class Resident:
    """A chunk held by a worker (a Dask future), with what planning needs to know of it. Tasks that
    read it run where it is, and only their other operands travel."""

    future: object
    format: Format
    shape: tuple[int, ...]
    nnz: int
    dtype: np.dtype

    @property
    def order(self) -> int:
        return len(self.shape)


Chunk = "Tensor | TensorFile | Resident"


def loaded(chunk: Chunk) -> Tensor:
    """The chunk's tensor, read or fetched where it is not at hand."""
    if isinstance(chunk, TensorFile):
        return chunk.load()
    return chunk.future.result() if isinstance(chunk, Resident) else chunk


@contextmanager
def carrying_data():
    """Around submitting tasks that carry their data on purpose (it is what lets Dask recompute them),
    Dask's warning against large graphs says nothing useful."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sending large graph of size", category=UserWarning)
        yield


def shipped(chunk: Chunk):
    """What a task takes for the chunk: a resident one's future (Dask hands the task its value)."""
    return chunk.future if isinstance(chunk, Resident) else chunk


@dataclass(frozen=True)
class Partitioned:
    """Chunks of one tensor along `mode` (equal formats; equal extents in every other mode), in memory
    or in files."""

    chunks: tuple[Chunk, ...]
    mode: int

    def __post_init__(self):
        if not self.chunks:
            raise ShapeError("Expected at least one chunk")
        first = self.chunks[0]
        if not 0 <= self.mode < first.order:
            raise ShapeError(f"Expected a mode of an order-{first.order} tensor to partition along, "
                             f"but found {self.mode}")
        for chunk in self.chunks[1:]:
            if chunk.format != first.format or chunk.dtype != first.dtype or any(
                    n != m for k, (n, m) in enumerate(zip(chunk.shape, first.shape)) if k != self.mode):
                raise ShapeError(f"Expected chunks of format {first.format}, dtype {first.dtype} and shape "
                                 f"{first.shape} but for mode {self.mode}, but found {chunk!r}")

    @property
    def bounds(self) -> tuple[int, ...]:
        return tuple(int(b) for b in np.cumsum([0, *(c.shape[self.mode] for c in self.chunks)]))

    @property
    def shape(self) -> tuple[int, ...]:
        first = self.chunks[0].shape
        return tuple(self.bounds[-1] if k == self.mode else n for k, n in enumerate(first))

    @property
    def order(self) -> int:
        return self.chunks[0].order

    @property
    def format(self):
        return self.chunks[0].format

    @property
    def dtype(self) -> np.dtype:
        return self.chunks[0].dtype

    @property
    def nnz(self) -> int:
        return sum(c.nnz for c in self.chunks)

    def persist(self, client) -> "Partitioned":
        """The same chunks held in the workers' memory, so that later evaluations ship none of them.
        Each is the result of a task (reading its file, or holding the chunk the task carries), so a
        worker's loss costs a rerun of that task, never the chunk."""
        with carrying_data():
            held = [c if isinstance(c, Resident) else
                    Resident(client.submit(loaded, c, pure=False), c.format, c.shape, c.nnz, c.dtype)
                    for c in self.chunks]
        return Partitioned(tuple(held), self.mode)

    def gather(self) -> Tensor:
        """The whole tensor, in the chunks' format."""
        return join([loaded(c) for c in self.chunks], self.mode)

    @classmethod
    def from_tensor(cls, tensor: Tensor, parts: int, mode: int | None = None) -> "Partitioned":
        """`tensor` cut into `parts` chunks along `mode` (by default its outermost stored one) holding
        about equal numbers of stored entries."""
        if not isinstance(tensor, Tensor):
            raise FormatError(f"Expected an autosparse Tensor to partition, but found {type(tensor).__name__} "
                              f"(convert it with Tensor.from_numpy or Tensor.from_scipy)")
        check_parts(parts)
        mode = tensor.format.mode_order[0] if mode is None else mode
        if not 0 <= mode < tensor.order:
            raise ShapeError(f"Expected a mode of an order-{tensor.order} tensor to partition along, but found {mode}")
        bounds = balanced_bounds(*entry_counts(tensor, mode), tensor.shape[mode], parts)
        return cls(tuple(cut(tensor, mode, b, e) for b, e in zip(bounds, bounds[1:])), mode)

    @classmethod
    def from_directory(cls, path: "str | os.PathLike", format=None, mode: int = 0) -> "Partitioned":
        """One chunk per .mtx/.tns file of the directory, in order of their names, each holding its rows
        (its run of `mode`) counted from zero. Only the files' headers are read here (a .tns file
        without a `# shape:` line is scanned for its largest coordinates): each chunk is read where it
        is used, on the worker that runs it."""
        files = sorted(p for p in Path(path).iterdir() if p.name.endswith((".mtx", ".tns", ".mtx.gz", ".tns.gz")))
        if not files:
            raise AutosparseError(f"Expected .mtx or .tns files in {path}, but found none")
        return cls(tuple(TensorFile.of(f, format) for f in files), mode)


def partition(tensor: Tensor, parts: int, mode: int | None = None) -> Partitioned:
    """`Partitioned.from_tensor`."""
    return Partitioned.from_tensor(tensor, parts, mode)


def check_parts(parts) -> None:
    """A number of chunks: an integer of at least one (0 is not "the default")."""
    if isinstance(parts, bool) or not isinstance(parts, numbers.Integral) or parts < 1:
        raise AutosparseError(f"Expected parts to be a positive integer, but found {parts!r}")


def entry_counts(tensor: Tensor, mode: int) -> tuple[np.ndarray, np.ndarray]:
    """The coordinates of `mode` that hold stored entries, increasing, and how many each holds."""
    fmt, extent = tensor.format, tensor.shape[mode]
    if fmt.is_dense:
        return np.arange(extent), np.full(extent, tensor.nnz // max(extent, 1))
    if _row_major_by_runs(fmt, mode):  # CSR: the row lengths, read off the second level
        rows = fmt.levels[1].unpack(tensor.levels[1], np.arange(extent), tensor.shape[1 - mode])
        return np.arange(extent), np.bincount(rows.owner, minlength=extent)
    coords, _ = tensor.to_coo()
    return np.unique(coords[mode], return_counts=True)


def _row_major_by_runs(fmt, mode: int) -> bool:
    """Whether `fmt` is a matrix stored by `mode` in a full level, then a level whose runs are ranges
    that stores some coordinates only (CSR): each row's entries are one run of the second level."""
    levels = fmt.levels
    return (fmt.mode_order[0] == mode and len(levels) == 2 and levels[0].properties.full
            and levels[1].cuts_as_ranges and not levels[1].properties.full)


def balanced_bounds(coords: np.ndarray, counts: np.ndarray, extent: int, parts: int) -> tuple[int, ...]:
    """Cuts of [0, extent) into at most `parts` runs, each ending where the entries before it first
    reach its share of the total; a cut never splits one coordinate's entries, and runs are never empty."""
    check_parts(parts)
    if extent == 0:
        return (0, 0)
    parts = min(parts, extent)
    total = int(np.sum(counts))
    if total == 0 or len(coords) == 0:
        cuts = [extent * k // parts for k in range(parts + 1)]
    else:
        before = np.cumsum(counts)  # entries up to and including each coordinate
        targets = [total * k / parts for k in range(1, parts)]
        ends = np.searchsorted(before, targets, side="left")
        cuts = [0, *(int(coords[e]) + 1 for e in ends), extent]
    return tuple(sorted(set(min(max(c, 0), extent) for c in cuts)))


def chunk_counts(bounds: Sequence[int], coords: np.ndarray, counts: np.ndarray) -> tuple[int, ...]:
    """The stored entries each run of `bounds` holds."""
    before = np.concatenate([[0], np.cumsum(counts)])
    return tuple(int(x) for x in np.diff(before[np.searchsorted(coords, bounds, side="left")]))
