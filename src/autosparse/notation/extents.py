"""Index notation + operand shapes -> the extent of every index variable, or a ShapeError naming the two
tensors that disagree."""

from __future__ import annotations

from typing import Mapping

from ..errors import AutosparseError, ShapeError
from .ast import Access, Assignment, IndexVar, accesses


def index_extents(assignment: Assignment, shapes: Mapping[str, tuple[int, ...]]) -> dict[IndexVar, int]:
    """Extents from the operands (and from the output too, when its shape is among `shapes`)."""
    extents: dict[IndexVar, tuple[int, Access]] = {}
    for access in (*accesses(assignment.rhs), assignment.lhs):
        if access.tensor not in shapes:
            if access is assignment.lhs:
                continue
            raise AutosparseError(f"Expected an operand named {access.tensor}, but none was given")
        shape = tuple(shapes[access.tensor])
        if len(shape) != len(access.indices):
            raise ShapeError(f"Expected {access.tensor} to have {len(access.indices)} modes as in {access}, "
                             f"but its shape is {shape}")
        for index, extent in zip(access.indices, shape):
            known = extents.setdefault(index, (extent, access))
            if known[0] != extent:
                raise ShapeError(f"Expected {known[1]} and {access} to agree on the extent of {index}, but "
                                 f"{known[1].tensor} gives {known[0]} and {access.tensor} gives {extent}")
    return {index: extent for index, (extent, _) in extents.items()}
