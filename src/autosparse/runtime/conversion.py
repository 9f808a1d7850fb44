"""Native conversions of matrices between storage orders: a Tensor -> the same Tensor in CSR or CSC.

    CSR <-> CSC                  one counting sort by the inner coordinate (rows stay sorted: stable)
    COO (sorted or not) -> CSR/CSC  a counting sort by the outer coordinate, then each segment sorted by
                                    the inner one (skipped when the entries come sorted by it)

Kernels convert operands given in another storage order on every call (`pipeline/conversions.py`), and
`Tensor.to_format` converts through them too (installed in `tensor.native` when this module loads);
numpy's generic path (canonical entries, a lexicographic sort) is several times slower than scipy's
tocsc. These are counting sorts in C, compiled once through the runtime's library loader and cached
like kernels. Values are moved as bytes of their size (4, 8 or 16), so no dtype needs code of its own.
The arrays produced are exactly those of `Tensor.to_format` in the tensor's own index dtype (explicit
zeros kept);
coordinates that repeat, which `to_format` would sum, are left to it (`native_conversion` returns None).
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from ..config import check_allocation
from ..format import Format
from ..tensor import Tensor, native
from ..tensor import storage as st
from .library import load_library

_INDEX = {np.dtype(np.int32): ("i32", "int32_t"), np.dtype(np.int64): ("i64", "int64_t")}
_VALUE = {4: ("v4", "uint32_t"), 8: ("v8", "uint64_t"), 16: ("v16", "v16")}

_PRELUDE = r"""
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
typedef struct { uint64_t lo, hi; } v16;
"""

# Compressed (outer, inner) -> compressed (inner, outer). Returns 0, or -1 when memory runs out.
_TRANSPOSE = r"""
int transpose_{i}_{v}(int64_t n_outer, int64_t n_inner, const {I} *pos, const {I} *crd, const {V} *vals,
                          {I} *pos_out, {I} *crd_out, {V} *vals_out) {{
    {I} *next = malloc((size_t)(n_inner + 1) * sizeof({I}));
    if (!next) return -1;
    memset(pos_out, 0, (size_t)(n_inner + 1) * sizeof({I}));
    int64_t nnz = (int64_t)pos[n_outer];
    for (int64_t p = 0; p < nnz; p++) pos_out[crd[p] + 1]++;
    for (int64_t j = 0; j < n_inner; j++) pos_out[j + 1] += pos_out[j];
    memcpy(next, pos_out, (size_t)(n_inner + 1) * sizeof({I}));
    for (int64_t i = 0; i < n_outer; i++) {{
        for (int64_t p = (int64_t)pos[i]; p < (int64_t)pos[i + 1]; p++) {{
            {I} q = next[crd[p]]++;
            crd_out[q] = ({I})i;
            vals_out[q] = vals[p];
        }}
    }}
    free(next);
    return 0;
}}
"""

# Coordinates (outer[p], inner[p]) in any order -> compressed (outer, inner): a stable counting sort by
# the outer coordinate, then each segment sorted by the inner one unless the input was sorted by it
# (insertion sort for short segments, a merge sort through a scratch buffer for long ones). Returns how
# many entries repeat the coordinates of the one before them (0 for a valid result), or -1 when memory
# runs out.
_COORDINATES = r"""
static void merge_sort_{i}_{v}({I} *crd, {V} *vals, {I} *crd_tmp, {V} *vals_tmp, int64_t n) {{
    for (int64_t width = 1; width < n; width *= 2) {{
        for (int64_t lo = 0; lo < n; lo += 2 * width) {{
            int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {{
                if (crd[b] < crd[a]) {{ crd_tmp[k] = crd[b]; vals_tmp[k++] = vals[b++]; }}
                else {{ crd_tmp[k] = crd[a]; vals_tmp[k++] = vals[a++]; }}
            }}
            while (a < mid) {{ crd_tmp[k] = crd[a]; vals_tmp[k++] = vals[a++]; }}
            while (b < hi) {{ crd_tmp[k] = crd[b]; vals_tmp[k++] = vals[b++]; }}
        }}
        memcpy(crd, crd_tmp, (size_t)n * sizeof({I}));
        memcpy(vals, vals_tmp, (size_t)n * sizeof({V}));
    }}
}}

static void sort_segment_{i}_{v}({I} *crd, {V} *vals, {I} *crd_tmp, {V} *vals_tmp, int64_t n) {{
    if (n > 32) {{ merge_sort_{i}_{v}(crd, vals, crd_tmp, vals_tmp, n); return; }}
    for (int64_t a = 1; a < n; a++) {{
        {I} c = crd[a];
        {V} x = vals[a];
        int64_t b = a;
        for (; b > 0 && crd[b - 1] > c; b--) {{ crd[b] = crd[b - 1]; vals[b] = vals[b - 1]; }}
        crd[b] = c;
        vals[b] = x;
    }}
}}

int64_t coordinates_{i}_{v}(int64_t nnz, int64_t n_outer, int64_t n_inner, const {I} *outer, const {I} *inner,
                            const {V} *vals, {I} *pos_out, {I} *crd_out, {V} *vals_out) {{
    (void)n_inner;
    int by_inner = 1, by_outer = 1, by_both = 1;
    int64_t repeated = 0;  /* of the entry before, counted here when the input is in the output's order */
    for (int64_t p = 1; p < nnz; p++) {{
        by_inner &= inner[p - 1] <= inner[p];
        by_outer &= outer[p - 1] <= outer[p];
        by_both &= (outer[p - 1] < outer[p]) | (outer[p - 1] == outer[p] & inner[p - 1] <= inner[p]);
        repeated += (outer[p - 1] == outer[p]) & (inner[p - 1] == inner[p]);
    }}
    int64_t longest = 0;
    if (by_outer) {{  /* already grouped: the segments' bounds, no counting through memory */
        int64_t p = 0;
        for (int64_t i = 0; i < n_outer; i++) {{
            int64_t start = p;
            pos_out[i] = ({I})start;
            while (p < nnz && outer[p] == i) p++;
            if (p - start > longest) longest = p - start;
        }}
        pos_out[n_outer] = ({I})nnz;
        memcpy(crd_out, inner, (size_t)nnz * sizeof({I}));
        memcpy(vals_out, vals, (size_t)nnz * sizeof({V}));
    }} else {{
        {I} *next = malloc((size_t)(n_outer + 1) * sizeof({I}));
        if (!next) return -1;
        memset(pos_out, 0, (size_t)(n_outer + 1) * sizeof({I}));
        for (int64_t p = 0; p < nnz; p++) pos_out[outer[p] + 1]++;
        for (int64_t i = 0; i < n_outer; i++) {{
            if (pos_out[i + 1] > longest) longest = pos_out[i + 1];
            pos_out[i + 1] += pos_out[i];
        }}
        memcpy(next, pos_out, (size_t)(n_outer + 1) * sizeof({I}));
        for (int64_t p = 0; p < nnz; p++) {{
            {I} q = next[outer[p]]++;
            crd_out[q] = inner[p];
            vals_out[q] = vals[p];
        }}
        free(next);
    }}
    if (by_outer && by_both) return repeated;
    if (!by_inner) {{
        {I} *crd_tmp = malloc((size_t)(longest > 0 ? longest : 1) * sizeof({I}));
        {V} *vals_tmp = malloc((size_t)(longest > 0 ? longest : 1) * sizeof({V}));
        if (!crd_tmp || !vals_tmp) {{ free(crd_tmp); free(vals_tmp); return -1; }}
        for (int64_t i = 0; i < n_outer; i++) {{
            int64_t lo = (int64_t)pos_out[i], hi = (int64_t)pos_out[i + 1];
            int sorted = 1;
            for (int64_t q = lo + 1; q < hi; q++) sorted &= crd_out[q - 1] <= crd_out[q];
            if (!sorted) sort_segment_{i}_{v}(crd_out + lo, vals_out + lo, crd_tmp, vals_tmp, hi - lo);
        }}
        free(crd_tmp);
        free(vals_tmp);
    }}
    repeated = 0;
    for (int64_t i = 0; i < n_outer; i++)
        for (int64_t q = (int64_t)pos_out[i] + 1; q < (int64_t)pos_out[i + 1]; q++)
            repeated += crd_out[q] == crd_out[q - 1];
    return repeated;
}}
"""

_CSR, _CSC = Format("ds"), Format("d1s0")
_COORDINATE_FORMATS = tuple(Format(spec, mode_order=modes) for spec in ("uq", "u~q") for modes in ((0, 1), (1, 0)))


def native_conversion(tensor: Tensor | None, fmt: Format) -> Tensor | None:
    """`tensor` in `fmt` (CSR or CSC) by a counting sort in C, from a matrix stored compressed in the
    other order or as coordinates; None for any other pair (or no tensor), or coordinates that repeat."""
    if tensor is None or fmt not in (_CSR, _CSC) or tensor.order != 2 or tensor.format == fmt or tensor.vals.dtype.itemsize not in _VALUE:
        return None
    if tensor.format in (_CSR, _CSC):
        return _transposed(tensor, fmt)
    if tensor.format in _COORDINATE_FORMATS:
        return _from_coordinates(tensor, fmt)
    return None


def _transposed(tensor: Tensor, fmt: Format) -> Tensor:
    outer, inner = (tensor.shape[m] for m in tensor.format.mode_order)
    pos, crd = tensor.levels[1]["pos"], tensor.levels[1]["crd"]
    pos_out, crd_out, vals_out = _outputs(inner, tensor.nnz, tensor.index_dtype, tensor.vals.dtype)
    function = _function("transpose", tensor.index_dtype, tensor.vals.dtype.itemsize)
    status = function(outer, inner, *(_address(a) for a in (pos, crd, tensor.vals, pos_out, crd_out, vals_out)))
    if status:
        raise MemoryError("out of memory converting a matrix between storage orders")
    return _tensor(tensor.shape, fmt, pos_out, crd_out, vals_out)


def _from_coordinates(tensor: Tensor, fmt: Format) -> Tensor | None:
    rows_first = fmt.mode_order[0] == tensor.format.mode_order[0]
    first, second = tensor.levels[0]["crd"], tensor.levels[1]["crd"]
    outer, inner = (first, second) if rows_first else (second, first)
    n_outer, n_inner = (tensor.shape[m] for m in fmt.mode_order)
    pos_out, crd_out, vals_out = _outputs(n_outer, tensor.nnz, tensor.index_dtype, tensor.vals.dtype)
    function = _function("coordinates", tensor.index_dtype, tensor.vals.dtype.itemsize)
    repeated = function(tensor.nnz, n_outer, n_inner,
                        *(_address(a) for a in (outer, inner, tensor.vals, pos_out, crd_out, vals_out)))
    if repeated < 0:
        raise MemoryError("out of memory converting coordinates to a compressed matrix")
    return None if repeated else _tensor(tensor.shape, fmt, pos_out, crd_out, vals_out)


def _outputs(n_outer: int, nnz: int, index_dtype: np.dtype, value_dtype: np.dtype):
    """The result's arrays, its positions (and the sort's own counts, as many) refused over the memory
    limit before anything is allocated: a hypersparse matrix's CSR has a position per row."""
    check_allocation(2 * (n_outer + 1) * index_dtype.itemsize, f"the positions of {n_outer:,} compressed rows")
    return (np.empty(n_outer + 1, dtype=index_dtype), np.empty(nnz, dtype=index_dtype),
            np.empty(nnz, dtype=value_dtype))


def _tensor(shape, fmt: Format, pos: np.ndarray, crd: np.ndarray, vals: np.ndarray) -> Tensor:
    return Tensor.from_read_only_storage(shape, fmt, st.Storage(({}, {"pos": st.read_only(pos),
                                                                      "crd": st.read_only(crd)}), st.read_only(vals)))


def _address(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


@functools.cache
def _function(kind: str, index: np.dtype, value_size: int):
    """One variant of the conversion `kind` for this index dtype and value size."""
    (i, _), (v, _) = _INDEX[index], _VALUE[value_size]
    function = getattr(_library(), f"{kind}_{i}_{v}")
    function.restype = ctypes.c_int if kind == "transpose" else ctypes.c_int64
    function.argtypes = [ctypes.c_int64] * (2 if kind == "transpose" else 3) + [ctypes.c_void_p] * 6
    return function


@functools.cache
def _library() -> ctypes.CDLL:
    variants = [template.format(i=i, I=I, v=v, V=V) for template in (_TRANSPOSE, _COORDINATES)
                for i, I in _INDEX.values() for v, V in _VALUE.values()]
    return load_library(_PRELUDE + "".join(variants))


native.install(native_conversion)  # Tensor.to_format converts through these sorts too
