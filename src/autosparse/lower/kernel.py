"""CIN statement + the dtypes of its tensors -> one C function and the ABI the runtime calls it with.

    int autosparse_kernel(void **args, const int64_t *dims, int64_t *sizes, int64_t *counters)

`args` holds one pointer per `Slot`: each operand's level arrays and values, then the result's. A dense
result's values are allocated (zeroed) by the caller; an assembled result's arrays are allocated by the
kernel, which writes their pointers back into `args` and their lengths into `sizes`. `dims[k]` is the
extent of `indices[k]`. The return value is 0, 1 when memory ran out, 2 when a position outgrew the
result's index type (the caller retries with int64). Nothing is global: concurrent calls are safe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..cin.ast import Access, Forall, Stmt, TensorVar, accesses, assignments, tensors, walk
from ..codegen import names
from ..codegen.builder import CBuilder
from ..errors import ScheduleError
from ..notation.ast import IndexVar
from .lower import Plan, Scope, lower
from .reads import ReadLevel, TensorLevel
from .workspaces import SORT_HELPER, DenseWorkspace, HashedWorkspace, ListWorkspace, Workspace
from .writes import GROW_MACRO, AppendedResult, DenseResult, Slot, Target

SYMBOL = "autosparse_kernel"


@dataclass(frozen=True)
class Types:
    """The dtypes a kernel is specialised for: values and indices of every tensor but the temporaries."""

    values: Mapping[str, np.dtype]
    indices: Mapping[str, np.dtype]


@dataclass(frozen=True)
class KernelSource:
    source: str
    operands: tuple[str, ...]
    result: str
    slots: tuple[Slot, ...]
    assembled: bool  # whether the kernel allocates the result (else the caller passes zeroed values)
    indices: tuple[IndexVar, ...]
    counters: tuple[str, ...] | None


def generate(stmt: Stmt, types: Types, instrument: bool = False) -> KernelSource:
    variables = tensors(stmt)
    written = {a.lhs.tensor.name for a in assignments(stmt)}
    results = [n for n in written if not variables[n].temporary]
    if len(results) != 1:
        raise ScheduleError(f"Expected one result tensor in {stmt}, but found {sorted(results) or 'none'}")
    result = variables[results[0]]
    operands = tuple(sorted(n for n, v in variables.items() if n not in written and not v.temporary))
    indices = tuple(dict.fromkeys(n.index for n in walk(stmt) if isinstance(n, Forall)))
    extent = {index: names.extent(index) for index in indices}
    value_c = {n: names.value_type(types.values[n]) for n in (*operands, result.name)}
    result_value = value_c[result.name]
    for name, var in variables.items():
        if var.temporary:
            value_c[name] = result_value

    access_list = list(dict.fromkeys(a for node in walk(stmt) for a in accesses(node)))
    access_ids = _access_ids(access_list)
    workspaces = {n: _workspace(v, stmt, extent, result_value) for n, v in variables.items() if v.temporary}
    result_target = _result_target(result, stmt, _level_extents(result, stmt, extent), types, result_value)
    writes = sum(a.lhs.tensor.name == result.name for a in assignments(stmt))
    if not result_target.random_access and writes > 1:
        raise ScheduleError(f"Expected one statement appending to the sparse result {result.name} "
                            f"(format {result.format}), but {writes} write it: use a workspace")

    def read_levels(access: Access) -> tuple[ReadLevel, ...]:
        name = access.tensor.name
        if name in workspaces:
            return tuple(workspaces[name].read_level(k) for k in range(access.tensor.order))
        itype = names.index_type(types.indices[name])
        dims = [extent[i] for i in access.level_indices]
        return tuple(TensorLevel(level, {**{a: names.array(name, k, a) for a in level.array_names}, "@type": itype},
                                 dims[k]) for k, level in enumerate(access.tensor.format.levels))

    counters: list[str] | None = [] if instrument else None
    plan = Plan(read_levels, {result.name: result_target, **workspaces}, access_ids, value_c, names.Fresh(), counters)
    body = CBuilder(depth=0)
    lower(stmt, plan, Scope(), body)

    slots = [Slot(n, k, a) for n in operands for k, lv in enumerate(variables[n].format.levels) for a in lv.array_names]
    slots += [Slot(n, -1, "vals") for n in operands]
    assembled = isinstance(result_target, AppendedResult)
    slots += result_target.slots() if assembled else [Slot(result.name, -1, "vals")]

    b = CBuilder(depth=0)
    b.lines(_preamble(variables, types))
    if any(isinstance(w, ListWorkspace) for w in workspaces.values()):
        b.lines(SORT_HELPER)
    for workspace in workspaces.values():
        b.lines(workspace.helpers())
    with b.block(f"int {SYMBOL}(void **restrict args, const int64_t *restrict dims, int64_t *restrict sizes, "
                 f"int64_t *restrict counters)"):
        for k, index in enumerate(indices):
            b.line(f"const int64_t {extent[index]} = dims[{k}];")
        for k, slot in enumerate(slots):
            if assembled and slot.tensor == result.name:
                continue
            ctype = value_c[slot.tensor] if slot.level < 0 else names.index_type(types.indices[slot.tensor])
            const = "" if slot.tensor == result.name else "const "
            ident = names.vals(slot.tensor) if slot.level < 0 else names.array(slot.tensor, slot.level, slot.array)
            b.line(f"{const}{ctype} *restrict {ident} = ({const}{ctype} *)args[{k}];")
        if assembled:
            result_target.allocate(b)
        for workspace in workspaces.values():
            workspace.allocate(b)
        b.lines(body.text())
        for workspace in workspaces.values():
            workspace.release(b)
        if assembled:
            result_target.finish(b)
            lengths = result_target.lengths()
            for k, slot in enumerate(slots):
                if slot.tensor == result.name:
                    ident = names.vals(slot.tensor) if slot.level < 0 else names.array(slot.tensor, slot.level, slot.array)
                    b.line(f"args[{k}] = {ident};")
                    b.line(f"sizes[{k}] = {lengths[slot]};")
        b.line("return 0;")
    return KernelSource(b.text() + "\n", operands, result.name, tuple(slots), assembled, indices,
                        tuple(counters) if counters is not None else None)


def _access_ids(access_list: list[Access]) -> dict[Access, str]:
    """A C-safe prefix per distinct access: the tensor's name, numbered when it is accessed twice."""
    ids, seen = {}, {}
    for access in access_list:
        count = seen.get(access.tensor.name, 0)
        seen[access.tensor.name] = count + 1
        ids[access] = access.tensor.name + (f"_{count}" if count else "")
    return ids


def _level_extents(var: TensorVar, stmt: Stmt, extent: Mapping[IndexVar, str]) -> tuple[str, ...]:
    access = next(a.lhs for a in assignments(stmt) if a.lhs.tensor.name == var.name)
    return tuple(extent[i] for i in access.level_indices)


def _result_target(var: TensorVar, stmt: Stmt, dims: tuple[str, ...], types: Types, value_c: str) -> Target:
    if var.format.is_dense:
        return DenseResult(var.name, var.format.levels, dims)
    full = [level.properties.full for level in var.format.levels]
    gaps = any(full[k] and not all(full[:k]) for k in range(len(full)))
    adds = any(a.accumulate for a in assignments(stmt) if a.lhs.tensor.name == var.name)
    return AppendedResult(var.name, var.format.levels, dims, names.index_type(types.indices[var.name]), value_c,
                          zero_values=gaps or adds)


def _workspace(var: TensorVar, stmt: Stmt, extent: Mapping[IndexVar, str], value_c: str) -> Workspace:
    dims = _level_extents(var, stmt, extent)
    fmt = var.format
    if fmt.is_dense and fmt.order == 1:
        return ListWorkspace(var.name, dims[0], value_c)
    if fmt.is_dense:
        return DenseWorkspace(var.name, dims, value_c)
    if all(level.letter == "h" for level in fmt.levels):
        return HashedWorkspace(var.name, dims, value_c)
    raise ScheduleError(f"Expected a dense or hashed temporary, but {var.name} has format {fmt}")


def _preamble(variables: Mapping[str, TensorVar], types: Types) -> str:
    helpers = dict.fromkeys(
        level.c_helpers(names.index_type(types.indices[name]))
        for name, var in variables.items() if not var.temporary
        for level in var.format.levels)
    return "\n".join([
        "#include <stdint.h>", "#include <stdlib.h>", "#include <string.h>", "#include <complex.h>",
        GROW_MACRO, *(h for h in helpers if h),
    ])
