"""Stage 8 of the enumeration (Ahrens et al. §7.8): formats from protocols, then CIN.

The cost model assumed every access concordant — its tensor's levels stored in the order its loops
visit them. Here that is made true. Each sparse input gets a format of its own whose mode order is the
loop order and whose levels do what the protocols ask: the first level is dense when it is located or
was dense (an array over one dimension), else compressed; below it a stepped mode is compressed and a
located one hashed, so that no input is densified. The kernel converts an operand given in another
format (a transpose), which benchmarks time separately. Dense inputs are only located, in any order.
A workspace of one index is a dense array with a list of touched coordinates; of two or more, a hash
table in the consumer's loop order when the consumer steps it, else a dense array (located reads need
random access, which the compiler's hashed workspaces do not offer; the memory limit guards its size);
a scalar is a register. A result written out of its format's order
(inserts, or a loop order its levels do not follow) is built in a workspace and copied into the result's
format (a reformatting `where`), placed below the outermost loops that already visit the result's first
levels in order, so Gustavson's algorithm reformats one row at a time; a dense result takes inserts.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

from ...cin import ast as cin
from ...errors import ScheduleError
from ...format import Format
from ...notation import ast as notation
from ...notation.ast import IndexVar
from ..algebra import PLUS_TIMES, Semiring, applied
from .sketch import Access, Call, Stmt, map_accesses, reads


@dataclass(frozen=True)
class Realised:
    """A sketch as CIN: the statement and the format it needs each operand and temporary in, and the
    sketch as that CIN runs it (`running`): a mode stored in a dense level is visited whole, so its reads
    locate there even where the sketch stepped (a multi-index workspace the consumer locates somewhere,
    a compressed input whose first level was dense) — but a vector workspace is stepped through its list
    of touched coordinates; selection costs this one."""

    cin: cin.Stmt
    formats: dict[str, Format]  # operands and temporaries (the result keeps the user's format)
    running: Stmt
    tables: frozenset[str]  # temporaries of `running` built in hash tables (the result when staged in one)
    probed: frozenset[str]  # operands of `running` reformatted with a hashed level, only read


def realise(sketch: Stmt, formats: Mapping[str, Format], result: str, semiring: Semiring = PLUS_TIMES) -> Realised:
    """`sketch` compiled against `formats` (every operand's and the result's, as the user gave them), its
    `+`, `*` and accumulations spelled in `semiring`'s operators (`min=` and `+` for min-plus)."""
    layout = _layout(sketch, formats, result)
    chosen = dict(layout.formats)
    start = cin.identity(semiring.add)  # a temporary starts where ⊕ leaves its first term alone
    variables = {name: cin.TensorVar(name, fmt, temporary=name not in formats, fill=start if name not in formats else 0)
                 for name, fmt in chosen.items()}
    variables[result] = cin.TensorVar(result, formats[result])
    running = _as_stored(sketch, {name: fmt for name, fmt in chosen.items() if fmt.order > 1 or name in formats})
    hashed = {result if name == layout.staging else name for name, fmt in chosen.items()
              if any(level.inserts_sparsely for level in fmt.levels)}
    probed = frozenset(name for name in hashed if name in formats and name != result)
    tables = frozenset(hashed) - probed
    if layout.staging is None:
        return Realised(_converted(sketch, variables, semiring), chosen, running, tables, probed)
    staging, prefix, rest = layout.staging, layout.prefix, layout.rest
    body = sketch
    for _ in prefix:
        body = body.body
    target = _result_access(sketch, result)

    def staged(access: Access) -> Access:
        if access.tensor != result:
            return access
        return Access(staging, rest, tuple(access.protocols[access.indices.index(i)] for i in rest))

    producer = _converted(map_accesses(body, staged), variables, semiring)
    copy = cin.nest(tuple(IndexVar(i) for i in rest),
                    cin.Assign(cin.default_access(variables[result], tuple(IndexVar(i) for i in target.indices),
                                                  write=True),
                               cin.default_access(variables[staging], tuple(IndexVar(i) for i in rest),
                                                  write=False)))
    return Realised(cin.nest(tuple(IndexVar(i) for i in prefix), cin.Where(copy, producer)), chosen, running,
                    tables, probed)


def hashed_levels(sketch: Stmt, formats: Mapping[str, Format], result: str) -> int:
    """How many hash-table levels `sketch`'s realisation stores operands and temporaries in: an
    asymptotically free but, per access, an order of magnitude dearer structure than an array."""
    return hash_levels(_layout(sketch, formats, result).formats)


def hash_levels(formats: Mapping[str, Format]) -> int:
    """The hash-table levels among `formats`."""
    return sum(map(_hash_levels_of, formats.values()))


@lru_cache(maxsize=1 << 12)
def _hash_levels_of(fmt: Format) -> int:
    """The hash-table levels of `fmt` (a level's capabilities are built anew on each call; selection
    asks this of the same few formats for every candidate, on every input)."""
    return sum(level.inserts_sparsely for level in fmt.levels)


@dataclass(frozen=True)
class _Layout:
    """The formats a sketch's realisation gives its operands and temporaries and, for a result written
    out of order, its staging workspace with the loops above (`prefix`) and below (`rest`) the copy."""

    formats: dict[str, Format]
    staging: str | None = None
    prefix: tuple[str, ...] = ()
    rest: tuple[str, ...] = ()


def reads_agree(sketch: Stmt) -> bool:
    """Whether every tensor is read one way (its modes in one loop order, each with one protocol): each
    operand gets one format, so a program that reads one two ways (a factor distributed over a sum,
    stepped in one term and located in the other) has no realisation. Reads through other indices in
    the same way (`sum(j, B(i,j)*x(j)) - B(i,k)*z(k)`) share the format."""
    return all(len(ways) == 1 for ways in _reads(sketch).values())


def _reads(sketch: Stmt) -> dict[str, dict[tuple, tuple[Access, tuple[str, ...]]]]:
    """tensor -> each way it is read (`_way`) -> its first (read, its indices in loop order)."""
    found: dict[str, dict] = {}
    _visit_reads(sketch, (), found)
    return found


def _way(access: Access, ordered: tuple[str, ...]) -> tuple:
    """What a read asks of its tensor's format: the modes in loop order and the protocols by mode."""
    return tuple(access.indices.index(i) for i in ordered), access.protocols


def _layout(sketch: Stmt, formats: Mapping[str, Format], result: str) -> _Layout:
    reads_of: dict[str, tuple[Access, tuple[str, ...]]] = {}  # tensor -> (its read, its loop-ordered indices)
    for name, ways in _reads(sketch).items():
        if len(ways) > 1:
            shown = " and ".join(str(access) for access, _ in ways.values())
            raise ScheduleError(f"Expected {name} read one way, in one order, but it is read as {shown}")
        reads_of[name] = next(iter(ways.values()))
    chosen: dict[str, Format] = {}
    for name, fmt in formats.items():
        if name != result and name in reads_of:
            chosen[name] = fmt if fmt.is_dense else _input_format(fmt, *reads_of[name])
    workspaces = {a.lhs.tensor: a.lhs.indices for a in cin.assignments(sketch) if a.lhs.tensor not in formats}
    located = {a.tensor for a in reads(sketch) if cin.Protocol.LOCATE in a.protocols}
    for name, indices in workspaces.items():
        hashed = len(indices) > 1 and name not in located
        chosen[name] = _format(("h" if hashed else "d") * len(indices))
    result_format = formats[result]
    level_indices = _result_levels(sketch, result, result_format)
    if result_format.is_dense or _written_in_level_order(sketch, result, level_indices, ()):
        return _Layout(chosen)
    # Reformat only below the result's levels that the outermost loops already visit in order.
    prefix, body = [], sketch
    while isinstance(body, cin.Forall) and len(prefix) < len(level_indices) and body.index == level_indices[len(prefix)]:
        prefix.append(body.index)
        body = body.body
    rest = level_indices[len(prefix):]
    staging = _fresh("t", {*formats, *workspaces})
    chosen[staging] = _format("d" if len(rest) == 1 else "h" * len(rest))
    return _Layout(chosen, staging, tuple(prefix), rest)


def _as_stored(sketch: Stmt, formats: Mapping[str, Format]) -> Stmt:
    """`sketch` with every read of a mode stored in a dense level located."""
    full = {name: _full_modes(fmt) for name, fmt in formats.items()}

    def stored(access: Access) -> Access:
        dense = full.get(access.tensor)
        if dense is None or cin.Protocol.STEP not in access.protocols:
            return access
        return Access(access.tensor, access.indices,
                      tuple(cin.Protocol.LOCATE if d else p for d, p in zip(dense, access.protocols)))

    return map_accesses(sketch, stored)


@lru_cache(maxsize=1 << 12)
def _full_modes(fmt: Format) -> tuple[bool, ...]:
    """Whether each mode of `fmt` is stored in a dense level (every coordinate): asked of the same few
    formats for every access of thousands of candidates that select realises."""
    return tuple(fmt.levels[fmt.mode_order.index(mode)].properties.full for mode in range(fmt.order))


@lru_cache(maxsize=1 << 12)
def _format(letters: str, mode_order: tuple[int, ...] | None = None) -> Format:
    """`Format(letters, mode_order=...)`, parsed once: realising a front asks for the same few thousands
    of times."""
    return Format(letters, mode_order=mode_order)


def _visit_reads(stmt: Stmt, loops: tuple[str, ...], found: dict) -> None:
    if isinstance(stmt, cin.Forall):
        _visit_reads(stmt.body, (*loops, stmt.index), found)
    elif isinstance(stmt, cin.Where):
        _visit_reads(stmt.consumer, loops, found)
        _visit_reads(stmt.producer, loops, found)
    else:
        for access in reads(stmt.rhs):
            ordered = tuple(sorted(access.indices, key=loops.index))
            found.setdefault(access.tensor, {}).setdefault(_way(access, ordered), (access, ordered))


def _input_format(fmt: Format, access: Access, ordered: tuple[str, ...]) -> Format:
    """A format concordant with the loops around `access` that supports its protocols."""
    modes = tuple(access.indices.index(i) for i in ordered)
    letters = []
    for depth, mode in enumerate(modes):
        user_full = _full_modes(fmt)[mode]
        if depth == 0:
            letters.append("d" if user_full or access.protocols[mode] == cin.Protocol.LOCATE else "s")
        else:
            letters.append("s" if access.protocols[mode] == cin.Protocol.STEP else "h")
    return _format("".join(letters), modes)


def _result_access(sketch: Stmt, result: str) -> Access:
    return next(a.lhs for a in cin.assignments(sketch) if a.lhs.tensor == result)


def _result_levels(sketch: Stmt, result: str, fmt: Format) -> tuple[str, ...]:
    access = _result_access(sketch, result)
    return tuple(access.indices[m] for m in fmt.mode_order)


def _written_in_level_order(stmt: Stmt, result: str, level_indices: tuple[str, ...], loops: tuple[str, ...]) -> bool:
    """Every write of `result` appends, its levels' loops outermost in level order."""
    if isinstance(stmt, cin.Forall):
        return _written_in_level_order(stmt.body, result, level_indices, (*loops, stmt.index))
    if isinstance(stmt, cin.Where):
        return all(_written_in_level_order(s, result, level_indices, loops) for s in (stmt.consumer, stmt.producer))
    return stmt.lhs.tensor != result or loops[:len(level_indices)] == level_indices


def _fresh(base: str, taken: set[str]) -> str:
    return next(name for name in (f"{base}{n}" for n in range(len(taken) + 1)) if name not in taken)


def _converted(stmt: Stmt, variables: Mapping[str, cin.TensorVar], semiring: Semiring) -> cin.Stmt:
    if isinstance(stmt, cin.Forall):
        return cin.Forall(IndexVar(stmt.index), _converted(stmt.body, variables, semiring))
    if isinstance(stmt, cin.Where):
        return cin.Where(_converted(stmt.consumer, variables, semiring), _converted(stmt.producer, variables, semiring))
    lhs = _access(stmt.lhs, variables, write=True)
    return cin.Assign(lhs, _expression(stmt.rhs, variables, semiring), stmt.accumulate,
                      semiring.add if stmt.accumulate else "add")


def _access(access: Access, variables, write: bool) -> cin.Access:
    var = variables[access.tensor]
    indices = tuple(IndexVar(i) for i in access.indices)
    if write:
        fmt = var.format
        return cin.Access(var, indices, tuple(_write_protocol(fmt.levels[fmt.mode_order.index(mode)], wanted)
                                              for mode, wanted in enumerate(access.protocols)))
    return cin.Access(var, indices, access.protocols)


@lru_cache(maxsize=1 << 10)
def _write_protocol(level, wanted: cin.Protocol) -> cin.Protocol:
    """How a write reaches `level`: as the sketch wants where the level allows it, else by insert or
    append."""
    return next(p for p in (wanted, cin.Protocol.INSERT, cin.Protocol.APPEND) if cin.allows(level, p))


def _expression(expr, variables, semiring: Semiring):
    """A sketch expression as CIN's: `+`/`*` as the semiring's ⊕/⊗ (`Add`/`Mul` for add and multiply,
    else the registry's function), a unary call as its function (`Neg` for `-`)."""
    if isinstance(expr, Access):
        return _access(expr, variables, write=False)
    if not isinstance(expr, Call):
        return expr  # a literal
    args = [_expression(a, variables, semiring) for a in expr.args]
    if expr.op == "-":
        return notation.Neg(args[0])
    if len(args) == 1:
        return notation.Apply(expr.op, (args[0],))
    name = semiring.multiply if expr.op == "*" else semiring.add
    result = args[0]
    for arg in args[1:]:
        result = applied(name, result, arg)
    return result
