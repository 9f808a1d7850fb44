"""Every C identifier and type name of a generated kernel comes from here, in one of two namespaces that
cannot meet, whatever the user calls things:

- **User names** (tensors, index variables, scheduling commands' derived variables, temporaries named in
  CIN) are written `stem_tail`. The stem is the name with each `_` written `_0` (`N_j` -> `N_0j`), so the
  first `_` of the identifier that is not followed by `0` ends the stem; the tail says what the identifier
  holds: nothing for an index's coordinate (`i_`), `dim` for its extent (`i_dim`), `vals`, `pos2`, `p2`
  ... for a tensor's arrays and positions (`A_vals`, `A_pos2`, `A_p2`). A tail never starts with `0`, so
  (name, tail) can be read back from the identifier: two different pairs never give the same one.
- **Generated names** (accumulators, loop counters, flags, helper functions) hold no `_` at all, and
  numbered ones come from one `Fresh` supply per kernel. (Two kinds of name keep a `_` and meet neither
  namespace: goto labels, which C keeps apart from variables, and the exported `autosparse_kernel`, which
  the kernel never names inside.)

A user name therefore always holds a `_` before its tail and a generated name never does, and neither can
be a C keyword or a name the headers declare without `_` (`int`, `free`, complex.h's `I`). A stem never
starts with `__` or `_` and a capital, the names C keeps for its implementation (`_x` is written `_0x`).
"""

from __future__ import annotations

import numpy as np

from .c_ast import CType, identifier

INDEX_TYPES = {np.dtype(np.int32): CType("int32_t"), np.dtype(np.int64): CType("int64_t")}
VALUE_TYPES = {
    np.dtype(np.float64): CType("double"),
    np.dtype(np.float32): CType("float"),
    np.dtype(np.int64): CType("int64_t"),
    np.dtype(np.complex128): CType("double _Complex"),
}


def index_type(dtype) -> CType:
    return INDEX_TYPES[np.dtype(dtype)]


def largest_index(index_type: CType) -> str:
    """The constant the headers define for the largest value of an index type (`INT32_MAX`)."""
    return {"int32_t": "INT32_MAX", "int64_t": "INT64_MAX"}[index_type.base]


def value_type(dtype) -> CType:
    return VALUE_TYPES[np.dtype(dtype)]


def user(name, tail: str = "") -> str:
    """The identifier of what `tail` names for a user's `name` (see the module docstring)."""
    if tail[:1] in ("0", "_"):
        raise ValueError(f"Expected a tail that does not start with 0 or _, but found {tail!r}")
    return str(name).replace("_", "_0") + "_" + tail


def coordinate(index) -> str:
    """The C variable holding an index's coordinate."""
    return user(index)


def extent(index) -> str:
    return user(index, "dim")


def vals(tensor: str) -> str:
    return user(tensor, "vals")


def array(tensor: str, level: int, name: str) -> str:
    return user(tensor, f"{name}{level + 1}")


def size(tensor: str, level: int) -> str:
    return user(tensor, f"size{level + 1}")


def access(tensor: str, number: int = 0) -> str:
    """The stem of the identifiers of one access to `tensor` (the `number`th, for a tensor read twice):
    the names below extend it."""
    return user(tensor, str(number) if number else "")


def position(access_stem: str, level: int) -> str:
    return f"{access_stem}p{level + 1}"


def position_end(access_stem: str, level: int) -> str:
    return part(position(access_stem, level), "end")


def segment_end(access_stem: str, level: int) -> str:
    return part(position(access_stem, level), "seg")


def part(name: str, tail: str) -> str:
    """The identifier of what `tail` names about the variable `name` (a position's end, a table's mask, a
    counter's chunks): `name_tail`. For a user's name the tail extends the user's tail (`A_p2_end`); for a
    generated one (`found3_end`, `p1_first`) it holds a `_` the generated namespace never does."""
    return identifier(f"{identifier(name)}_{identifier(tail)}")


def coordinate_of(access_stem: str, level: int) -> str:
    return f"{access_stem}i{level + 1}"


def level_stem(access_stem: str, level: int) -> str:
    """The stem of the names an access's level keeps while finding coordinates (finds.py)."""
    return f"{access_stem}l{level + 1}"


def generated(stem: str, tail: "str | int") -> str:
    """A generated name made of two parts (`keyedfind2`, `boundready`): letters and digits only, so it
    stays in the generated namespace."""
    name = f"{stem}{tail}"
    if not name.isalnum() or not name.isascii() or name[0].isdigit():
        raise ValueError(f"Expected a generated name of letters and digits, but found {name!r}")
    return name


class Fresh:
    """Numbered generated names (accumulators, flags, labels), one supply per kernel phase: the stems hold
    no `_`, so a fresh name is never a user's."""

    def __init__(self):
        self._count = 0

    def __call__(self, stem: str) -> str:
        if not stem.isalnum():
            raise ValueError(f"Expected a generated stem of letters and digits, but found {stem!r}")
        self._count += 1
        return f"{stem}{self._count}"
