"""The value and index dtypes that tensors may hold, and how other dtypes map onto them."""

from __future__ import annotations

import numpy as np

from ..errors import FormatError

VALUE_DTYPES = tuple(np.dtype(t) for t in (np.float64, np.float32, np.int64, np.complex128))
INDEX_DTYPES = (np.dtype(np.int32), np.dtype(np.int64))
INT32_MAX = np.iinfo(np.int32).max
INT64_MIN, INT64_MAX = -2**63, 2**63 - 1  # Python ints: compared with Python ints of any size, exactly


def check_value_dtype(dtype: np.dtype) -> np.dtype:
    """A tensor built from raw arrays must already hold a supported value dtype."""
    dtype = np.dtype(dtype)
    if dtype not in VALUE_DTYPES:
        raise FormatError(f"Expected values of dtype {', '.join(map(str, VALUE_DTYPES))}, but found {dtype}")
    return dtype


def promote_value_dtype(dtype: np.dtype) -> np.dtype:
    """The supported dtype that holds every value of `dtype` (bool and small ints -> int64, float16 ->
    float32, complex64 -> complex128); for the constructors that take users' containers."""
    dtype = np.dtype(dtype)
    if dtype in VALUE_DTYPES:
        return dtype
    if dtype.kind == "b" or (dtype.kind in "iu" and dtype.itemsize < 8):
        return np.dtype(np.int64)
    if dtype.kind == "f" and dtype.itemsize < 4:
        return np.dtype(np.float32)
    if dtype.kind == "c" and dtype.itemsize < 16:
        return np.dtype(np.complex128)
    raise FormatError(f"Expected values convertible to {', '.join(map(str, VALUE_DTYPES))} without loss, "
                      f"but found {dtype}")


def check_index_dtype(dtype: np.dtype | type | None) -> np.dtype | None:
    if dtype is None:
        return None
    dtype = np.dtype(dtype)
    if dtype not in INDEX_DTYPES:
        raise FormatError(f"Expected an index dtype of int32 or int64, but found {dtype}")
    return dtype


def index_dtype_for(bound: int) -> np.dtype:
    """The narrowest supported index dtype that holds values up to `bound`."""
    return INDEX_DTYPES[0] if bound <= INT32_MAX else INDEX_DTYPES[1]
