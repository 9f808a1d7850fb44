"""FROSTT tensor files (.tns, .tns.gz): one entry per line, 1-based coordinates, then the value.

FROSTT files carry no shape; it is taken from the largest coordinate of each mode, unless the file starts
with the comment `# shape: d0 d1 ...` that autosparse writes (other readers skip it as a comment).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ..errors import FormatError, ShapeError
from ..tensor import Tensor
from ._files import open_file

_SHAPE_LINE = re.compile(rb"#[ \t]*shape:([ \t\d]+)")
_ROWS_PER_CHUNK = 1 << 16


def read_tns(path: Path, format, index_dtype, shape) -> Tensor:
    with open_file(path, "rb") as handle:
        text = handle.read()
    header = _SHAPE_LINE.match(text)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "loadtxt: input contained no data")
            table = np.loadtxt(text.splitlines(), dtype=np.float64, comments="#", ndmin=2)
    except ValueError as error:
        raise FormatError(f"Expected lines of integer coordinates and a value in {path}: {error}") from None
    if table.shape[0] == 0:
        if shape is None and header is None:
            raise ShapeError(f"Expected entries or a '# shape:' line in {path} to tell the shape, but found neither")
        table = table.reshape(0, len(shape or header.group(1).split()) + 1)
    if table.shape[1] < 2:
        raise FormatError(f"Expected at least one coordinate and a value per line of {path}, "
                          f"but found {table.shape[1]} column(s)")
    coords = table[:, :-1].T
    if not np.array_equal(coords, np.floor(coords)) or (coords.size and coords.min() < 1):
        raise FormatError(f"Expected positive integer (1-based) coordinates in {path}")
    coords = coords.astype(np.int64) - 1
    if shape is None:
        shape = tuple(int(d) for d in header.group(1).split()) if header else tuple(int(c.max()) + 1 for c in coords)
    return Tensor.from_coo(coords, table[:, -1], shape, format or "coo", index_dtype)


def write_tns(path: Path, tensor: Tensor) -> None:
    if tensor.dtype.kind == "c":
        raise FormatError("Expected real or integer values for a .tns file, but found complex values")
    coords, values = tensor.to_coo()
    value_format = "%d" if tensor.dtype.kind == "i" else "%r"
    line = " ".join(["%d"] * tensor.order + [value_format]) + "\n"
    with open_file(path, "wb") as handle:
        handle.write(f"# shape: {' '.join(map(str, tensor.shape))}\n".encode())
        for start in range(0, len(values), _ROWS_PER_CHUNK):
            stop = min(start + _ROWS_PER_CHUNK, len(values))
            rows = np.empty((stop - start, tensor.order + 1), dtype=object)
            rows[:, :-1] = (coords[:, start:stop].T + 1).astype(np.int64)
            rows[:, -1] = values[start:stop].tolist()
            handle.write(((line * (stop - start)) % tuple(rows.ravel().tolist())).encode())
