"""Conversions between autosparse tensors and scipy.sparse / pydata `sparse` objects.

Both libraries are imported only when used: scipy.sparse costs a fraction of a second and pydata
`sparse` (through numba) several, which a kernel call should never pay.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError, ShapeError
from ..format import Format, as_format
from .dtypes import INDEX_DTYPES, VALUE_DTYPES, check_index_dtype, promote_value_dtype
from .storage import choose_index_dtype
from .tensor import Tensor

_NATIVE = {"csr": Format("ds"), "csc": Format("d1s0")}


def from_scipy(matrix, format, index_dtype) -> Tensor:
    import scipy.sparse as sp

    if not sp.issparse(matrix):
        raise FormatError(f"Expected a scipy.sparse matrix or array, but found {type(matrix).__name__}")
    if matrix.ndim == 1:
        coo = matrix.tocoo()
        return Tensor.from_coo(np.asarray(coo.coords), coo.data, coo.shape, format or "coo", index_dtype)
    native = _NATIVE.get(matrix.format)
    fmt = as_format(format, 2) if format is not None else (native or _NATIVE["csr"])
    if native is None or native != fmt:
        coo = matrix.tocoo()
        return Tensor.from_coo(np.vstack([coo.row, coo.col]), coo.data, coo.shape, fmt, index_dtype)
    index_dtype = check_index_dtype(index_dtype)
    fits = (matrix.indptr.dtype == matrix.indices.dtype and matrix.indices.dtype in INDEX_DTYPES
            and matrix.data.dtype in VALUE_DTYPES and index_dtype in (None, matrix.indices.dtype))
    if not (fits and matrix.has_canonical_format):
        matrix = matrix.copy()
        matrix.sum_duplicates()
        wanted = choose_index_dtype(fmt, matrix.shape, matrix.nnz, index_dtype)
        matrix.indptr = matrix.indptr.astype(wanted)
        matrix.indices = matrix.indices.astype(wanted)
        matrix.data = matrix.data.astype(promote_value_dtype(matrix.data.dtype))
    compressed = {"pos": matrix.indptr, "crd": matrix.indices}
    return Tensor(matrix.shape, fmt, [{}, compressed], matrix.data)


def to_scipy(tensor: Tensor):
    import scipy.sparse as sp

    if tensor.order == 1:
        coords, values = tensor.to_coo()
        return sp.coo_array((values, (coords[0],)), shape=tensor.shape)
    if tensor.order != 2:
        raise ShapeError(f"Expected a tensor of order 1 or 2 for scipy.sparse, but found order {tensor.order}")
    kind = "csc" if tensor.format == _NATIVE["csc"] else "csr"
    stored = tensor.to_format(_NATIVE[kind])
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
                     fill_value=values.dtype.type(0))
    return coo if kind == "coo" else coo.asformat("gcxs")
