"""Tensor: a shape, a format, the level arrays and the values — an immutable value.

Arrays from outside are validated once, here; tensors built by autosparse itself skip the checks. Every
conversion goes storage -> canonical entries -> storage (see `storage.py`), vectorised with numpy.
"""

from __future__ import annotations

import math
import sys
from typing import Mapping, Sequence

import numpy as np

from ..config import check_allocation
from ..errors import AutosparseError, FormatError, ShapeError
from ..format import Format, Layout, as_format
from . import native, operations
from . import storage as st
from .dtypes import check_fill, check_index_dtype, check_value_dtype, promote_value_dtype
from .entries import Entries, canonical


_DIM_LIMIT = 2**63 - 1
# numpy's own limit on dimensions: a tensor of more modes has no dense counterpart, and a format or a
# kernel of thousands of levels costs time quadratic in them before any entry is read.
MAX_ORDER = 64


def _check_shape(shape: Sequence[int]) -> tuple[int, ...]:
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError, OverflowError):
        raise ShapeError(f"Expected a shape of integers, but found {shape!r:.200}") from None
    if len(dims) > MAX_ORDER:
        raise ShapeError(f"Expected a tensor of at most {MAX_ORDER} modes, but found {len(dims)}")
    if any(d < 0 for d in dims) or any(int(d) != d for d in shape):
        raise ShapeError(f"Expected non-negative integer dimensions, but found {tuple(shape)}")
    if any(d > _DIM_LIMIT for d in dims):
        raise ShapeError(f"Expected dimensions below 2**63 (coordinates are int64 at most), but found {dims}")
    return dims


def _check_coordinates(coords: np.ndarray, shape: tuple[int, ...]) -> None:
    """Every coordinate in range, checked with two reductions a mode before anything sorts or indexes by
    them; the offending entry is looked for only when one is out of range."""
    for mode, (row, dim) in enumerate(zip(coords, shape)):
        if len(row) and 0 <= row.min() and row.max() < dim:
            continue
        bad = np.flatnonzero((row < 0) | (row >= dim))
        if len(bad):
            raise FormatError(f"Expected mode-{mode} coordinates in [0, {dim}), but entry {bad[0]} has {row[bad[0]]}")


def _sorted_natively(coords: np.ndarray, values: np.ndarray, shape: tuple[int, ...], fmt: Format | Layout,
                     requested: np.dtype | None, fill) -> "Tensor | None":
    """In-range coordinates (in any order) stored in `fmt` by compiled counting sorts, where one applies
    (CSR, CSC, COO, CSF, ...; no repeated coordinates); None otherwise. numpy's lexicographic sort of the
    generic path is several times slower than scipy's tocsr."""
    unsorted = Format("u~" + "c" * (len(shape) - 2) + "q") if len(shape) >= 2 else None
    if unsorted is None or isinstance(fmt, Layout) or fmt == unsorted:
        return None
    index_dtype = st.choose_index_dtype(fmt, shape, coords.shape[1], requested)
    paths = [st.read_only(c.astype(index_dtype, copy=False)) for c in coords]
    levels = ({"pos": np.array([0, coords.shape[1]], dtype=index_dtype), "crd": paths[0]},
              *({"crd": path} for path in paths[1:]))
    return _natively(Tensor.from_read_only_storage(shape, unsorted, st.Storage(levels, st.read_only(values)), fill),
                     fmt)


def _natively(tensor: "Tensor", fmt: Format | Layout) -> "Tensor | None":
    """`tensor` in `fmt` by a compiled conversion (native.converted), where one applies. The conversions pad
    absent entries with 0, so a tensor of another fill goes through them only into a format that stores no
    value but its entries' (no full level below a sparse one: CSR, DCSR, COO, CSF), its fill carried over:
    SSSP's weights of fill +inf built as CSR took 15 ms by the generic path against 0.3 ms by scipy."""
    if tensor.fill != 0 and _pads(fmt):
        return None
    converted = native.converted(tensor, fmt)
    if converted is None or tensor.fill == 0:
        return converted
    return Tensor.from_read_only_storage(converted.shape, converted.format, converted._storage, tensor.fill)


def _pads(fmt: Format | Layout) -> bool:
    """Whether `fmt` stores values of absent entries: it has no sparse level, or a full one below a sparse one
    (a layout is not judged: taken as padding)."""
    if isinstance(fmt, Layout):
        return True
    full = [level.properties.full for level in fmt.levels]
    return all(full) or any(full[full.index(False):])


def _binary(name: str, reflected: bool = False):
    """An operator computing `name` through the hook, or NotImplemented for what is no array operand (so
    Python asks the other side)."""

    def operator(self: Tensor, other):
        if not _is_operand(other):
            return NotImplemented
        return operations.apply(name, other, self) if reflected else operations.apply(name, self, other)

    return operator


#: How many conversions of a tensor to other formats it keeps (`Tensor.to_format`): each holds a copy.
KEPT_CONVERSIONS = 2


class Tensor:
    """A sparse or dense tensor. Build one with the `from_*` constructors or from raw level arrays:

    `Tensor(shape, "csr", [{}, {"pos": indptr, "crd": indices}], vals)` checks the arrays against the
    format and raises `FormatError` naming any broken rule.

    Every entry it does not store is its `fill`: 0 by default, +inf for the distances of a min-plus
    program (`from_numpy(d, "csr", fill=np.inf)`). A fill other than 0 has no scipy counterpart.
    """

    __slots__ = ("_shape", "_format", "_storage", "_fill", "_nnz", "_kind", "_addresses", "_conversions")

    def __init__(self, shape: Sequence[int], format: "str | Format | Layout", levels: Sequence[Mapping[str, object]],
                 vals: object, fill=0):
        self._shape = _check_shape(shape)
        self._format = as_format(format, len(self._shape))
        self._storage = st.validate(self._format, self._shape, levels, vals)
        self._fill = check_fill(fill, self._storage.vals.dtype)
        self._nnz: int | None = None
        self._kind: tuple | None = None
        self._addresses: dict[tuple[int, str], int] | None = None
        self._conversions: dict[tuple, Tensor] | None = None

    @classmethod
    def _trusted(cls, shape: tuple[int, ...], fmt: Format, storage: st.Storage, fill=0) -> "Tensor":
        """A tensor from storage autosparse built itself (no validation; `fill` already of its dtype)."""
        storage = st.Storage(tuple({k: st.read_only(a) for k, a in level.items()} for level in storage.levels),
                             st.read_only(storage.vals))
        return cls.from_read_only_storage(shape, fmt, storage, fill)

    @classmethod
    def from_read_only_storage(cls, shape: tuple[int, ...], fmt: Format, storage: st.Storage, fill=0) -> "Tensor":
        """A tensor around storage that is already read-only, contiguous and valid for `fmt` (a kernel's
        result), adopted as it is: checking or copying it would cost more than the call that made it."""
        tensor = cls.__new__(cls)
        tensor._shape, tensor._format, tensor._storage = shape, fmt, storage
        tensor._fill = storage.vals.dtype.type(fill)
        tensor._nnz = tensor._kind = tensor._addresses = tensor._conversions = None
        return tensor

    def __reduce__(self):
        # Another process gets the arrays, not this one's cached addresses of them.
        return Tensor._trusted, (self._shape, self._format, self._storage, self._fill)

    @property
    def kind(self) -> tuple:
        """(format, shape, dtype, index dtype, fill): what a kernel specialised for this tensor depends on
        (computed once: tensors never change)."""
        if self._kind is None:
            self._kind = (self._format, self._shape, self.dtype, self.index_dtype, self._fill)
        return self._kind

    @property
    def fill(self):
        """The value of every entry not stored (a numpy scalar of the tensor's dtype; 0 by default)."""
        return self._fill

    def address(self, level: int, array: str) -> int:
        """The address of an index array of `level` (level -1: the values), for kernels. Tensors never
        change their arrays, so the addresses are looked up once, all together, on the first call."""
        addresses = self._addresses
        if addresses is None:
            addresses = self._addresses = {
                (-1, "vals"): self._storage.vals.ctypes.data,
                **{(k, name): a.ctypes.data for k, arrays in enumerate(self._storage.levels) for name, a in arrays.items()}}
        return addresses[level, array]

    # ----- properties -------------------------------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        return self._shape

    @property
    def order(self) -> int:
        return len(self._shape)

    ndim = order

    @property
    def format(self) -> Format | Layout:
        return self._format

    @property
    def dtype(self) -> np.dtype:
        return self._storage.vals.dtype

    @property
    def index_dtype(self) -> np.dtype:
        """The dtype of every index array (int32 or int64); int64 for a tensor without index arrays."""
        for arrays in self._storage.levels:
            for array in arrays.values():
                return array.dtype
        return np.dtype(np.int64)

    @property
    def levels(self) -> tuple[Mapping[str, np.ndarray], ...]:
        """The index arrays of each storage level, top-down (read-only)."""
        return self._storage.levels

    @property
    def vals(self) -> np.ndarray:
        return self._storage.vals

    @property
    def nbytes(self) -> int:
        """Bytes of storage: every index array and the values."""
        return self._storage.vals.nbytes + sum(a.nbytes for level in self._storage.levels for a in level.values())

    @property
    def nnz(self) -> int:
        """The number of stored entries (explicit zeros count; a dense level stores every coordinate)."""
        if self._nnz is None:
            if any(not level.properties.compact for level in self._format.levels):
                self._nnz = len(st.leaves(self._format, self._shape, self._storage.levels)[1])
            else:
                self._nnz = len(self._storage.vals)
        return self._nnz

    def __repr__(self) -> str:
        name = self._format.name
        fmt = f"{name} ({self._format})" if name and name != str(self._format) else str(self._format)
        fill = f", fill={self._fill}" if self._fill != 0 else ""
        return (f"Tensor(shape={self._shape}, format={fmt!r}, nnz={self.nnz}, dtype={self.dtype}, "
                f"index_dtype={self.index_dtype}{fill})")

    # ----- building ---------------------------------------------------------------------------------

    @classmethod
    def _from_entries(cls, coords: Sequence[np.ndarray], values: np.ndarray, shape: Sequence[int],
                     format: "str | Format | Layout", index_dtype=None, fill=0) -> "Tensor":
        """From in-range coordinates per mode (any order, duplicates summed): the common path of every
        constructor once the input has been checked."""
        shape = tuple(shape)
        fmt = as_format(format, len(shape))
        entries = canonical(Entries(st.level_paths(fmt, coords), values), st.level_dims(fmt, shape))
        index_dtype = st.choose_index_dtype(fmt, shape, len(entries), check_index_dtype(index_dtype))
        return cls._trusted(shape, fmt, st.pack(fmt, shape, entries, index_dtype, fill), fill)

    @classmethod
    def from_numpy(cls, array, format: "str | Format | Layout" = "dense", index_dtype=None, fill=0) -> "Tensor":
        """From an array-like; entries equal to `fill` (0 by default; never NaN, see `check_fill`) are not
        stored unless the format is dense."""
        array = np.asarray(array)
        array = array.astype(promote_value_dtype(array.dtype), copy=False)
        fill = check_fill(fill, array.dtype)
        fmt = as_format(format, array.ndim)
        if fmt.is_dense:
            vals = np.ascontiguousarray(array.transpose(fmt.mode_order)).reshape(-1)
            return cls._trusted(array.shape, fmt, st.Storage(tuple({} for _ in fmt.levels), vals), fill)
        coords = np.nonzero(array != fill)
        return cls._from_entries(coords, array[coords], array.shape, fmt, index_dtype, fill)

    @classmethod
    def from_coo(cls, coords, values, shape: Sequence[int], format: "str | Format | Layout" = "coo",
                 index_dtype=None, fill=0) -> "Tensor":
        """From coordinates of shape (order, nnz) and their values (or one value for all), every other
        entry the `fill`; duplicates are summed, the order of the entries does not matter. Entries already
        in the format's order, without repeats, are not copied: the Tensor views the values (and
        coordinates of a fitting dtype) read-only, as `from_scipy` views a canonical matrix, so writing into
        them afterwards changes it."""
        shape = _check_shape(shape)
        coords = np.asarray(coords)
        if coords.size == 0:  # [] or an empty array of any dtype: no entries
            coords = coords.astype(np.int64)
            coords = coords if coords.ndim == 2 else coords.reshape(len(shape), 0)
        if coords.ndim != 2 or coords.shape[0] != len(shape):
            raise ShapeError(f"Expected coordinates of shape ({len(shape)}, nnz) for a tensor of shape {shape}, "
                             f"but found {coords.shape}")
        if coords.dtype.kind not in "iu":
            raise FormatError(f"Expected integer coordinates, but found {coords.dtype}")
        values = np.asarray(values)
        values = values.astype(promote_value_dtype(values.dtype), copy=False)
        if values.ndim == 0:
            values = np.full(coords.shape[1], values)
        if values.shape != (coords.shape[1],):
            raise ShapeError(f"Expected {coords.shape[1]} values, one per coordinate, but found shape {values.shape}")
        _check_coordinates(coords, shape)
        fmt, index_dtype = as_format(format, len(shape)), check_index_dtype(index_dtype)
        fill = check_fill(fill, values.dtype)
        compiled = _sorted_natively(coords, values, shape, fmt, index_dtype, fill)
        if compiled is not None:
            return compiled
        return cls._from_entries(tuple(coords.astype(np.int64, copy=False)), values, shape, fmt, index_dtype, fill)

    @classmethod
    def from_scipy(cls, matrix, format: "str | Format | Layout | None" = None, index_dtype=None) -> "Tensor":
        """From a scipy.sparse matrix or array; CSR and CSC in canonical form are wrapped without a copy."""
        from .interop import from_scipy

        return from_scipy(matrix, format, index_dtype)

    @classmethod
    def from_pydata(cls, array, format: "str | Format | Layout | None" = None, index_dtype=None) -> "Tensor":
        """From a pydata `sparse` array (COO, GCXS or any format it converts to COO)."""
        from .interop import from_pydata

        return from_pydata(array, format, index_dtype)

    # ----- leaving ----------------------------------------------------------------------------------

    def to_coo(self) -> tuple[np.ndarray, np.ndarray]:
        """(coords of shape (order, nnz), values) in storage order, explicit zeros included; both are
        the caller's own arrays."""
        entries = st.unpack(self._format, self._shape, self._storage, self._fill)
        coords = np.empty((self.order, len(entries)), dtype=self.index_dtype)
        coords[:] = st.mode_coords(self._format, entries.paths) if len(entries.paths) else coords
        values = entries.values
        return coords, (values if values.flags.writeable else values.copy())

    def to_numpy(self) -> np.ndarray:
        check_allocation(math.prod(self._shape) * self.dtype.itemsize, f"a dense copy of shape {self._shape}")
        if self._format.is_dense:
            stored = self._storage.vals.reshape(st.level_dims(self._format, self._shape))
            return np.array(stored.transpose(np.argsort(self._format.mode_order)), order="C")
        coords, values = self.to_coo()
        dense = np.full(self._shape, self._fill, dtype=self.dtype)
        if all(level.properties.unique for level in self._format.levels):
            dense[tuple(coords)] = values
        else:  # repeated coordinates sum their values, not the fill
            dense[tuple(coords)] = 0
            np.add.at(dense, tuple(coords), values)
        return dense

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """A dense tensor converts; a sparse one is never densified behind the caller's back (pydata's
        `auto_densify=False`): numpy functions that autosparse does not compute ask for an array here."""
        if _asked_by_scipy_sparse():
            return _opaque(self)
        if not self._format.is_dense:
            raise FormatError(f"Expected to_numpy() to densify a sparse tensor, but numpy asked for an array of "
                              f"{self!r}: call to_numpy() for a dense copy, or compute with the operators "
                              f"(@ + - * sum, np.dot, np.matmul, np.sum, np.add, ...) or evaluate, which never densify")
        dense = self.to_numpy()
        return dense if dtype is None else dense.astype(dtype, copy=False)

    def to_scipy(self):
        """A scipy.sparse array of its own (a copy: scipy expects to modify its arrays): CSR (CSC when
        stored so) for order 2, COO for order 1."""
        from .interop import to_scipy

        return to_scipy(self)

    def to_pydata(self, kind: str = "coo"):
        """A pydata `sparse` array, "coo" or "gcxs"."""
        from .interop import to_pydata

        return to_pydata(self, kind)

    # ----- between formats ----------------------------------------------------------------------------

    def to_format(self, format: "str | Format | Layout", index_dtype=None) -> "Tensor":
        """The same tensor stored in another format (and index dtype); explicit zeros are kept. A
        tensor whose arrays no one can change (`keeps_conversions`) keeps its last `KEPT_CONVERSIONS`
        conversions (never pickled): a kernel computing in another format converts such an operand once,
        not on every call."""
        fmt = as_format(format, self.order)
        index_dtype = check_index_dtype(index_dtype)
        if fmt == self._format and index_dtype in (None, self.index_dtype):
            return self
        if not self.keeps_conversions:
            return self._converted(fmt, index_dtype)
        key = (fmt, index_dtype or self.index_dtype)
        kept = self._conversions if self._conversions is not None else {}
        converted = kept.pop(key, None)
        if converted is None:
            converted = self._converted(fmt, index_dtype)
        kept[key] = converted  # the most recent last
        while len(kept) > KEPT_CONVERSIONS:
            del kept[next(iter(kept))]
        self._conversions = kept
        return converted

    @property
    def keeps_conversions(self) -> bool:
        """Whether `to_format` keeps what it converts: the tensor's arrays are read-only and its own (a
        kernel's result, a conversion, a copy), not views of memory its caller can still write (a scipy
        matrix or numpy array it shares)."""
        return st.unchangeable(self._storage)

    def _converted(self, fmt: "Format | Layout", index_dtype) -> "Tensor":
        if index_dtype in (None, self.index_dtype):
            compiled = _natively(self, fmt)  # a counting sort in C, where one applies
            if compiled is not None:
                return compiled
        if fmt.is_dense:
            return Tensor.from_numpy(self.to_numpy(), fmt, fill=self._fill)
        coords, values = self.to_coo()
        return Tensor._from_entries(coords, values, self._shape, fmt, index_dtype, self._fill)

    def prune(self) -> "Tensor":
        """A copy without explicitly stored entries equal to the fill (zeros, by default)."""
        if self._format.is_dense:
            return self
        coords, values = self.to_coo()
        kept = values != self._fill
        return Tensor._from_entries(coords[:, kept], values[kept], self._shape, self._format, self.index_dtype,
                                    self._fill)

    # ----- an array: numpy's operators, each one compiled kernel (operations.py) ------------------------

    __add__, __radd__ = _binary("add"), _binary("add", reflected=True)
    __sub__, __rsub__ = _binary("subtract"), _binary("subtract", reflected=True)
    __mul__, __rmul__ = _binary("multiply"), _binary("multiply", reflected=True)
    __matmul__, __rmatmul__ = _binary("matmul"), _binary("matmul", reflected=True)
    __truediv__ = _binary("divide")

    def __neg__(self):
        return operations.apply("negative", self)

    def sum(self, axis: int | Sequence[int] | None = None):
        """numpy's `sum`: every entry (a number), or along `axis` (one mode or several): a Tensor when the
        summed modes are stored below the kept ones (a CSF tensor summed over its last mode), dense
        otherwise."""
        return operations.apply("sum", self, axis=None if axis is None else _axes(axis))

    @property
    def T(self) -> "Tensor":
        return self.transpose()

    def transpose(self, *axes) -> "Tensor":
        """numpy's `transpose` (mode p of the result is mode axes[p]; reversed by default) over the same
        arrays: only the format's mode order changes, so a CSR matrix's transpose is a CSC matrix."""
        if isinstance(self._format, Layout):
            raise FormatError(f"Expected a tensor stored in a format of levels to transpose, but found the layout "
                              f"{self._format}: convert it with to_format first")
        permutation = _permutation(axes, self.order)
        fmt = Format(self._format.levels, mode_order=[permutation.index(m) for m in self._format.mode_order])
        return Tensor.from_read_only_storage(tuple(self._shape[a] for a in permutation), fmt, self._storage, self._fill)

    def astype(self, dtype) -> "Tensor":
        """The same entries with their values cast as numpy's astype casts them; the index arrays are shared.
        The fill must survive the cast exactly (an inf fill has no int64 counterpart: FormatError)."""
        dtype = check_value_dtype(dtype)
        if dtype == self.dtype:
            return self
        fill = check_fill(self._fill, dtype)
        vals = st.read_only(self._storage.vals.astype(dtype))
        return Tensor.from_read_only_storage(self._shape, self._format, st.Storage(self._storage.levels, vals), fill)

    def __bool__(self) -> bool:
        if self.order:
            raise AutosparseError(f"Expected a tensor of order 0 for a truth value, but found shape {self._shape}: "
                                  f"the truth value of a tensor of several entries is ambiguous")
        return bool(self._storage.vals.any())

    def _refuse_equality(self, other):
        """`==` and `!=` between array operands are refused, not computed: Python's sets, dicts and `in` compare
        with them and need a truth value, which a Tensor of several entries has not (numpy's answer, an
        array, breaks them alike). np.equal and autosparse.array.equal compare entries."""
        if not _is_operand(other):
            return NotImplemented
        raise AutosparseError(f"Expected no == or != on a tensor ({self!r}), but found one: compare entries with "
                              f"np.equal or np.not_equal (or autosparse.array's), or look at the values of A - B")

    __eq__ = __ne__ = _refuse_equality
    __hash__ = object.__hash__  # equality is refused, never value-based: identity hashing stays consistent
    # ordering comparisons compute, as numpy's do: 0/1 values, bool where the result is a numpy array
    __lt__, __le__ = _binary("less"), _binary("less_equal")
    __gt__, __ge__ = _binary("greater"), _binary("greater_equal")

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs and ufunc.__name__ in _ROUTED_UFUNCS:
            return operations.apply(_ROUTED_UFUNCS[ufunc.__name__], *inputs)
        return getattr(ufunc, method)(*(_dense_input(value, ufunc.__name__) for value in inputs), **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.dot and not kwargs:
            return operations.apply("dot", *args)
        if func in (np.sum, np.transpose) and isinstance(args[0], Tensor) and set(kwargs) <= {"axis", "axes"}:
            return getattr(args[0], func.__name__)(*args[1:], *kwargs.values())
        # numpy's own code on the arrays of dense tensors; refused for sparse ones (nested ones: by __array__)
        return func._implementation(*(_dense_input(value, func.__name__) for value in args), **kwargs)


#: numpy's ufuncs that a Tensor computes (called plainly: no out=, where=, nor a method such as reduce), by
#: their names to the hook's operations (operations.OPERATIONS).
_ROUTED_UFUNCS = {name: name for name in operations.UFUNCS - {"abs"}} | {"absolute": "abs"}


def _is_operand(value) -> bool:
    if isinstance(value, (Tensor, np.ndarray, np.generic, int, float, complex, list, tuple)):
        return True
    from .interop import is_scipy  # imported here, and only for other values: interop imports this module

    return is_scipy(value)


def _dense_input(value, function: str):
    """An input of a numpy function that autosparse does not compute: a dense tensor's array, never a
    sparse tensor's."""
    if not isinstance(value, Tensor):
        return value
    if not value.format.is_dense:
        routed = ", ".join(f"np.{name}" for name in sorted(_ROUTED_UFUNCS))
        raise FormatError(f"Expected np.{function} on dense arrays: autosparse computes {routed} (called "
                          f"plainly: no out=, where= nor a method such as reduce), np.dot, np.sum (by axis) and "
                          f"np.transpose on sparse tensors; call to_numpy() to densify {value!r}")
    return value.to_numpy()


# scipy.sparse's methods behind @, * and / that read an unknown operand with np.asanyarray and return
# NotImplemented for a 0-d object array; anywhere else in scipy a sparse tensor refuses as it does for numpy.
_SCIPY_OPERATORS = frozenset({"_matmul_dispatch", "_rmatmul_dispatch", "multiply", "_multiply_2d_with_broadcasting",
                              "_divide"})


def _asked_by_scipy_sparse() -> bool:
    """Whether scipy.sparse called np.asarray on this tensor. scipy's operators (`M @ A`, `M * A`) read an
    operand they do not know with np.asanyarray and defer to its reflected operator only when that gives a
    0-d object array: answering them so runs autosparse's kernel instead of densifying the tensor."""
    caller = sys._getframe(2)  # this <- __array__ <- (numpy, in C) <- the caller
    return caller.f_globals.get("__name__", "").startswith("scipy.sparse") and \
        caller.f_code.co_name in _SCIPY_OPERATORS


def _opaque(tensor: Tensor) -> np.ndarray:
    """A 0-d object array holding the tensor: numpy's answer for an object that is not an array."""
    holder = np.empty((), dtype=object)
    holder[()] = tensor
    return holder


def _axes(axis: int | Sequence[int]) -> tuple[int, ...]:
    try:
        return (int(axis),) if np.ndim(axis) == 0 else tuple(int(a) for a in axis)
    except (TypeError, ValueError):
        raise ShapeError(f"Expected an axis or a sequence of axes, but found {axis!r:.80}") from None


def _permutation(axes: tuple, order: int) -> tuple[int, ...]:
    """numpy's transpose axes, `t.transpose()`, `t.transpose((1, 0))` or `t.transpose(1, 0)`, as a
    permutation of the modes (negative axes count from the end)."""
    if len(axes) == 1 and (axes[0] is None or np.ndim(axes[0]) == 1):
        axes = () if axes[0] is None else tuple(axes[0])
    permutation = tuple(range(order))[::-1] if not axes else tuple(a + order if a < 0 else a for a in _axes(axes))
    if sorted(permutation) != list(range(order)):
        raise ShapeError(f"Expected a permutation of the {order} modes, but found axes {axes}")
    return permutation
