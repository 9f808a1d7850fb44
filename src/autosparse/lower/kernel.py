"""CIN statement + the dtypes of its tensors -> one C function, called through the ABI of `runtime.abi`."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace
from typing import Mapping

import numpy as np

from ..cin.ast import (Access, Assign, Forall, ParallelUnit, Protocol, Stmt, Strategy, TensorVar, accesses,
                       assignments, tensors, unnest, walk)
from ..codegen import names
from ..codegen import printer
from ..codegen.builder import CBuilder
from ..codegen.c_ast import (Block, CType, Define, Function, Include, OmpBarrier, OmpParallel, OmpSingle, Param,
                             TopLevel, Unit, Var, as_expr, call, cast, not_)
from ..errors import ScheduleError
from ..format.level import Level
from ..cin.provenance import Bound, Provenance, Split, split_relations
from ..notation.ast import IndexVar, Neg, factors
from ..runtime.abi import SYMBOL, KernelSource, Slot, Types, WorkspaceSize
from . import finds, keyed
from .context import Logs, Phase, Plan, Scope, count_iteration
from .derived import ceil_div
from .lower import lower
from .parallel import temporaries_inside, thread_temporaries
from .reads import ReadLevel, TensorLevel
from .workspaces import ORDER_HELPER, DenseWorkspace, HashedWorkspace, ListWorkspace, ScalarWorkspace, Workspace
from .writes import HELPERS, AppendedResult, AssembledResult, DenseResult, SharedPatternResult, Target

def generate(stmt: Stmt, types: Types, instrument: bool = False, num_threads: int | None = None) -> KernelSource:
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
    result_value = value_c[result.name]
    for name, var in variables.items():
        if var.temporary:
            value_c[name] = result_value

    access_list = list(dict.fromkeys(a for node in walk(stmt) for a in accesses(node)))
    access_ids = _access_ids(access_list)
    workspaces = {n: _workspace(v, stmt, extent, result_value) for n, v in variables.items() if v.temporary}
    writes = sum(a.lhs.tensor.name == result.name for a in assignments(stmt))
    result_target = _result_target(result, stmt, _level_extents(result, stmt, extent), types, result_value, writes)
    if not result_target.random_access and writes > 1:
        raise ScheduleError(f"Expected one statement appending to the sparse result {result.name} "
                            f"(format {result.format}), but {writes} write it: use a workspace")

    def read_levels(access: Access) -> tuple[ReadLevel, ...]:
        name = access.tensor.name
        if name in workspaces:
            return tuple(workspaces[name].read_level(k) for k in range(access.tensor.order))
        if access in keyed_tables:
            return keyed.view(access, tensor_levels(access), keyed_tables[access])
        return tensor_levels(access)

    def tensor_levels(access: Access) -> tuple[TensorLevel, ...]:
        name = access.tensor.name
        itype = names.index_type(types.indices[name])
        dims = [extent[i] for i in access.level_indices]
        levels = access.tensor.format.levels
        scattered = [any(not p.properties.unique and not p.properties.ordered and not p.properties.descending
                         for p in levels[:k]) for k in range(len(levels))]
        # besides its arrays, a level's C fragments may read its index type, extent and segment base
        stem = access_ids.get(access, names.access(name))
        return tuple(TensorLevel(level, {**{a: names.array(name, k, a) for a in level.array_names}, "@type": itype,
                                         "@dim": dims[k], "@base": names.part(names.position(stem, k), "base")},
                                 dims[k],
                                 scattered[k])
                     for k, level in enumerate(levels))

    def scattered(access: Access) -> bool:
        """Whether the access's last level cannot be found alone: a level above it, or it, repeats
        coordinates in no order."""
        last = tensor_levels(access)[-1]
        return last.unsorted or not (last.unique or last.ordered or last.descending)

    keyed_tables = keyed.keyed_accesses(stmt, lambda a: a.tensor.name not in workspaces and scattered(a))
    for access in keyed_tables:
        keyed.check(access, tensor_levels(access), f"coiterate({access.level_indices[-1]}, hash, {access.tensor.name})")

    counters: list[str] | None = [] if instrument else None
    two_phase = isinstance(result_target, AppendedResult)
    region = _chunking_loop(stmt, result_target)
    if region is not None:
        result_target = replace(result_target, chunked=True)
    threaded = {name for node in walk(stmt) if isinstance(node, Forall) and node.parallel is not None
                and node.parallel.unit is ParallelUnit.CPU_THREAD for name in temporaries_inside(node)}

    tables: finds.Tables = {}  # every phase's, built once per segment for the whole call

    def body(target: Target, phase: Phase) -> Block:
        """The loops for one phase (instrumented kernels count the iterations of the filling one)."""
        plan = Plan(read_levels, {result.name: target, **workspaces}, access_ids, value_c, result_value, phase,
                    num_threads, region)
        logs = Logs(names.Fresh(), None if phase.counting else counters, tables)
        out = CBuilder()
        bounded = frozenset({result.name} if phase is Phase.BOUND and target.bounds else ())
        with out.failing_to(_FAILED, names.part(phase.value, "end")) if region is not None else nullcontext():
            lower(stmt, plan, logs, Scope(bounded=bounded), out)
        return out.statements()

    counting = body(result_target, Phase.COUNT) if two_phase else None
    bounding = body(result_target, Phase.BOUND) if two_phase else None
    filling = body(replace(result_target, filling=True) if two_phase else result_target, Phase.FILL)

    slots = [Slot(n, k, a) for n in operands for k, lv in enumerate(variables[n].format.levels) for a in lv.array_names]
    slots += [Slot(n, -1, "vals") for n in operands]
    assembled = isinstance(result_target, AssembledResult)
    slots += result_target.slots() if assembled else [Slot(result.name, -1, "vals")]

    openmp = any(isinstance(n, Forall) and n.parallel is not None for n in walk(stmt))
    top: list[TopLevel] = [Include("omp.h")] if openmp else []
    top += _preamble(variables, types)
    if any(isinstance(w, (ListWorkspace, HashedWorkspace)) for w in workspaces.values()):
        top.append(ORDER_HELPER)
    for workspace in workspaces.values():
        top += workspace.helpers()
    if any(strategy is Strategy.HASH for strategy, _ in tables.values()):
        top.append(finds.HASH_HELPER)
    for width in sorted({access.tensor.order for access in keyed_tables}):
        top += keyed.helpers(width)

    b = CBuilder()
    for k, index in enumerate(indices):
        b.decl("const int64_t", extent[index], Var("dims")[k])
    for k, slot in enumerate(slots):
        if assembled and slot.tensor == result.name:
            continue
        ctype = value_c[slot.tensor] if slot.level < 0 else names.index_type(types.indices[slot.tensor])
        ctype = ctype if slot.tensor == result.name else ctype.constant()
        b.decl(ctype.pointer(restrict=True), _slot_ident(slot), cast(ctype.pointer(), Var("args")[k]))
    if assembled:
        result_target.allocate(b)
    for name, workspace in workspaces.items():
        if name not in threaded:
            workspace.allocate(b)
    finds.declare_tables(tables, b)
    for access, table in keyed_tables.items():
        keyed.build(access, tensor_levels(access), table, lambda label: count_iteration(counters, b, label), b)
    if region is not None:
        phases = (bounding if bounding != counting else None, counting, filling)
        _chunked_phases(result_target, [workspaces[n] for n in threaded], phases, num_threads, b)
    elif two_phase and bounding != counting:  # some loop was replaced by its trip count
        b.comment("bound")
        b.extend(bounding)
        result_target.allocate_bounded(b)
        with b.if_(not_(Var(result_target.bounded))):
            result_target.rewind(b)
            b.comment("count")
            b.extend(counting)
            result_target.allocate_entries(b)
    elif two_phase:
        b.comment("count")
        b.extend(counting)
        result_target.allocate_entries(b)
    if two_phase and region is None:
        result_target.rewind(b)
        b.comment("fill")
    if region is None:
        b.extend(filling)
    for name, workspace in workspaces.items():
        if name not in threaded:
            workspace.release(b)
    finds.release_tables(tables, b)
    for table in keyed_tables.values():
        keyed.release(table, b)
    if assembled:
        result_target.finish(b)
        lengths = result_target.lengths()
        for k, slot in enumerate(slots):
            if slot.tensor == result.name:
                b.assign(Var("args")[k], Var(_slot_ident(slot)))
                b.assign(Var("sizes")[k], lengths[slot])
    b.return_(0)
    top.append(Function("int", SYMBOL, _PARAMS, b.statements()))
    bitmaps = tuple(index for strategy, index in tables.values() if strategy is Strategy.BITMAP)
    result_lhs = next(a.lhs for a in assignments(stmt) if a.lhs.tensor.name == result.name)
    return KernelSource(printer.unit(Unit(tuple(top))), operands, result.name, tuple(slots), assembled, indices,
                        tuple(counters) if counters is not None else None,
                        result_indices=result_lhs.indices, result_level_indices=result_lhs.level_indices,
                        workspaces=_workspace_sizes(stmt, types.values[result.name]),
                        bounds=tuple(r for r in provenance.relations if isinstance(r, Bound)),
                        openmp=openmp, bitmaps=bitmaps,
                        hashed=tuple(sorted({access.tensor.name for access in keyed_tables})))


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
                    num_threads: int | None, b: CBuilder) -> None:
    """The phases of an assembly by threads in one parallel region, so threads start once and keep their
    temporaries (AppendedResult's chunks): each thread bounds its chunk, one sizes the arrays at the
    bounds; when those do not fit, each counts its chunk exactly and one sizes the arrays again; each
    fills its chunk; after the region the chunks are moved together. A failure anywhere raises the
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


def _workspace(var: TensorVar, stmt: Stmt, extent: Mapping[IndexVar, str], value_c: CType) -> Workspace:
    dims = _level_extents(var, stmt, extent)
    fmt = var.format
    if fmt.is_dense and fmt.order == 1:
        located = any(a.tensor.name == var.name and Protocol.LOCATE in a.level_protocols for a in accesses(stmt))
        return ListWorkspace(var.name, dims[0], value_c, located)
    if fmt.order == 0:
        return ScalarWorkspace(var.name, dims, value_c)
    if fmt.is_dense:
        return DenseWorkspace(var.name, dims, value_c)
    if all(level.inserts_sparsely for level in fmt.levels):
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
