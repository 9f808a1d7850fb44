"""CIN statement + the dtypes of its tensors -> one C function, called through the ABI of `runtime.abi`."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np

from ..cin.ast import (Access, Assign, Forall, ParallelUnit, Protocol, Race, Stmt, Strategy, TensorVar, accesses,
                       assignments, tensors, unnest, walk)
from ..codegen import names
from ..codegen import printer
from ..codegen.jam import jam_loops
from ..codegen.builder import CBuilder
from ..codegen.c_ast import (Block, CType, Define, Function, Include, OmpBarrier, OmpParallel, OmpSingle, Param,
                             TopLevel, Unit, Var, as_expr, call, cast, not_)
from ..errors import ScheduleError
from ..format.level import Level
from ..cin.provenance import Bound, Provenance, Split, split_relations
from ..cin.rewrite import bounded
from ..notation.ast import Div, IndexVar, Neg, factors
from ..runtime.abi import SYMBOL, KernelSource, Slot, Types, WorkspaceSize
from . import finds, keyed
from .context import Logs, Phase, Plan, Scope, count_iteration
from .derived import ceil_div
from .lower import lower
from .parallel import RowSplit, temporaries_inside, thread_temporaries
from .reads import ReadLevel, TensorLevel
from .workspaces import ORDER_HELPER, DenseWorkspace, HashedWorkspace, ListWorkspace, ScalarWorkspace, Workspace
from .writes import HELPERS, AppendedResult, AssembledResult, DenseResult, SharedPatternResult, Target

def generate(stmt: Stmt, types: Types, instrument: bool = False, num_threads: int | None = None) -> KernelSource:
    """The kernel of `stmt` for `types`: survey the statement, decide how each tensor is read and written,
    lower each phase of the loops, then wrap them in the function the ABI calls."""
    survey = _survey(stmt, types)
    workspaces = {n: _workspace(v, stmt, survey.extent, survey.result_value)
                  for n, v in survey.variables.items() if v.temporary}
    writes = sum(a.lhs.tensor.name == survey.result.name for a in assignments(stmt))
    target = _result_target(survey.result, stmt, _level_extents(survey.result, stmt, survey.extent), types,
                            survey.result_value, writes)
    if not target.random_access and writes > 1:
        raise ScheduleError(f"Expected one statement appending to the sparse result {survey.result.name} "
                            f"(format {survey.result.format}), but {writes} write it: use a workspace")
    reads = _Reads.of(survey, workspaces)
    region = _chunking_loop(stmt, target)
    if region is not None:
        target = replace(target, chunked=True)
    lowering = _Phases(survey, reads, workspaces, region, num_threads, [] if instrument else None,
                       _row_owner(survey.stmt, target))
    phases = lowering.all(target)
    slots = _slots(survey, target)
    body = _function_body(survey, reads, workspaces, target, slots, phases, lowering)
    top = _top_level(survey, reads, workspaces, lowering.tables)
    complex_values = any(np.dtype(value).kind == "c" for value in types.values.values())
    top.append(Function("int", SYMBOL, _PARAMS, body if complex_values else jam_loops(body)))
    result_lhs = next(a.lhs for a in assignments(stmt) if a.lhs.tensor.name == survey.result.name)
    counters = lowering.counters
    return KernelSource(printer.unit(Unit(tuple(top))), survey.operands, survey.result.name, slots,
                        isinstance(target, AssembledResult), survey.indices,
                        tuple(counters) if counters is not None else None,
                        result_indices=result_lhs.indices, result_level_indices=result_lhs.level_indices,
                        workspaces=_workspace_sizes(stmt, types.values[survey.result.name]),
                        bounds=tuple(r for r in survey.provenance.relations if isinstance(r, Bound)),
                        openmp=survey.openmp,
                        bitmaps=tuple(index for strategy, index, _ in lowering.tables.values()
                                      if strategy is Strategy.BITMAP),
                        hashed=tuple(sorted({access.tensor.name for access in reads.keyed})),
                        zeroes_result=lowering.zeroed_rows, checked=tuple(sorted(types.checked)),
                        result_fill=survey.result.fill)


@dataclass(frozen=True)
class _Survey:
    """What the kernel is made of, read off the statement before any code: its tensors, the one result,
    the root indices (one extent each in `dims`), each index's extent in C and each tensor's C value type."""

    stmt: Stmt
    types: Types
    variables: Mapping[str, TensorVar]
    result: TensorVar
    operands: tuple[str, ...]
    provenance: Provenance
    indices: tuple[IndexVar, ...]
    extent: Mapping[IndexVar, str]
    value_c: Mapping[str, CType]
    access_ids: Mapping[Access, str]

    @property
    def result_value(self) -> CType:
        return self.value_c[self.result.name]

    @property
    def openmp(self) -> bool:
        """Whether a loop runs on threads (the kernel is built with -fopenmp; SIMD loops need only the
        -fopenmp-simd every kernel is built with)."""
        return any(isinstance(n, Forall) and n.parallel is not None and n.parallel.unit is not ParallelUnit.CPU_VECTOR
                   for n in walk(self.stmt))


def _check_divisors(stmt: Stmt) -> None:
    """A quotient takes its dividend's pattern (0 / b is 0), so every divisor of fill 0 must be stored at
    every coordinate: an absent divisor entry would divide by zero, which no sparse result can hold. A
    divisor of another fill divides by it where it is absent."""
    for node in walk(stmt):
        if isinstance(node, Div):
            sparse = next((a for a in accesses(node.right) if not a.tensor.format.is_dense and a.tensor.fill == 0),
                          None)
            if sparse is not None:
                raise ScheduleError(f"Expected a divisor stored at every coordinate (a dense operand, a scalar "
                                    f"or a literal), but {sparse.tensor.name} in {node} is sparse ("
                                    f"{sparse.tensor.format}): its absent entries would be divisions by zero")


def _survey(stmt: Stmt, types: Types) -> _Survey:
    _check_divisors(stmt)
    variables = tensors(stmt)
    written = {a.lhs.tensor.name for a in assignments(stmt)}
    results = [n for n in written if not variables[n].temporary]
    if len(results) != 1:
        raise ScheduleError(f"Expected one result tensor in {stmt}, but found {sorted(results) or 'none'}")
    result = variables[results[0]]
    operands = tuple(sorted(n for n, v in variables.items() if n not in written and not v.temporary))
    provenance = Provenance(split_relations(stmt)[1])
    indices = tuple(dict.fromkeys(root for n in walk(stmt) if isinstance(n, Forall)
                                  for root in provenance.roots(n.index)))
    extent = {index: names.extent(index) for index in indices}
    for relation in provenance.relations:  # the variables of a split that index levels (a block view)
        if isinstance(relation, Split) and not relation.divide and relation.parent in extent:
            tiles = ceil_div(extent[relation.parent], relation.factor)
            extent[relation.outer] = extent[relation.parent] if relation.offset else tiles
            extent[relation.inner] = as_expr(relation.factor)
    value_c = {n: names.value_type(types.values[n]) for n in (*operands, result.name)}
    value_c.update({name: value_c[result.name] for name, var in variables.items() if var.temporary})
    access_ids = _access_ids(list(dict.fromkeys(a for node in walk(stmt) for a in accesses(node))))
    return _Survey(stmt, types, variables, result, operands, provenance, indices, extent, value_c, access_ids)


@dataclass(frozen=True)
class _Reads:
    """How lowering reads each access: a workspace's levels, a keyed view of an operand found by hashing its
    whole coordinates (`keyed`: those accesses, each with its table), or the operand's own levels."""

    survey: _Survey
    workspaces: Mapping[str, Workspace]
    keyed: Mapping[Access, str]

    @classmethod
    def of(cls, survey: _Survey, workspaces: Mapping[str, Workspace]) -> "_Reads":
        unkeyed = cls(survey, workspaces, {})
        keyed_tables = keyed.keyed_accesses(survey.stmt,
                                            lambda a: a.tensor.name not in workspaces and unkeyed.scattered(a))
        for access in keyed_tables:
            keyed.check(access, unkeyed.tensor_levels(access),
                        f"coiterate({access.level_indices[-1]}, hash, {access.tensor.name})")
        return cls(survey, workspaces, keyed_tables)

    def levels(self, access: Access) -> tuple[ReadLevel, ...]:
        name = access.tensor.name
        if name in self.workspaces:
            return tuple(self.workspaces[name].read_level(k) for k in range(access.tensor.order))
        if access in self.keyed:
            return keyed.view(access, self.tensor_levels(access), self.keyed[access])
        return self.tensor_levels(access)

    def tensor_levels(self, access: Access) -> tuple[TensorLevel, ...]:
        name = access.tensor.name
        itype = names.index_type(self.survey.types.indices[name])
        dims = [self.survey.extent[i] for i in access.level_indices]
        levels = access.tensor.format.levels
        scattered = [any(not p.properties.unique and not p.properties.ordered and not p.properties.descending
                         for p in levels[:k]) for k in range(len(levels))]
        # besides its arrays, a level's C fragments may read its index type, extent and segment base
        ident = self.survey.access_ids.get(access, names.access(name))
        return tuple(TensorLevel(level, {**{a: names.array(name, k, a) for a in level.array_names}, "@type": itype,
                                         "@dim": dims[k], "@base": names.part(names.position(ident, k), "base")},
                                 dims[k], scattered[k], name in self.survey.types.checked)
                     for k, level in enumerate(levels))

    def scattered(self, access: Access) -> bool:
        """Whether the access's last level cannot be found alone: a level above it, or it, repeats
        coordinates in no order."""
        last = self.tensor_levels(access)[-1]
        return last.unsorted or not (last.unique or last.ordered or last.descending)


@dataclass
class _Phases:
    """Lowers the loops once per phase of the result's assembly. The find tables (built once per segment
    for the whole call) and the instrumentation counters are shared by all phases and read afterwards."""

    survey: _Survey
    reads: _Reads
    workspaces: Mapping[str, Workspace]
    region: IndexVar | None
    num_threads: int | None
    counters: list[str] | None
    row_owner: IndexVar | None  # the loop that may zero the dense result's rows (`Plan.zeroed_rows`)
    tables: finds.Tables = field(default_factory=dict)
    zeroed_rows: bool = False  # whether the filling phase zeroed every row of the dense result
    region_rows: RowSplit | None = None  # the rows the chunked region's threads run, dealt once (Logs')

    def all(self, target: Target) -> tuple[Block | None, Block | None, Block]:
        """(bound, count, fill): an appended result is bounded and counted before it is filled."""
        if not isinstance(target, AppendedResult):
            return None, None, self.phase(target, Phase.FILL)
        counting = self.phase(target, Phase.COUNT)  # first: the phases share the find tables, in this order
        return self.phase(target, Phase.BOUND), counting, self.phase(replace(target, filling=True), Phase.FILL)

    def phase(self, target: Target, phase: Phase) -> Block:
        """The loops for one phase (instrumented kernels count the iterations of the filling one)."""
        survey = self.survey
        plan = Plan(self.reads.levels, {survey.result.name: target, **self.workspaces}, survey.access_ids,
                    survey.value_c, survey.result_value, phase, self.num_threads, self.region,
                    self.row_owner, survey.result.name)
        logs = Logs(names.Fresh(), None if phase.counting else self.counters, self.tables)
        out = CBuilder()
        bounded = frozenset({survey.result.name} if phase is Phase.BOUND and target.bounds else ())
        with out.failing_to(_FAILED, names.part(phase.value, "end")) if self.region is not None else nullcontext():
            lower(survey.stmt, plan, logs, Scope(bounded=bounded), out)
        self.zeroed_rows = logs.zeroed_rows
        self.region_rows = self.region_rows or logs.region_rows
        return out.statements()


def _slots(survey: _Survey, target: Target) -> tuple[Slot, ...]:
    """The ABI's argument slots: every operand's level arrays, their values, then the result's."""
    variables = survey.variables
    slots = [Slot(n, k, a) for n in survey.operands for k, lv in enumerate(variables[n].format.levels)
             for a in lv.array_names]
    slots += [Slot(n, -1, "vals") for n in survey.operands]
    slots += target.slots() if isinstance(target, AssembledResult) else [Slot(survey.result.name, -1, "vals")]
    return tuple(slots)


def _top_level(survey: _Survey, reads: _Reads, workspaces: Mapping[str, Workspace],
               tables: finds.Tables) -> list[TopLevel]:
    """Includes and the static helpers the kernel's function calls."""
    top: list[TopLevel] = [Include("omp.h")] if survey.openmp else []
    top += _preamble(survey.variables, survey.types)
    if any(isinstance(w, (ListWorkspace, HashedWorkspace)) for w in workspaces.values()):
        top.append(ORDER_HELPER)
    for workspace in workspaces.values():
        top += workspace.helpers()
    if any(strategy is Strategy.HASH for strategy, _, _ in tables.values()):
        top.append(finds.HASH_HELPER)
    for width in sorted({access.tensor.order for access in reads.keyed}):
        top += keyed.helpers(width)
    return top


def _function_body(survey: _Survey, reads: _Reads, workspaces: Mapping[str, Workspace], target: Target,
                   slots: tuple[Slot, ...], phases: tuple[Block | None, Block | None, Block],
                   lowering: _Phases) -> Block:
    """The kernel function's statements: unpack the arguments, allocate, run the phases, release, and
    hand an assembled result's arrays back through `args` and `sizes`."""
    result, assembled = survey.result, isinstance(target, AssembledResult)
    threaded = {name for node in walk(survey.stmt) if isinstance(node, Forall) and node.parallel is not None
                and node.parallel.unit is ParallelUnit.CPU_THREAD for name in temporaries_inside(node)}
    b = CBuilder()
    for k, index in enumerate(survey.indices):
        b.decl("const int64_t", survey.extent[index], Var("dims")[k])
    for k, slot in enumerate(slots):
        if assembled and slot.tensor == result.name:
            continue
        ctype = survey.value_c[slot.tensor] if slot.level < 0 else names.index_type(survey.types.indices[slot.tensor])
        ctype = ctype if slot.tensor == result.name else ctype.constant()
        b.decl(ctype.pointer(restrict=True), _slot_ident(slot), cast(ctype.pointer(), Var("args")[k]))
    if assembled:
        target.allocate(b)
    for name, workspace in workspaces.items():
        if name not in threaded:
            workspace.allocate(b)
    finds.declare_tables(lowering.tables, b)
    for access, table in reads.keyed.items():
        keyed.build(access, reads.tensor_levels(access), table,
                    lambda label: count_iteration(lowering.counters, b, label), b)
    _run_phases(target, phases, [workspaces[n] for n in threaded], lowering, b)
    for name, workspace in workspaces.items():
        if name not in threaded:
            workspace.release(b)
    finds.release_tables(lowering.tables, b)
    for table in reads.keyed.values():
        keyed.release(table, b)
    if assembled:
        target.finish(b)
        lengths = target.lengths()
        for k, slot in enumerate(slots):
            if slot.tensor == result.name:
                b.assign(Var("args")[k], Var(_slot_ident(slot)))
                b.assign(Var("sizes")[k], lengths[slot])
    b.return_(0)
    return b.statements()


def _run_phases(target: Target, phases: tuple[Block | None, Block | None, Block], threaded: list[Workspace],
                lowering: _Phases, b: CBuilder) -> None:
    """The phases in order: in one parallel region when threads assemble the result in chunks; else a
    bound phase (when some loop was replaced by its trip count) whose arrays are kept unless they do not
    fit, a count phase, then the fill."""
    bounding, counting, filling = phases
    if lowering.region is not None:
        _chunked_phases(target, threaded, (bounding if bounding != counting else None, counting, filling),
                        lowering.num_threads, lowering.region_rows, b)
        return
    if counting is not None:
        if bounding != counting:
            b.comment("bound")
            b.extend(bounding)
            target.allocate_bounded(b)
            with b.if_(not_(Var(target.bounded))):
                target.rewind(b)
                b.comment("count")
                b.extend(counting)
                target.allocate_entries(b)
        else:
            b.comment("count")
            b.extend(counting)
            target.allocate_entries(b)
        target.rewind(b)
        b.comment("fill")
    b.extend(filling)


def _workspace_sizes(stmt: Stmt, value_dtype: np.dtype) -> tuple[WorkspaceSize, ...]:
    """The dense workspaces the kernel allocates, each with what it takes per coordinate (a value, and for a
    list workspace its bookkeeping), so the caller can refuse a call that would pass the memory limit."""
    return tuple(WorkspaceSize(name, next(a.lhs.indices for a in assignments(stmt) if a.lhs.tensor.name == name),
                               value_dtype.itemsize + (ListWorkspace.BYTES_PER_COORDINATE if var.order == 1 else 0))
                 for name, var in tensors(stmt).items() if var.temporary and var.format.is_dense)


#: The kernel's signature: the ABI of runtime.abi.
_PARAMS = (Param("void **restrict", "args"), Param("const int64_t *restrict", "dims"),
           Param("int64_t *restrict", "sizes"), Param("int64_t *restrict", "counters"))


def _slot_ident(slot: Slot) -> str:
    return names.vals(slot.tensor) if slot.level < 0 else names.array(slot.tensor, slot.level, slot.array)


_FAILED = "failed"  # the flag of the kernel's parallel region


def _row_owner(stmt: Stmt, target: Target) -> IndexVar | None:
    """The loop that can zero the dense result's rows itself, if there is one: the outermost loop, around
    every statement, over the result's first level, each of whose iterations writes only its own row
    (every write is located at the loop's coordinate there), run serially or by threads that own their
    rows. A result summed into from an outer reduction (SpMV over CSC's columns) has no such loop and
    keeps the caller's zeroes; so does one whose loop turns out not to visit every row (lowering says)."""
    loop = split_relations(stmt)[0]
    if not isinstance(target, DenseResult) or not target.levels or not isinstance(loop, Forall) \
            or any(a.lhs.tensor.fill != 0 for a in assignments(loop)):  # the caller fills a result of another fill
        return None
    if loop.parallel is not None and (loop.parallel.unit is not ParallelUnit.CPU_THREAD
                                      or loop.parallel.race not in (Race.NO_RACES, Race.IGNORE_RACES)):
        return None
    writes = [a.lhs for a in assignments(loop) if a.lhs.tensor.name == target.name]
    return loop.index if all(lhs.level_indices[:1] == (loop.index,) for lhs in writes) else None


def _chunking_loop(stmt: Stmt, target: Target) -> IndexVar | None:
    """The loop whose threads assemble an appended result in chunks, if there is one: the outermost
    loop, parallel over threads, over the result's first level, which is dense."""
    if not isinstance(target, AppendedResult) or not target.levels[0].properties.full:
        return None
    loop = split_relations(stmt)[0]
    if not isinstance(loop, Forall) or loop.parallel is None or loop.parallel.unit is not ParallelUnit.CPU_THREAD:
        return None
    lhs = next(a.lhs for a in assignments(loop) if a.lhs.tensor.name == target.name)
    return loop.index if lhs.level_indices[:1] == (loop.index,) else None


def _chunked_phases(target: AppendedResult, workspaces: list[Workspace], phases: tuple[Block | None, Block, Block],
                    num_threads: int | None, rows: RowSplit | None, b: CBuilder) -> None:
    """The phases of an assembly by threads in one parallel region, so threads start once and keep their
    temporaries (AppendedResult's chunks): each thread bounds its chunk, one sizes the arrays at the
    bounds; when those do not fit, each counts its chunk exactly and one sizes the arrays again; each
    fills its chunk; after the region the chunks are moved together. Each thread's rows (`rows`) are dealt
    once, when the region starts, and every phase runs over them. A failure anywhere raises the
    region's flag; the phases after it are skipped by all threads alike, and the kernel returns the flag
    once the region ends."""
    bounding, counting, filling = phases
    failed = Var(_FAILED)
    b.decl("const int", "threads", num_threads or call("omp_get_max_threads"))
    b.decl("int", _FAILED, 0)
    b.decl("int", "team", 1)
    target.allocate_chunks("threads", b)
    b.pragma(OmpParallel(Var("threads")))
    with b.block(), thread_temporaries(workspaces, _FAILED, "allocated", b):
        b.decl("const int", "thread", call("omp_get_thread_num"))
        if rows is not None:
            rows.deal(b, Var("thread"), call("omp_get_num_threads"))
        target.declare_chunk_sizes(b)

        def phase(name: str, statements: Block, allocate) -> None:
            """A count or bound phase, then one thread sums the chunks and allocates the arrays."""
            with b.if_(b.agreed(_FAILED, names.generated(name, "ready"))):
                b.comment(name)
                b.extend(statements)
            target.count_chunk("thread", b)
            b.pragma(OmpBarrier())
            b.pragma(OmpSingle())
            with b.block(), b.failing_to(_FAILED, names.part(name, "sized")), b.if_(not_(failed)):
                b.assign(Var("team"), call("omp_get_num_threads"))
                target.sum_chunks("team", b)
                allocate(b)
        if bounding is not None:
            phase("bound", bounding, target.allocate_bounded)
        with b.when(not_(Var(target.bounded)) if bounding is not None else None):
            target.rewind(b)
            phase("count", counting, target.allocate_entries)
        with b.if_(b.agreed(_FAILED, "fillready")):
            b.comment("fill")
            target.start_chunk("thread", b)
            b.extend(filling)
            target.end_chunk("thread", b)
    b.fail(failed, failed)
    target.compact("team", b)


def _access_ids(access_list: list[Access]) -> dict[Access, str]:
    """The stem of each distinct access's identifiers: the tensor's, numbered when it is accessed twice."""
    ids, seen = {}, {}
    for access in access_list:
        count = seen.get(access.tensor.name, 0)
        seen[access.tensor.name] = count + 1
        ids[access] = names.access(access.tensor.name, count)
    return ids


def _level_extents(var: TensorVar, stmt: Stmt, extent: Mapping[IndexVar, str]) -> tuple[str, ...]:
    access = next(a.lhs for a in assignments(stmt) if a.lhs.tensor.name == var.name)
    return tuple(extent[i] for i in access.level_indices)


def _result_target(var: TensorVar, stmt: Stmt, dims: tuple[str, ...], types: Types, value_c: CType,
                   writes: int) -> Target:
    if var.format.is_dense:
        return DenseResult(var.name, var.format.levels, dims, overwrites=writes == 1)
    itype = names.index_type(types.indices[var.name])
    source = _pattern_source(stmt)
    if source is not None:
        levels = source.tensor.format.levels[:_shared_levels(var.format)]
        arrays = tuple({a: names.array(source.tensor.name, k, a) for a in level.array_names}
                       for k, level in enumerate(levels))
        return SharedPatternResult(var.name, var.format.levels, dims, itype, value_c, source, levels, arrays)
    full = [level.properties.full for level in var.format.levels]
    gaps = any(full[k] and not all(full[:k]) for k in range(len(full)))
    adds = any(a.accumulate for a in assignments(stmt) if a.lhs.tensor.name == var.name)
    return AppendedResult(var.name, var.format.levels, dims, itype, value_c,
                          zero_values=gaps or adds)


def _shared_levels(fmt) -> int:
    """How many of a result's levels can share an operand's positions: up to its last sparse level (the
    dense levels after it are located below the shared positions)."""
    return max((k + 1 for k, level in enumerate(fmt.levels) if not level.properties.full), default=0)


def _pattern_source(stmt: Stmt) -> Access | None:
    """The operand whose pattern the result has, when there is one: the result's levels up to its last
    sparse one are the same kinds as the operand's first levels, bound by the outermost loops in order,
    and those loops step the operand alone (every other access reaches their indices by locating them,
    the operand is a factor of the whole right-hand side). Each of the operand's positions is then
    visited once, in order, and is the result's position."""
    loops, stmt = unnest(split_relations(stmt)[0])
    if not isinstance(stmt, Assign):
        return None
    lhs, rhs = stmt.lhs, stmt.rhs
    shared = lhs.tensor.format.levels[:_shared_levels(lhs.tensor.format)]
    outer = lhs.level_indices[:len(shared)]
    if tuple(loops[:len(outer)]) != outer:
        return None
    while isinstance(rhs, Neg):
        rhs = rhs.operand
    for source in factors(rhs):
        if not isinstance(source, Access) or source.tensor.temporary or source.tensor.format.is_dense:
            continue
        if source.level_indices[:len(outer)] != outer:
            continue
        if not all(_shares(result, level, protocol, parent_differs) for result, level, protocol, parent_differs
                   in zip(shared, source.tensor.format.levels, source.level_protocols,
                          _parents_differ(shared, source.tensor.format.levels))):
            continue
        others = [a for a in accesses(rhs) if a is not source]
        if all(_located(other, outer) for other in others):
            return source
    return None


def _shares(result: Level, level: Level, protocol: Protocol, parent_differs: bool) -> bool:
    """Whether a result level can hold the positions of an operand level stepped once per position: a
    level of the same kind, or a dense one (located). Below a dense result level over a sparse operand
    level, the positions differ: a compressed level then counts its children itself, a singleton cannot."""
    if not level.properties.unique or not (level.properties.full or protocol is Protocol.STEP):
        return False
    if result.properties.full:
        return True
    return result == level and not (parent_differs and "pos" not in result.array_names)


def _parents_differ(result: tuple[Level, ...], source: tuple[Level, ...]) -> list[bool]:
    """Per level, whether the result's parent positions differ from the operand's (a dense result level
    over a sparse operand level makes them differ below it)."""
    differs, out = False, []
    for mine, theirs in zip(result, source):
        out.append(differs)
        differs = mine.properties.full and (differs or not theirs.properties.full)
    return out


def _located(access: Access, indices: tuple[IndexVar, ...]) -> bool:
    """Whether `access` reaches each of `indices` without stepping a sparse level (it locates it, or the
    level is dense)."""
    levels = access.tensor.format.levels
    return all(levels[k].properties.full or protocol is Protocol.LOCATE
               for k, (index, protocol) in enumerate(zip(access.level_indices, access.level_protocols))
               if index in indices)


def _swept(var: TensorVar, stmt: Stmt) -> bool:
    """Whether every read of the one-index temporary `var` locates it in a loop over its index that no
    sparse level it steps bounds (`cin.rewrite.bounded`), so runs over the whole dimension (a row workspace
    under `maximum(..., 0)`, or `+ E(i,j)`): a plain array then serves, its producer's stores one combine
    each and its reset a sweep the consumer's loop costs anyway, where a list of touched coordinates would
    cost a mark check per store."""
    reads = [a for assign in assignments(stmt) for a in accesses(assign.rhs) if a.tensor.name == var.name]
    if not reads or any(a.level_protocols != (Protocol.LOCATE,) for a in reads):
        return False
    index = reads[0].level_indices[0]
    loops = [loop for loop in walk(stmt) if isinstance(loop, Forall) and loop.index == index
             and any(a.tensor.name == var.name for assign in assignments(loop.body) for a in accesses(assign.rhs))]
    steps = lambda leaf: isinstance(leaf, Access) and _steps(leaf, index)
    return bool(loops) and not any(bounded(assign.rhs, steps) for loop in loops for assign in assignments(loop.body))


def _steps(access: Access, index: IndexVar) -> bool:
    """Whether `access` steps a sparse level over `index`."""
    return any(i == index and protocol is Protocol.STEP and not level.properties.full
               for i, protocol, level in zip(access.level_indices, access.level_protocols,
                                             access.tensor.format.levels))


def _workspace(var: TensorVar, stmt: Stmt, extent: Mapping[IndexVar, str], value_c: CType) -> Workspace:
    dims = _level_extents(var, stmt, extent)
    fmt = var.format
    if fmt.is_dense and fmt.order == 1 and _swept(var, stmt):
        return DenseWorkspace(var.name, dims, value_c, var.fill)
    if fmt.is_dense and fmt.order == 1:
        located = any(a.tensor.name == var.name and Protocol.LOCATE in a.level_protocols for a in accesses(stmt))
        return ListWorkspace(var.name, dims[0], value_c, located, var.fill)
    if fmt.order == 0:
        return ScalarWorkspace(var.name, dims, value_c, var.fill)
    if fmt.is_dense:
        return DenseWorkspace(var.name, dims, value_c, var.fill)
    if all(level.inserts_sparsely for level in fmt.levels):
        if var.fill != 0:
            raise ScheduleError(f"Expected a hashed temporary to start at 0, but {var.name} starts at {var.fill}: "
                                f"a hashed workspace of another start value is not supported yet; use a dense one")
        return HashedWorkspace(var.name, dims, value_c)
    raise ScheduleError(f"Expected a dense or hashed temporary, but {var.name} has format {fmt}")


def _preamble(variables: Mapping[str, TensorVar], types: Types) -> list[TopLevel]:
    helpers = dict.fromkeys(
        level.c_helpers(names.index_type(types.indices[name]))
        for name, var in variables.items() if not var.temporary
        for level in var.format.levels)
    return [Define("_DEFAULT_SOURCE", "madvise under -std=c11"),
            *(Include(header) for header in ("stdint.h", "stdlib.h", "string.h", "complex.h", "math.h", "sys/mman.h")),
            HELPERS, *(h for h in helpers if h)]
