"""Native conversions: a Tensor -> the same Tensor in another format, by counting sorts in C.

    CSR <-> CSC                  one counting sort by the inner coordinate (rows stay sorted: stable)
    sorted COO -> CSR/CSC        positions from the sorted outer coordinates; the rest shared (no copy)
    COO in any order -> CSR/CSC  a counting sort by the outer coordinate; segments not sorted by the inner
                                 one are sorted by a count by it first (a radix sort) or one by one
    CSR -> COO                   the row positions expanded into each entry's row, one pass; the columns
                                 and values are the CSR's own arrays (tensors never change them: no copy)
    CSC -> COO                   through CSR
    unsorted CSR/CSC -> sorted   each segment sorted with its values (a product's rows: `ds~` -> `ds`)
    COO of any order (or CSR) -> CSF, DCSR, DCSC, sorted COO
                                 a radix sort of the paths (one counting sort per level) unless they come
                                 sorted, then one pass compressing every level

Kernels convert operands given in another storage order on every call (`pipeline/conversions.py`), and
`Tensor.to_format` and `Tensor.from_coo` convert through them too (installed in `tensor.native` when this
module loads); numpy's generic path (canonical entries, a lexicographic sort) is several times slower
than scipy's tocsr. These are compiled once through the runtime's library loader and cached like
kernels. Values are moved as bytes of their size (4, 8 or 16), so no dtype needs code of its own. The
arrays produced are exactly those of the generic path, in the tensor's own index dtype (explicit zeros
kept); coordinates that repeat, which the generic path sums, and coordinates too many to count for
their entries (a hypersparse mode) are left to it (`native_conversion` returns None).
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from ..config import check_allocation
from ..format import Format, Layout
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
#define IN_ORDER (-2)
"""

# Compressed (outer, inner) -> compressed (inner, outer). Returns 0, or -1 when memory runs out.
_TRANSPOSE = r"""
int transpose_{i}_{v}(int64_t n_outer, int64_t n_inner, const {I} *restrict pos, const {I} *restrict crd,
                      const {V} *restrict vals, {I} *restrict pos_out, {I} *restrict crd_out,
                      {V} *restrict vals_out) {{
    memset(pos_out, 0, (size_t)(n_inner + 1) * sizeof({I}));
    int64_t nnz = (int64_t)pos[n_outer];
    for (int64_t p = 0; p < nnz; p++) pos_out[crd[p] + 1]++;
    for (int64_t j = 0; j < n_inner; j++) pos_out[j + 1] += pos_out[j];
    /* pos_out[j]: column j's next slot, from its start to its end (= column j + 1's start), then shifted */
    int64_t p = 0;
    for (int64_t i = 0; i < n_outer; i++) {{
        for (int64_t end = (int64_t)pos[i + 1]; p < end; p++) {{
            {I} q = pos_out[crd[p]]++;
            crd_out[q] = ({I})i;
            vals_out[q] = vals[p];
        }}
    }}
    memmove(pos_out + 1, pos_out, (size_t)n_inner * sizeof({I}));
    pos_out[0] = 0;
    return 0;
}}
"""

# Coordinates (outer[p], inner[p]) in any order -> compressed (outer, inner), each segment's inner
# coordinates increasing: shared when the entries come in that order (IN_ORDER: only the positions are
# written); else a stable counting sort by the
# outer coordinate. When the inner coordinates are not increasing and some segment is long (over 64
# entries: power-law rows, stiffness matrices), they are sorted by first counting by the inner coordinate
# too — the two passes of a least-significant-digit radix sort, the second of which is the transpose
# above: no comparisons, 1.5-4.7x scipy's tocsr, which sorts each row; when every segment is short, or
# inner coordinates are too many to count (`count_inner` 0), by sorting each segment (a uniform random
# matrix's ten entries a row sort faster than a second scatter moves them). Returns
# how many entries repeat the coordinates of the one before them (0 for a valid result), IN_ORDER, or
# -1 when memory runs out.
_COORDINATES = r"""
static void count_{i}_{v}(int64_t nnz, int64_t n, const {I} *restrict key, {I} *restrict pos) {{
    memset(pos, 0, (size_t)(n + 1) * sizeof({I}));
    for (int64_t p = 0; p < nnz; p++) pos[key[p] + 1]++;
    for (int64_t j = 0; j < n; j++) pos[j + 1] += pos[j];
}}

/* The entries moved into the buckets of `key` (< n) whose bounds pos holds, in their order (stable). */
static int move_{i}_{v}(int64_t nnz, int64_t n, const {I} *restrict key, const {I} *restrict other,
                        const {V} *restrict vals, const {I} *restrict pos, {I} *restrict other_out,
                        {V} *restrict vals_out) {{
    {I} *restrict next = malloc((size_t)(n + 1) * sizeof({I}));
    if (!next) return -1;
    memcpy(next, pos, (size_t)(n + 1) * sizeof({I}));
    for (int64_t p = 0; p < nnz; p++) {{
        {I} q = next[key[p]]++;
        other_out[q] = other[p];
        vals_out[q] = vals[p];
    }}
    free(next);
    return 0;
}}

/* A stable counting sort of the entries by `key` (< n): the bucket bounds in pos, the other coordinate
   and the values moved into their buckets. */
static int scatter_{i}_{v}(int64_t nnz, int64_t n, const {I} *restrict key, const {I} *restrict other,
                           const {V} *restrict vals, {I} *restrict pos, {I} *restrict other_out,
                           {V} *restrict vals_out) {{
    count_{i}_{v}(nnz, n, key, pos);
    return move_{i}_{v}(nnz, n, key, other, vals, pos, other_out, vals_out);
}}

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

/* Insertion sort for short segments, a merge sort through a scratch buffer for long ones. */
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

/* The most entries any segment has, from its bounds. */
static int64_t longest_segment_{i}_{v}(int64_t n_outer, const {I} *restrict pos) {{
    int64_t longest = 0;
    for (int64_t i = 0; i < n_outer; i++) if (pos[i + 1] - pos[i] > longest) longest = pos[i + 1] - pos[i];
    return longest;
}}

static int sort_segments_{i}_{v}(int64_t n_outer, const {I} *restrict pos, {I} *restrict crd, {V} *restrict vals) {{
    int64_t longest = longest_segment_{i}_{v}(n_outer, pos);
    {I} *crd_tmp = malloc((size_t)(longest > 0 ? longest : 1) * sizeof({I}));
    {V} *vals_tmp = malloc((size_t)(longest > 0 ? longest : 1) * sizeof({V}));
    if (crd_tmp && vals_tmp)
        for (int64_t i = 0; i < n_outer; i++)
            sort_segment_{i}_{v}(crd + pos[i], vals + pos[i], crd_tmp, vals_tmp, (int64_t)(pos[i + 1] - pos[i]));
    int failed = !crd_tmp || !vals_tmp;
    free(crd_tmp);
    free(vals_tmp);
    return failed ? -1 : 0;
}}

int64_t coordinates_{i}_{v}(int64_t nnz, int64_t n_outer, int64_t n_inner, int64_t count_inner,
                            const {I} *restrict outer,
                            const {I} *restrict inner, const {V} *restrict vals, {I} *restrict pos_out,
                            {I} *restrict crd_out, {V} *restrict vals_out) {{
    int by_inner = 1, by_both = 1;
    int64_t repeated = 0;  /* of the entry before: the answer when the entries come in the output's order */
    for (int64_t p = 1; p < nnz; p++) {{
        by_inner &= inner[p - 1] <= inner[p];
        by_both &= (outer[p - 1] < outer[p]) | (outer[p - 1] == outer[p] & inner[p - 1] <= inner[p]);
        repeated += (outer[p - 1] == outer[p]) & (inner[p - 1] == inner[p]);
    }}
    if (by_both) {{
        if (repeated) return repeated;
        bounds_{i}(nnz, n_outer, outer, pos_out);
        return IN_ORDER;  /* the caller shares inner and vals: crd_out and vals_out are left untouched */
    }} else if (by_inner) {{
        if (scatter_{i}_{v}(nnz, n_outer, outer, inner, vals, pos_out, crd_out, vals_out)) return -1;
    }} else if (count_{i}_{v}(nnz, n_outer, outer, pos_out), !count_inner || longest_segment_{i}_{v}(n_outer, pos_out) <= 64) {{
        if (move_{i}_{v}(nnz, n_outer, outer, inner, vals, pos_out, crd_out, vals_out)) return -1;
        if (sort_segments_{i}_{v}(n_outer, pos_out, crd_out, vals_out)) return -1;
    }} else {{
        {I} *inner_pos = malloc((size_t)(n_inner + 1) * sizeof({I}));
        {I} *outer_tmp = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof({I}));
        {V} *vals_tmp = malloc((size_t)(nnz > 0 ? nnz : 1) * sizeof({V}));
        int failed = !inner_pos || !outer_tmp || !vals_tmp
            || scatter_{i}_{v}(nnz, n_inner, inner, outer, vals, inner_pos, outer_tmp, vals_tmp)
            || transpose_{i}_{v}(n_inner, n_outer, inner_pos, outer_tmp, vals_tmp, pos_out, crd_out, vals_out);
        free(inner_pos);
        free(outer_tmp);
        free(vals_tmp);
        if (failed) return -1;
    }}
    repeated = 0;
    for (int64_t i = 0; i < n_outer; i++)
        for (int64_t q = (int64_t)pos_out[i] + 1; q < (int64_t)pos_out[i + 1]; q++)
            repeated += crd_out[q] == crd_out[q - 1];
    return repeated;
}}
"""

# Between positions and coordinates, one pass each way: compressed positions -> each entry's outer
# coordinate (CSR's row of every entry); sorted outer coordinates -> the positions where each value's run
# starts (walked, not counted: counting increments one counter per entry, a chain through memory).
_INDICES = r"""
void expand_{i}(int64_t n_outer, const {I} *restrict pos, {I} *restrict outer_out) {{
    for (int64_t i = 0; i < n_outer; i++)
        for (int64_t p = (int64_t)pos[i]; p < (int64_t)pos[i + 1]; p++) outer_out[p] = ({I})i;
}}

void bounds_{i}(int64_t nnz, int64_t n_outer, const {I} *restrict outer, {I} *restrict pos_out) {{
    int64_t p = 0;
    for (int64_t i = 0; i < n_outer; i++) {{
        pos_out[i] = ({I})p;
        while (p < nnz && outer[p] == i) p++;
    }}
    pos_out[n_outer] = ({I})nnz;
}}
"""

# A caller's coordinates (a scipy coo_matrix's row and col, which its owner may change between calls)
# checked in one read of each array, without branches so that it runs at memory speed: every coordinate
# below its extent, compared as unsigned so that a negative one counts as too large (an extent past the
# index type's range is clamped to it), and whether the rows never decrease. Returns COORDINATES_OUT
# (-1) where some coordinate is out of range, else 1 where the rows are in order, 0 where they are not.
_CHECKED = r"""
int checked_coordinates_{i}(int64_t nnz, int64_t n_rows, int64_t n_cols, const {I} *restrict row,
                            const {I} *restrict col) {{
    const {U} most = ({U})-1 >> 1;  /* the largest coordinate the index type holds */
    const {U} rows = (uint64_t)n_rows > most ? most + 1 : ({U})n_rows;
    const {U} cols = (uint64_t)n_cols > most ? most + 1 : ({U})n_cols;
    if (nnz == 0) return 1;
    int out = (({U})row[0] >= rows) | (({U})col[0] >= cols), descending = 0;
    for (int64_t p = 1; p < nnz; p++) {{
        out |= (({U})row[p] >= rows) | (({U})col[p] >= cols);
        descending |= row[p] < row[p - 1];
    }}
    return out ? -1 : !descending;
}}
"""

# Coordinate paths of any order (one array per level) in any order -> sorted lexicographically by a
# least-significant-digit radix sort: one stable counting sort per level, the last level first, each
# moving every level's coordinate and the value, between the output and a scratch copy so that the
# first level's pass writes the output. Returns 0, -1 when memory runs out, or -2 when the coordinates
# may not be counted (`may_count` 0: too many for their entries).
_SORT_PATHS = r"""
/* order <= 64: a Tensor's MAX_ORDER */
int sort_paths_{i}_{v}(int64_t nnz, int64_t order, int64_t may_count, const int64_t *dims, const {I} *const *paths,
                       const {V} *vals, {I} *const *paths_out, {V} *vals_out) {{
    if (!may_count) return -2;
    int64_t largest = 0;
    for (int64_t k = 0; k < order; k++) if (dims[k] > largest) largest = dims[k];
    size_t size = (size_t)(nnz > 0 ? nnz : 1);
    int64_t *next = malloc((size_t)(largest + 1) * sizeof(int64_t));
    {V} *vals_tmp = malloc(size * sizeof({V}));
    {I} *tmp[64] = {{0}};
    int failed = !next || !vals_tmp;
    for (int64_t k = 0; k < order; k++) failed |= !(tmp[k] = malloc(size * sizeof({I})));
    const {I} *const *src = paths;
    const {V} *src_vals = vals;
    for (int64_t k = order - 1; k >= 0 && !failed; k--) {{
        {I} *const *dst = k % 2 == 0 ? paths_out : tmp;
        {V} *dst_vals = k % 2 == 0 ? vals_out : vals_tmp;
        memset(next, 0, (size_t)(dims[k] + 1) * sizeof(int64_t));
        for (int64_t p = 0; p < nnz; p++) next[src[k][p] + 1]++;
        for (int64_t j = 0; j < dims[k]; j++) next[j + 1] += next[j];
        for (int64_t p = 0; p < nnz; p++) {{
            int64_t q = next[src[k][p]]++;
            for (int64_t l = 0; l < order; l++) dst[l][q] = src[l][p];
            dst_vals[q] = src_vals[p];
        }}
        src = (const {I} *const *)dst;
        src_vals = dst_vals;
    }}
    for (int64_t k = 0; k < order; k++) free(tmp[k]);
    free(vals_tmp);
    free(next);
    return failed ? -1 : 0;
}}
"""

# Paths -> a tensor compressed at every level, a streaming pass per level. path_depths: each path's
# depth, the first level where it differs from the one before (the first path's 0; `order` for a
# repeated one), how many distinct prefixes of length k + 1 there are (sizes[k], level k's nodes), and in
# sizes[order] how many paths repeat the one before them; returns whether the paths are sorted (each
# larger than the one before at its depth), the rest meaning nothing where they are not.
# compress_paths: level k's coordinates (one per path of depth <= k) and, below the first level, its
# positions (a parent starts at each depth < k); each level's crd has one slot more than its nodes.
_COMPRESS_PATHS = r"""
int path_depths_{i}(int64_t nnz, int64_t order, const {I} *const *paths, uint8_t *restrict depth,
                    int64_t *restrict sizes) {{
    memset(depth, (int)order, (size_t)nnz);
    for (int64_t k = order - 1; k >= 0; k--) {{
        const {I} *restrict path = paths[k];
        for (int64_t p = 1; p < nnz; p++) depth[p] = path[p] != path[p - 1] ? (uint8_t)k : depth[p];
    }}
    if (nnz) depth[0] = 0;
    int descending = 0;
    for (int64_t k = 0; k < order; k++) {{
        const {I} *restrict path = paths[k];
        for (int64_t p = 1; p < nnz; p++) descending |= (depth[p] == k) & (path[p] < path[p - 1]);
    }}
    if (descending) return 0;
    memset(sizes, 0, (size_t)(order + 1) * sizeof(int64_t));
    for (int64_t p = 0; p < nnz; p++) sizes[depth[p]]++;
    for (int64_t k = 1; k < order; k++) sizes[k] += sizes[k - 1];
    return 1;
}}

void compress_paths_{i}(int64_t nnz, int64_t order, const {I} *const *paths, const uint8_t *restrict depth,
                        {I} *const *pos, {I} *const *crd) {{
    {I} unused;
    for (int64_t k = 0; k < order; k++) {{
        const {I} *restrict path = paths[k];
        {I} *restrict level_pos = k ? pos[k] : &unused, *restrict level_crd = crd[k];
        int64_t n = 0, parents = 0;
        for (int64_t p = 0; p < nnz; p++) {{  /* without branches: each slot written until it is taken */
            level_crd[n] = path[p];
            level_pos[parents] = ({I})n;
            n += depth[p] <= k;
            parents += depth[p] < k;
        }}
        level_pos[parents] = ({I})n;
    }}
}}
"""

# Compressed (outer, inner) with each segment's inner coordinates in any order (`ds~`, a product's rows) ->
# the same, each segment sorted with its values, the positions shared. As a product's kernel orders a row:
# a segment over 32 entries, where the inner coordinates can be counted (`count_inner`), has its values
# scattered into a dense row, its coordinates alone sorted (an LSD radix sort of 8-bit digits of their
# offsets from the smallest), and its values gathered back in that order: 4-byte keys moved, not pairs
# (a uniform product's 2 M entries in rows of 100: 45 ms sorting pairs, by merges or two counting sorts
# over the whole matrix). Shorter segments, or coordinates too many to count, are sorted as pairs
# (sort_segment above). Returns 0, or -1 when memory runs out.
_SORTED_SEGMENTS = r"""
static void sort_keys_{i}_{v}({I} *restrict list, int64_t n, {I} *restrict spare) {{
    {I} lo = list[0], hi = list[0];
    for (int64_t k = 1; k < n; k++) {{
        lo = list[k] < lo ? list[k] : lo;
        hi = list[k] > hi ? list[k] : hi;
    }}
    int64_t counts[257];
    {I} *from = list, *to = spare;
    for (int shift = 0; shift < 64 && (((int64_t)hi - (int64_t)lo) >> shift) > 0; shift += 8) {{
        memset(counts, 0, sizeof counts);
        for (int64_t k = 0; k < n; k++) counts[((((int64_t)from[k] - lo) >> shift) & 255) + 1]++;
        for (int d = 0; d < 256; d++) counts[d + 1] += counts[d];
        for (int64_t k = 0; k < n; k++) to[counts[(((int64_t)from[k] - lo) >> shift) & 255]++] = from[k];
        {I} *t = from; from = to; to = t;
    }}
    if (from != list) memcpy(list, from, (size_t)n * sizeof({I}));
}}

int sorted_segments_{i}_{v}(int64_t n_outer, int64_t n_inner, int64_t count_inner, const {I} *restrict pos,
                            const {I} *restrict crd, const {V} *restrict vals, {I} *restrict crd_out,
                            {V} *restrict vals_out) {{
    int64_t nnz = (int64_t)pos[n_outer], longest = longest_segment_{i}_{v}(n_outer, pos);
    memcpy(crd_out, crd, (size_t)nnz * sizeof({I}));
    memcpy(vals_out, vals, (size_t)nnz * sizeof({V}));
    if (!count_inner || longest <= 32) return sort_segments_{i}_{v}(n_outer, pos, crd_out, vals_out);
    {V} *dense = malloc((size_t)(n_inner > 0 ? n_inner : 1) * sizeof({V}));
    {I} *spare = malloc((size_t)longest * sizeof({I}));
    if (dense && spare) {{
        for (int64_t i = 0; i < n_outer; i++) {{
            int64_t start = (int64_t)pos[i], n = (int64_t)pos[i + 1] - start;
            if (n <= 32) {{
                sort_segment_{i}_{v}(crd_out + start, vals_out + start, NULL, NULL, n);
                continue;
            }}
            for (int64_t p = start; p < start + n; p++) dense[crd[p]] = vals[p];
            sort_keys_{i}_{v}(crd_out + start, n, spare);
            for (int64_t p = start; p < start + n; p++) vals_out[p] = dense[crd_out[p]];
        }}
    }}
    int failed = !dense || !spare;
    free(dense);
    free(spare);
    return failed ? -1 : 0;
}}
"""

_CSR, _CSC, _COO = Format("ds"), Format("d1s0"), Format("uq")
_UNSORTED = {Format("ds~"): _CSR, Format("d1s0~"): _CSC}  # the compressed matrices whose segments a sort orders
_SORTED_COORDINATES = {_CSR: _COO, _CSC: Format("uq", mode_order=(1, 0))}
_COORDINATE_FORMATS = tuple(Format(spec, mode_order=modes) for spec in ("uq", "u~q") for modes in ((0, 1), (1, 0)))


def native_conversion(tensor: Tensor | None, fmt: Format | Layout) -> Tensor | None:
    """`tensor` in `fmt` by counting sorts in C: a matrix stored compressed or as coordinates in CSR, CSC
    or row-major COO; coordinates of any order (or a CSR matrix) compressed at every level (CSF, DCSR) or
    as sorted coordinates. None for any other pair (or no tensor), or coordinates that repeat."""
    if tensor is None or not isinstance(fmt, Format) or not isinstance(tensor.format, Format) \
            or tensor.format == fmt or tensor.vals.dtype.itemsize not in _VALUE or tensor.order < 2:
        return None
    if _UNSORTED.get(tensor.format) == fmt:
        return _sorted_segments(tensor, fmt)
    if tensor.order == 2 and fmt in (_CSR, _CSC, _COO):
        return _matrix_conversion(tensor, fmt)
    if Format(fmt.levels) in (_compressed_levels(fmt.order), _coordinate_levels(fmt.order, ordered=True)):
        return _from_paths(tensor, fmt)
    return None


def _matrix_conversion(tensor: Tensor, fmt: Format) -> Tensor | None:
    if fmt == _COO:
        return _row_major_coordinates(tensor)
    if tensor.format in (_CSR, _CSC):
        return _transposed(tensor, fmt)
    if tensor.format == _SORTED_COORDINATES.get(fmt):
        return _compressed(tensor, fmt)
    if tensor.format in _COORDINATE_FORMATS:
        return _from_coordinates(tensor, fmt)
    return None


def _row_major_coordinates(tensor: Tensor) -> Tensor | None:
    """A CSR matrix's positions expanded; a CSC matrix's through CSR where its rows can be counted (not a
    hypersparse matrix's); any other coordinates' paths sorted."""
    if tensor.format == _CSR:
        return _expanded(tensor)
    if tensor.format == _CSC:
        return _expanded(_transposed(tensor, _CSR)) if _countable(tensor.shape[0], tensor.nnz) else None
    return _from_paths(tensor, _COO)


@functools.cache
def _compressed_levels(order: int) -> Format:
    return Format("s" * order)


@functools.cache
def _coordinate_levels(order: int, ordered: bool) -> Format:
    """COO's levels, their entries sorted or in any order (`u~`)."""
    return Format(("u" if ordered else "u~") + "c" * (order - 2) + "q")


def _from_paths(tensor: Tensor, fmt: Format) -> Tensor | None:
    """Coordinates (or a CSR matrix's, expanded) sorted in `fmt`'s mode order where they are not already
    (a radix sort), then stored as `fmt`'s sorted coordinates or compressed at every level."""
    coords = _mode_coordinates(tensor)
    if coords is None:
        return None
    paths, vals = [coords[m] for m in fmt.mode_order], tensor.vals
    depths, sizes = np.empty(len(vals), dtype=np.uint8), np.empty(len(paths) + 1, dtype=np.int64)
    if not _depths(paths, depths, sizes):
        ordered = _sorted_paths(paths, vals, [tensor.shape[m] for m in fmt.mode_order])
        if ordered is None:
            return None
        paths, vals = ordered
        _depths(paths, depths, sizes)
    if sizes[-1]:  # repeated paths: to_format sums them
        return None
    if Format(fmt.levels) == _compressed_levels(fmt.order):
        levels = _compressed_paths(paths, depths, sizes)
    else:
        levels = ({"pos": np.array([0, len(vals)], dtype=paths[0].dtype), "crd": paths[0]},
                  *({"crd": path} for path in paths[1:]))
    levels = tuple({name: st.read_only(array) for name, array in level.items()} for level in levels)
    return Tensor.from_read_only_storage(tensor.shape, fmt, st.Storage(levels, st.read_only(vals)))


def _mode_coordinates(tensor: Tensor) -> list[np.ndarray] | None:
    """Each mode's coordinate of every entry, from coordinates or a CSR matrix (None from anything else)."""
    if tensor.format == _CSR:
        tensor = _expanded(tensor)
    if Format(tensor.format.levels) not in (_coordinate_levels(tensor.order, True), _coordinate_levels(tensor.order, False)):
        return None
    coords: list = [None] * tensor.order
    for level, mode in zip(tensor.levels, tensor.format.mode_order):
        coords[mode] = level["crd"]
    return coords


def _depths(paths: list[np.ndarray], depths: np.ndarray, sizes: np.ndarray) -> bool:
    """Whether the paths are sorted; if so, each one's depth and each level's size (see path_depths)."""
    table = _table(paths)
    return bool(_function("path_depths", paths[0].dtype)(len(depths), len(paths), _address(table), _address(depths),
                                                          _address(sizes)))


def _sorted_paths(paths: list[np.ndarray], vals: np.ndarray, dims: list[int]):
    """(paths, values) sorted lexicographically; None when a level's extent is too large to count."""
    index, nnz = paths[0].dtype, len(vals)
    paths_out, vals_out = [np.empty(nnz, dtype=index) for _ in paths], np.empty(nnz, dtype=vals.dtype)
    extents, tables = np.array(dims, dtype=np.int64), (_table(paths), _table(paths_out))
    status = _function("sort_paths", index, vals.dtype.itemsize)(
        nnz, len(paths), all(_countable(dim, nnz) for dim in dims), _address(extents),
        _address(tables[0]), _address(vals), _address(tables[1]), _address(vals_out))
    if status == -1:
        raise MemoryError("out of memory sorting coordinates")
    return None if status == -2 else (paths_out, vals_out)


def _compressed_paths(paths: list[np.ndarray], depths: np.ndarray, sizes: np.ndarray) -> tuple[dict, ...]:
    """The levels of sorted, unique paths compressed at every level, each array exactly sized."""
    index = paths[0].dtype
    crd = [np.empty(size + 1, dtype=index)[:size] for size in sizes[:-1]]  # + 1: a slot written, never taken
    pos = [np.array([0, sizes[0]], dtype=index)] + [np.empty(parents + 1, dtype=index) for parents in sizes[:-2]]
    paths_table, pos_table, crd_table = (_table(arrays) for arrays in (paths, pos, crd))
    _function("compress_paths", index)(len(depths), len(paths), _address(paths_table), _address(depths),
                                       _address(pos_table), _address(crd_table))
    return tuple({"pos": p, "crd": c} for p, c in zip(pos, crd))


def _table(arrays: list[np.ndarray]) -> np.ndarray:
    """The arrays' addresses, for C's array of pointers (one per level); the caller holds it while C reads it."""
    return np.array([a.ctypes.data for a in arrays], dtype=np.uintp)


def _expanded(csr: Tensor) -> Tensor:
    """A CSR matrix as coordinates sharing its columns and values: only the rows are new."""
    pos, crd = csr.levels[1]["pos"], csr.levels[1]["crd"]
    rows = np.empty(len(crd), dtype=crd.dtype)
    _function("expand", crd.dtype)(csr.shape[0], _address(pos), _address(rows))
    levels = ({"pos": st.read_only(np.array([0, len(crd)], dtype=crd.dtype)), "crd": st.read_only(rows)}, {"crd": crd})
    return Tensor.from_read_only_storage(csr.shape, _COO, st.Storage(levels, csr.vals))


def _compressed(coordinates: Tensor, fmt: Format) -> Tensor:
    """Coordinates sorted in `fmt`'s order and unique (their format promises it) compressed: only the
    positions are new; the inner coordinates and values are shared."""
    outer, inner = coordinates.levels[0]["crd"], coordinates.levels[1]["crd"]
    n_outer = coordinates.shape[fmt.mode_order[0]]
    pos = _positions(n_outer, outer.dtype)
    _function("bounds", outer.dtype)(len(outer), n_outer, _address(outer), _address(pos))
    levels = ({}, {"pos": st.read_only(pos), "crd": inner})
    return Tensor.from_read_only_storage(coordinates.shape, fmt, st.Storage(levels, coordinates.vals))


def _transposed(tensor: Tensor, fmt: Format) -> Tensor:
    outer, inner = (tensor.shape[m] for m in tensor.format.mode_order)
    pos, crd = tensor.levels[1]["pos"], tensor.levels[1]["crd"]
    pos_out, crd_out, vals_out = _outputs(inner, tensor.nnz, tensor.index_dtype, tensor.vals.dtype)
    function = _function("transpose", tensor.index_dtype, tensor.vals.dtype.itemsize)
    status = function(outer, inner, *(_address(a) for a in (pos, crd, tensor.vals, pos_out, crd_out, vals_out)))
    if status:
        raise MemoryError("out of memory converting a matrix between storage orders")
    return _tensor(tensor.shape, fmt, pos_out, crd_out, vals_out)


def _sorted_segments(tensor: Tensor, fmt: Format) -> Tensor:
    """A compressed matrix with unsorted segments (`ds~`) as `fmt`, the same with each segment sorted: the
    positions shared, the coordinates and values sorted in new arrays."""
    pos, crd = tensor.levels[1]["pos"], tensor.levels[1]["crd"]
    crd_out, vals_out = np.empty_like(crd), np.empty_like(tensor.vals)
    function = _function("sorted_segments", tensor.index_dtype, tensor.vals.dtype.itemsize)
    n_outer, n_inner = (tensor.shape[m] for m in fmt.mode_order)
    if function(n_outer, n_inner, _countable(n_inner, tensor.nnz),
                *(_address(a) for a in (pos, crd, tensor.vals, crd_out, vals_out))):
        raise MemoryError("out of memory sorting a compressed matrix's segments")
    levels = ({}, {"pos": pos, "crd": st.read_only(crd_out)})
    return Tensor.from_read_only_storage(tensor.shape, fmt, st.Storage(levels, st.read_only(vals_out)))


def _from_coordinates(tensor: Tensor, fmt: Format) -> Tensor | None:
    rows_first = fmt.mode_order[0] == tensor.format.mode_order[0]
    first, second = tensor.levels[0]["crd"], tensor.levels[1]["crd"]
    outer, inner = (first, second) if rows_first else (second, first)
    n_outer, n_inner = (tensor.shape[m] for m in fmt.mode_order)
    pos_out, crd_out, vals_out = _outputs(n_outer, tensor.nnz, tensor.index_dtype, tensor.vals.dtype)
    function = _function("coordinates", tensor.index_dtype, tensor.vals.dtype.itemsize)
    repeated = function(tensor.nnz, n_outer, n_inner, _countable(n_inner, tensor.nnz),
                        *(_address(a) for a in (outer, inner, tensor.vals, pos_out, crd_out, vals_out)))
    if repeated == _IN_ORDER:  # as `_compressed`: only the positions are new (crd_out, vals_out never touched)
        return _tensor(tensor.shape, fmt, pos_out, inner, tensor.vals)
    if repeated < 0:
        raise MemoryError("out of memory converting coordinates to a compressed matrix")
    return None if repeated else _tensor(tensor.shape, fmt, pos_out, crd_out, vals_out)


#: What `coordinates_*` returns for unique coordinates already in the output's order: it wrote the
#: positions alone, and the result shares the coordinates and values (scipy's `tocoo` gives such; copying
#: them into fresh pages cost more than scipy's whole `tocsr`).
_IN_ORDER = -2


def checked_coordinates(shape: tuple[int, int], row: np.ndarray, col: np.ndarray) -> bool | None:
    """Whether a matrix's coordinates (one index dtype, contiguous) come with their rows in order; None
    where one is out of its extent or negative. One read of each array in C: numpy's maximum over both
    cost as much again, and it could not see the order, which scipy does not promise (`coo_matrix(csr)`
    says `has_canonical_format` False) though most coordinates a caller holds come so."""
    status = _function("checked_coordinates", row.dtype)(len(row), *shape, _address(row), _address(col))
    return None if status == _COORDINATES_OUT else bool(status)


#: What `checked_coordinates_*` returns where a coordinate is out of its extent.
_COORDINATES_OUT = -1


def _countable(extent: int, nnz: int) -> bool:
    """Whether sorting `nnz` entries by counting a coordinate of `extent` values costs about what moving
    them does (a hypersparse matrix's columns are sorted row by row instead)."""
    return extent <= 2 * nnz + 4096


def _outputs(n_outer: int, nnz: int, index_dtype: np.dtype, value_dtype: np.dtype):
    """The result's arrays: its positions, coordinates and values."""
    return _positions(n_outer, index_dtype), np.empty(nnz, dtype=index_dtype), np.empty(nnz, dtype=value_dtype)


def _positions(n_outer: int, index_dtype: np.dtype) -> np.ndarray:
    """The positions of `n_outer` compressed rows, refused (with the sort's own counts, as many) over the
    memory limit before anything is allocated: a hypersparse matrix's CSR has a position per row."""
    check_allocation(2 * (n_outer + 1) * index_dtype.itemsize, f"the positions of {n_outer:,} compressed rows")
    return np.empty(n_outer + 1, dtype=index_dtype)


def _tensor(shape, fmt: Format, pos: np.ndarray, crd: np.ndarray, vals: np.ndarray) -> Tensor:
    return Tensor.from_read_only_storage(shape, fmt, st.Storage(({}, {"pos": st.read_only(pos),
                                                                      "crd": st.read_only(crd)}), st.read_only(vals)))


def _address(array: np.ndarray) -> ctypes.c_void_p:
    return ctypes.c_void_p(array.ctypes.data)


# kind -> (return type, leading int64 arguments, pointer arguments); those without a value size move no values.
_SIGNATURES = {"transpose": (ctypes.c_int, 2, 6), "coordinates": (ctypes.c_int64, 4, 6), "expand": (None, 1, 2),
               "bounds": (None, 2, 2), "sort_paths": (ctypes.c_int, 3, 5), "path_depths": (ctypes.c_int, 2, 3),
               "compress_paths": (None, 2, 4), "sorted_segments": (ctypes.c_int, 3, 5),
               "checked_coordinates": (ctypes.c_int, 3, 2)}


@functools.cache
def _function(kind: str, index: np.dtype, value_size: int | None = None):
    """One variant of the conversion `kind` for this index dtype (and value size, where it moves values)."""
    name = f"{kind}_{_INDEX[index][0]}" + ("" if value_size is None else f"_{_VALUE[value_size][0]}")
    function = getattr(_library(), name)
    function.restype, integers, pointers = _SIGNATURES[kind]
    function.argtypes = [ctypes.c_int64] * integers + [ctypes.c_void_p] * pointers
    return function


@functools.cache
def _library() -> ctypes.CDLL:
    variants = [template.format(i=i, I=I, U=f"u{I}") for template in (_INDICES, _CHECKED, _COMPRESS_PATHS)
                for i, I in _INDEX.values()]
    variants += [template.format(i=i, I=I, v=v, V=V) for template in (_TRANSPOSE, _COORDINATES, _SORT_PATHS, _SORTED_SEGMENTS)
                 for i, I in _INDEX.values() for v, V in _VALUE.values()]
    return load_library(_PRELUDE + "".join(variants))


native.install(native_conversion)  # Tensor.to_format converts through these sorts too
