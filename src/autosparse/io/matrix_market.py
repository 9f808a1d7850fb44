"""Matrix Market files (.mtx, .mtx.gz), through scipy.io (fast_matrix_market underneath).

Symmetric and skew-symmetric files are expanded to both triangles, pattern files get the value 1.0,
integer files int64 and complex files complex128; explicit zeros are kept. Files are written as
`general` so that exactly the stored entries come back.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import FormatError
from ..tensor import Tensor
from ._files import open_file

_FIELDS = {"i": "integer", "c": "complex", "f": "real"}


def read_mtx(path: Path, format, index_dtype) -> Tensor:
    import scipy.io
    import scipy.sparse as sp

    try:
        with open_file(path, "rb") as handle:
            matrix = scipy.io.mmread(handle)
    except (ValueError, OSError, EOFError) as error:
        raise FormatError(f"Expected a Matrix Market file in {path}: {error}") from None
    if not sp.issparse(matrix):
        return Tensor.from_numpy(matrix, format or "dense", index_dtype)
    coo = matrix.tocoo()
    coords = np.vstack([coo.row, coo.col])
    return Tensor.from_coo(coords, coo.data, coo.shape, format or "csr", index_dtype)


def describe_mtx(path: Path) -> tuple[tuple[int, ...], int, np.dtype, bool]:
    """From the banner and the size line alone."""
    with open_file(path, "rb") as handle:
        banner = handle.readline().split()
        line = handle.readline()
        while line.startswith(b"%") or (line and not line.strip()):
            line = handle.readline()
    sizes = line.split()
    if len(banner) < 4 or banner[0].lower() != b"%%matrixmarket" or len(sizes) not in (2, 3):
        raise FormatError(f"Expected a Matrix Market file in {path}, with a banner and a size line")
    rows, cols = int(sizes[0]), int(sizes[1])
    entries = int(sizes[2]) if len(sizes) == 3 else rows * cols
    field = banner[3].lower().decode()
    dtype = np.dtype({"integer": np.int64, "complex": np.complex128}.get(field, np.float64))
    return (rows, cols), entries, dtype, True


def write_mtx(path: Path, tensor: Tensor) -> None:
    import scipy.io
    import scipy.sparse as sp

    coords, values = tensor.to_coo()
    matrix = sp.coo_array((values, (coords[0], coords[1])), shape=tensor.shape)
    with open_file(path, "wb") as handle:
        scipy.io.mmwrite(handle, matrix, field=_FIELDS[values.dtype.kind], symmetry="general")
