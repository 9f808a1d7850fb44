"""Conversions between autosparse tensors and scipy.sparse / pydata `sparse` objects, and `as_tensor`: any
value a user may pass as an operand, stored in the format a kernel or an autoscheduler reads it in.

Both libraries are imported only when used: scipy.sparse costs a fraction of a second and pydata
`sparse` (through numba) several, which a kernel call should never pay.
"""

from __future__ import annotations

from numbers import Number

import numpy as np

from ..errors import AutosparseError, FormatError, ShapeError
from ..format import Format, as_format, segment_starts
from .dtypes import INDEX_DTYPES, check_index_dtype, promote_value_dtype
from .storage import Storage
from .tensor import Tensor

_NATIVE = {"csr": Format("ds"), "csc": Format("d1s0")}
# The same layouts with no promise about order or duplicates: what a scipy matrix's arrays are checked
# against before anything reads them.
_RAW = {"csr": Format("du~"), "csc": Format("d1u0~")}


def as_tensor(value, fmt: Format, name: str) -> Tensor:
    """`value` stored in `fmt`: a Tensor in another format is converted (a copy, in its own index dtype
    when it has index arrays: a kernel's result follows its operands'), arrays and scipy or pydata sparse
    arrays are imported."""
    if isinstance(value, Tensor):
        if value.format == fmt:
            return value
        return value.to_format(fmt, None if value.format.is_dense else value.index_dtype)
    if is_scipy(value):
        return Tensor.from_scipy(value, format=fmt)
    if type(value).__module__.startswith("sparse"):
        return Tensor.from_pydata(value, format=fmt)
    if isinstance(value, (Number, np.ndarray, np.generic, list, tuple)):
        return Tensor.from_numpy(_of_order(np.asarray(value), fmt.order, name), format=fmt)
    raise AutosparseError(f"Expected a Tensor, a numpy array, a scipy or pydata sparse array or a number for "
                          f"{name}, but found {type(value).__name__}")


def _of_order(array: np.ndarray, order: int, name: str) -> np.ndarray:
    """numpy users write a vector as a column (n,1) or a row (1,n) too: where the expression reads a
    vector, either is that vector (a view), since only one of its modes can be the vector's. Any other
    array of the wrong order is refused naming the operand, before its format is looked at."""
    if order == 1 and array.ndim == 2 and 1 in array.shape:
        return array.reshape(-1)
    if array.ndim != order:
        expected = "a vector of shape (n,)" if order == 1 else f"an array of {order} modes"
        raise ShapeError(f"Expected {expected} for {name} as the expression reads it, but found shape "
                         f"{array.shape}" + (f": pass {name}.ravel()" if order == 1 and array.size in array.shape else ""))
    return array


def is_scipy(value) -> bool:
    return type(value).__module__.startswith("scipy.sparse")


def from_scipy(matrix, format, index_dtype) -> Tensor:
    """Every array of `matrix` is checked with numpy before scipy touches it: scipy's own conversions
    and canonicalisation run in C++ and corrupt the heap when indptr or indices lie."""
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise FormatError(f"Expected a scipy.sparse matrix or array, but found {type(matrix).__name__}")
    if matrix.format in _RAW:
        raw = _checked_compressed(matrix)
        if matrix.ndim == 1:
            coords, values = raw.to_coo()
            return Tensor.from_coo(coords[1:], values, matrix.shape, format or "coo", index_dtype)
        return _canonical_compressed(raw, matrix.format, format, index_dtype)
    coords, values = _checked_coordinates(matrix)
    default = "coo" if matrix.ndim == 1 else _NATIVE["csr"]
    return Tensor.from_coo(coords, values, matrix.shape, format or default, index_dtype)


def _checked_compressed(matrix) -> Tensor:
    """A CSR or CSC matrix's arrays as a tensor of its raw layout, validated (a 1-D CSR array as one row)."""
    indptr, indices, data = (_array(matrix, name) for name in ("indptr", "indices", "data"))
    if any(a.ndim != 1 for a in (indptr, indices, data)) or len(indices) != len(data) or not len(indptr):
        raise FormatError(f"Expected a scipy {matrix.format} matrix with 1-D arrays, as many indices as data, "
                          f"but found indptr, indices and data of shapes {indptr.shape}, {indices.shape}, {data.shape}")
    stored = int(indptr[-1]) if indptr.dtype.kind in "iu" else -1
    if not 0 <= stored <= len(indices):
        raise FormatError(f"Expected indptr[-1] between 0 and len(indices) = {len(indices)}, but found {indptr[-1]}")
    index_dtype = np.result_type(indptr.dtype, indices.dtype, np.int32)
    index_dtype = index_dtype if index_dtype in INDEX_DTYPES else np.dtype(np.int64)
    shape = matrix.shape if matrix.ndim == 2 else (1, *matrix.shape)
    levels = [{}, {"pos": _as_index(indptr, index_dtype), "crd": _as_index(indices[:stored], index_dtype)}]
    values = data[:stored].astype(promote_value_dtype(data.dtype), copy=False)
    try:
        return Tensor(shape, _RAW[matrix.format], levels, values)
    except FormatError as error:
        raise FormatError(f"Expected consistent arrays in a scipy {matrix.format} matrix, but found: {error}") from None


def _canonical_compressed(raw: Tensor, kind: str, format, index_dtype) -> Tensor:
    """`raw` in the requested format: its own arrays as CSR/CSC when they are canonical (each row's
    columns increasing, no duplicates) and their index dtype is the one asked for, a conversion otherwise."""
    native = _NATIVE[kind]
    fmt = as_format(format, 2) if format is not None else native
    index_dtype = check_index_dtype(index_dtype)
    pos, crd = raw.levels[1]["pos"], raw.levels[1]["crd"]
    if fmt == native and index_dtype in (None, crd.dtype) and _increasing_segments(pos, crd):
        return Tensor.from_read_only_storage(raw.shape, native, Storage(raw.levels, raw.vals))
    return raw.to_format(fmt, index_dtype)


def _increasing_segments(pos: np.ndarray, crd: np.ndarray) -> bool:
    """Whether every segment pos[k]..pos[k+1] of crd strictly increases."""
    return bool(np.all((crd[1:] > crd[:-1]) | segment_starts(pos, len(crd))[1:]))


def _checked_coordinates(matrix) -> tuple[np.ndarray, np.ndarray]:
    """(coords, values) of a matrix in another scipy format. COO's arrays are taken as they are (the
    tensor constructor checks them); BSR's block structure and DIA's diagonals are checked with numpy
    before scipy's conversion reads them."""
    if matrix.format == "coo":
        coords = [_array(matrix, "coords", k) for k in range(matrix.ndim)]
        data = _array(matrix, "data")
        if any(c.ndim != 1 or len(c) != len(data) for c in coords) or data.ndim != 1:
            raise FormatError(f"Expected one coordinate per value in each of the {matrix.ndim} coordinate arrays "
                              f"of a scipy coo matrix, but found lengths {[c.shape for c in coords]} for "
                              f"values of shape {data.shape}")
        return np.vstack(coords) if coords else np.zeros((0, len(data)), dtype=np.int64), data
    if matrix.format == "bsr":
        _check_blocks(matrix)
    if matrix.format == "dia":
        _check_diagonals(matrix)
    try:
        coo = matrix.tocoo()
    except (ValueError, IndexError, TypeError, OverflowError) as error:
        raise FormatError(f"Expected a consistent scipy {matrix.format} matrix, but scipy could not convert it: "
                          f"{error}") from None
    return np.vstack(coo.coords), coo.data


def _check_blocks(matrix) -> None:
    """BSR: its block rows and block columns are a CSR pattern, data one block per stored index."""
    rows, cols = matrix.blocksize
    data = _array(matrix, "data")
    if rows < 1 or cols < 1 or matrix.shape[0] % rows or matrix.shape[1] % cols or data.shape[1:] != (rows, cols):
        raise FormatError(f"Expected a scipy bsr matrix of {rows}x{cols} blocks that tile its shape {matrix.shape}, "
                          f"but found data of shape {data.shape}")
    pattern = Format("du~")
    indptr, indices = _array(matrix, "indptr"), _array(matrix, "indices")
    if len(indices) != len(data):
        raise FormatError(f"Expected one block per index of a scipy bsr matrix, but found {len(indices)} indices "
                          f"and {len(data)} blocks")
    levels = [{}, {"pos": _as_index(indptr, np.dtype(np.int64)), "crd": _as_index(indices, np.dtype(np.int64))}]
    Tensor((matrix.shape[0] // rows, matrix.shape[1] // cols), pattern, levels, np.zeros(len(indices)))


def _check_diagonals(matrix) -> None:
    """DIA: one row of data per offset."""
    offsets, data = _array(matrix, "offsets"), _array(matrix, "data")
    if offsets.ndim != 1 or data.ndim != 2 or data.shape[0] != len(offsets) or offsets.dtype.kind not in "iu":
        raise FormatError(f"Expected a scipy dia matrix with one row of data per integer offset, but found "
                          f"{offsets.shape} offsets of dtype {offsets.dtype} and data of shape {data.shape}")


def _array(matrix, name: str, item: int | None = None) -> np.ndarray:
    value = getattr(matrix, name)
    try:
        return np.asarray(value if item is None else value[item])
    except (ValueError, TypeError, IndexError) as error:
        raise FormatError(f"Expected {name} of the scipy {matrix.format} matrix to be an array: {error}") from None


def _as_index(array: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """An index array in `dtype`, refused (not wrapped around) when it is not integer or does not fit."""
    if array.dtype.kind not in "iu":
        raise FormatError(f"Expected integer index arrays in a scipy matrix, but found {array.dtype}")
    if array.size and array.dtype.kind == "u" and array.max() > np.iinfo(dtype).max:
        raise FormatError(f"Expected indices that fit {dtype}, but found {array.max()}")
    return array.astype(dtype, copy=False)


_UNSORTED = {"csr": Format("ds~"), "csc": Format("d1s0~")}


def to_scipy(tensor: Tensor):
    import scipy.sparse as sp

    if tensor.fill != 0:
        raise FormatError(f"Expected a tensor of fill 0 for scipy.sparse, whose absent entries are zeros, but "
                          f"found fill {tensor.fill} in {tensor!r}: use to_numpy(), or to_pydata() (which keeps "
                          f"the fill)")

    if tensor.order == 1:
        coords, values = tensor.to_coo()
        return sp.coo_array((values, (coords[0],)), shape=tensor.shape)
    if tensor.order != 2:
        raise ShapeError(f"Expected a tensor of order 1 or 2 for scipy.sparse, but found order {tensor.order}")
    kind = "csc" if tensor.format in (_NATIVE["csc"], _UNSORTED["csc"]) else "csr"
    # rows (columns) left unsorted as scipy's own product leaves them: has_sorted_indices is False
    stored = tensor if tensor.format == _UNSORTED[kind] else tensor.to_format(_NATIVE[kind])
    arrays = (stored.vals.copy(), stored.levels[1]["crd"].copy(), stored.levels[1]["pos"].copy())
    return (sp.csc_array if kind == "csc" else sp.csr_array)(arrays, shape=tensor.shape)


def from_pydata(array, format, index_dtype) -> Tensor:
    import sparse

    if not isinstance(array, sparse.SparseArray):
        raise FormatError(f"Expected a pydata sparse array, but found {type(array).__name__}")
    if format is None:
        axes = getattr(array, "compressed_axes", None)
        format = {(0,): "csr", (1,): "csc"}.get(axes, "coo") if array.ndim == 2 else "coo"
    if array.fill_value != 0:
        raise FormatError(f"Expected a pydata array whose fill value is 0, but found {array.fill_value}")
    coo = array if isinstance(array, sparse.COO) else array.asformat("coo")
    return Tensor.from_coo(coo.coords, coo.data, coo.shape, format, index_dtype)


def to_pydata(tensor: Tensor, kind: str):
    import sparse

    if kind not in ("coo", "gcxs"):
        raise FormatError(f"Expected a pydata kind 'coo' or 'gcxs', but found {kind!r}")
    coords, values = tensor.to_coo()
    unique = all(level.properties.unique for level in tensor.format.levels)
    coo = sparse.COO(coords, values, shape=tensor.shape, has_duplicates=not unique, sorted=False,
                     fill_value=tensor.fill)
    return coo if kind == "coo" else coo.asformat("gcxs")
