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


def check_fill(fill, dtype: np.dtype):
    """`fill` as a scalar of `dtype`: the value of every entry a tensor does not store. Refused (FormatError)
    unless it is one real or complex scalar that `dtype` holds exactly (2.5 is no int64 fill, inf only a
    float one), and never NaN: a fill is compared with ==, by `prune`, `from_numpy` and the operators' laws
    (notation/operators.py), and NaN equals nothing, not even the entries it stands for."""
    dtype = np.dtype(dtype)
    value = np.asarray(fill)
    if value.ndim or value.dtype.kind not in "biufc":
        raise FormatError(f"Expected a fill that is one number (of at most 64 bits), but found {fill!r:.80}")
    if np.isnan(value):
        raise FormatError("Expected a fill that is not NaN (a fill is compared with ==, and NaN equals nothing): "
                          "store NaN entries explicitly in a tensor of another fill")
    if np.isinf(value) and dtype.kind != "f":
        raise FormatError(f"Expected a finite fill for values of dtype {dtype} (inf only fills float tensors), "
                          f"but found {fill!r}")
    if value.dtype.kind == "c" and dtype.kind != "c":
        raise FormatError(f"Expected a real fill for values of dtype {dtype}, but found {fill!r}")
    with np.errstate(all="ignore"):
        cast = value.astype(dtype)
    if cast != value:
        raise FormatError(f"Expected a fill that dtype {dtype} holds exactly, but found {fill!r}")
    return cast[()]
