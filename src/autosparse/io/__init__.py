"""Reading and writing tensor files: Matrix Market (.mtx[.gz]) and FROSTT (.tns[.gz])."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np

from ..errors import FormatError
from ..tensor import Tensor
from .frostt import describe_tns, read_tns, write_tns
from .matrix_market import describe_mtx, read_mtx, write_mtx


def _existing(path: Path) -> Path:
    """`path`, or a FileNotFoundError naming it: a missing file is reported as missing before its name is
    judged, so a mistyped path never reads as a format problem."""
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "file not found", str(path))
    return path


def _kind(path: Path) -> str:
    suffixes = path.suffixes[-2:] if path.suffix == ".gz" else path.suffixes[-1:]
    kind = suffixes[0] if suffixes else ""
    if kind not in (".mtx", ".tns"):
        raise FormatError(f"Expected a .mtx, .mtx.gz, .tns or .tns.gz file, but found {path.name!r}")
    return kind


def read(path: "str | os.PathLike", format=None, *, index_dtype=None, shape=None) -> Tensor:
    """Read a tensor file: .mtx as CSR (symmetric files expanded), .tns as COO; `format` overrides.

    `shape` applies to .tns files, whose shape otherwise comes from their largest coordinates.
    """
    path = _existing(Path(path))
    if _kind(path) == ".mtx":
        return read_mtx(path, format, index_dtype)
    return read_tns(path, format, index_dtype, shape)


def describe(path: "str | os.PathLike") -> tuple[tuple[int, ...], int, "np.dtype", bool]:
    """A tensor file's shape, its number of entry lines, its value dtype and whether the file states
    its shape, without holding its entries (.mtx: the header; .tns: one pass over the lines, the shape
    from `# shape:` when given, else from the largest coordinates)."""
    path = _existing(Path(path))
    return describe_mtx(path) if _kind(path) == ".mtx" else describe_tns(path)


def check_writable(path: "str | os.PathLike", order: int) -> None:
    """Refuse a file name that `write` could not hold a tensor of `order` modes in, before the tensor
    exists: a command checks its output's name before computing what goes there."""
    if _kind(Path(path)) == ".mtx" and order != 2:
        raise FormatError(f"Expected a matrix for a .mtx file, but found a tensor of order {order}")


def write(path: "str | os.PathLike", tensor: Tensor) -> None:
    """Write a tensor's stored entries (explicit zeros included); `.gz` names are compressed. The files
    have no fill (what they do not list is 0): a tensor of another fill is refused."""
    path = Path(path)
    if not isinstance(tensor, Tensor):
        raise FormatError(f"Expected an autosparse Tensor to write, but found {type(tensor).__name__}")
    if tensor.fill != 0:
        raise FormatError(f"Expected a tensor of fill 0 to write to {path.name}, whose absent entries are zeros, "
                          f"but found fill {tensor.fill}")
    check_writable(path, tensor.order)
    if _kind(path) == ".mtx":
        write_mtx(path, tensor)
    else:
        write_tns(path, tensor)
