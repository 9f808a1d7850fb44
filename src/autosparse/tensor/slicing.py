"""Cutting a tensor into runs of coordinates of one mode, and joining such runs back: the chunks of a
partitioned tensor (`autosparse.distributed`).

Along the outermost stored mode a run of coordinates owns one contiguous range of positions at every
level below it (a compressed level's `pos` maps a range to a range, a dense level multiplies it, a
singleton keeps it), so a cut is views of the level arrays re-based to zero and a join is concatenation
with offsets: linear, no sort. Layouts where that does not hold (a cut along an inner mode, an unordered
first level, hashed or triangular levels, blocks) go through coordinates instead.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ..errors import FormatError, ShapeError
from ..format import Format, Layout
from ..format.compressed import Compressed
from ..format.dense import Dense
from ..format.singleton import Singleton
from ..format.triangular import Triangular
from . import storage as st
from .dtypes import index_dtype_for
from .tensor import Tensor


def cut(tensor: Tensor, mode: int, begin: int, end: int) -> Tensor:
    """The entries whose `mode` coordinate is in [begin, end), that coordinate less `begin`: a tensor of
    extent end - begin in that mode."""
    if not 0 <= begin <= end <= tensor.shape[mode]:
        raise ShapeError(f"Expected 0 <= begin <= end <= {tensor.shape[mode]} to cut mode {mode}, "
                         f"but found [{begin}, {end})")
    shape = tuple(end - begin if m == mode else n for m, n in enumerate(tensor.shape))
    fmt = tensor.format
    if any(isinstance(level, Triangular) for level in fmt.levels):
        raise FormatError(f"Expected a format whose pieces are tensors of it, but {fmt} stores a square "
                          f"triangle and a run of its rows is not one: convert it (to csr) before cutting")
    if not _runs_are_ranges(fmt, mode):
        coords, values = tensor.to_coo()
        kept = (coords[mode] >= begin) & (coords[mode] < end)
        coords = coords[:, kept].astype(np.int64)
        coords[mode] -= begin
        return Tensor._from_entries(tuple(coords), values[kept], shape, fmt, tensor.index_dtype)
    levels = []
    first, arrays = fmt.levels[0], tensor.levels[0]
    if isinstance(first, Dense):
        a, b = begin, end
        levels.append({})
    else:
        crd = arrays["crd"]
        a, b = (int(x) for x in np.searchsorted(crd, [begin, end]))
        levels.append({"pos": np.array([0, b - a], dtype=crd.dtype), "crd": crd[a:b] - crd.dtype.type(begin)})
    for level, arrays, dim in zip(fmt.levels[1:], tensor.levels[1:], st.level_dims(fmt, tensor.shape)[1:]):
        if isinstance(level, Dense):
            a, b = a * dim, b * dim
            levels.append({})
        elif isinstance(level, Compressed):
            pos = arrays["pos"]
            s, e = int(pos[a]), int(pos[b])
            levels.append({"pos": pos[a:b + 1] - pos[a], "crd": arrays["crd"][s:e]})
            a, b = s, e
        else:
            levels.append({"crd": arrays["crd"][a:b]})
    return Tensor._trusted(shape, fmt, st.Storage(tuple(levels), tensor.vals[a:b]))


def join(tensors: Sequence[Tensor], mode: int) -> Tensor:
    """The tensors one after another along `mode` (the inverse of `cut`): equal formats, and equal
    extents in every other mode."""
    if not tensors:
        raise ShapeError("Expected at least one tensor to join")
    fmt, shape = tensors[0].format, list(tensors[0].shape)
    for t in tensors[1:]:
        if t.format != fmt or any(n != m for k, (n, m) in enumerate(zip(t.shape, shape)) if k != mode):
            raise ShapeError(f"Expected tensors of format {fmt} and shape {tuple(shape)} but for mode {mode} "
                             f"to join, but found {t.format} and {t.shape}")
    shape[mode] = sum(t.shape[mode] for t in tensors)
    starts = np.cumsum([0, *(t.shape[mode] for t in tensors)])
    if fmt.is_dense:
        dense = np.concatenate([t.to_numpy() for t in tensors], axis=mode)
        return Tensor.from_numpy(dense, fmt)
    if not _runs_are_ranges(fmt, mode):
        parts = [t.to_coo() for t in tensors]
        coords = np.concatenate([c.astype(np.int64) for c, _ in parts], axis=1)
        coords[mode] += np.repeat(starts[:-1], [len(v) for _, v in parts])
        values = np.concatenate([v for _, v in parts])
        return Tensor._from_entries(tuple(coords), values, shape, fmt)
    index_dtype = _joined_index_dtype(tensors, max(shape))
    levels = []
    for depth, level in enumerate(fmt.levels):
        pieces = [t.levels[depth] for t in tensors]
        if isinstance(level, Dense):
            levels.append({})
            continue
        crd = np.concatenate([p["crd"].astype(index_dtype) + index_dtype.type(starts[k] if depth == 0 else 0)
                              for k, p in enumerate(pieces)])
        if isinstance(level, Singleton):
            levels.append({"crd": crd})
            continue
        ends = np.cumsum([0, *(int(p["pos"][-1]) for p in pieces)])
        if depth == 0:  # one parent, the root
            pos = np.array([0, ends[-1]], dtype=index_dtype)
        else:
            pos = np.concatenate([np.zeros(1, index_dtype),
                                  *(p["pos"][1:].astype(index_dtype) + index_dtype.type(ends[k])
                                    for k, p in enumerate(pieces))])
        levels.append({"pos": pos, "crd": crd})
    vals = np.concatenate([t.vals for t in tensors])
    return Tensor._trusted(tuple(shape), fmt, st.Storage(tuple(levels), vals))


def _runs_are_ranges(fmt: Format | Layout, mode: int) -> bool:
    """Whether a run of `mode` coordinates is a range of positions at every level: `mode` is stored
    first, in increasing order, and every level is dense, compressed or singleton."""
    if isinstance(fmt, Layout) or not fmt.levels or fmt.mode_order[0] != mode:
        return False
    first = fmt.levels[0]
    if isinstance(first, Compressed) and first.order != "increasing":
        return False
    return all(type(level) in (Dense, Compressed, Singleton) for level in fmt.levels)


def _joined_index_dtype(tensors: Sequence[Tensor], largest_dim: int) -> np.dtype:
    """int32 while every coordinate and every position count of the joined tensor fits it."""
    if any(t.index_dtype == np.int64 for t in tensors):
        return np.dtype(np.int64)
    return index_dtype_for(max(largest_dim, sum(len(t.vals) for t in tensors)))
