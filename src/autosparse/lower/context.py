"""The state of one lowering pass, in three parts kept apart: what the kernel decided before lowering
began (`Plan`, frozen), what the pass appends to as it goes (`Logs`: fresh names, instrumentation
labels, co-iteration tables), and what a loop passes to the loops inside it (`Scope`, frozen, replaced
on the way down).

`Lowering` carries the plan, the logs and the C builder through the recursion, and lowers a nested
statement through the dispatcher it was made with (lower.py's). That indirection is what lets the
lowering of loops, co-iteration, stores and parallel regions live in modules of their own without
importing one another in a circle: each imports this module and the ones below it, and reaches the
statements inside it only through `cx.lower` (as Finch's `ctx(node)` does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Callable, Mapping

from ..cin.ast import Access, Stmt
from ..cin.provenance import Provenance
from ..codegen import names
from ..codegen.builder import CBuilder
from ..codegen.c_ast import CType, Expr, Var, increment
from ..notation.ast import IndexVar
from . import finds
from .reads import Position, ReadLevel
from .writes import Target

if TYPE_CHECKING:
    from .parallel import RowSplit


class Phase(Enum):
    """Which pass over the loops a kernel body is. A result assembled by appending is made in up to three:
    the bound phase, a count phase whose sizes may exceed the exact ones (a loop making at most one entry
    of a bounded target per iteration adds its trip count instead of running); the count phase, which runs
    the loops for the pattern only (stores compute no values; a workspace store only marks its coordinate);
    and the fill phase, which computes the values (the only phase of every other kernel)."""

    BOUND = "bound"
    COUNT = "count"
    FILL = "fill"

    @property
    def counting(self) -> bool:
        """Whether the phase computes the pattern only, no values."""
        return self is not Phase.FILL


@dataclass(frozen=True)
class Plan:
    """The kernel-wide facts lowering reads and never changes."""

    read_levels: Callable[[Access], tuple[ReadLevel, ...]]
    targets: Mapping[str, Target]
    access_ids: Mapping[Access, str]
    value_types: Mapping[str, str]
    value_type: CType  # the result's C value type, which its temporaries and the literals take
    phase: Phase = Phase.FILL
    num_threads: int | None = None  # the OpenMP thread count of parallel loops (None: OpenMP's default)
    #: The parallel loop whose threads assemble the result in chunks, inside a region the kernel opens
    #: around all phases (None: parallel loops open their own).
    region: IndexVar | None = None
    #: The outermost loop whose every iteration owns one row of the dense result (its first level), which
    #: it zeroes before writing it, so that the caller need not (None: the caller passes zeroed values).
    zeroed_rows: IndexVar | None = None
    result: str = ""  # the result's name

    @property
    def counting(self) -> bool:
        return self.phase.counting

    def vals(self, access: Access) -> str:
        return names.vals(access.tensor.name)


@dataclass
class Logs:
    """What a lowering pass appends to as it goes, read by the kernel after it."""

    fresh: names.Fresh
    counters: list[str] | None = None  # loop labels when instrumented
    #: The tables that find-based co-iteration builds (finds.py), declared by the kernel around all phases.
    tables: finds.Tables = field(default_factory=dict)
    #: Whether the loop `Plan.zeroed_rows` names was lowered as a loop over its whole dimension, zeroing
    #: each row: only then is every entry of the result written by the kernel.
    zeroed_rows: bool = False
    #: The rows each thread of the chunked region runs (`Plan.region`'s loop), dealt once by the kernel at the
    #: region's start for every phase (None: no phase deals them).
    region_rows: RowSplit | None = None


@dataclass(frozen=True)
class Scope:
    """What a loop passes to the loops inside it, replaced (never changed) on the way down."""

    reads: Mapping[tuple[Access, int], Position] = field(default_factory=dict)
    writes: Mapping[tuple[str, int], Position] = field(default_factory=dict)
    flags: Mapping[str, str | None] = field(default_factory=dict)
    accumulators: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    #: The registers above whose loops may stop once the reduction is decided (`guards.saturates`): a
    #: sequential `any` or `all`; a parallel loop between a register and its sum takes it out.
    stops: frozenset[str] = frozenset()
    loops: tuple[IndexVar, ...] = ()  # the indices of the enclosing loops, outermost first
    bounded: frozenset[str] = frozenset()  # the targets whose loops the bound phase replaces
    atomic: bool = False  # sums into results and outer registers race (a parallel loop with atomics)
    provenance: Provenance = Provenance()
    derived: frozenset[IndexVar] = frozenset()  # the derived variables whose loops are around
    #: A position variable's [lo, hi) (and for collapsed levels, the first level's [lo, hi) after them).
    ranges: Mapping[IndexVar, tuple[str, ...]] = field(default_factory=dict)
    #: Indices whose coordinate (or position in an access) the loops around already fixed: a forall over
    #: one runs once, there.
    fixed: Mapping[IndexVar, "Fixed"] = field(default_factory=dict)
    parallel: bool = False  # a parallel loop is around (its iterations share the kernel's own state)
    #: the parallel loop around runs the running thread's own rows (`RowSplit`, no worksharing construct), so
    #: a failure may leave it for its region's end
    dealt: bool = False
    #: a loop around steps a non-unique unordered level (unsorted COO's rows): it may come back to a
    #: coordinate it left, so no store is the only one its position gets
    revisits: bool = False


@dataclass(frozen=True)
class Fixed:
    """Where the loops around put an index: at a coordinate, or (`access` given) at a position of the
    access's `level`. `in_order`: the loops visit its values increasing; `repeats`: consecutive
    iterations may fix the same value (the outer index of a collapse)."""

    value: Expr
    access: Access | None = None
    level: int = -1
    in_order: bool = True
    repeats: bool = False


@dataclass(frozen=True)
class Lowering:
    """One lowering pass: `cx.lower(stmt, scope)` emits the C of `stmt` into `b`."""

    plan: Plan
    logs: Logs
    b: CBuilder
    dispatch: Callable[["Lowering", Stmt, Scope], None]  # lowers one statement of any kind

    def lower(self, stmt: Stmt, scope: Scope) -> None:
        self.dispatch(self, stmt, scope)

    def fresh(self, stem: str) -> str:
        return self.logs.fresh(stem)

    def count(self, label: str) -> None:
        count_iteration(self.logs.counters, self.b, label)


def count_iteration(counters: list[str] | None, b: CBuilder, label: str) -> None:
    """Instrumented kernels count every iteration of every loop (the loop's label names it)."""
    if counters is not None:
        b.expr(increment(Var("counters")[len(counters)]))
        counters.append(label)
