"""Concrete index notation (CIN): index notation plus the loops, temporaries and protocols of a schedule.

    ∀i ∀j C(i,j) = A(i,j) + B(i,j)
    ∀i where(∀j C(i,j) = w(j), ∀k ∀j w(j) += A(i,k) * B(k,j))

Statements are `Forall`, `Where` (a consumer reading a temporary that its producer computes first),
`Sequence` (one statement after another) and `Assign`. Expressions reuse the notation's Literal, Neg, Add,
Sub and Mul nodes with this module's `Access` at the leaves: an access knows its tensor's format and, per
mode, how the kernel reaches that mode (`Protocol`). Every node has `children()` / `with_children()`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Union

import numpy as np

from ..errors import ScheduleError
from ..format import Capability, Format
from ..format.level import Level
from ..notation.ast import Add, Apply, IndexVar, Literal, Mul, Neg, Sub, walk
from ..notation.operators import REGISTRY, Value


class Protocol(enum.Enum):
    """How a kernel reaches one mode of an access (Ahrens et al.): reads step through the stored
    coordinates (co-iteration) or locate one directly; writes append in order or insert anywhere."""

    STEP = "step"
    LOCATE = "locate"
    APPEND = "append"
    INSERT = "insert"

    # Members are singletons, so identity hashes them: Enum's own hash (of the name, in Python) is a
    # measurable part of the autoschedulers' time, which hash CIN by the million.
    __hash__ = object.__hash__


_NEEDS = {
    Protocol.STEP: (Capability.POSITION_ITERATION, Capability.COORDINATE_ITERATION),
    Protocol.LOCATE: (Capability.LOCATE,),
    Protocol.APPEND: (Capability.APPEND,),
    Protocol.INSERT: (Capability.INSERT,),
}


def allows(level: Level, protocol: Protocol) -> bool:
    return any(capability in level.capabilities for capability in _NEEDS[protocol])


def default_protocol(level: Level, write: bool, temporary: bool = False) -> Protocol:
    """Writes append where the level can, else insert; reads step through ordered levels and locate
    into unordered ones (a hashed table is looked up, not walked) — except that a workspace is stepped
    in order by the consumer it exists for."""
    if write:
        return Protocol.APPEND if allows(level, Protocol.APPEND) else Protocol.INSERT
    if temporary or level.properties.ordered or not allows(level, Protocol.LOCATE):
        return Protocol.STEP
    return Protocol.LOCATE


@dataclass(frozen=True, slots=True)
class TensorVar:
    """A tensor of a kernel: an operand, the result, or a temporary introduced by a `where`. `fill` is the
    value of every entry it does not store (notation/fills.py): an absent operand reads it, the result
    starts at it, and a temporary starts at the identity of the reduction that produces it."""

    name: str
    format: Format
    temporary: bool = False
    fill: Value = 0

    @property
    def order(self) -> int:
        return self.format.order

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class Access:
    """`tensor` at `indices` (one per mode, in mode order), each mode reached by its protocol."""

    tensor: TensorVar
    indices: tuple[IndexVar, ...]
    protocols: tuple[Protocol, ...]

    def __post_init__(self):
        if not (len(self.indices) == len(self.protocols) == self.tensor.order):
            raise ScheduleError(f"Expected {self.tensor.order} indices and protocols for {self.tensor.name} "
                                f"(format {self.tensor.format}), but found {len(self.indices)} and "
                                f"{len(self.protocols)}")
        for mode, protocol in enumerate(self.protocols):
            level = self.level_of_mode(mode)
            if not allows(level, protocol):
                raise ScheduleError(f"Expected a protocol that level {level.letter!r} of {self.tensor.name} "
                                    f"supports for index {self.indices[mode]}, but found {protocol.value}")

    def level_of_mode(self, mode: int) -> Level:
        return self.tensor.format.levels[self.tensor.format.mode_order.index(mode)]

    @property
    def level_indices(self) -> tuple[IndexVar, ...]:
        """The index of each storage level, top to bottom."""
        return tuple(self.indices[mode] for mode in self.tensor.format.mode_order)

    @property
    def level_protocols(self) -> tuple[Protocol, ...]:
        return tuple(self.protocols[mode] for mode in self.tensor.format.mode_order)

    def children(self) -> tuple:
        return ()

    def with_children(self, children: tuple) -> "Access":
        return self

    def __str__(self) -> str:
        def mode_text(mode: int) -> str:
            level, protocol = self.level_of_mode(mode), self.protocols[mode]
            write = protocol in (Protocol.APPEND, Protocol.INSERT)
            default = default_protocol(level, write, self.tensor.temporary)
            return str(self.indices[mode]) + ("" if protocol is default else f"@{protocol.value}")
        return f"{self.tensor.name}({','.join(mode_text(m) for m in range(len(self.indices)))})"


Expr = Union[Access, Literal, Neg, Add, Sub, Mul, Apply]


@dataclass(frozen=True, slots=True)
class Assign:
    """`lhs = rhs`, or, when `accumulate`, `lhs` combined with `rhs` by the operator `reduce` (a name in the
    registry with a reduction): `y(i) += e` for add, `y(i) min= e` for minimum (its reduction's word)."""

    lhs: Access
    rhs: Expr
    accumulate: bool = False
    reduce: str = "add"

    def children(self) -> tuple:
        return (self.rhs,)

    def with_children(self, children: tuple) -> "Assign":
        return self if children == (self.rhs,) else replace(self, rhs=children[0])

    def __str__(self) -> str:
        return f"{self.lhs} {self.operator} {self.rhs}"

    @property
    def operator(self) -> str:
        """How the assignment is written: `=`, `+=`, or the reduction's word and `=` (`min=`, `any=`)."""
        if not self.accumulate:
            return "="
        return "+=" if self.reduce == "add" else f"{REGISTRY[self.reduce].reduction}="


def identity(reduce: str) -> Value:
    """The value a reduction by the operator `reduce` starts from (0 for add, +inf for minimum, False for
    logical_or), as a float64 or bool kernel has it; the C of a value type spells it (`lower/outputs.py`)."""
    return REGISTRY[reduce].identity.value(np.dtype(np.float64))


class ParallelUnit(enum.Enum):
    """What runs the iterations of a parallel loop: OpenMP threads, or SIMD lanes of one thread."""

    CPU_THREAD = "cpu_thread"
    CPU_VECTOR = "cpu_vector"


class Race(enum.Enum):
    """How the iterations of a parallel loop that may write the same place are kept apart (Senanayake
    et al. §4): they do not (checked), it does not matter (unchecked), each update is atomic, or each
    thread adds into its own copy and the copies are summed afterwards."""

    NO_RACES = "no_races"
    IGNORE_RACES = "ignore_races"
    ATOMICS = "atomics"
    TEMPORARY = "temporary"


@dataclass(frozen=True, slots=True)
class Parallel:
    unit: ParallelUnit
    race: Race

    def __str__(self) -> str:
        return f"@parallel({self.unit.value}, {self.race.value})"


class Strategy(enum.Enum):
    """How a loop meets an operand's stored coordinates (Zhao et al.): all stepped together in order
    (`merge`, the two-finger walk), or, for operands other than the one the loop walks (the driver),
    found one coordinate at a time — by a search that resumes where the last one stopped and leaps
    ahead exponentially (`gallop`), by binary search of the segment (`binary`), in a hash table or a
    dense bitmap of the segment, built once per segment (`hash`, `bitmap`); `auto` chooses per call
    from the operands."""

    MERGE = "merge"
    GALLOP = "gallop"
    BINARY = "binary"
    HASH = "hash"
    BITMAP = "bitmap"
    AUTO = "auto"


@dataclass(frozen=True, slots=True)
class Coiteration:
    """A loop's co-iteration strategies: `default` for every operand, `operands` for named tensors."""

    default: Strategy = Strategy.MERGE
    operands: tuple[tuple[str, Strategy], ...] = ()

    def strategy(self, tensor: str) -> Strategy:
        return dict(self.operands).get(tensor, self.default)

    def with_strategy(self, strategy: Strategy, tensor: str | None = None) -> "Coiteration":
        if tensor is None:
            return Coiteration(strategy, self.operands)
        named = {**dict(self.operands), tensor: strategy}
        return Coiteration(self.default, tuple(sorted(named.items())))

    def resolved(self, choose) -> "Coiteration":
        """Every `auto` replaced by `choose(tensor or None)`."""
        pick = lambda s, t: choose(t) if s is Strategy.AUTO else s
        return Coiteration(pick(self.default, None), tuple((t, pick(s, t)) for t, s in self.operands))

    @property
    def strategies(self) -> frozenset[Strategy]:
        return frozenset({self.default, *(s for _, s in self.operands)})

    def __str__(self) -> str:
        return f"@coiterate({', '.join([self.default.value, *(f'{t}={s.value}' for t, s in self.operands)])})"


#: The largest unroll factor: lowering writes it into `#pragma GCC unroll`, which takes at most this.
MAX_UNROLL = 65534


@dataclass(frozen=True, slots=True)
class Forall:
    """∀index body; scheduling may mark the loop parallel or unrolled, or choose how it co-iterates its
    operands (printed after the index)."""

    index: IndexVar
    body: "Stmt"
    parallel: Parallel | None = None
    unroll: int = 0  # 0: as the compiler likes
    coiterate: Coiteration | None = None  # None: merge

    def children(self) -> tuple:
        return (self.body,)

    def with_children(self, children: tuple) -> "Forall":
        return self if children == (self.body,) else replace(self, body=children[0])

    def __str__(self) -> str:
        marks = (f" {self.parallel}" if self.parallel else "") + (f" @unroll({self.unroll})" if self.unroll else "") \
            + (f" {self.coiterate}" if self.coiterate else "")
        return f"∀{self.index}{marks} {self.body}"


@dataclass(frozen=True, slots=True)
class Where:
    """`consumer` reads the temporaries that `producer` writes; the producer runs first, each time."""

    consumer: "Stmt"
    producer: "Stmt"

    def children(self) -> tuple:
        return (self.consumer, self.producer)

    def with_children(self, children: tuple) -> "Where":
        return self if children == (self.consumer, self.producer) else Where(*children)

    def __str__(self) -> str:
        return f"where({self.consumer}, {self.producer})"


@dataclass(frozen=True, slots=True)
class Sequence:
    first: "Stmt"
    second: "Stmt"

    def children(self) -> tuple:
        return (self.first, self.second)

    def with_children(self, children: tuple) -> "Sequence":
        return self if children == (self.first, self.second) else Sequence(*children)

    def __str__(self) -> str:
        return f"sequence({self.first}, {self.second})"


Stmt = Union[Assign, Forall, Where, Sequence]


def default_access(tensor: TensorVar, indices: tuple[IndexVar, ...], write: bool) -> Access:
    """`tensor` at `indices` with the default protocol of every mode."""
    fmt = tensor.format
    protocols = tuple(default_protocol(fmt.levels[fmt.mode_order.index(mode)], write, tensor.temporary)
                      for mode in range(tensor.order))
    return Access(tensor, tuple(indices), protocols)


def accesses(node) -> tuple[Access, ...]:
    """The accesses read in `node`, in order of appearance (repeats kept)."""
    return tuple(n for n in walk(node) if isinstance(n, Access))


def assignments(stmt: Stmt) -> tuple[Assign, ...]:
    return tuple(n for n in walk(stmt) if isinstance(n, Assign))


def results(stmt: Stmt) -> tuple[str, ...]:
    """The tensors `stmt` writes that outlive it: a `where`'s producer writes its temporaries, which only
    its consumer sees, so a `where` nested in another's producer is not what the outer one produces."""
    if isinstance(stmt, Where):
        return results(stmt.consumer)
    if isinstance(stmt, Assign):
        return (stmt.lhs.tensor.name,)
    return tuple(dict.fromkeys(name for child in stmt.children() for name in results(child)))


def all_accesses(stmt: Stmt) -> list[Access]:
    """Every access of `stmt`, written and read, assignment by assignment."""
    return [access for assign in assignments(stmt) for access in (assign.lhs, *accesses(assign.rhs))]


def tensors(stmt: Stmt) -> dict[str, TensorVar]:
    """Every tensor of `stmt` by name, outputs and temporaries included."""
    found: dict[str, TensorVar] = {}
    for assign in assignments(stmt):
        for access in (assign.lhs, *accesses(assign.rhs)):
            known = found.setdefault(access.tensor.name, access.tensor)
            if known != access.tensor:
                raise ScheduleError(f"Expected one format for {access.tensor.name}, but found "
                                    f"{known.format} and {access.tensor.format}")
    return found


def nest(order: "tuple[IndexVar | Forall, ...]", body: Stmt) -> Stmt:
    """`body` inside foralls over `order`, outermost first (the inverse of `unnest` and `unnest_loops`);
    a Forall in `order` keeps its marks."""
    for loop in reversed(order):
        body = replace(loop, body=body) if isinstance(loop, Forall) else Forall(loop, body)
    return body


def unnest(stmt: Stmt) -> tuple[tuple[IndexVar, ...], Stmt]:
    """The indices of a chain of foralls, outermost first, and the statement inside them."""
    loops, body = unnest_loops(stmt)
    return tuple(loop.index for loop in loops), body


def unnest_loops(stmt: Stmt) -> tuple[tuple[Forall, ...], Stmt]:
    """The foralls of a chain, outermost first (their marks kept), and the statement inside them."""
    loops = []
    while isinstance(stmt, Forall):
        loops.append(stmt)
        stmt = stmt.body
    return tuple(loops), stmt


def loop_indices(stmt: Stmt) -> tuple[IndexVar, ...]:
    """The index of every forall, outermost first."""
    return tuple(n.index for n in walk(stmt) if isinstance(n, Forall))
