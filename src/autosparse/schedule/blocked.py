"""Blocked layouts (BCSR, Zhao et al.) in a kernel: an operand stored in blocks is read through its block
view, with the loops over its indices split by the block sizes.

`A(i,j)` with A in bcsr(br,bc) becomes `A(iB,jB,ib,jb)` on the view (format dsdd), and the loops over i
and j become `∀iB ∀ib` and `∀jB ∀jb` (i = iB·br + ib), put in the view's storage order (iB, jB, ib, jb);
the other accesses keep i and j, which lowering recovers inside the block loops, and finds by binary
search in their sparse levels. So SpMV over BCSR is dense block loops with the matrix's values read in
order, and a BCSR operand meets a CSR, DCSR or COO one (SpGEMM) with no conversion.

Runs on the default schedule, before the scheduling commands, which may name the block variables. The
default schedule orders loops as if the blocked operand were stored by its block levels (`stand_in`).
"""

from __future__ import annotations

from typing import Mapping

from ..cin.ast import Access, Assign, Stmt, TensorVar, accesses, default_access, unnest, walk
from ..cin.provenance import attach, split_relations
from ..errors import ScheduleError
from ..format import Format, Layout
from ..notation.ast import IndexVar, factors
from .commands.derive import Split
from .commands.reorder import Reorder


def stand_in(fmt: Layout) -> Format:
    """What a blocked operand looks like to the default schedule: its block levels, in mode order."""
    return Format(fmt.storage.levels[:fmt.order])


def block_variables(index: IndexVar) -> tuple[IndexVar, IndexVar]:
    """The block variable and the variable within a block of a blocked index: iB and ib."""
    return IndexVar(f"{index}B"), IndexVar(f"{index}b")


def unblock(stmt: Stmt, blocked: Mapping[str, Layout]) -> Stmt:
    """`stmt` (a default schedule) with each blocked operand read through its block view."""
    stmt, relations = split_relations(stmt)
    sizes: dict[IndexVar, int] = {}
    offsets: dict[IndexVar, bool] = {}  # blocks start at any coordinate (unaligned BCSR's columns)
    unaligned: dict[IndexVar, set] = {}
    for node in walk(stmt):
        if isinstance(node, Access) and node.tensor.name in blocked:
            fmt = blocked[node.tensor.name]
            for index, size, offset in zip(node.indices, fmt.blocks, fmt.offsets):
                if sizes.setdefault(index, size) != size or offsets.setdefault(index, offset) != offset:
                    raise ScheduleError(f"Expected one block size (and one alignment) for {index}, but the operands "
                                        f"block it by {sizes[index]} and by {size}")
                if offset:
                    unaligned.setdefault(index, set()).add(node)
    for index, users in unaligned.items():
        if len(users) > 1:  # each one's blocks start where its own entries are: no shared block loop
            raise ScheduleError(f"Expected one unaligned blocked operand indexed by {index}, but found "
                                f"{', '.join(sorted(map(str, users)))}: their blocks start at different columns")
    for node in walk(stmt):
        if not isinstance(node, Assign):
            continue
        if node.lhs.tensor.name in blocked:
            raise ScheduleError(f"Expected a result in a format of levels, but {node.lhs.tensor.name} is "
                                f"{blocked[node.lhs.tensor.name]}: compute it in another format and convert it")
        terms = factors(node.rhs)
        for access in accesses(node.rhs):
            if access.tensor.name in blocked and access not in terms:
                raise ScheduleError(f"Expected the blocked operand {access} ({blocked[access.tensor.name]}) to be a "
                                    f"factor of {node.rhs}: the loops run over its stored blocks only, which would "
                                    f"miss the other terms' entries; convert it to a format of levels")
    for index, size in sizes.items():
        stmt, relations = Split(index, *block_variables(index), size, offset=offsets[index]).apply(stmt, relations)
    stmt = _viewed(stmt, blocked)
    loops, _ = unnest(stmt)
    views = [n for n in walk(stmt) if isinstance(n, Access) and n.tensor.name in blocked]
    order = _storage_order(loops, views)
    if order != loops:
        stmt, relations = Reorder(order).apply(stmt, relations)
    return attach(stmt, relations)


def _viewed(node, blocked: Mapping[str, Layout]):
    """Every read of a blocked operand replaced by a read of its block view."""
    if isinstance(node, Access):
        fmt = blocked.get(node.tensor.name)
        if fmt is None:
            return node
        outer, inner = zip(*map(block_variables, node.indices))
        return default_access(TensorVar(node.tensor.name, fmt.storage), (*outer, *inner), write=False)
    if not hasattr(node, "with_children"):
        return node
    return node.with_children(tuple(_viewed(child, blocked) for child in node.children()))


def _storage_order(loops: tuple[IndexVar, ...], views: list[Access]) -> tuple[IndexVar, ...]:
    """The outer loop nest reordered (stably: each loop as early as the views allow) so that each block
    view is reached in its level order."""
    before = {(a, b) for view in views for a, b in zip(view.level_indices, view.level_indices[1:])
              if a in loops and b in loops}
    order, left = [], list(loops)
    while left:
        ready = next((i for i in left if not any((j, i) in before for j in left if j != i)), None)
        if ready is None:
            raise ScheduleError(f"Expected the block views' level orders to agree, but they conflict over "
                                f"{', '.join(map(str, left))}")
        order.append(ready)
        left.remove(ready)
    return tuple(order)
