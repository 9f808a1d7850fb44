"""Matrix Market files (.mtx, .mtx.gz), through scipy.io (fast_matrix_market underneath).

Symmetric and skew-symmetric files are expanded to both triangles, pattern files get the value 1.0,
integer files int64 and complex files complex128; explicit zeros are kept. Files are written as
`general` so that exactly the stored entries come back.

The banner and the size line are read here, not by scipy: fast_matrix_market aborts the whole process
(SIGABRT) on a file without a banner or one declaring more entries than it can allocate. Only a file whose
header is well formed and whose declared size passes the memory limit reaches it, as bytes already read
(a stream that cannot fail halfway), and its errors on the body become `FormatError`.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..config import check_allocation
from ..errors import FormatError
from ..tensor import Tensor
from ._files import open_file, read_rest, reading

_FIELDS = {"i": "integer", "c": "complex", "f": "real"}
_DTYPES = {"real": np.float64, "double": np.float64, "integer": np.int64, "complex": np.complex128,
           "pattern": np.float64}
_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
_LONGEST_HEADER_LINE = 1 << 16
_LARGEST_DIMENSION = 2**63 - 1
# What one coordinate entry costs while read: two int64 coordinates and the value, in scipy's COO and
# again in the tensor built from it.
_COPIES_WHILE_READING = 2


@dataclass(frozen=True, slots=True)
class Header:
    """A Matrix Market banner and size line."""

    layout: str  # "coordinate" or "array"
    field: str  # "real", "integer", "complex", "pattern"
    symmetry: str
    shape: tuple[int, int]
    entries: int  # entry lines the file declares

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(_DTYPES[self.field])

    def entry_bytes(self) -> int:
        """The memory the declared entries take once read (both triangles of a symmetric file)."""
        if self.layout == "array":
            return self.shape[0] * self.shape[1] * self.dtype.itemsize
        stored = self.entries * (1 if self.symmetry == "general" else 2)
        return stored * (2 * 8 + self.dtype.itemsize) * _COPIES_WHILE_READING


def read_mtx(path: Path, format, index_dtype) -> Tensor:
    import scipy.io
    import scipy.sparse as sp

    with reading(path), open_file(path, "rb") as handle:
        header, text = _read_header(handle, path)
        check_allocation(header.entry_bytes(), f"reading {path} ({header.entries:,} entries declared)")
        contents = io.BytesIO(read_rest(handle, path, text))
    try:
        matrix = scipy.io.mmread(contents)
    except (ValueError, OverflowError, TypeError) as error:
        raise FormatError(f"Expected a Matrix Market file in {path}: {error}") from None
    if not sp.issparse(matrix):
        return Tensor.from_numpy(matrix, format or "dense", index_dtype)
    coo = matrix.tocoo()
    coords = np.vstack([coo.row, coo.col])
    return Tensor.from_coo(coords, coo.data, coo.shape, format or "csr", index_dtype)


def describe_mtx(path: Path) -> tuple[tuple[int, ...], int, np.dtype, bool]:
    """From the banner and the size line alone."""
    with reading(path), open_file(path, "rb") as handle:
        header, _ = _read_header(handle, path)
    return header.shape, header.entries, header.dtype, True


def _read_header(handle, path: Path) -> tuple[Header, bytes]:
    """The header, and its bytes as read (scipy reads them again)."""
    banner = _header_line(handle, path)
    words = banner.decode("ascii", "replace").lower().split()
    if len(words) != 5 or words[0] != "%%matrixmarket" or words[1] != "matrix":
        raise FormatError(f"Expected a Matrix Market file in {path}, starting with a banner such as "
                          f"'%%MatrixMarket matrix coordinate real general', but found {banner[:80]!r}")
    layout, field, symmetry = words[2:]
    if layout not in ("coordinate", "array") or field not in _DTYPES or symmetry not in _SYMMETRIES \
            or (layout, field) == ("array", "pattern"):
        raise FormatError(f"Expected a Matrix Market banner of a known layout, field and symmetry in {path}, "
                          f"but found {' '.join(words[2:])!r}")
    read = [banner]
    line = _header_line(handle, path)
    while line.startswith(b"%") or (line and not line.strip()):
        read.append(line)
        line = _header_line(handle, path)
    read.append(line)
    sizes = _sizes(line, 3 if layout == "coordinate" else 2, path)
    entries = sizes[2] if layout == "coordinate" else sizes[0] * sizes[1]
    return Header(layout, field, symmetry, (sizes[0], sizes[1]), entries), b"".join(read)


def _header_line(handle, path: Path) -> bytes:
    line = handle.readline(_LONGEST_HEADER_LINE)
    if len(line) == _LONGEST_HEADER_LINE and not line.endswith(b"\n"):
        raise FormatError(f"Expected header lines of at most {_LONGEST_HEADER_LINE:,} bytes in {path}, "
                          f"but found a longer one")
    return line


def _sizes(line: bytes, count: int, path: Path) -> tuple[int, ...]:
    """The size line: rows, columns and (coordinate files) entries, each a non-negative integer that fits
    int64."""
    words = line.split()
    if len(words) != count or not all(w.isdigit() for w in words):
        raise FormatError(f"Expected a size line of {count} non-negative integers in {path}, "
                          f"but found {line[:80]!r}")
    sizes = tuple(int(w) for w in words)
    if max(sizes) > _LARGEST_DIMENSION:
        raise FormatError(f"Expected sizes below 2**63 in {path}, but found {line.strip()[:80]!r}")
    return sizes


def write_mtx(path: Path, tensor: Tensor) -> None:
    import scipy.io
    import scipy.sparse as sp

    coords, values = tensor.to_coo()
    matrix = sp.coo_array((values, (coords[0], coords[1])), shape=tensor.shape)
    with open_file(path, "wb") as handle:
        scipy.io.mmwrite(handle, matrix, field=_FIELDS[values.dtype.kind], symmetry="general")
