"""Format-generic drivers over the level plug-ins: entries -> level arrays, level arrays -> entries, and
the validation of level arrays from outside. They walk the levels top-down, one numpy pass per level,
and never look at a level's kind.
"""

from __future__ import annotations

import mmap
import sys
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..config import check_allocation
from ..errors import FormatError
from ..format import Format, Layout
from .dtypes import INDEX_DTYPES, INT32_MAX, check_value_dtype, index_dtype_for
from .entries import Entries

LevelArrays = Mapping[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class Storage:
    """A tensor's level arrays (one mapping per level, top-down) and its values."""

    levels: tuple[LevelArrays, ...]
    vals: np.ndarray


def level_dims(fmt: Format | Layout, shape: Sequence[int]) -> tuple[int, ...]:
    """The extent of each storage level (of a layout: of its view's)."""
    shape = fmt.view_shape(shape) if isinstance(fmt, Layout) else shape
    return tuple(shape[m] for m in fmt.mode_order)


def level_paths(fmt: Format | Layout, coords: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Each entry's coordinate at each storage level, from its coordinate in each mode."""
    coords = fmt.view_coords(coords) if isinstance(fmt, Layout) else coords
    return tuple(coords[m] for m in fmt.mode_order)


def mode_coords(fmt: Format | Layout, paths: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Each entry's coordinate in each mode, from its coordinates at the storage levels."""
    coords: list = [None] * len(paths)
    for level, mode in enumerate(fmt.mode_order):
        coords[mode] = paths[level]
    return fmt.tensor_coords(coords) if isinstance(fmt, Layout) else coords


def choose_index_dtype(fmt: Format, shape: Sequence[int], nentries: int, requested: np.dtype | None) -> np.dtype:
    """The requested index dtype (refused when a coordinate or the entry count cannot fit it), or else
    int32 when every coordinate and position provably fits, int64 otherwise."""
    if requested is not None:
        if requested.itemsize < 8 and max(max(shape, default=1) - 1, nentries) > INT32_MAX:
            raise FormatError(f"Expected coordinates and positions to fit the requested index dtype {requested}, "
                              f"but shape {tuple(shape)} with {nentries} entries needs int64")
        return requested
    bound, nparents = max(shape, default=1) - 1, 1  # the largest coordinate, then position counts
    for level, dim in zip(fmt.levels, level_dims(fmt, shape)):
        nparents = level.positions_bound(nparents, dim, nentries)
        bound = max(bound, nparents)
    return index_dtype_for(bound)


def pack(fmt: Format, shape: Sequence[int], entries: Entries, index_dtype: np.dtype, fill=0) -> Storage:
    """Level arrays holding canonical `entries` (paths in the format's level order); the positions a dense
    level holds for coordinates with no entry take the `fill`."""
    parent, nparents = np.zeros(len(entries), dtype=np.int64), 1
    paths, values = list(entries.paths), entries.values
    levels, in_order = [], True
    for depth, (level, dim) in enumerate(zip(fmt.levels, level_dims(fmt, shape))):
        packed = level.pack(parent, nparents, paths[depth], dim, index_dtype)
        parent, nparents = packed.child, packed.nchildren
        levels.append(dict(packed.arrays))
        check_allocation(nparents * max(values.itemsize, index_dtype.itemsize), f"level {depth} of format {fmt}")
        if not level.properties.ordered:
            order = np.argsort(parent, kind="stable")
            parent, values = parent[order], values[order]
            paths[depth + 1:] = [p[order] for p in paths[depth + 1:]]
            in_order = False
    if in_order and nparents == len(values):
        return Storage(tuple(levels), np.ascontiguousarray(values))
    vals = np.full(nparents, fill, dtype=values.dtype)
    vals[parent] = values
    return Storage(tuple(levels), vals)


def leaves(fmt: Format, shape: Sequence[int], levels: Sequence[LevelArrays]) -> tuple[tuple[np.ndarray, ...], np.ndarray]:
    """Every stored coordinate path (in level order) and the position of its value."""
    parents = np.zeros(1, dtype=np.int64)
    paths: tuple[np.ndarray, ...] = ()
    for depth, (level, dim, arrays) in enumerate(zip(fmt.levels, level_dims(fmt, shape), levels)):
        if level.properties.full:
            check_allocation(len(parents) * dim * 8, f"listing the coordinates of dense level {depth}")
        unpacked = level.unpack(arrays, parents, dim)
        if unpacked.owner is not None:
            paths = tuple(p[unpacked.owner] for p in paths)
        paths, parents = paths + (unpacked.coord,), unpacked.child
    return paths, parents


def unpack(fmt: Format, shape: Sequence[int], storage: Storage, fill=0) -> Entries:
    """The tensor's entries in storage order: stored coordinates, except fills (zeros by default) that a
    dense innermost level holds only because it stores every coordinate."""
    paths, positions = leaves(fmt, shape, storage.levels)
    values = storage.vals if len(positions) == len(storage.vals) else storage.vals[positions]
    if fmt.levels and (fmt.levels[-1].properties.full or fmt.levels[-1].properties.filled):
        kept = values != fill
        return Entries(tuple(p[kept] for p in paths), values[kept])
    return Entries(paths, values)


def validate(fmt: Format, shape: Sequence[int], levels: Sequence[Mapping[str, object]], vals: object) -> Storage:
    """Check arrays from outside against the format; return them as read-only numpy arrays."""
    if not isinstance(levels, Sequence) or not all(isinstance(level, Mapping) for level in levels):
        raise FormatError(f"Expected a sequence of one mapping of arrays per level, but found {levels!r:.80}")
    if len(levels) != len(fmt.levels):
        raise FormatError(f"Expected {len(fmt.levels)} levels of arrays for format {fmt}, but found {len(levels)}")
    arrays = tuple(_level_arrays(fmt, depth, given) for depth, given in enumerate(levels))
    index_dtypes = {a.dtype for level in arrays for a in level.values()}
    if len(index_dtypes) > 1:
        raise FormatError(f"Expected one index dtype for all level arrays, but found {sorted(map(str, index_dtypes))}")
    values = _as_array(vals, "vals")
    if values.ndim != 1:
        raise FormatError(f"Expected a 1-D vals array, but found {values.ndim} dimensions")
    check_value_dtype(values.dtype)
    nparents, repeats, vacant = 1, None, None
    for depth, (level, dim, level_arrays) in enumerate(zip(fmt.levels, level_dims(fmt, shape), arrays)):
        try:
            checked = level.validate(level_arrays, nparents, dim, repeats)
            vacant = _vacant_children(level, level_arrays, dim, vacant, checked.vacant)
        except FormatError as error:
            raise FormatError(f"Level {depth} ({level.letter}, mode {fmt.mode_order[depth]}) of {fmt}: {error}") from None
        nparents, repeats = checked.nchildren, checked.repeats
    if len(values) != nparents:
        raise FormatError(f"Expected vals to have one entry per position of the last level ({nparents}), "
                          f"but found {len(values)}")
    if vacant is not None and np.any(values[vacant] != 0):
        raise FormatError(f"Expected zero values at positions that hold no coordinate, but vals"
                          f"[{vacant[values[vacant] != 0][0]}] is not zero")
    storage = Storage(tuple({k: read_only(a) for k, a in level.items()} for level in arrays), read_only(values))
    if isinstance(fmt, Layout):
        _check_layout(fmt, shape, storage)
    return storage


def _check_layout(fmt: Layout, shape: Sequence[int], storage: Storage) -> None:
    """What a layout's view cannot check: blocks that overlap, and nonzeros where the blocks of the last
    block row and column reach past the shape (only zeros may be there)."""
    fmt.check_blocks(storage.levels)
    entries = unpack(fmt, shape, storage)
    outside = [c >= n for c, n in zip(mode_coords(fmt, entries.paths), shape)]
    if len(entries) and np.any(np.logical_or.reduce(outside)):
        raise FormatError(f"Expected zeros where the blocks of {fmt} reach past the shape {tuple(shape)}, but "
                          f"found a nonzero value there")


def _vacant_children(level, arrays, dim, vacant_parents, own_vacant) -> np.ndarray | None:
    """The positions of this level that hold no coordinate: its own (empty hashed slots) and everything
    below a vacant parent, where only a full level may have positions, and those stay vacant."""
    below = None
    if vacant_parents is not None and len(vacant_parents):
        children = level.unpack(arrays, vacant_parents, dim)
        if not level.properties.full and len(children.child):
            raise FormatError(f"Expected nothing stored below an empty slot of the level above, but found "
                              f"coordinate {children.coord[0]} at position {children.child[0]}")
        below = children.child
    if below is None:
        return own_vacant
    return below if own_vacant is None else np.union1d(below, own_vacant)


def _level_arrays(fmt: Format, depth: int, given: Mapping[str, object]) -> dict[str, np.ndarray]:
    expected = fmt.levels[depth].array_names
    names = set(given)
    if names != set(expected):
        raise FormatError(f"Expected level {depth} ({fmt.levels[depth].letter}) of {fmt} to have arrays "
                          f"{list(expected)}, but found {sorted(names)}")
    result = {}
    for name in expected:
        array = _as_array(given[name], f"level {depth} {name}")
        if array.ndim != 1:
            raise FormatError(f"Expected level {depth} {name} to be 1-D, but found {array.ndim} dimensions")
        if array.dtype not in INDEX_DTYPES:
            if array.size == 0 and array.dtype.kind == "f":
                array = array.astype(np.int64)
            else:
                raise FormatError(f"Expected level {depth} {name} of dtype int32 or int64, but found {array.dtype}")
        result[name] = array
    return result


def _as_array(given: object, name: str) -> np.ndarray:
    """A contiguous numpy array (kernels take plain buffers): copied only when strided or not numpy."""
    try:
        return np.ascontiguousarray(given)
    except (ValueError, TypeError) as error:
        raise FormatError(f"Expected {name} to be a 1-D array, but numpy could not read it: {error}") from None


def read_only(array: np.ndarray) -> np.ndarray:
    """A read-only contiguous view (kernels take raw pointers): tensors are values, and a view leaves the
    caller's own array writeable. Strided arrays are copied."""
    view = np.ascontiguousarray(array).view()
    view.flags.writeable = False
    return view



def unchangeable(storage: Storage) -> bool:
    """Whether no one can write the storage's arrays: each read-only, and a view only of memory that is
    read-only too or that nothing but the view holds (an array autosparse allocated and viewed read-only);
    not of a user's array or scipy matrix a tensor shares, nor of a bytearray. Only then may what is
    computed from them be kept."""
    return all(_unchangeable(array) for array in (storage.vals, *(a for level in storage.levels for a in level.values())))


#: sys.getrefcount of a view's base that only the view holds: the view's reference, `_unchangeable`'s
#: local name and getrefcount's own argument.
_HELD_BY_THE_VIEW_ALONE = 3


def _unchangeable(array: np.ndarray) -> bool:
    if array.flags.writeable:
        return False
    base = array.base
    while isinstance(base, np.ndarray):
        if base.flags.writeable:
            return sys.getrefcount(base) <= _HELD_BY_THE_VIEW_ALONE and base.base is None
        base = base.base
    return not isinstance(base, (bytearray, memoryview, mmap.mmap))
