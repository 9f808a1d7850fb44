"""FROSTT tensor files (.tns, .tns.gz): one entry per line, 1-based coordinates, then the value.

FROSTT files carry no shape and no dtype: the shape is taken from the largest coordinate of each mode and
values are read as float64, unless the file has the comments `# shape: d0 d1 ...` and `# dtype: int64`
that autosparse writes (other readers skip them).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np

from ..errors import FormatError, ShapeError
from ..tensor import MAX_ORDER, Tensor
from ._files import open_file, read_rest, reading

_SHAPE_LINE = re.compile(rb"^#[ \t]*shape:([ \t\d]+)$", re.MULTILINE)
_DTYPE_LINE = re.compile(rb"^#[ \t]*dtype:[ \t]*(float64|float32|int64)[ \t]*$", re.MULTILINE)
_EXACT_FLOAT = 2**53  # coordinates are parsed as float64, exact up to here
_ROWS_PER_CHUNK = 1 << 16


def read_tns(path: Path, format, index_dtype, shape) -> Tensor:
    with reading(path), open_file(path, "rb") as handle:
        text = read_rest(handle, path)
    lines = text.splitlines()
    header_shape, header_dtype = _SHAPE_LINE.search(text), _DTYPE_LINE.search(text)
    table = _parse(lines, path, np.float64)
    if table.shape[0] == 0:
        if shape is None and header_shape is None:
            raise ShapeError(f"Expected entries or a '# shape:' line in {path} to tell the shape, but found neither")
        table = table.reshape(0, len(shape or header_shape.group(1).split()) + 1)
    _check_order(table.shape[1] - 1, path)
    coords = table[:, :-1].T
    if coords.size and (not np.array_equal(coords, np.floor(coords)) or coords.min() < 1
                        or coords.max() > _EXACT_FLOAT):
        raise FormatError(f"Expected integer (1-based) coordinates from 1 to 2**53 in {path}")
    coords = coords.astype(np.int64) - 1
    if shape is None:
        shape = (tuple(int(d) for d in header_shape.group(1).split()) if header_shape
                 else tuple(int(c.max()) + 1 for c in coords))
    dtype = np.dtype(header_dtype.group(1).decode()) if header_dtype else np.dtype(np.float64)
    values = table[:, -1].astype(dtype)
    if dtype.kind == "i" and len(values):  # exact beyond 2**53: read the value column again as integers
        values = _parse(lines, path, np.int64, usecols=table.shape[1] - 1).reshape(-1)
    return Tensor.from_coo(coords, values, shape, format or "coo", index_dtype)


def describe_tns(path: Path) -> tuple[tuple[int, ...], int, np.dtype, bool]:
    shape, dtype, lines, largest = None, np.dtype(np.float64), 0, None
    with reading(path), open_file(path, "rb") as handle:
        for line in handle:
            if line.startswith(b"#"):
                if found := _SHAPE_LINE.match(line.rstrip(b"\r\n")):
                    shape = tuple(int(d) for d in found.group(1).split())
                    _check_order(len(shape), path)
                elif found := _DTYPE_LINE.match(line.rstrip(b"\r\n")):
                    dtype = np.dtype(found.group(1).decode())
            elif line.strip():
                lines += 1
                if shape is None:
                    coords = _line_coordinates(line, path)
                    largest = coords if largest is None else [max(a, b) for a, b in zip(largest, coords)]
    if shape is None and largest is None:
        raise ShapeError(f"Expected entries or a '# shape:' line in {path} to tell the shape, but found neither")
    return shape or tuple(largest), lines, dtype, shape is not None


def _line_coordinates(line: bytes, path: Path) -> list[int]:
    words = line.split()[:-1]
    _check_order(len(words), path)
    try:
        return [int(float(c)) for c in words]
    except (ValueError, OverflowError):
        raise FormatError(f"Expected lines of integer coordinates and a value in {path}, but found "
                          f"{line[:80]!r}") from None


def _check_order(order: int, path: Path) -> None:
    """Refuses a line of too many (or too few) columns before anything is built for that many modes."""
    if not 1 <= order <= MAX_ORDER:
        raise FormatError(f"Expected 1 to {MAX_ORDER} coordinates and a value per line of {path}, "
                          f"but found {order + 1} column(s)")


def _parse(lines, path: Path, dtype, usecols=None) -> np.ndarray:
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "loadtxt: input contained no data")
            return np.loadtxt(lines, dtype=dtype, comments="#", ndmin=2, usecols=usecols)
    except ValueError as error:
        raise FormatError(f"Expected lines of integer coordinates and a value in {path}: {error}") from None


def write_tns(path: Path, tensor: Tensor) -> None:
    """Entries one per line, after `# shape:` and `# dtype:` comments that make the round trip exact."""
    if tensor.dtype.kind == "c":
        raise FormatError("Expected real or integer values for a .tns file, but found complex values")
    if tensor.order == 0:
        raise FormatError("Expected a tensor of order 1 or more for a .tns file, but found a scalar")
    coords, values = tensor.to_coo()
    value_format = "%d" if tensor.dtype.kind == "i" else "%r"
    line = " ".join(["%d"] * tensor.order + [value_format]) + "\n"
    with open_file(path, "wb") as handle:
        handle.write(f"# shape: {' '.join(map(str, tensor.shape))}\n# dtype: {tensor.dtype}\n".encode())
        for start in range(0, len(values), _ROWS_PER_CHUNK):
            stop = min(start + _ROWS_PER_CHUNK, len(values))
            rows = np.empty((stop - start, tensor.order + 1), dtype=object)
            rows[:, :-1] = coords[:, start:stop].T.astype(np.int64) + 1
            rows[:, -1] = values[start:stop].tolist()
            handle.write(((line * (stop - start)) % tuple(rows.ravel().tolist())).encode())
