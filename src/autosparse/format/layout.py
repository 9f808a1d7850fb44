"""Layouts: a tensor stored as another tensor of more modes, its view, in a level format.

Blocked CSR (Zhao et al.) is spelled "bcsr(b)" or "bcsr(br,bc)": a matrix stored as its block view, the
order-4 tensor V[i // br, j // bc, i % br, j % bc] in format "dsdd" (dense block rows, compressed block
columns, dense br × bc blocks, zeros of the blocks stored). "ubcsr(b)" is the paper's unaligned variant:
a block may start at any column (the view's second level stores the block's first column, blocks of a
block row at least bc apart), so fewer blocks cover scattered dense runs.

The view is an ordinary `Format`, and it is all that storage levels, CIN and kernels see; the layout only
maps the user's coordinates to the view's and back. So `Format` stays one thing (levels and the modes
they store), and a layout answers for the levels it is stored in. A packed triangle is no layout: it keeps
the matrix's two modes and stores them in a level of its own (triangular.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from ..errors import FormatError
from .level import Level

if TYPE_CHECKING:
    from .spec import Format


@dataclass(frozen=True, slots=True)
class Layout:
    """A blocked layout of a tensor (`as_format("bcsr(4)", 2)`): the format of its block view and the block
    size of each mode. A layout is not equal to a string (`as_format` reads one): only `Format` keeps that
    convenience, which its tests rely on."""

    storage: "Format"  # the block view's format: what is stored, and what CIN and kernels see
    blocks: tuple[int, ...]  # the block size of each mode
    offsets: tuple[bool, ...]  # per mode: whether its blocks start at any coordinate (unaligned)

    @property
    def order(self) -> int:
        """The modes of the tensor (the user's), not of its view."""
        return len(self.blocks)

    @property
    def levels(self) -> tuple[Level, ...]:
        """The stored levels: the view's, which is what anything walking storage levels asks for."""
        return self.storage.levels

    @property
    def mode_order(self) -> tuple[int, ...]:
        """The view's mode stored at each level."""
        return self.storage.mode_order

    @property
    def is_dense(self) -> bool:
        return False

    @property
    def name(self) -> str:
        return "ubcsr" if any(self.offsets) else "bcsr"

    def view_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The view's shape: block counts (an unaligned mode's blocks are named by their first coordinate),
        then the block sizes."""
        return (*(n if offset else -(-n // b) for n, b, offset in zip(shape, self.blocks, self.offsets)),
                *self.blocks)

    def view_coords(self, coords: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
        """Each entry's coordinates in the view, from its coordinates in the tensor's modes."""
        first = [c // b for c, b in zip(coords, self.blocks)]
        for mode, offset in enumerate(self.offsets):
            if offset:  # the block's first coordinate, from the blocks this data needs
                first[mode] = block_starts(first[0], coords[mode], self.blocks[mode])
        return (*first, *((c - f if offset else c % b)
                          for c, f, b, offset in zip(coords, first, self.blocks, self.offsets)))

    def tensor_coords(self, view: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Each entry's coordinates in the tensor's modes, from its coordinates in the view."""
        order = self.order
        return [view[m] + view[order + m] if offset else view[m] * b + view[order + m]
                for m, (b, offset) in enumerate(zip(self.blocks, self.offsets))]

    def check_blocks(self, levels: Sequence[Mapping[str, np.ndarray]]) -> None:
        """Refuse unaligned blocks of one block row that overlap, given the view's level arrays: the view's
        levels cannot see it, since each block's columns are a mode of their own there."""
        if not any(self.offsets):
            return
        pos, crd = levels[1]["pos"], levels[1]["crd"].astype(np.int64)
        same_row = np.repeat(np.arange(len(pos) - 1), np.diff(pos))
        close = np.flatnonzero((same_row[1:] == same_row[:-1]) & (crd[1:] < crd[:-1] + self.blocks[1]))
        if len(close):
            q = int(close[0])
            raise FormatError(f"Expected the blocks of a block row at least {self.blocks[1]} columns apart, but "
                              f"blocks start at columns {crd[q]} and {crd[q + 1]}")

    def __str__(self) -> str:
        return f"{self.name}({','.join(map(str, self.blocks))})"

    def __repr__(self) -> str:
        return f"Layout({str(self)!r})"


def block_starts(group: np.ndarray, coord: np.ndarray, size: int) -> np.ndarray:
    """Unaligned blocks of `size` covering each group's coordinates (the block rows' columns), greedily
    from the left: a block starts at the first coordinate the previous one does not reach. Returns the
    first coordinate of each entry's block."""
    order = np.lexsort((coord, group))
    groups, coords = group[order].tolist(), coord[order].tolist()
    firsts, current, reach = [], None, 0
    for g, c in zip(groups, coords):
        if g != current or c >= reach:
            current, first, reach = g, c, c + size
        firsts.append(first)
    starts = np.empty(len(order), dtype=np.int64)
    starts[order] = firsts
    return starts
