"""Lazy arrays: `lazy(x)` records the operations on it as a graph, and `compute(*lazies)` runs the graph as
few kernels as the fusion rule allows (plan.py), instead of one kernel per operation.

Each operation builds its node with the operators' own builders (api/arrays.py) on stand-ins of the
operands' shapes, so a node's shape is checked when it is made, exactly as the eager operation checks it,
and keeps the one assignment that computes it from its inputs (named A, B, D): plan.py inlines those
assignments into each other. A node also knows its dtype (numpy's, from the operator registry) and its
fill, the value of every entry its inputs' fills give (`exp` of a fill-0 operand has fill 1). A loop records
the same operations on like operands every iteration, so a node is built, parsed and typed once per
signature (`_signature`) and made from the one kept after that: recording costs microseconds, not a parse.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache, reduce
from math import prod

import numpy as np

from .. import api
from ..api.arrays import Shaped, build, numpy_bool, weakly_typed
from ..notation import Access, Assignment, parse, walk
from ..notation.extents import index_extents
from ..notation.operators import REDUCTIONS, REGISTRY, fold
from ..tensor import Tensor
from ..tensor.dtypes import promote_value_dtype
from ..tensor.interop import is_scipy
from . import dense
from .plan import leaf_kind, plan

_NUMBERS = (bool, int, float, complex, np.number, np.bool_)

#: Entries each of record's caches keeps (texts parsed, nodes made): a loop records a few, every iteration.
KEPT = 256


@dataclass(frozen=True, eq=False)
class Node:
    """One value of a lazy program: a leaf (`value` given, `assignment` None) or the `assignment` of the
    operation `op` computing it from `inputs`, named A, B, D in it. Compared by identity."""

    shape: tuple[int, ...]
    dtype: np.dtype
    fill: object
    value: object = None
    operand: object = None  # a leaf's value as the kernels read it (`leaf`)
    op: str = ""
    assignment: Assignment | None = None
    inputs: tuple[Node, ...] = field(default=())
    kept: tuple[int, ...] = ()  # a reduction's keepdims: its modes of extent 1 that broadcast ...
    squeezed: Node | None = None  # ... read as this node, the reduction without them

    @property
    def is_leaf(self) -> bool:
        return self.assignment is None


def leaf(value) -> Node:
    """A leaf holding a Tensor, numpy array or scipy matrix as it is, anything else as a numpy array."""
    if not (isinstance(value, (Tensor, np.ndarray)) or is_scipy(value)):
        value = np.asarray(value)
    promote_value_dtype(value.dtype)  # strings and objects are refused when recorded, as eagerly
    return Node(tuple(value.shape), np.dtype(value.dtype), value.fill if isinstance(value, Tensor) else 0, value,
                operand_of(value))


def operand_of(value):
    """A leaf's value as the kernels read it: the value, but for a scipy CSR or CSC matrix the Tensor wrapping
    its arrays, made once per leaf: a kernel would convert the matrix on every call (checking its arrays
    again), and a loop computes with one lifted matrix many times."""
    return Tensor.from_scipy(value) if is_scipy(value) and value.format in ("csr", "csc") and value.ndim == 2 \
        else value


class LazyArray:
    """An array not computed yet: operators and autosparse.array functions on it record nodes;
    `autosparse.compute` computes them."""

    __array_ufunc__ = None  # `ndarray + lazy` is lazy: numpy defers to the reflected operators below

    def __init__(self, node: Node):
        self.node = node

    shape = property(lambda self: self.node.shape)
    dtype = property(lambda self: self.node.dtype)
    fill = property(lambda self: self.node.fill)
    ndim = property(lambda self: len(self.node.shape))
    T = property(lambda self: record("matrix_transpose", (self,)))

    def __repr__(self) -> str:
        return f"LazyArray({self.node.op or 'leaf'}, shape={self.shape}, dtype={self.dtype})"

    def __add__(self, other): return record("add", (self, other))
    def __radd__(self, other): return record("add", (other, self))
    def __sub__(self, other): return record("subtract", (self, other))
    def __rsub__(self, other): return record("subtract", (other, self))
    def __mul__(self, other): return record("multiply", (self, other))
    def __rmul__(self, other): return record("multiply", (other, self))
    def __truediv__(self, other): return record("divide", (self, other))
    def __rtruediv__(self, other): return record("divide", (other, self))
    def __matmul__(self, other): return record("matmul", (self, other))
    def __rmatmul__(self, other): return record("matmul", (other, self))
    def __neg__(self): return record("negative", (self,))
    def __lt__(self, other): return record("less", (self, other))
    def __le__(self, other): return record("less_equal", (self, other))
    def __gt__(self, other): return record("greater", (self, other))
    def __ge__(self, other): return record("greater_equal", (self, other))

    def sum(self, axis=None):
        return record("sum", (self,), axis=axis)

    def _unknown(self, *_):
        raise TypeError("A LazyArray has no value until it is computed: call autosparse.compute on it first "
                        "(inside a fused function, return it instead; its control flow cannot read its arrays' "
                        "values)")

    __bool__ = __float__ = __int__ = __index__ = __complex__ = __array__ = _unknown


def lazy(value) -> LazyArray:
    """`value` (a Tensor, numpy array, scipy matrix or number) as a LazyArray; a LazyArray as it is."""
    return value if isinstance(value, LazyArray) else LazyArray(leaf(value))


def record(name: str, operands: tuple, **options) -> LazyArray:
    """The node of `name` of the operands (LazyArrays or values, numbers typed weakly beside the others'
    dtypes), checked by the builder that the eager operation uses: once per `_signature` of the operation,
    then made from the one kept (a loop records the same operations on like operands every iteration)."""
    values = [o if isinstance(o, (LazyArray, *_NUMBERS)) else lazy(o) for o in operands]
    dtypes = [value.dtype for value in values if isinstance(value, LazyArray)]
    inputs = [(value if isinstance(value, LazyArray) else lazy(weakly_typed(value, dtypes))).node for value in values]
    signature = _signature(name, inputs, options)
    made = _made.get(signature) if signature is not None else None
    if made is not None:
        picks, assignment, shape, dtype, fill = made
        return LazyArray(Node(shape, dtype, fill, op=name, assignment=assignment,
                              inputs=tuple(inputs[k] for k in picks)))
    stand_ins = [node.value if node.is_leaf else Shaped(node.shape, node.dtype, node.kept, node.squeezed)
                 for node in inputs]
    expression, named = build(name, tuple(stand_ins), **options)
    # an array squeezed to broadcast is a leaf of its own, a node's stand-in the node it names; every other
    # value is its input's (the last one, for a value given twice)
    given = {id(stand_in): k for k, stand_in in enumerate(stand_ins)}
    picks = tuple(given.get(id(value)) for value in named.values())
    nodes = [inputs[k] if k is not None else value.of if isinstance(value, Shaped) else leaf(value)
             for k, value in zip(picks, named.values())]
    assignment, shape, count = _shaped(expression, tuple((name, node.shape) for name, node in zip(named, nodes)))
    dtype, fill = _dtype_and_fill(name, nodes, options, count)
    if not options.get("keepdims"):
        if signature is not None and None not in picks:
            if len(_made) >= KEPT:
                _made.clear()
            _made[signature] = picks, assignment, shape, dtype, fill
        return LazyArray(Node(shape, dtype, fill, op=name, assignment=assignment, inputs=tuple(nodes)))
    squeezed = record(name, operands, **{**options, "keepdims": False}).node
    read = next(n.indices for n in walk(assignment.rhs) if isinstance(n, Access) and n.tensor == "A")
    kept = tuple(m for m, index in enumerate(assignment.lhs.indices) if index not in read)
    return LazyArray(Node(shape, dtype, fill, op=name, assignment=assignment, inputs=tuple(nodes), kept=kept,
                          squeezed=squeezed))


#: The nodes `record` made, by `_signature`: which inputs the assignment reads, the assignment, and the
#: result's shape, dtype and fill; emptied when it holds KEPT.
_made: dict = {}


def _signature(name: str, inputs: list[Node], options: dict) -> tuple | None:
    """What the builder and a node's dtype and fill read of an operation: its name and options, each
    input's kind (a leaf's `leaf_kind`, shape, dtype and fill; a node's shape, dtype and fill),
    and which inputs are one value (the builder names such a value once). None where the options are no
    values (lists) or ask for keepdims, or an input keeps modes: such nodes are made anew each time."""
    if options.get("keepdims") or any(node.kept for node in inputs):
        return None
    try:
        settings = tuple(sorted(options.items()))
        hash(settings)
    except TypeError:
        return None
    first: dict = {}
    kinds = tuple(((leaf_kind(node.value) if node.is_leaf else None), node.shape, node.dtype, node.fill,
                   first.setdefault(id(node.value) if node.is_leaf else id(node), k))
                  for k, node in enumerate(inputs))
    return name, settings, kinds


@lru_cache(maxsize=KEPT)
def _shaped(expression: str, shapes: tuple) -> tuple[Assignment, tuple[int, ...], int]:
    """The builder's text parsed, the result's shape and how many coordinates it reduces over, for the
    operands' `shapes` (name, shape): each depends on these alone, so a loop parses each text once."""
    assignment = _parsed(expression)
    extents = index_extents(assignment, dict(shapes))
    shape = tuple(extents[index] for index in assignment.lhs.indices)
    return assignment, shape, prod(extent for index, extent in extents.items() if index not in assignment.lhs.indices)


@lru_cache(maxsize=KEPT)
def _parsed(expression: str) -> Assignment:
    return parse(expression)


def _dtype_and_fill(name: str, inputs: list[Node], options: dict, count: int):
    """numpy's result dtype and the fill of the result: the element-wise operator applied to the inputs'
    fills, then, for a reduction or a product over `count` coordinates, reduced `count` times."""
    element, reduction = _operators(name, options)
    dtypes, fills = [node.dtype for node in inputs], [node.fill for node in inputs]
    if element is None:
        dtype, fill = dtypes[0], fills[0]
    elif len(inputs) != element.arity:  # an einsum's product of one factor, or more than its operator takes
        dtype = reduce(lambda a, b: np.dtype(element.result_dtype(a, b)), dtypes)
        fill = reduce(lambda a, b: fold(element, a, b), fills)
    else:
        dtype, fill = np.dtype(element.result_dtype(*dtypes)), fold(element, *fills)
    if reduction is None:
        return dtype, fill
    dtype = np.dtype(reduction.result_dtype(dtype, dtype))
    if count == 0:
        return dtype, reduction.identity.value(dtype)
    if reduction.idempotent:
        return dtype, fill
    return dtype, fill * count if reduction.name == "add" else fill ** count


def _operators(name: str, options: dict):
    """The element-wise operator and the reduction operator of an operation, each None where it has none."""
    if name in ("matmul", "dot", "tensordot", "vecdot", "einsum"):
        return REGISTRY[options.get("multiply", "multiply")], REGISTRY[options.get("add", "add")]
    if name in REDUCTIONS:
        return None, REDUCTIONS[name]
    return REGISTRY.get(name), None


_tracing: ContextVar[bool] = ContextVar("autosparse_tracing", default=False)


@contextmanager
def tracing():
    """While a fused function is traced (fused.py): `compute` is refused, as it would run on the trace's
    values once and its results be read as constants by every later call."""
    token = _tracing.set(True)
    try:
        yield
    finally:
        _tracing.reset(token)


def compute(*lazies, schedule=None):
    """Each lazy array computed (a tuple, in order), by the kernels of plan.py's assignments: a dense result is
    a numpy array, a sparse one a Tensor, an order-0 one a number; a comparison's, a logical function's, any's or
    all's is numpy's bool where it is dense. A LazyArray's leaf, and any value that is no LazyArray, is given back
    as it is, so that one program runs eagerly or lazily by what it lifts alone (examples/). `schedule="auto"`
    autoschedules each step as `evaluate` does (its choice kept per step and operands; a step the autoschedulers
    do not read is refused by name); the plan itself is decided on default schedules (fusion.py)."""
    if _tracing.get():
        raise TypeError("compute was called inside a fused function while it was traced: a fused function is "
                        "recorded once and replayed, so return the arrays it computes instead")
    roots = [lazy(value).node for value in lazies]
    values: dict[Node, object] = {}
    for step in plan(roots):
        operands = {f"T{k}": values.get(node, node.operand) for k, node in enumerate(step.operands)}
        values[step.target] = computed(step.expression, operands, schedule, step.target.shape, step.target.dtype)
    return tuple(given if not isinstance(given, LazyArray) else
                 as_result(values[node], node.shape, node.dtype) if node in values else node.value
                 for given, node in zip(lazies, roots))


def computed(expression: str, operands: dict, schedule, shape: tuple, dtype: np.dtype):
    """A step's value as later steps read it (`as_operand`): by numpy where every operand is a numpy array and
    the step a product (dense.py: BLAS), unless a schedule is asked for; otherwise by evaluate's kernel."""
    value = dense.step(expression, operands) if schedule is None else None
    if value is None:
        value = api.evaluate(expression, schedule=schedule, operands=operands)
    return as_operand(value, shape, dtype)


def as_operand(value, shape: tuple, dtype: np.dtype):
    """A step's result as later steps read it: an order-0 one, which evaluate gives as a Python number, as the
    array of order 0 of its dtype; a kernel takes a number by its general path, converting it on every call
    (CG's step sizes: a fused iteration on bcsstk13 took twice the eager one's time that way)."""
    return value if shape else np.asarray(value, dtype)


def as_result(value, shape: tuple, dtype: np.dtype):
    """A step's result as compute gives it: an order-0 one as a number, a logical one as numpy's bool where
    it is dense."""
    value = value if shape else value.item()
    return numpy_bool(value) if dtype == bool else value
