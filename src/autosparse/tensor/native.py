"""The hook through which `Tensor.to_format` and `Tensor.from_coo` reach conversions compiled in C.

Converting between storage orders (CSR <-> CSC, coordinates -> CSR/CSC/CSF/COO, CSR -> COO) is a counting
sort; the generic path (canonical entries, a lexicographic sort in numpy) is several times slower than
scipy's `tocsc` and `tocsr`. The sorts are compiled by the runtime, floors above tensor/, which installs
them here when it is imported (autosparse's facade imports it, so a user always has them, as every
kernel needs the C compiler anyway); `to_format` and `from_coo` ask them first and convert generically
where they answer None.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..format import Format
    from .tensor import Tensor

Converter = Callable[["Tensor", "Format"], "Tensor | None"]

_installed: list[Converter] = []


def install(converter: Converter) -> None:
    """Make `converter` answer `to_format` first from now on (the runtime calls this once)."""
    _installed[:] = [converter]


def converted(tensor: "Tensor", fmt: "Format") -> "Tensor | None":
    """`tensor` in `fmt` by a compiled conversion, or None where none applies (or none is installed)."""
    return _installed[0](tensor, fmt) if _installed else None
