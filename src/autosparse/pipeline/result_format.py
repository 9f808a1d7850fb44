"""Assignment + the operands' formats -> the result's format, when the caller gives none.

A result is sparse when its sparse operands bound its pattern, as Finch and pydata/sparse decide:

- a sparse operand bounds the pattern over all of its indices; a dense operand, a literal or a scalar
  bounds nothing;
- a product is bounded over an index when any factor is (its pattern is the intersection of theirs:
  CSR × CSR SpGEMM, `A(i,j) * B(i,j)` with B dense, TTV, scaling by a literal); so is any other binary
  operation that is not a sum (a quotient by a dense operand or a scalar keeps its numerator's pattern);
- a sum or difference is bounded over an index only when every term is (its pattern is the union: a
  dense term, a literal, or a term that broadcasts over an index it lacks makes that index dense);
- a scoped or implicit reduction projects the pattern onto the indices it keeps. Where one sparse
  operand is summed over an index stored above a kept one, the projection is the union of its slices
  over a whole dimension (SpMV over CSC): stored densely. With two or more sparse factors it is a
  product's (SpGEMM in any storage order): kept.

Each index of the result takes the level that stores it in a bounding operand: a compressed level of a
factor, or of a term of a sum whose terms are all bounded, made one the kernel can append to (a COO
operand's non-unique or singleton level becomes compressed); a dense level otherwise (CSR's rows).

A result level whose index is kept below a summed one in a product of several sparse factors (SpGEMM's
columns below k) is gathered out of order into a workspace: it is left unordered (`ds~`, as scipy's `A @ B`
leaves its rows), and a later kernel that must merge it sorts it first (`pipeline.conversions`). So is a
sum's or difference's level when a term stores its index in no order: the default schedule gathers such a
sum through a workspace in any order rather than sort the term (`cin.concretize.unordered_merges`). Other
operands' unordered levels count as ordered here: a kernel merging them (a product) computes in their
sorted formats.

The result is sparse when its pattern is bounded over every index and one of its levels is compressed,
or when it has several indices, each bounded, though stored densely in every operand (CSR × CSC, whose
columns are bounded by B's compressed k below its dense j): then its last level is made compressed.
It is dense otherwise: SpMV over CSR (whose rows are a dense level), MTTKRP, anything added to a dense
term or a literal. So is it when an operand is blocked (BCSR: its products' rows arrive block column by
block column) or has sparse levels out of increasing order that no sort restores (decreasing or hashed),
which a kernel walks out of the order it appends in.

Its mode order is the operands' storage orders merged (stable, ties in the result's index order), so
the kernel appends concordantly with the default loop order; where the operands' orders are cyclic,
the result's own index order.

    CSR × CSR -> ds~     CSR + CSR -> csr     DCSR × DCSR -> ss~     CSC × CSC -> d1s0~
    CSR + CSC -> dcsr    CSR × CSC -> ds~     COO × COO -> ss~       sss tensor × c(k) over k -> ss
    ds~ + CSR -> ds~     ds~ * CSR -> csr (element-wise)     2 * ds~ -> ds~
    SpMV over CSR or CSC -> dense, over DCSR or COO -> "s"       A(i,j) * B(i,j), B dense -> A's format

Other operators read their algebra (`notation.fills`) from the operands' fills (0 where not given): the
`role` of an absent child decides. Where some child ANNIHILATES (its fill decides the node: `*` over 0,
`A(i,j) + x(j)` over +inf, a mask `pattern(M)`), the node is an intersection, bounded by those children;
otherwise a union (`+` over 0, `maximum(A, B)` over 0). A node with one child that reads operands (`-A`,
`2 * A`, `A + 1`, `exp(A)`) keeps that child's pattern only where it keeps its fill (`2 * A`, `-A`), and
is dense where it moves it (`A + 1`, `exp(A)` over 0: its value where A is absent is no longer A's fill);
`pattern(M)` reads no value and keeps M's pattern whatever M's fill. A reduction projects the pattern only
where its body's fill is the reduction's identity (`sum` over 0, `min` over +inf); over any other fill
every slice reduces to a value, and the result is dense. The result's fill is its right-hand side's
(`notation.fills.result_fill`): a min-plus SpMV over DCSR with +inf fills is sparse with fill +inf.
"""

from __future__ import annotations

import functools

from dataclasses import dataclass
from typing import Mapping

from ..format import Capability, Compressed, Dense, Format, Layout, Level
from ..format.spec import as_format
from ..errors import ScheduleError
from ..notation import Assignment, accesses
from ..notation import ast as notation
from ..notation.ast import IndexVar, operator_of, reduction_of
from ..notation.fills import Role, fill_of, role
from ..notation.operators import Value


@dataclass(frozen=True, slots=True)
class _Mode:
    """What the pattern of a subexpression is over one of its indices: `bounded` by sparse operands, and
    the compressed level of an operand that stores it (None: stored densely), below the levels of the
    indices `above`."""

    bounded: bool
    level: Level | None
    above: frozenset[IndexVar] = frozenset()
    gathered: bool = False  # kept below a summed index: products of several factors arrive in any order
    unordered: bool = False  # a term of a sum stores it in no order (`ds~`): the sum is gathered in any order


_UNBOUNDED = _Mode(False, None)


def inferred_result_format(assignment: Assignment, formats: Mapping[str, "Format | Layout"],
                           fills: Mapping[str, Value] | None = None) -> Format:
    """The result's format by the rule of the module docstring (`formats` holds every operand's; `fills`
    the operands' fills, 0 where not given)."""
    names = {a.tensor for a in accesses(assignment.rhs)}
    fills = {} if fills is None else fills
    return _inferred(assignment, tuple(sorted((n, f) for n, f in formats.items() if n in names)),
                     tuple(sorted((n, f) for n, f in fills.items() if n in names and f != 0)))


@functools.lru_cache(maxsize=1024)  # `evaluate` infers on every call: the walk is paid once per case
def _inferred(assignment: Assignment, operand_formats: tuple, operand_fills: tuple) -> Format:
    formats = {name: in_increasing_order(fmt) for name, fmt in operand_formats}
    order = len(assignment.lhs.indices)
    reads = [formats[a.tensor] for a in accesses(assignment.rhs)]
    if any(isinstance(fmt, Layout) or not _in_increasing_order(fmt) for fmt in reads):
        return as_format("dense", order)
    modes = _result_modes(assignment, dict(operand_formats), dict(operand_fills))
    bounded = all(modes.get(index, _UNBOUNDED).bounded for index in assignment.lhs.indices)
    if not order or not bounded:
        return as_format("dense", order)
    fmt = _built(assignment, formats, modes)
    return sparse_result_format(assignment, formats, dict(operand_fills)) if fmt.is_dense and order > 1 else fmt


def sparse_result_format(assignment: Assignment, formats: Mapping[str, "Format | Layout"],
                         fills: Mapping[str, Value] | None = None) -> Format:
    """The format the rule builds for the result, its last level compressed where the rule makes every
    level dense: the sparse format to suggest in place of a dense result too large for memory."""
    fmt = _built(assignment, formats, _result_modes(assignment, formats, {} if fills is None else fills))
    if not fmt.is_dense:
        return fmt
    return Format((*fmt.levels[:-1], Compressed()), mode_order=fmt.mode_order)


def _built(assignment: Assignment, formats: Mapping[str, "Format | Layout"],
           modes: Mapping[IndexVar, _Mode]) -> Format:
    """The result's levels, each the appendable kind of the operand level that stores its index, in the
    operands' storage order."""
    indices = _storage_order(assignment, formats)
    levels = [_appendable(modes.get(index, _UNBOUNDED).level) for index in indices]
    last = modes.get(indices[-1], _UNBOUNDED) if indices else _UNBOUNDED
    if (last.gathered or last.unordered) and levels[-1] == Compressed():
        levels[-1] = Compressed(order="unordered")  # left as gathered: sorted where a later kernel merges it
    return Format(tuple(levels), mode_order=tuple(assignment.lhs.indices.index(index) for index in indices))


def _result_modes(assignment: Assignment, formats: Mapping[str, "Format | Layout"],
                  fills: Mapping[str, Value]) -> dict[IndexVar, _Mode]:
    """The pattern of the right-hand side over the result's indices, its implicit reductions (sums)
    projected where its fill is 0."""
    modes, kept = _modes(assignment.rhs, formats, fills), set(assignment.lhs.indices)
    if assignment.reduction_indices and not _same(_fill(assignment.rhs, fills), 0):
        return {index: _UNBOUNDED for index in modes if index in kept}
    return _projected(modes, kept, assignment.rhs, formats)


def _projected(modes: Mapping[IndexVar, _Mode], kept: set[IndexVar], expr,
               formats: Mapping[str, "Format | Layout"]) -> dict[IndexVar, _Mode]:
    """`modes` (of `expr`) summed over the indices not `kept`."""
    summed = set(modes) - kept
    whole = len([a for a in accesses(expr) if _is_sparse(formats[a.tensor])]) < 2
    return {index: _Mode(mode.bounded, None) if whole and mode.above & summed else
            _Mode(mode.bounded, mode.level, mode.above, True) if mode.above & summed else mode
            for index, mode in modes.items() if index in kept}


def _is_sparse(fmt: "Format | Layout") -> bool:
    return isinstance(fmt, Format) and not fmt.is_dense


def _modes(expr, formats: Mapping[str, "Format | Layout"], fills: Mapping[str, Value]) -> dict[IndexVar, _Mode]:
    """The pattern of `expr` over each of its free indices (its scoped reductions projected)."""
    if isinstance(expr, notation.Access):
        return _access_modes(expr, formats[expr.tensor])
    if isinstance(expr, notation.Literal):
        return {}
    children = expr.children()
    modes = [_modes(child, formats, fills) for child in children]
    reduction = reduction_of(expr)
    if reduction is not None:
        body, fill = modes[0], _fill(children[0], fills)
        if fill is None or not reduction.is_identity(fill):
            return {index: _UNBOUNDED for index in body if index != expr.index}
        return _projected(body, set(body) - {expr.index}, children[0], formats)
    reading = [k for k, child in enumerate(children) if accesses(child)]
    if len(reading) == 1:
        kept = not operator_of(expr).reads_values or _same(_fill(expr, fills), _fill(children[reading[0]], fills))
        return {index: mode if kept else _UNBOUNDED for index, mode in modes[reading[0]].items()}
    bounding = [k for k in reading if role(expr, k, fills) is Role.ANNIHILATES]
    indices = dict.fromkeys(index for child in modes for index in child)
    if not bounding:
        return {index: functools.reduce(_union, (child.get(index, _UNBOUNDED) for child in modes))
                for index in indices}
    return {index: _bounded_by(functools.reduce(_intersection, (child.get(index, _UNBOUNDED) for child in modes)),
                               any(modes[k].get(index, _UNBOUNDED).bounded for k in bounding))
            for index in indices}


def _bounded_by(mode: _Mode, bounded: bool) -> _Mode:
    """An intersection's mode, bounded only by its annihilating children (a quotient by its dividend)."""
    return mode if mode.bounded == bounded else _Mode(bounded, mode.level, mode.above, mode.gathered, mode.unordered)


def _fill(expr, fills: Mapping[str, Value]) -> Value | None:
    """`expr`'s fill, or None where it has none (a sum over a fill that is not 0) or numpy cannot fold it (a
    literal beyond int64, `a(i) - 2**70`)."""
    try:
        return fill_of(expr, fills)
    except (ScheduleError, OverflowError):
        return None


def _same(fill: Value | None, other: Value | None) -> bool:
    return fill is not None and other is not None and bool(fill == other)


def _access_modes(access: notation.Access, fmt: "Format | Layout") -> dict[IndexVar, _Mode]:
    if isinstance(fmt, Layout) or fmt.is_dense:
        return {index: _UNBOUNDED for index in access.indices}
    stored = [access.indices[mode] for mode in fmt.mode_order]
    return {index: _Mode(True, None if level.properties.full else level.in_increasing_order() if _unordered(level)
                         else level, frozenset(stored[:depth]), unordered=_unordered(level))
            for depth, (index, level) in enumerate(zip(stored, fmt.levels))}


def _intersection(left: _Mode, right: _Mode) -> _Mode:
    """A lone sparse factor stored in no order (`2 * P`, P times a dense array) is walked as it is stored;
    two sparse factors merge, in order."""
    stored = left if left.level is not None else right
    lone = left.level is None or right.level is None
    return _Mode(left.bounded or right.bounded, stored.level, stored.above, unordered=lone and stored.unordered)


def _union(left: _Mode, right: _Mode) -> _Mode:
    if not (left.bounded and right.bounded):
        return _UNBOUNDED
    stored = left if left.level is not None else right
    return _Mode(True, stored.level, stored.above, unordered=left.unordered or right.unordered)


def _appendable(level: Level | None) -> Level:
    """The operand's compressed level where the kernel can append to it as it is, else a compressed one
    (for a non-unique or singleton level); a dense one for an index stored densely."""
    if level is None:
        return Dense()
    properties = level.properties
    if Capability.APPEND in level.capabilities and properties.unique and not properties.branchless:
        return level
    return Compressed()


def in_increasing_order(fmt: "Format | Layout") -> "Format | Layout":
    """`fmt` with its unordered compressed levels (`ds~`, not COO's `u~`) in increasing order: what a kernel computes in
    where it must merge such an operand, which `pipeline.conversions` then sorts per call."""
    if isinstance(fmt, Layout) or not any(_unordered(level) for level in fmt.levels):
        return fmt
    levels = tuple(level.in_increasing_order() if _unordered(level) else level for level in fmt.levels)
    return Format(levels, mode_order=fmt.mode_order)


def _unordered(level: Level) -> bool:
    """A compressed level of unique coordinates in no order (`s~`); unsorted COO's `u~` keeps its own
    strategies (found by hashing its whole coordinates)."""
    properties = level.properties
    return properties.unique and not properties.descending and level.in_increasing_order() != level


def _in_increasing_order(fmt: "Format | Layout") -> bool:
    """Whether every sparse level of `fmt` holds its siblings in increasing order, the only order a
    kernel appends a sparse result in."""
    return all(level.properties.full or level.properties.ordered for level in fmt.levels)


def _storage_order(assignment: Assignment, formats: Mapping[str, "Format | Layout"]) -> tuple[IndexVar, ...]:
    """The result's indices in the sparse operands' storage orders merged (a stable topological order,
    ties in the result's index order, then by first appearance), or as written where those are cyclic."""
    sparse = [a for a in accesses(assignment.rhs) if _is_sparse(formats[a.tensor])]
    edges = set()
    for access in sparse:
        stored = [access.indices[mode] for mode in formats[access.tensor].mode_order]
        edges.update(zip(stored, stored[1:]))
    waiting = list(dict.fromkeys((*assignment.lhs.indices, *(i for a in sparse for i in a.indices))))
    placed = []
    while waiting:
        ready = [i for i in waiting if not any(after == i and before in waiting for before, after in edges)]
        if not ready:
            return assignment.lhs.indices
        placed.append(ready[0])
        waiting.remove(ready[0])
    return tuple(index for index in placed if index in assignment.lhs.indices)
