"""What every autoscheduler returns: candidates that `compile` takes as schedules (a CIN statement, with
the formats that CIN reads its operands in), in a sequence that keeps the search's statistics.

Autoschedulers sit above the pipeline that compiles a kernel but never import it: whoever asks for
candidates (api's `autoschedule`) hands over a kernel factory, with which a front compiles its own
candidates where selection times them or `verify` checks them.

Every candidate, whichever model found it, also exposes what `select` estimates it by (the cost inputs `ScheduleCandidate` lists):
the asymptotic cost model's task sets of the program as its CIN runs. So one front may hold candidates
of both models (`JointFront`, `model="auto"`), ranked by one estimate — and beside them the default
schedule (`Candidates.default`, a `DefaultCandidate`), which `select` weighs but the front does not list.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable, Mapping

from ..cin.ast import Forall, Protocol, Stmt, Where, assignments, results, tensors
from ..errors import AutosparseError
from ..format import Format
from ..notation import accesses, walk
from ..notation import ast as notation
from .algebra import semiring_of, untracked
from .asymptotic.cost import Cost, CostModel
from .asymptotic.realise import Realised
from .asymptotic.sketch import Call, from_cin, map_accesses, reads
from .table import front_table

#: `factory(assignment, formats, schedule=candidate)` -> a kernel, called with the operands by name
#: (the pipeline's `Kernel`).
KernelFactory = Callable[..., Callable[..., object]]


class ScheduleCandidate(abc.ABC):
    """A schedule `compile` accepts, with what `select` ranks it by: `running_cost` (the task sets of its
    CIN as it runs), `table_cost` and `probe_cost` (the parts of those that touch hash-table temporaries
    and hashed operands), `formats` (the operands' and temporaries' formats its CIN reads), `transposes`
    (operands read in a format other than the one given), `temporaries` and `cin`."""

    found_by = "?"  # the model that found it, as the front's table names it

    @abc.abstractmethod
    def kernel_schedule(self) -> tuple[Stmt, dict[str, Format]]:
        """The CIN statement and the formats `compile` reads the operands (and writes the result) in."""


def cost_model(assignment: notation.Assignment, formats: Mapping[str, Format],
               fills: Mapping[str, object] = {}) -> CostModel:
    """The asymptotic cost model of one kernel (as its search builds it, sunk costs included: a sparse
    operand whose fill is not the semiring's zero costed as a dense one), to cost programs no asymptotic
    search produced."""
    operands = accesses(assignment.rhs)
    dense = untracked(assignment, semiring_of(assignment), formats, fills)
    sparse = {a.tensor: tuple(i.name for i in a.indices) for a in operands
              if not formats[a.tensor].is_dense and a.tensor not in dense}
    indices = tuple(dict.fromkeys(i.name for a in (assignment.lhs, *operands) for i in a.indices))
    return CostModel(sparse, indices)


class Costed:
    """What `select` estimates a candidate by, for a class with `_realised` (the program as its CIN runs,
    a `Realised`), `model` (its kernel's `cost_model`), `user_formats`, `formats` and `temporaries`:
    the task sets of the running program, the parts of them that touch hash-table temporaries, hashed
    operands and dense tensors read out of stride, and the dense workspaces it clears whole."""

    @cached_property
    def running_cost(self) -> Cost:
        """The cost of the program as its CIN runs (see `Realised.running`), which selection compares:
        it exceeds the sketch's cost where a mode the sketch steps is stored dense."""
        return self.model.cost(self._realised.running)

    @cached_property
    def table_cost(self) -> Cost:
        """The part of `running_cost` that builds or reads hash-table temporaries (each access one or
        two orders of magnitude dearer than an array's: selection weighs it in)."""
        return self._cost_touching(self._realised.tables)

    @cached_property
    def probe_cost(self) -> Cost:
        """The part of `running_cost` that reads operands stored with hashed levels (a hash and a probe
        into a table only as large as one slice)."""
        return self._cost_touching(self._realised.probed)

    @property
    def transposes(self) -> dict[str, Format]:
        """Operands the kernel reads in a format other than the one they were given in."""
        return {name: fmt for name, fmt in self.formats.items()
                if name in self.user_formats and fmt != self.user_formats[name]}

    @property
    def runs_as(self) -> tuple:
        """What the kernel runs: the sketch as stored (a step through a dense level is a locate) and the
        formats. Candidates that differ only in protocols their formats ignore run alike, so timing one
        of them times them all."""
        return self._realised.running, tuple(sorted((name, str(fmt)) for name, fmt in self.formats.items()))

    @property
    def estimated_as(self) -> tuple:
        """Everything `select`'s estimate of the candidate is computed from, besides the operands and the
        formats they were given in: the program as it runs, the formats and temporaries, the tensors
        in hash tables and hashed operands, the cost model, and the CIN's program where it writes list
        workspaces (counted on the CIN, whose steps through dense levels the running program locates).
        Finer than `runs_as`; candidates equal here get equal estimates, so selection costs one of each."""
        return (self.model, self._realised.running, tuple(sorted(self.formats.items(), key=lambda kv: kv[0])),
                tuple(self.temporaries), self._realised.tables, self._realised.probed,
                self._cin_program if self._listed else None)

    @cached_property
    def cin_text(self) -> str:
        """The CIN as text: the ranking's last tie-break between exact ties, which recur on every input
        (rendered once)."""
        return str(self.cin)

    @cached_property
    def scattered_costs(self) -> dict[str, Cost]:
        """For each dense operand or temporary accessed out of stride — its innermost loop runs over a
        mode other than the last one stored (a row-major C(k,j) inside a loop over k), or over the last
        one but only at a sparse operand's coordinates (a gather) — the part of `running_cost` that
        accesses it so: where the tensor outgrows the cache, each such access fetches a cache line,
        where a loop over the whole last mode streams through the line in use; where it fits the cache,
        the loop does not vectorise, and a temporary written so dirties a line a write (TTMc's
        `∀m w0(i,m,n) += …` against `∀m w0(i,n,m) += …`). A temporary counts in the order the CIN
        stores it."""
        found: dict[str, set] = {}
        formats = {**self.user_formats, **self.dense_temporaries}
        for name, loops, assign in _scattered(self._realised.running, formats):
            found.setdefault(name, set()).add(_task_of(loops, assign))
        return {name: self.model.cost_of((task.head, task.guard) for task in self._tasks
                                    if (task.head, task.tensors) in assigned)
                for name, assigned in found.items()}

    @cached_property
    def temporary_indices(self) -> dict[str, tuple[str, ...]]:
        """Each temporary's indices, as the CIN writes it (what sizes a dense one)."""
        temporaries = set(self.temporaries)
        return {assign.lhs.tensor: tuple(assign.lhs.indices)
                for _, assign in _assigned(self._realised.running, ()) if assign.lhs.tensor in temporaries}

    @property
    def dense_temporaries(self) -> dict[str, Format]:
        """The temporaries stored as dense arrays of two or more indices (written in place, unlike a list
        workspace's one index), with their formats."""
        return {name: fmt for name in self.temporaries
                if (fmt := self._realised.formats.get(name)) is not None and fmt.order >= 2 and fmt.is_dense}

    def _cost_touching(self, tensors: frozenset[str]) -> Cost:
        """The part of `running_cost` that accesses `tensors` (nothing analysed where there are none)."""
        return self.model.cost_touching(self._realised.running, tensors) if tensors else Cost(())

    @cached_property
    def dense_workspaces(self) -> tuple[tuple[Cost, tuple[str, ...]], ...]:
        """Every temporary stored as a dense array of two or more dimensions, as (how often its `where`
        runs: the iterations of the loops around it, as a cost; its indices). The lowering clears the
        whole array after each consumer, so each run costs the product of the extents, however few
        entries it wrote, and the array must fit in memory: a task set sees only the entries written."""
        found = []
        temporaries = set(self.temporaries)
        for loops, where in _wheres(self._realised.running, ()):
            for assign in assignments(where.producer):
                fmt = self._realised.formats.get(assign.lhs.tensor)
                if assign.lhs.tensor in temporaries and fmt is not None and fmt.order >= 2 and fmt.is_dense:
                    found.append((self._iterations(loops), tuple(assign.lhs.indices)))
        return tuple(found)

    @cached_property
    def list_write_cost(self) -> Cost:
        """The writes into temporaries of one index stored dense. The lowering keeps each as a list
        workspace: a write checks a generation mark and lists a coordinate written first, and the list
        is sorted before the consumer reads it — several array tasks a write, and a branch that keeps
        the loop around it from vectorising, where a temporary of no index is a register and a dense one
        of two or more indices is written in place (TTMc's `w0(m)` against `w0(i,n,m)`). A sum over the
        innermost loops that the temporary's index leaves out is kept in a register and written once
        (`∀j ∀k w1(j) += …` writes once per j), so the writes are the assignment's tasks projected onto
        the loops out to the last one the temporary names. Counted on the CIN, not the running sketch:
        a frontier program's sketch writes a sparse result directly where its CIN assembles each row
        in a list workspace, as the default's CIN does."""
        if not self._listed:
            return Cost(())
        program = self._cin_program
        cuts = {_task_of(loops, assign): _written_loops(loops, assign)
                for loops, assign in _assigned(program, ()) if assign.lhs.tensor in self._listed}
        return self.model.cost_of((written, task.guard) for task in self.model.tasks(program)
                             if (written := cuts.get((task.head, task.tensors))) is not None)

    @cached_property
    def _listed(self) -> frozenset[str]:
        """The temporaries of one index stored dense: the lowering's list workspaces."""
        return frozenset(name for name in self.temporaries
                         if (fmt := self._realised.formats.get(name)) is not None and fmt.order == 1 and fmt.is_dense)

    @cached_property
    def _cin_program(self):
        """The CIN as a sketch (its protocols as written, a staged result's copy included)."""
        return from_cin(self.cin)

    def _iterations(self, loops: tuple[str, ...]) -> Cost:
        """The iterations of the loop nest `loops` (outermost first) as the CIN runs it: the task sets at
        exactly those indices (an empty cost for no loops: once)."""
        if not loops:
            return Cost(())
        return self.model.cost_of((task.head, task.guard) for task in self._tasks if task.head == loops)

    @cached_property
    def _tasks(self) -> list:
        """The task sets of the program as its CIN runs (the analysis's, with the tensors each touches)."""
        return self.model.tasks(self._realised.running)


class CostedByCin(Costed):
    """`Costed` for a candidate known by its CIN (protocols chosen, formats given), for a class with
    `cin`: the program as it runs is that CIN's sketch as its lowering runs it (`_running_sketch`);
    hashed temporaries (or a result staged in one) are its tables, its other hashed tensors the operands
    it probes."""

    @cached_property
    def _realised(self) -> Realised:
        written = set(results(self.cin))
        variables = tensors(self.cin).values()
        hashed = [var for var in variables if any(level.inserts_sparsely for level in var.format.levels)]
        tables = frozenset(var.name for var in hashed if var.temporary or var.name in written)
        return Realised(self.cin, {var.name: var.format for var in variables if var.name not in written},
                        self._running_sketch(), tables, frozenset(var.name for var in hashed) - tables)

    def _running_sketch(self):
        """The CIN's sketch as its lowering runs it: a loop that steps through a sparse level of some read
        locates into the reads whose level there is dense (written as steps, as the formats' default
        protocols), rather than merging with a walk over the whole dimension; a loop that steps only
        dense levels visits the whole dimension (so a result indexed by it is written in stride) — as
        an asymptotic candidate's running sketch has it (`Realised.running`)."""
        operands = {name: var.format for name, var in tensors(self.cin).items() if not var.temporary}
        return _located(from_cin(self.cin), operands)


@dataclass(frozen=True)
class CinCandidate(CostedByCin, ScheduleCandidate):
    """A candidate known only by its CIN (another model's, read back from the store): the formats of
    every tensor it names, the cost text its model kept it for, and the asymptotic model's costs of its
    CIN (`CostedByCin`), by which `select` ranks it."""

    cin: Stmt
    all_formats: Mapping[str, Format] = field(compare=False)
    user_formats: Mapping[str, Format] = field(repr=False, compare=False)
    model: CostModel = field(repr=False, compare=False)
    found_by: str = field(compare=False)
    cost: str = field(compare=False)

    @property
    def formats(self) -> dict[str, Format]:
        """The format of every operand and temporary the CIN reads (the result keeps the user's)."""
        written = results(self.cin)
        return {name: fmt for name, fmt in self.all_formats.items() if name not in written}

    @property
    def temporaries(self) -> list[str]:
        return [name for name in self.all_formats if name not in self.user_formats]

    def kernel_schedule(self) -> tuple[Stmt, dict[str, Format]]:
        return self.cin, {name: fmt for name, fmt in self.all_formats.items() if name in self.user_formats}

    def __str__(self) -> str:
        return str(self.cin)


class DefaultCandidate(CinCandidate):
    """The default schedule (`schedule=None`) as a contender beside a front's candidates, so a pick is
    never a guess against the kernel a user gets without autoscheduling: estimated by its CIN (the
    default's, legalised for no extents in particular, conversions included), compiled as exactly the
    default kernel (`kernel_schedule` gives no schedule: threads and legalisation per call as the
    default's)."""

    found_by = "default"

    def kernel_schedule(self) -> tuple[None, dict[str, Format]]:
        return None, {}


def default_candidate(front: "Candidates") -> DefaultCandidate | None:
    """The default schedule of `front`'s expression and formats as a candidate (None where the default
    schedule does not compile them)."""
    try:
        options = {"fills": front.fills} if front.fills else {}
        cin = front.kernel_factory(front.assignment, front.formats, **options).cin
    except AutosparseError:
        return None
    return DefaultCandidate(cin, {name: var.format for name, var in tensors(cin).items()}, dict(front.formats),
                            cost_model(front.assignment, front.formats, front.fills), DefaultCandidate.found_by,
                            "the default schedule")


def _located(stmt, formats: Mapping[str, Format]):
    """`stmt` (a sketch) with every read of an operand in `formats` that steps a dense level at a loop's
    index located instead: the loop runs over the sparse levels stepped there, or over the whole
    dimension where none is — except where it adds a sparse read to a dense one (a union: the whole
    dimension, as written). A workspace's steps stay: the model counts the entries written to it."""
    if isinstance(stmt, Forall):
        body = _located(stmt.body, formats)
        stepped = [a for a in reads(body) if a.tensor in formats and a.protocol_of(stmt.index) == Protocol.STEP]
        if not (_adds(body) and any(not _full(a, stmt.index, formats) for a in stepped)):
            body = map_accesses(body, lambda access: _locating(access, stmt.index, formats))
        return replace(stmt, body=body)
    if isinstance(stmt, Where):
        return replace(stmt, consumer=_located(stmt.consumer, formats), producer=_located(stmt.producer, formats))
    return stmt


def _locating(access, index: str, formats: Mapping[str, Format]):
    """`access`, located at `index` where it steps a dense level there."""
    if access.tensor not in formats or access.protocol_of(index) != Protocol.STEP or not _full(access, index, formats):
        return access
    mode = access.indices.index(index)
    return replace(access, protocols=(*access.protocols[:mode], Protocol.LOCATE, *access.protocols[mode + 1:]))


def _adds(stmt) -> bool:
    """Whether any assignment of `stmt` (a sketch) adds terms."""
    return any(isinstance(node, Call) and node.op == "+" for node in walk(stmt))


def _full(access, index: str, formats: Mapping[str, Format]) -> bool:
    """Whether `access` stores the mode `index` reaches as a dense level (every coordinate)."""
    fmt = formats[access.tensor]
    return fmt.levels[fmt.mode_order.index(access.indices.index(index))].properties.full


def _wheres(stmt: Stmt, loops: tuple[str, ...]):
    """Every `where` of `stmt` with the loops around it, outermost first."""
    if isinstance(stmt, Forall):
        yield from _wheres(stmt.body, (*loops, stmt.index))
    elif isinstance(stmt, Where):
        yield loops, stmt
        yield from _wheres(stmt.consumer, loops)
        yield from _wheres(stmt.producer, loops)


def _task_of(loops: tuple[str, ...], assign) -> tuple:
    """What identifies an assignment's task sets among a program's: its loops and the tensors it accesses
    (the analysis's `Task.head` and `Task.tensors`)."""
    return loops, frozenset({assign.lhs.tensor, *(a.tensor for a in reads(assign.rhs))})


def _written_loops(loops: tuple[str, ...], assign) -> tuple[str, ...]:
    """`loops` out to the last one whose index the assignment's left side names: the loops inside it
    only add to a register."""
    named = [n for n, index in enumerate(loops) if index in assign.lhs.indices]
    return loops[:named[-1] + 1] if named else ()


def _assigned(stmt: Stmt, loops: tuple[str, ...]):
    """Every assignment of `stmt` (a sketch) with the loops around it, outermost first."""
    if isinstance(stmt, Forall):
        yield from _assigned(stmt.body, (*loops, stmt.index))
    elif isinstance(stmt, Where):
        yield from _assigned(stmt.consumer, loops)
        yield from _assigned(stmt.producer, loops)
    else:
        yield loops, stmt


def _scattered(stmt: Stmt, formats: Mapping[str, Format], loops: tuple[tuple[str, bool], ...] = ()):
    """(tensor, loops, assignment) for each access `stmt` makes to a dense tensor out of stride; `loops`
    are the loops around it, each with whether it visits its whole range (steps through no sparse
    operand)."""
    if isinstance(stmt, Forall):
        whole = all(a.protocol_of(stmt.index) != Protocol.STEP for a in reads(stmt.body))
        yield from _scattered(stmt.body, formats, (*loops, (stmt.index, whole)))
    elif isinstance(stmt, Where):
        yield from _scattered(stmt.consumer, formats, loops)
        yield from _scattered(stmt.producer, formats, loops)
    else:
        for access in (stmt.lhs, *reads(stmt.rhs)):
            fmt = formats.get(access.tensor)
            inner = [(i, whole) for i, whole in loops if i in access.indices]
            if fmt is not None and fmt.is_dense and inner and not (
                    inner[-1][1] and access.indices.index(inner[-1][0]) == fmt.mode_order[-1]):
                yield access.tensor, tuple(i for i, _ in loops), stmt


class Candidates:
    """The candidates an autoscheduler kept for one expression (`candidates`), and its search (`search`,
    with the `stages` it went through)."""

    candidates: list
    search: object
    assignment: notation.Assignment
    formats: Mapping[str, Format]
    kernel_factory: KernelFactory
    fills: Mapping[str, object] = {}  # the operands' fills other than 0, which the kernels are built for

    def __iter__(self):
        return iter(self.candidates)

    def __len__(self) -> int:
        return len(self.candidates)

    def __getitem__(self, n: int):
        return self.candidates[n]

    @property
    def stages(self) -> list:
        return self.search.stages

    def kernel(self, candidate: ScheduleCandidate, **options):
        """`candidate` compiled for this front's expression and formats (`options` are the factory's:
        `num_threads`, ...)."""
        if self.fills:
            options = {"fills": self.fills, **options}
        return self.kernel_factory(self.assignment, self.formats, schedule=candidate, **options)

    @cached_property
    def default(self) -> "DefaultCandidate | None":
        """The default schedule as a candidate, which `select` weighs beside this front's own."""
        return default_candidate(self)

    def select(self, tune: int = 0, **tensors):
        """The candidate expected to run fastest on these operands (`select.py`), whichever model found it;
        `tune=n` times the n best estimated candidates on them and returns the fastest instead."""
        from .select import select
        return select(self, tensors, tune)

    def __str__(self) -> str:
        return front_table(self)


class JointFront(Candidates):
    """The candidates of several models' fronts for one expression (`model="auto"`): the asymptotic
    frontier and SparseAuto's final set side by side, each costed by the same estimate, so `select`
    weighs a 3-D temporary of one against the branched nests of the other."""

    def __init__(self, fronts: list[Candidates]):
        first = fronts[0]
        self.fronts = fronts
        self.assignment, self.formats, self.kernel_factory = first.assignment, first.formats, first.kernel_factory
        self.fills = first.fills
        self.candidates = [cand for front in fronts for cand in front]

    @property
    def complete(self) -> bool:
        return all(front.complete for front in self.fronts)

    @property
    def stages(self) -> list:
        return [stage for front in self.fronts for stage in front.stages]
