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
    if not all(level.cut_keeps_format for level in fmt.levels):
        raise FormatError(f"Expected a format whose pieces are tensors of it, but {fmt} stores a square "
                          f"triangle and a run of its rows is not one: convert it (to csr) before cutting")
    if not _runs_are_ranges(fmt, mode):
        coords, values = tensor.to_coo()
        kept = (coords[mode] >= begin) & (coords[mode] < end)
        coords = coords[:, kept].astype(np.int64)
        coords[mode] -= begin
        return Tensor._from_entries(tuple(coords), values[kept], shape, fmt, tensor.index_dtype, tensor.fill)
    levels, a, b = [], begin, end
    for depth, (level, arrays, dim) in enumerate(zip(fmt.levels, tensor.levels, st.level_dims(fmt, tensor.shape))):
        piece, a, b = level.cut(arrays, a, b, dim, root=depth == 0)
        levels.append(piece)
    return Tensor._trusted(shape, fmt, st.Storage(tuple(levels), tensor.vals[a:b]), tensor.fill)


def join(tensors: Sequence[Tensor], mode: int) -> Tensor:
    """The tensors one after another along `mode` (the inverse of `cut`): equal formats and fills, and equal
    extents in every other mode."""
    if not tensors:
        raise ShapeError("Expected at least one tensor to join")
    fmt, shape, fill = tensors[0].format, list(tensors[0].shape), tensors[0].fill
    for t in tensors[1:]:
        if t.fill != fill:
            raise ShapeError(f"Expected tensors of one fill to join, but found fills {fill} and {t.fill}")
        if t.format != fmt or any(n != m for k, (n, m) in enumerate(zip(t.shape, shape)) if k != mode):
            raise ShapeError(f"Expected tensors of format {fmt} and shape {tuple(shape)} but for mode {mode} "
                             f"to join, but found {t.format} and {t.shape}")
    shape[mode] = sum(t.shape[mode] for t in tensors)
    starts = np.cumsum([0, *(t.shape[mode] for t in tensors)])
    if fmt.is_dense:
        dense = np.concatenate([t.to_numpy() for t in tensors], axis=mode)
        return Tensor.from_numpy(dense, fmt, fill=fill)
    if not _runs_are_ranges(fmt, mode):
        parts = [t.to_coo() for t in tensors]
        coords = np.concatenate([c.astype(np.int64) for c, _ in parts], axis=1)
        coords[mode] += np.repeat(starts[:-1], [len(v) for _, v in parts])
        values = np.concatenate([v for _, v in parts])
        return Tensor._from_entries(tuple(coords), values, shape, fmt, fill=fill)
    index_dtype = _joined_index_dtype(tensors, max(shape))
    levels = []
    for depth, level in enumerate(fmt.levels):
        shifts = starts[:-1] if depth == 0 else [0] * len(tensors)
        levels.append(level.join([t.levels[depth] for t in tensors], shifts, index_dtype, root=depth == 0))
    vals = np.concatenate([t.vals for t in tensors])
    return Tensor._trusted(tuple(shape), fmt, st.Storage(tuple(levels), vals), fill)


def _runs_are_ranges(fmt: Format | Layout, mode: int) -> bool:
    """Whether a run of `mode` coordinates is a range of positions at every level: `mode` is stored
    first, in increasing order, and every level cuts as ranges."""
    if isinstance(fmt, Layout) or not fmt.levels or fmt.mode_order[0] != mode:
        return False
    return fmt.levels[0].properties.ordered and all(level.cuts_as_ranges for level in fmt.levels)


def _joined_index_dtype(tensors: Sequence[Tensor], largest_dim: int) -> np.dtype:
    """int32 while every coordinate and every position count of the joined tensor fits it."""
    if any(t.index_dtype == np.int64 for t in tensors):
        return np.dtype(np.int64)
    return index_dtype_for(max(largest_dim, sum(len(t.vals) for t in tensors)))
