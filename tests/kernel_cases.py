"""Shared machinery of the differential kernel tests: a reference that never touches autosparse, input
cases, format catalogues, deterministic samples of format combinations, and the guard that makes numpy's
and scipy's products raise while a kernel runs.

The reference is plain numpy: the expression is read by the small parser below (independent of
autosparse's own), expanded into a sum of product terms, and each term is computed with `numpy.einsum`
on dense arrays built *before* any Tensor exists. A reduction sums the smallest subexpression holding
its uses (TACO's rule), so each expanded term is summed over the reduction indices it reads and no
others (`y(i) = A(i,j) * x(j) + z(i)` is A·x + z), and a term that lacks an output index is broadcast
along it.
"""

from __future__ import annotations

import contextlib
import itertools
import random
import re
import threading
import zlib
from math import prod
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse._sparsetools

import autosparse as asp

# ----- the guard: no numpy/scipy products while a kernel runs -------------------------------------------

_NUMPY_PRODUCTS = ("einsum", "einsum_path", "dot", "vdot", "inner", "outer", "matmul", "tensordot", "kron")
_SCIPY_METHODS = ("__matmul__", "__rmatmul__", "__mul__", "__rmul__", "__imul__", "dot", "multiply",
                  "_matmul_dispatch", "_rmatmul_dispatch", "_matmul_sparse", "_matmul_vector",
                  "_matmul_multivector", "_mul_scalar", "__add__", "__radd__", "__sub__", "__rsub__",
                  "_add_sparse", "_sub_sparse", "_add_dense", "_sub_dense")
_SPARSETOOLS_WORDS = ("matvec", "matmat", "elmul", "plus", "minus", "binop")  # products and arithmetic


class PeerMathCalled(AssertionError):
    """numpy or scipy computed something during a kernel call."""


_guard = threading.local()


def guard_active() -> bool:
    return getattr(_guard, "active", False)


def _guarded(original, label: str):
    def wrapper(*args, **kwargs):
        if guard_active():
            raise PeerMathCalled(f"{label} was called during a kernel call: the generated code must do the work")
        return original(*args, **kwargs)
    wrapper.__wrapped__ = original
    wrapper.__name__ = getattr(original, "__name__", label)
    return wrapper


def _scipy_classes() -> list[type]:
    found, todo = [], [scipy.sparse._base._spbase]
    while todo:
        cls = todo.pop()
        if cls not in found:
            found.append(cls)
            todo.extend(cls.__subclasses__())
    return found


@contextlib.contextmanager
def peer_math_patched():
    """Replace numpy's and scipy's products by wrappers that raise while `no_peer_math()` is active (and
    call through otherwise, so references can be computed at any time)."""
    with pytest.MonkeyPatch.context() as patch:
        for name in _NUMPY_PRODUCTS:
            patch.setattr(np, name, _guarded(getattr(np, name), f"numpy.{name}"))
        patch.setattr(np.linalg, "multi_dot", _guarded(np.linalg.multi_dot, "numpy.linalg.multi_dot"))
        for cls in _scipy_classes():
            for name in _SCIPY_METHODS:
                if name in vars(cls):
                    patch.setattr(cls, name, _guarded(vars(cls)[name], f"{cls.__name__}.{name}"))
        for name in dir(scipy.sparse._sparsetools):
            if any(word in name for word in _SPARSETOOLS_WORDS):
                original = getattr(scipy.sparse._sparsetools, name)
                patch.setattr(scipy.sparse._sparsetools, name, _guarded(original, f"_sparsetools.{name}"))
        yield


@contextlib.contextmanager
def no_peer_math():
    """Arm the wrappers `peer_math_patched` installed: use around `kernel(...)` only."""
    previous = guard_active()
    _guard.active = True
    try:
        yield
    finally:
        _guard.active = previous


@pytest.fixture(autouse=True, scope="module")
def _peer_math_guard():
    """Autouse in the kernel test modules (imported there): the products are patched for the module and
    raise only inside `no_peer_math()`, i.e. during kernel calls."""
    with peer_math_patched():
        yield


# ----- an independent reader of index notation ----------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(?P<number>\d+\.?\d*)|(?P<name>[A-Za-z_]\w*)|(?P<op>\+=|[=+\-*(),]))")


@dataclass(frozen=True)
class Acc:
    name: str
    indices: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.name}({','.join(self.indices)})"


@dataclass(frozen=True)
class Lit:
    value: float

    def __str__(self) -> str:
        return repr(self.value) if isinstance(self.value, float) else str(self.value)


@dataclass(frozen=True)
class Neg:
    arg: object

    def __str__(self) -> str:
        return f"-({self.arg})" if isinstance(self.arg, Bin) else f"-{self.arg}"


@dataclass(frozen=True)
class Bin:
    op: str  # "+", "-", "*"
    left: object
    right: object

    def __str__(self) -> str:
        left = f"({self.left})" if self.op == "*" and _is_sum(self.left) else str(self.left)
        right = f"({self.right})" if _is_sum(self.right) else str(self.right)
        return f"{left} {self.op} {right}"


def _is_sum(node) -> bool:
    return isinstance(node, Bin) and node.op in "+-"


@dataclass(frozen=True)
class Statement:
    lhs: Acc
    rhs: object

    def __str__(self) -> str:
        return f"{self.lhs} = {self.rhs}"

    @property
    def operands(self) -> dict[str, tuple[str, ...]]:
        return {a.name: a.indices for a in leaves(self.rhs)}

    @property
    def indices(self) -> tuple[str, ...]:
        """Every index variable, output first, then in order of appearance."""
        return tuple(dict.fromkeys((*self.lhs.indices, *(i for a in leaves(self.rhs) for i in a.indices))))


def walk(node):
    yield node
    for child in (node.arg,) if isinstance(node, Neg) else (node.left, node.right) if isinstance(node, Bin) else ():
        yield from walk(child)


def leaves(node) -> list[Acc]:
    if isinstance(node, Acc):
        return [node]
    if isinstance(node, Lit):
        return []
    if isinstance(node, Neg):
        return leaves(node.arg)
    return leaves(node.left) + leaves(node.right)


def read_statement(text: str) -> Statement:
    tokens = [m for m in _TOKEN.finditer(text) if m.group().strip()]
    position = 0

    def peek():
        return tokens[position].group().strip() if position < len(tokens) else None

    def take():
        nonlocal position
        position += 1
        return tokens[position - 1].group().strip()

    def access(name):
        if peek() != "(":
            return Acc(name, ())
        take()
        indices = []
        while peek() != ")":
            if indices:
                assert take() == ","
            indices.append(take())
        take()
        return Acc(name, tuple(indices))

    def factor():
        token = take()
        if token == "-":
            return Neg(factor())
        if token == "(":
            node = expr()
            assert take() == ")"
            return node
        if token[0].isdigit():
            return Lit(float(token) if "." in token else int(token))
        return access(token)

    def term():
        node = factor()
        while peek() == "*":
            take()
            node = Bin("*", node, factor())
        return node

    def expr():
        node = term()
        while peek() in ("+", "-"):
            node = Bin(take(), node, term())
        return node

    lhs = access(take())
    assert take() in ("=", "+="), text  # += into a fresh (zero) result is =
    rhs = expr()
    assert peek() is None, text
    return Statement(lhs, rhs)


def expand(node) -> list[tuple[float, tuple[Acc, ...]]]:
    """`node` as a sum of products: (coefficient, accesses) per term."""
    if isinstance(node, Acc):
        return [(1, (node,))]
    if isinstance(node, Lit):
        return [(node.value, ())]
    if isinstance(node, Neg):
        return [(-c, f) for c, f in expand(node.arg)]
    left, right = expand(node.left), expand(node.right)
    if node.op == "+":
        return left + right
    if node.op == "-":
        return left + [(-c, f) for c, f in right]
    return [(a * b, f + g) for (a, f), (b, g) in itertools.product(left, right)]


def reference(statement: Statement, arrays: Mapping[str, np.ndarray], extents: Mapping[str, int],
              magnitude: bool = False) -> np.ndarray:
    """The statement evaluated with numpy.einsum, one product term at a time (in float64 / complex128),
    each term summed over the reduction indices it uses and no others (TACO's scoping: a reduction
    covers the smallest subexpression holding its uses, so once products are expanded over sums, every
    term lies in the scope of exactly the reductions it reads). With `magnitude`, every coefficient and
    array is replaced by its absolute value: a scale for tolerances where terms cancel."""
    out = statement.lhs.indices
    letters = {index: chr(ord("a") + k) for k, index in enumerate(statement.indices)}
    wide = np.result_type(np.float64, *(a.dtype for a in arrays.values()))
    shape = tuple(extents[i] for i in out)
    total = np.zeros(shape, dtype=wide)
    for coefficient, factors in expand(statement.rhs):
        present = {i for f in factors for i in f.indices}
        kept = tuple(i for i in out if i in present)
        operands = [np.abs(arrays[f.name]) if magnitude else arrays[f.name] for f in factors]
        operands = [np.asarray(a, dtype=wide) for a in operands]
        spec = ",".join("".join(letters[i] for i in f.indices) for f in factors)
        value = np.einsum(f"{spec}->{''.join(letters[i] for i in kept)}", *operands) if factors else \
            np.asarray(1, dtype=wide)
        value = value * (abs(coefficient) if magnitude else coefficient)
        expanded = value.reshape(tuple(extents[i] if i in present else 1 for i in out))
        total = total + np.broadcast_to(expanded, shape)
    return total


# ----- inputs ---------------------------------------------------------------------------------------------

BASE_EXTENTS = {"i": 3, "j": 4, "k": 5, "l": 2}
CASES = ("rect", "empty", "empty-inner", "all-zero", "one-entry", "explicit-zero", "size-1", "full")


@dataclass
class Inputs:
    extents: dict[str, int]
    arrays: dict[str, np.ndarray]           # the dense copies the reference reads
    entries: dict[str, tuple[np.ndarray, np.ndarray]]   # coords, values to build each operand from


def _values(rng: np.random.Generator, count: int, dtype) -> np.ndarray:
    """Multiples of 1/8 in [1/8, 8): products and sums of a few are exact in float32 and float64."""
    return (rng.integers(1, 64, size=count) / 8).astype(dtype)


def make_inputs(statement: Statement, case: str, dtype, seed: int = 0) -> Inputs:
    rng = np.random.default_rng(seed)
    operands = statement.operands
    extents = {i: BASE_EXTENTS.get(i, 3) for i in statement.indices}
    if case == "empty":
        extents[statement.indices[0]] = 0
    elif case == "empty-inner":
        extents[statement.indices[-1]] = 0
    elif case == "size-1":
        extents = {i: 1 for i in extents}
    arrays, entries = {}, {}
    for name, indices in operands.items():
        shape = tuple(extents[i] for i in indices)
        size = prod(shape)
        if case in ("all-zero",) or size == 0:
            flat = np.zeros(0, dtype=np.int64)
        elif case == "one-entry":
            flat = np.array([size - 1])
        elif case in ("full", "size-1"):
            flat = np.arange(size)
        else:
            flat = np.flatnonzero(rng.random(size) < 0.5)
        if not shape:  # a scalar: one value (zero in the all-zero case)
            flat = np.zeros(0 if case == "all-zero" else 1, dtype=np.int64)
        coords = np.array(np.unravel_index(flat, shape) if shape else (), dtype=np.int64).reshape(len(shape),
                                                                                                 len(flat))
        values = _values(rng, len(flat), dtype)
        if case == "explicit-zero" and len(values):
            values[rng.random(len(values)) < 0.4] = 0
            values[0] = 0
        dense = np.zeros(shape, dtype=dtype)
        if len(shape):
            dense[tuple(coords)] = values
        elif len(values):
            dense[()] = values[0]
        arrays[name], entries[name] = dense, (coords, values)
    return Inputs(extents, arrays, entries)


def build_operand(inputs: Inputs, name: str, fmt: str, index_dtype, explicit: bool):
    """The operand as autosparse receives it: a Tensor built from the numpy copy (from its entries, stored
    zeros included, when `explicit`), or a 0-d numpy array for an order-0 operand."""
    dense = inputs.arrays[name]
    if dense.ndim == 0:
        return np.asarray(dense)
    if explicit:
        coords, values = inputs.entries[name]
        return asp.Tensor.from_coo(coords, values, dense.shape, format=fmt, index_dtype=index_dtype)
    return asp.Tensor.from_numpy(dense, format=fmt, index_dtype=index_dtype)


# ----- formats ----------------------------------------------------------------------------------------------

#: Read formats per order: dense, compressed, COO, mode-permuted (CSC-style) and hashed where legal.
READ_FORMATS = {
    1: ("d", "s", "u", "h"),
    2: ("dense", "csr", "dcsr", "coo", "csc", "dcsc", "sd", "u1q0", "dh"),
    3: ("dense", "csf", "dds", "dss", "coo", "s2s0s1", "d1s0s2", "ddh"),
}
#: Write formats (hashed outputs are tested separately: they are not supported yet).
WRITE_FORMATS = {
    1: ("d", "s", "u"),
    2: ("dense", "csr", "dcsr", "coo", "csc", "dcsc", "sd"),
    3: ("dense", "csf", "dds", "coo", "s2s0s1"),
}
#: Hashed results (assembled compressed, then converted): tested in their own kinds, copy-hashed1..3.
HASHED_WRITE_FORMATS = {1: ("h",), 2: ("dh", "h1d0"), 3: ("ddh",)}

#: (value dtype, index dtype) rotated through the combinations so every pair is covered without multiplying
#: the number of kernels compiled.
DTYPES = ((np.float64, np.int32), (np.float32, np.int64), (np.float64, np.int64), (np.float32, np.int32))


def dtype_id(value_dtype, index_dtype) -> str:
    return f"{np.dtype(value_dtype).name}-{np.dtype(index_dtype).name}"


def sample(population: Sequence, count: int, seed: str) -> list:
    """A deterministic sample (all of it when small), in the population's order."""
    population = list(population)
    if len(population) <= count:
        return population
    picked = set(random.Random(zlib.crc32(seed.encode())).sample(range(len(population)), count))
    return [item for k, item in enumerate(population) if k in picked]


def stratified(axes: Sequence[Sequence], count: int, seed: str) -> list:
    """Every combination of `axes` (one value from each) as a pytest param: `count` of them, holding every
    value of every axis at least once and chosen deterministically by `seed`, run by default; the rest are
    marked `grid`, so that `-m grid` runs the remainder of the whole grid."""
    grid = list(itertools.product(*axes))
    chooser = random.Random(zlib.crc32(seed.encode()))
    picked: set[int] = set()
    for axis, values in enumerate(axes):
        for value in values:
            if not any(grid[k][axis] is value or grid[k][axis] == value for k in picked):
                picked.add(chooser.choice([k for k, combination in enumerate(grid) if combination[axis] is value
                                           or combination[axis] == value]))
    rest = [k for k in range(len(grid)) if k not in picked]
    picked.update(chooser.sample(rest, max(0, min(count - len(picked), len(rest)))))
    return [pytest.param(*combination, marks=() if k in picked else pytest.mark.grid)
            for k, combination in enumerate(grid)]


def combos(names: Sequence[str], choices: Sequence[Sequence[str]], count: int | None, seed: str) -> list[dict]:
    """Format assignments {name: format} over the product of `choices` (sampled to `count`)."""
    product = [dict(zip(names, c)) for c in itertools.product(*choices)]
    return product if count is None else sample(product, count, seed)


def format_id(formats: Mapping[str, str], result: str) -> str:
    operands = ",".join(f"{n}={f}" for n, f in formats.items() if n != result)
    return f"{operands}->{result}={formats[result]}" if result in formats else operands


# ----- running and comparing ---------------------------------------------------------------------------------

def tolerance(dtype) -> tuple[float, float]:
    return (1e-4, 1e-4) if np.dtype(dtype) in (np.float32, np.complex64) else (1e-9, 1e-9)


def check_result(result, expected: np.ndarray, scale: np.ndarray, dtype, out_format: str | None,
                 index_dtype=None) -> None:
    """`result` (a Tensor, or a number for order 0) equals `expected` within tolerance, has the requested
    format and dtype, and its storage is valid for its format."""
    rtol, atol = tolerance(dtype)
    atol = atol * max(1.0, float(np.max(scale, initial=0.0)))
    if expected.ndim == 0:
        assert isinstance(result, (int, float, complex)), type(result)
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=atol)
        return
    dense_format = asp.Format(out_format or "dense", order=expected.ndim).is_dense
    if dense_format and (out_format or isinstance(result, np.ndarray)):
        assert isinstance(result, np.ndarray), type(result)  # a dense result is an array, not a copy
        assert result.shape == expected.shape and result.dtype == np.dtype(dtype), (result.shape, result.dtype)
        np.testing.assert_allclose(result, expected, rtol=rtol, atol=atol)
        return
    assert isinstance(result, asp.Tensor), type(result)
    assert result.shape == expected.shape
    if out_format is not None:
        assert result.format == asp.Format(out_format, order=expected.ndim), (result.format, out_format)
    assert result.dtype == np.dtype(dtype), (result.dtype, dtype)
    if not result.format.is_dense:
        # int64 when a sparse operand uses it (a dense operand has no index arrays to go by)
        allowed = (np.int64,) if index_dtype == np.int64 else (np.int32, np.int64)
        assert result.index_dtype in allowed, (result.index_dtype, index_dtype)
    # what the kernel assembled must pass the same validation as arrays from outside
    try:
        asp.Tensor(result.shape, result.format, [dict(level) for level in result.levels], np.array(result.vals))
    except asp.FormatError as error:
        raise AssertionError(f"the kernel's output is not valid {result.format} storage: {error}") from None
    np.testing.assert_allclose(result.to_numpy(), expected, rtol=rtol, atol=atol)


def run_differential(expression: str, formats: Mapping[str, str], case: str, value_dtype, index_dtype,
                     seed: int = 0, schedule=None, num_threads=None):
    """Compile `expression`, run it on the `case` inputs and compare with the numpy reference."""
    statement = read_statement(expression)
    inputs = make_inputs(statement, case, value_dtype, seed)
    expected = reference(statement, inputs.arrays, inputs.extents)
    scale = reference(statement, inputs.arrays, inputs.extents, magnitude=True)
    explicit = case == "explicit-zero"
    operands = {name: build_operand(inputs, name, formats.get(name, "dense"), index_dtype, explicit)
                for name in statement.operands}
    kernel = asp.compile(expression, formats=dict(formats), schedule=schedule, num_threads=num_threads)
    with no_peer_math():
        result = kernel(**operands)
    literals = [node.value for node in walk(statement.rhs) if isinstance(node, Lit)]
    result_dtype = np.result_type(*(inputs.arrays[n].dtype for n in statement.operands), *literals)
    sparse = [n for n, i in statement.operands.items() if i and not asp.Format(formats.get(n, "dense"),
                                                                               order=len(i)).is_dense]
    check_result(result, expected, scale, result_dtype, formats.get(statement.lhs.name, kernel.result_format),
                 np.dtype(index_dtype) if sparse else None)
    return result


def expect_schedule_error(expression: str, formats: Mapping[str, str], schedule, words: Sequence[str]) -> None:
    """Compiling and lowering `expression` under `schedule` raises a ScheduleError whose message has each
    of `words` (the command, the variable, the rule)."""
    with pytest.raises(asp.ScheduleError) as raised:
        kernel = asp.compile(expression, formats=dict(formats), schedule=schedule)
        kernel.source  # noqa: B018 - lowering checks what only the loops' shapes reveal
    for word in words:
        assert word in str(raised.value), (word, str(raised.value))


def bug(reason: str, raises=None):
    """A strict xfail for a known compiler bug: when the bug is fixed the test fails, so the mark goes."""
    return pytest.mark.xfail(strict=True, raises=raises, reason=f"BUG: {reason}")


# ----- the catalogue of expressions and their format grids -----------------------------------------------------

SMALL_CASES = CASES
BIG_CASES = tuple(c for c in CASES if c != "full")

_E1 = READ_FORMATS[1]
_E2 = ("dense", "csr", "dcsr", "coo", "csc", "dh")
_R2, _W2 = READ_FORMATS[2], WRITE_FORMATS[2]
_R3, _W3 = READ_FORMATS[3], WRITE_FORMATS[3]


def _rotating(names: Sequence[str], choices: Sequence[Sequence[str]], outputs: Sequence[str], result: str,
              count: int | None, seed: str, expression: str | None = None) -> list[dict]:
    """The product of the operands' choices (sampled to `count`, from the combinations whose storage orders
    are concordant when `expression` is given), each given one output format in turn."""
    picked = combos(names, choices, None, seed)
    if expression is not None:
        picked = [c for c in picked if not cyclic(expression, c)]
    picked = picked if count is None else sample(picked, count, seed)
    if not outputs:  # an order-0 result has no format to choose
        return picked
    return [{**c, result: outputs[n % len(outputs)]} for n, c in enumerate(picked)]


def _all_outputs(fixed: Mapping[str, str], outputs: Sequence[str], result: str) -> list[dict]:
    return [{**fixed, result: out} for out in outputs]


@dataclass(frozen=True)
class Kind:
    """One kind of kernel: its expression and the format assignments it is tested with."""

    name: str
    expression: str
    grid: tuple
    cases: tuple[str, ...]


def _kind(name: str, expression: str, grid: list[dict], cases=BIG_CASES) -> Kind:
    """Duplicates removed, order kept."""
    unique = list({tuple(sorted(g.items())): g for g in grid}.values())
    return Kind(name, expression, tuple(unique), cases)


def kinds() -> list[Kind]:
    out = []
    # copies between all format pairs, orders 1-3
    for order, idx in ((1, "i"), (2, "i,j"), (3, "i,j,k")):
        grid = [{"A": a, "B": b} for a in READ_FORMATS[order] for b in WRITE_FORMATS[order]]
        out.append(_kind(f"copy{order}", f"B({idx}) = A({idx})", grid, SMALL_CASES))
        grid = [{"A": a, "B": b} for a in READ_FORMATS[order] for b in HASHED_WRITE_FORMATS[order]]
        out.append(_kind(f"copy-hashed{order}", f"B({idx}) = A({idx})", grid, BIG_CASES))
    # element-wise, two operands: every pair of inputs (output rotating), and every output for one pair
    for op, word in (("+", "add"), ("-", "sub"), ("*", "mul")):
        grid = _rotating("AB", (_E1, _E1), WRITE_FORMATS[1], "C", None, word)
        out.append(_kind(f"{word}1", f"C(i) = A(i) {op} B(i)", grid, SMALL_CASES))
        grid = _rotating("AB", (_E2, _E2), _W2, "C", None, word) + _all_outputs({"A": "csr", "B": "dcsr"}, _W2, "C")
        out.append(_kind(f"{word}2", f"C(i,j) = A(i,j) {op} B(i,j)", grid, SMALL_CASES))
    # a product of two operands plus a third, order 1: every kind of level meets every other
    grid = _rotating("ABC", (_E1, _E1, _E1), WRITE_FORMATS[1], "D", 24, "mul-add1")
    out.append(_kind("mul-add1", "D(i) = A(i) * B(i) + C(i)", grid, SMALL_CASES))
    for op, word in (("+", "add"), ("*", "mul")):
        expression = f"C(i,j,k) = A(i,j,k) {op} B(i,j,k)"
        out.append(_kind(f"{word}3", expression, _rotating("AB", (_R3, _R3), _W3, "C", 12, word + "3", expression)))
    # element-wise, three operands
    for name, expression in (("add3ops", "D(i,j) = A(i,j) + B(i,j) + C(i,j)"),
                             ("sub3ops", "D(i,j) = A(i,j) - B(i,j) - C(i,j)"),
                             ("mul3ops", "D(i,j) = A(i,j) * B(i,j) * C(i,j)"),
                             ("mul-sub", "D(i,j) = A(i,j) * B(i,j) - C(i,j)"),
                             ("a*(b+c)", "D(i,j) = A(i,j) * (B(i,j) + C(i,j))")):
        grid = _rotating("ABC", (_E2, _E2, _E2), _W2, "D", 13, name, expression)
        out.append(_kind(name, expression, grid + [{"A": "csr", "B": "csc", "C": "csr", "D": "csr"}]))
    out.append(_kind("dot", "a() = b(i) * c(i)", combos("bc", (_E1, _E1), None, "dot"), SMALL_CASES))
    out.append(_kind("spmv", "y(i) = A(i,j) * x(j)", _rotating("Ax", (_R2, ("d", "s", "u")), ("d", "s"), "y",
                                                            None, "spmv")))
    sparse2 = tuple(f for f in _R2 if f != "dense")
    out.append(_kind("spmm", "C(i,k) = A(i,j) * B(j,k)",
                     _rotating("AB", (sparse2, ("dense", "d1d0")), ("dense", "d1d0", "csr"), "C", 12, "spmm")))
    out.append(_kind("spgemm-dense", "C(i,j) = A(i,k) * B(k,j)",
                     _rotating("AB", (_R2, _R2), ("dense",), "C", 14, "spgemm-dense")))
    out.append(_kind("spgemm-sparse", "C(i,j) = A(i,k) * B(k,j)",
                     _rotating("AB", (_R2, _R2), tuple(f for f in _W2 if f != "dense"), "C", 24, "spgemm-sparse")
                     + _all_outputs({"A": "csr", "B": "csr"}, _W2, "C")))
    out.append(_kind("sddmm", "A(i,j) = B(i,j) * C(i,k) * D(k,j)",
                     _rotating("BCD", (("csr", "dcsr", "coo", "csc", "dh", "dense"), ("dense", "csr"),
                                       ("dense", "d1d0", "csc")), ("dense", "csr", "dcsr", "coo"), "A", 14, "sddmm",
                               "A(i,j) = B(i,j) * C(i,k) * D(k,j)")))
    out.append(_kind("ttv", "A(i,j) = B(i,j,k) * c(k)",
                     _rotating("Bc", (_R3, ("d", "s")), ("dense", "csr", "dcsr", "coo"), "A", 14, "ttv")))
    out.append(_kind("ttm", "A(i,j,k) = B(i,j,l) * C(k,l)",
                     _rotating("BC", (_R3, ("dense", "csr", "csc")), ("dense", "csf", "dds", "coo"), "A", 12, "ttm")))
    out.append(_kind("mttkrp", "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)",
                     _rotating("BCD", (_R3, ("dense", "csr", "d1d0"), ("dense", "csr", "d1d0")), ("dense", "csr"),
                               "A", 12, "mttkrp", "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)")))
    out.append(_kind("inner3", "a() = B(i,j,k) * C(i,j,k)",
                     _rotating("BC", (_R3, _R3), (), "a", 14, "inner3", "a() = B(i,j,k) * C(i,j,k)")
                     + [{"B": "csf", "C": "s2s0s1"}]))
    out.append(_kind("scale-operand", "A(i,j) = s * B(i,j)",
                     _rotating("sB", (("dense",), _R2), _W2, "A", None, "scale-operand")))
    out.append(_kind("scale-literal", "A(i,j) = 2 * B(i,j)", _rotating("B", (_R2,), _W2, "A", None, "scale-literal")))
    return out


def storage_edges(indices: Sequence[str], fmt: str) -> set[tuple[str, str]]:
    """(outer, inner) pairs of index variables that the format's level order imposes on loops."""
    modes = asp.Format(fmt, order=len(indices)).mode_order
    ordered = [indices[m] for m in modes]
    return set(zip(ordered, ordered[1:]))


def cyclic(expression: str, formats: Mapping[str, str]) -> bool:
    """Whether the operands' storage orders admit no common loop order (the documented ScheduleError)."""
    statement = read_statement(expression)
    edges = set()
    for name, indices in statement.operands.items():
        if indices:
            edges |= storage_edges(indices, formats.get(name, "dense"))
    nodes = set(statement.indices)
    while nodes:
        free = [n for n in nodes if not any(b == n and a in nodes for a, b in edges)]
        if not free:
            return True
        nodes -= set(free)
    return False


# ----- isolation for cases that can corrupt the heap --------------------------------------------------------------

class IsolatedFailure(AssertionError):
    """What a forked run reported: an exception (type and message), a signal or a timeout."""


def run_isolated(function, timeout: int = 10) -> None:
    """Run `function` in a forked child, so a kernel that corrupts memory or never ends cannot take the
    test session down with it; re-raise what went wrong there as `IsolatedFailure`. (The child runs its kernels
    on one thread once its parent loaded OpenMP kernels: `config.forked_after_openmp`.)"""
    import os
    import signal
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running any of the parent's cleanup
        os.close(read)
        message = b""
        try:
            signal.alarm(timeout)
            function()
        except BaseException as error:  # noqa: BLE001 - everything is reported to the parent
            message = f"{type(error).__name__}: {error}".encode(errors="replace")[:20000] or b"?"
        os.write(write, message)
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise IsolatedFailure(f"the kernel process died of {name}" + (" (timeout)" if name == "SIGALRM" else ""))
    if chunks:
        raise IsolatedFailure(b"".join(chunks).decode(errors="replace"))


def strided_index_arrays(tensor) -> bool:
    """Whether a Tensor holds a non-contiguous index array (what BUG_COO_INT64 was about)."""
    return any(not array.flags.c_contiguous for level in tensor.levels for array in level.values())


def sddmm_in_loop_order(m: scipy.sparse.csr_array, c: np.ndarray, d: np.ndarray, dtype=np.float64) -> np.ndarray:
    """SDDMM's values B(i,j) * sum_k C(i,k) D(k,j), each sum added in k's order as the plain loop adds it:
    the reference a kernel must equal bit for bit."""
    expected = np.empty(m.nnz, dtype=dtype)
    for i in range(m.shape[0]):
        for p in range(m.indptr[i], m.indptr[i + 1]):
            total = dtype(0)
            for k in range(c.shape[1]):
                total += c[i, k] * d[k, m.indices[p]]
            expected[p] = m.data[p] * total
    return expected
