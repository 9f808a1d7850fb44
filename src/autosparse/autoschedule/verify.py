"""Compile every candidate of a front and compare it with numpy on small random operands: the check
behind `autosparse autoschedule --check` and the compiled counts in docs/benchmarks.md."""

from __future__ import annotations

import numpy as np

from ..errors import AutosparseError
from ..notation import accesses
from ..tensor import Tensor
from .front import Front
from .sparseauto.front import SparseAutoFront


def verify(front: "Front | SparseAutoFront", extent: int = 7, density: float = 0.35, seed: int = 0) -> tuple[int, list[str]]:
    """(how many candidates compiled and matched, a message per one that did not)."""
    from ..api import compile as compile_kernel

    assignment = front.assignment
    rng = np.random.default_rng(seed)
    reads = accesses(assignment.rhs)
    extents = {index: extent + n for n, index in enumerate(dict.fromkeys(i for a in reads for i in a.indices))}
    dense, operands = {}, {}
    for access in reads:
        shape = tuple(extents[i] for i in access.indices)
        dense[access.tensor] = rng.random(shape) * (rng.random(shape) < density)
        operands[access.tensor] = Tensor.from_numpy(dense[access.tensor], format=front.formats[access.tensor])
    letters = {index: chr(ord("a") + n) for n, index in enumerate(extents)}
    spec = ",".join("".join(letters[i] for i in a.indices) for a in reads)
    expected = np.einsum(f"{spec}->{''.join(letters[i] for i in assignment.lhs.indices)}",
                         *(dense[a.tensor] for a in reads))
    passed, failures = 0, []
    formats = {name: str(fmt) for name, fmt in front.formats.items()}
    for cand in front:
        try:
            got = compile_kernel(str(assignment), formats, schedule=cand)(**operands)
            got = got.to_numpy() if isinstance(got, Tensor) else got
            if np.allclose(got, expected):
                passed += 1
            else:
                failures.append(f"{cand.cin}: wrong values")
        except AutosparseError as error:
            failures.append(f"{cand.cin}: {type(error).__name__}: {error}")
    return passed, failures
