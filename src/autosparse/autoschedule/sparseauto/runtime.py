"""Run-time stages 4 and 5 of SparseAuto (Dias et al. §5.4): the final schedules' costs on the actual
sizes, a memory budget, and a stride-based cache tie-break.

Stage 4 evaluates each schedule's time and memory at the inputs' dimensions and level-prefix nonzero
counts (exact: the distinct coordinate prefixes of each sparse operand) and keeps the least time among
those whose temporaries fit the budget (the least memory when none does). The paper's budget is half the
last-level cache; a host's L3 is shared by every core (and, in a container, by other tenants), so the
default here is half of what one core has to itself (its L1d and L2), read from sysfs.
Stage 5 breaks the remaining ties: the sum, over statements, of each tensor's stride at the statement's
innermost loop (0 when that loop walks the tensor's last level, or does not index it), then the number
of tensor index pairs visited against their storage order, then the schedule's text (the paper picks at
random; a fixed choice keeps runs repeatable).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Mapping

import numpy as np

from ...format import Format
from ...schedule.big import Factor, Loop, Node, Where, level_order, show, temporaries
from .poly import Symbol

#: Bytes of a value in a temporary (float64, the kernels' type).
VALUE_BYTES = 8


@functools.cache
def private_cache_bytes() -> int:
    """The data caches cpu0 does not share (its L1d and L2 on common machines); 1 MiB if unknown."""
    total = 0
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            kind = (entry / "type").read_text().strip()
            shared = (entry / "shared_cpu_list").read_text().strip()
            size = (entry / "size").read_text().strip()
        except OSError:
            continue
        if kind in ("Data", "Unified") and shared.isdigit():
            total += _bytes(size)
    return total or 1 << 20


def _bytes(text: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text.rstrip("KMGkmg")) * scale


def default_budget() -> int:
    return private_cache_bytes() // 2


def sizes(factors: Mapping[str, Factor], formats: Mapping[str, Format], tensors, extents: Mapping[str, int]):
    """The value of every size symbol on these operands: each index's extent, and each sparse operand's
    number of distinct coordinate prefixes per depth of its storage order."""
    values: dict[Symbol, float] = {Symbol("dim", i): float(n) for i, n in extents.items()}
    for name, factor in factors.items():
        fmt = formats[name]
        if fmt.is_dense:
            continue
        coords = np.asarray(tensors[name].to_coo()[0], dtype=np.int64)
        levels = level_order(fmt, factor)
        key = np.zeros(coords.shape[1], dtype=np.int64)
        for depth, mode in enumerate(fmt.mode_order):
            key = key * int(tensors[name].shape[mode]) + coords[mode]
            values[Symbol("nnz", name, levels[:depth + 1])] = float(len(np.unique(key)))
    return values


def choose(schedules, values: Mapping[Symbol, float], formats: Mapping[str, Format], extents: Mapping[str, int],
           budget: int):
    """Stage 4 then stage 5 over (schedule, costs) pairs; the chosen pair."""
    timed = [(entry, entry[1].time.evaluate(values), _memory_bytes(entry[0], extents)) for entry in schedules]
    fitting = [t for t in timed if t[2] <= budget]
    if fitting:
        least = min(t[1] for t in fitting)
        tied = [t for t in fitting if t[1] <= least * (1 + 1e-9)]
    else:
        least = min(t[2] for t in timed)
        tied = [t for t in timed if t[2] == least]
        fastest = min(t[1] for t in tied)
        tied = [t for t in tied if t[1] <= fastest * (1 + 1e-9)]
    return min(tied, key=lambda t: (stride_cost(t[0][0], formats, extents), inversions(t[0][0], formats),
                                    show(t[0][0])))[0]


def _memory_bytes(big: Node, extents: Mapping[str, int]) -> int:
    return sum(int(np.prod([extents[i] for i in t.indices], dtype=np.int64)) * VALUE_BYTES
               for t in temporaries(big))


def stride_cost(node: Node, formats: Mapping[str, Format], extents: Mapping[str, int],
                loops: tuple[str, ...] = ()) -> int:
    """Stage 5's first criterion: per statement, the distance in memory between consecutive visits of
    each tensor at its innermost loop."""
    if isinstance(node, Loop):
        return stride_cost(node.body, formats, extents, (*loops, node.index))
    if isinstance(node, Where):
        return stride_cost(node.producer, formats, extents, loops) + stride_cost(node.consumer, formats, extents, loops)
    if not loops:
        return 0
    innermost = loops[-1]
    total = 0
    for factor in (node.lhs, *node.factors):
        order = _storage(factor, formats)
        if innermost in order[:-1]:
            total += int(np.prod([extents[i] for i in order[order.index(innermost) + 1:]], dtype=np.int64))
    return total


def inversions(node: Node, formats: Mapping[str, Format], loops: tuple[str, ...] = ()) -> int:
    """Stage 5's second criterion: pairs of a tensor's indices the loops visit against its storage order."""
    if isinstance(node, Loop):
        return inversions(node.body, formats, (*loops, node.index))
    if isinstance(node, Where):
        return inversions(node.producer, formats, loops) + inversions(node.consumer, formats, loops)
    count = 0
    for factor in (node.lhs, *node.factors):
        order = [i for i in _storage(factor, formats) if i in loops]
        count += sum(1 for a in range(len(order)) for b in range(a + 1, len(order))
                     if loops.index(order[a]) > loops.index(order[b]))
    return count


def _storage(factor: Factor, formats: Mapping[str, Format]) -> tuple[str, ...]:
    fmt = formats.get(factor.tensor)
    return level_order(fmt, factor) if fmt is not None else factor.indices

