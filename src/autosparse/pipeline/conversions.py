"""Each call's operands -> Tensors in the formats the kernel computes in, converting the ones stored otherwise.

A kernel computes in fixed formats (those it was compiled for, or the concordant ones the default
schedule chose: `kernel.conversions`). An operand stored in another format — a CSC tensor given to a
kernel computing in CSR, a scipy `coo_matrix` (what `mmread` returns) — is converted on every call,
which can cost more than the kernel itself: the first time for each kernel and operand, a
`PerformanceWarning` names the format to convert it to once. A Tensor whose arrays no one can change
(a kernel's result, a conversion) keeps its conversion (`Tensor.to_format`), so only its first call
converts. Matrices convert between CSR, CSC and coordinates, and coordinates to CSF, by counting sorts
in C (`runtime/conversion.py`, which `Tensor.to_format` reaches too); anything else through the
Tensor's own conversions.

An operand whose levels are unordered (`ds~`: a product's rows, as scipy's `A @ B` leaves them) is read
as it is by kernels that need no order (SpMV, a product's left operand), and an element-wise sum
gathers it through a workspace (the default schedule's `unordered_merges`); one that must still merge
it, or append from it in order (an element-wise product), computes in its sorted format instead
(`ordered_where_merged`), and the call sorts it in C, silently, as scipy sorts a product's indices where
an operation needs them sorted.

A matrix stored as coordinates that would be converted on every call (a scipy `coo_matrix`, or a COO
Tensor whose arrays its caller can still change) is not converted where the kernel can read it as it is:
`coordinates_as_stored` gives it in its own storage, scipy's arrays without a copy, and the kernel computes
with it in that format wherever the result is dense and linear in it (`linear_in`), so coordinates in any
order, repeated ones included, add up to what the summed matrix gives (`pipeline.kernel`). A scipy
matrix's coordinates are checked on every call (its owner may change them): by a kernel that takes its
rows as in order (`coo`: threads split it at rows, and it merges) and checks the ranges and that order where
it loads them (`Types.checked`); else, where they were not in order, in one native pass, which also finds
whether they are now (`coo`) or not (`u~q`).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from ..errors import PerformanceWarning
from ..format import Format
from ..notation import Access, Add, Div, Mul, Neg, Sub, Sum, accesses
from ..runtime.conversion import checked_coordinates, native_conversion
from ..tensor import Tensor, as_tensor
from ..tensor import storage as st
from ..tensor.dtypes import INDEX_DTYPES, promote_value_dtype
from ..tensor.interop import is_scipy
from .result_format import in_increasing_order

_SCIPY_COMPRESSED = {"csr": Format("ds"), "csc": Format("d1s0")}
_UNSORTED_COORDINATES = Format("u~q")
_COORDINATES = (Format("coo", order=2), _UNSORTED_COORDINATES)
_PACKAGE = str(Path(__file__).resolve().parent.parent)


def operand_in(value, fmt: Format, name: str, warned: set[str]) -> Tensor:
    """`value` stored in `fmt`, converted natively where it can be (a Tensor through `to_format`, which
    keeps the conversion where the Tensor cannot change); warns (once per name in `warned`) when a
    sparse value stored in another format has to be converted, except a Tensor whose levels are only
    to be sorted (a product's unsorted rows, as scipy sorts them silently)."""
    stored = _stored_format(value)
    if stored is None or stored == fmt:
        return as_tensor(value, fmt, name)
    if name not in warned and in_increasing_order(stored) != fmt:
        warned.add(name)
        warnings.warn(_warning(value, stored, fmt, name), PerformanceWarning, stacklevel=_callers_level())
    if isinstance(value, Tensor):  # through to_format, which converts natively and keeps what it can
        return as_tensor(value, fmt, name)
    source = _as_stored(value)
    if source is not None and source.format == fmt:  # a scipy format that imports into fmt
        return source
    converted = native_conversion(source, fmt)
    return converted if converted is not None else as_tensor(value, fmt, name)


def ordered_where_merged(formats: Mapping[str, "Format | Layout"], result: str,
                         lowers: Callable[[Mapping[str, "Format | Layout"]], bool]) -> dict[str, "Format | Layout"]:
    """`formats` with the operands whose unordered levels (`ds~`) the kernel must merge or append from
    in order computed in their sorted formats (converted per call, `operand_in`); `lowers` says whether
    a kernel computing in some formats lowers. Those it reads in any order (a product's left operand,
    SpMV) stay as they are: each is sorted only where keeping it unsorted does not lower. Where sorting
    does not make it lower either, `formats` stand (the lowering's refusal names the cause)."""
    unordered = [name for name, fmt in formats.items() if name != result and in_increasing_order(fmt) != fmt]
    if not unordered or lowers(formats):
        return dict(formats)
    ordered = {**formats, **{name: in_increasing_order(formats[name]) for name in unordered}}
    if not lowers(ordered):  # sorting does not help: the kernel's own refusal stands
        return dict(formats)
    if len(unordered) > 1:  # (one alone: it did not lower unsorted)
        for name in unordered:
            kept = {**ordered, name: formats[name]}
            if lowers(kept):
                ordered = kept
    return ordered


def coordinates_as_stored(value, fmt: Format, checked_by_kernel: bool = False) -> Tensor | None:
    """A matrix stored as coordinates, given to a kernel computing in another `fmt`, as a Tensor in its own
    storage where reading it so costs less than converting it: a scipy coo matrix (its arrays, converted
    on every call otherwise) or a coordinate Tensor that keeps no conversion. None for anything else: a
    Tensor that keeps its conversion pays it once, after which the compressed copy is the cheaper to read
    (no row per entry). A scipy matrix for a kernel that checks its coordinates and its rows' order where
    it reads them (`checked_by_kernel`) comes as `coo`, its arrays unread."""
    stored = _stored_format(value)
    if stored is None or stored == fmt or stored not in _COORDINATES:
        return None
    if isinstance(value, Tensor):
        return None if value.keeps_conversions else value
    return _coordinates(value, rows_in_order_as_coo=True, checked_by_kernel=checked_by_kernel)


def linear_in(expr, name: str) -> bool:
    """Whether `expr` reads tensor `name` once, through sums, products, negations and dividends only: then
    its entries may be read in any order and repeated coordinates one by one, since the terms they give
    add up to the term of their sum."""
    return sum(access.tensor == name for access in accesses(expr)) == 1 and _through_linear(expr, name)


def _through_linear(node, name: str) -> bool:
    if isinstance(node, Access):
        return node.tensor == name
    if isinstance(node, Div):
        return _through_linear(node.left, name)
    return isinstance(node, (Add, Sub, Mul, Neg, Sum)) and any(_through_linear(c, name) for c in node.children())


def stored_entries(operands: Mapping[str, object]) -> dict[str, int]:
    """The stored entries of the operands that are sparse: what converting each would cost."""
    return {name: int(value.nnz) for name, value in operands.items()
            if (isinstance(value, Tensor) and not value.format.is_dense) or is_scipy(value)}


def _stored_format(value) -> Format | None:
    """The format a sparse operand is stored in (None for dense values: arrays are stored as asked)."""
    if isinstance(value, Tensor):
        return None if value.format.is_dense else value.format
    if is_scipy(value) and value.ndim == 2:
        return _SCIPY_COMPRESSED.get(value.format, Format("coo", order=2))
    return None


def _callers_level() -> int:
    """The warning's stacklevel that names the user's line: the first frame outside autosparse (a kernel
    called directly, or through evaluate or einsum)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


def _warning(value, stored: Format, fmt: Format, name: str) -> str:
    given = f"a scipy {value.format} matrix" if is_scipy(value) else f"stored as {stored}"
    if isinstance(value, Tensor) and value.keeps_conversions:
        return (f"{name} is {given} but the kernel computes in {fmt}, so it is converted once and the copy kept "
                f"on the Tensor: convert it with {_advice(value, name, fmt)} and pass that instead to hold one copy")
    return (f"{name} is {given} but the kernel computes in {fmt}, so it is converted on every call: convert it "
            f"once with {_advice(value, name, fmt)} and pass that instead")


def _advice(value, name: str, fmt: Format) -> str:
    if isinstance(value, Tensor):
        return f"{name}.to_format({str(fmt)!r})"
    return f"asp.Tensor.from_scipy({name}, format={str(fmt)!r})"


def _as_stored(value) -> Tensor | None:
    """A sparse operand as a Tensor in its own storage (scipy's CSR and CSC without a copy)."""
    if not is_scipy(value):
        return value
    return _coordinates(value, rows_in_order_as_coo=False) if value.format == "coo" else Tensor.from_scipy(value)


def _coordinates(matrix, rows_in_order_as_coo: bool, checked_by_kernel: bool = False) -> Tensor | None:
    """A scipy coo matrix's arrays as a coordinate tensor, without a copy, once checked (dtypes, lengths,
    and in C each coordinate's range and the rows' order: `checked_coordinates`), as unsorted `u~q`; or,
    for a kernel that reads it linearly (`rows_in_order_as_coo`), as `coo` where its rows are in order,
    so that threads split it at rows without races. Its columns may still come in any order and repeat,
    which such a kernel does not mind, but a conversion would: it is given `u~q`. For a kernel that
    compares each coordinate with its extent and each row with the one before it where it reads them
    (`checked_by_kernel`), neither is read here: `coo`, the rows taken as in order. None when anything is
    off (the general path then reports it)."""
    row, col, data = (np.asarray(a) for a in (matrix.row, matrix.col, matrix.data))
    if row.dtype != col.dtype or row.dtype not in INDEX_DTYPES or promote_value_dtype(data.dtype) != data.dtype \
            or not row.ndim == col.ndim == data.ndim == 1 or not len(row) == len(col) == len(data):
        return None
    row, col = st.read_only(row), st.read_only(col)
    in_order = checked_by_kernel or checked_coordinates(matrix.shape, row, col)
    if in_order is None:
        return None
    levels = ({"pos": np.array([0, len(row)], dtype=row.dtype), "crd": row}, {"crd": col})
    fmt = _COORDINATES[0] if in_order and rows_in_order_as_coo else _UNSORTED_COORDINATES
    return Tensor.from_read_only_storage(matrix.shape, fmt, st.Storage(levels, st.read_only(data)))
