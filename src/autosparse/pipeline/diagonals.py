"""The identities that read diagonals (`notation.split_diagonals`): their formats, and the operands each
call supplies for them.

`d(i) = A(i,i)` runs as `d(i) = A(i,i_1) * I1(i,i_1)`. The identity is stored in the order A stores the
two modes it pairs (CSR beside a CSR A, CSC beside a CSC one), so the default loop order agrees with
both, and holds A's dtype, so the result's dtype is numpy's. Identities are built once per size, dtype
and format (n entries) and shared by every call.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

import numpy as np

from ..errors import ShapeError
from ..format import Format
from ..notation import Diagonal
from ..tensor import Tensor


def identity_formats(diagonals: tuple[Diagonal, ...], formats: Mapping[str, Format]) -> dict[str, Format]:
    """Each identity compressed in the order its source stores the two modes it pairs."""
    found = {}
    for diagonal in diagonals:
        order = formats[diagonal.source].mode_order
        first, second = diagonal.modes
        found[diagonal.identity] = Format("ds" if order.index(first) < order.index(second) else "d1s0")
    return found


def with_identities(diagonals: tuple[Diagonal, ...], formats: Mapping[str, Format], operands: dict) -> dict:
    """The call's operands and the identity of each diagonal, sized by its source (an operand missing
    is left for the kernel's own check to name)."""
    identities = {}
    for diagonal in diagonals:
        source = operands.get(diagonal.source)
        if source is None:
            continue
        shape = tuple(source.shape) if hasattr(source, "shape") else np.shape(source)
        extents = tuple(shape[mode] for mode in diagonal.modes) if len(shape) > max(diagonal.modes) else ()
        if len(set(extents)) > 1:
            raise ShapeError(f"Expected modes {diagonal.modes[0]} and {diagonal.modes[1]} of {diagonal.source} "
                             f"to have one extent to read their diagonal, but its shape is {tuple(shape)}")
        if extents:
            identities[diagonal.identity] = _identity(extents[0], _dtype(source), formats[diagonal.identity])
    return {**operands, **identities}


def _dtype(value) -> np.dtype:
    return np.dtype(value.dtype) if hasattr(value, "dtype") else np.asarray(value).dtype


@lru_cache(maxsize=4)  # n entries each: a few sizes in use at once
def _identity(n: int, dtype: np.dtype, fmt: Format) -> Tensor:
    diagonal = np.arange(n)
    return Tensor.from_coo(np.stack([diagonal, diagonal]), np.ones(n, dtype), (n, n), fmt)
