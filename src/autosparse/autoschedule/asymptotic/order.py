"""The order in which a search cut short takes programs (stage 7 under a time limit).

A search under `schedule="auto"`'s limit costs a few hundred of its thousands of programs, so what it
takes first decides what it finds. Stage 5 names loop orders of every nest in turn (`interleaved`),
under a short limit only until half of it (`NAMED_AT_LEAST` at least); nests are ranked by `promise`,
their standing before any program is costed, and stage 7 takes the protocol choices of the most
promising first (`favouring_first`). docs/notes/autoschedule-anytime.md measures where each kernel's
whole-search pick comes in this order, in programs costed.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import islice
from typing import Iterable, Iterator, Mapping

from ...cin.ast import Forall, Where
from ...format import Format
from .sketch import Access, Stmt, reads


#: Under a time limit short of a counting search's, stage 5 names loop orders of every nest in turn
#: (`interleaved`) for at most half of it, but at least this many: TTMc and SparseAuto's kernels 2 and
#: 3 reach the whole search's best estimate after naming 200 (naming all of TTMc's 2,568 took 0.5 s).
NAMED_AT_LEAST = 200


@dataclass(frozen=True)
class Stored:
    """Each operand's stored mode order, sparse and dense apart: what `promise` compares loops with."""

    sparse: dict[str, tuple[int, ...]]
    dense: dict[str, tuple[int, ...]]


def stored_orders(formats: Mapping[str, Format]) -> Stored:
    return Stored({name: fmt.mode_order for name, fmt in formats.items() if not fmt.is_dense},
                  {name: fmt.mode_order for name, fmt in formats.items() if fmt.is_dense})


def promise(shape: Stmt, workspaces: Mapping[str, tuple[str, ...]], stored: Stored) -> tuple[int, int, int]:
    """What a search cut short takes first, a nest's standing before any of its programs is costed:
    nests that read every sparse input in its stored mode order (no reformatting per call), then those
    that access fewest dense operands out of stride (innermost loop not over the last stored mode: the
    estimate charges such accesses up to `STRIDE_WEIGHT` times), then those with the fewest workspace
    dimensions. SparseAuto's kernel 3's pick is the first nest that reads C(j,k) and D(j,k) with k
    innermost and has a 2-D workspace: it came 159th of the programs costed while workspace dimensions
    came second, 20th now. `select`'s picks for MTTKRP, TTMc and SDDMM read their sparse inputs in order."""
    sparse, dense = stored.sparse, stored.dense
    transposes = strides = 0
    for access, loops, read in _placed(shape, ()):
        if read and access.tensor in sparse:
            transposes += _loop_order(access.indices, loops) != _stored_order(access.indices, sparse[access.tensor])
        elif access.tensor in dense and access.indices:  # a scalar has no stride
            strides += _innermost(access.indices, loops) != _stored_order(access.indices, dense[access.tensor])[-1]
        elif len(workspaces.get(access.tensor, ())) > 1:  # stored dense as written; one index: a list
            strides += _innermost(access.indices, loops) != access.indices[-1]
    return transposes, strides, sum(map(len, workspaces.values()))


def _placed(stmt: Stmt, loops: tuple[str, ...]) -> list[tuple[Access, tuple[str, ...], bool]]:
    """(access, the loops around it, whether it is a read) for every access in `stmt`."""
    if isinstance(stmt, Forall):
        return _placed(stmt.body, (*loops, stmt.index))
    if isinstance(stmt, Where):
        return _placed(stmt.consumer, loops) + _placed(stmt.producer, loops)
    return [(stmt.lhs, loops, False), *((access, loops, True) for access in reads(stmt.rhs))]


# Cached: the same read under the same loops recurs across the thousands of shapes stage 7 sorts.
@lru_cache(maxsize=1 << 14)
def _loop_order(indices: tuple[str, ...], loops: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(dict.fromkeys(indices), key=loops.index))


@lru_cache(maxsize=1 << 14)
def _innermost(indices: tuple[str, ...], loops: tuple[str, ...]) -> str | None:
    """The innermost of `loops` over one of `indices` (None outside all of them)."""
    return next((index for index in reversed(loops) if index in indices), None)


@lru_cache(maxsize=1 << 10)
def _stored_order(indices: tuple[str, ...], mode_order: tuple[int, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(indices[mode] for mode in mode_order))


def interleaved(streams: Iterable[Iterator]) -> Iterator:
    """One item from each stream in turn, so that a search cut short has seen every loop nest and
    workspace shape rather than all the protocols of the first few."""
    active = list(streams)
    while active:
        active = yield from _round(active)


def _round(active: list[Iterator]):
    """One item from each of `active`, yielded; returns the streams not yet exhausted."""
    still = []
    for stream in active:
        item = next(stream, _DONE)
        if item is not _DONE:
            still.append(stream)
            yield item
    return still


def favouring_first(streams: Iterable[Iterator]) -> Iterator:
    """Items of `streams` in rounds that each take one item from every stream admitted so far, the
    first round admitting one stream and each next round as many again: stream n gets its first item
    after about 2n items in all, so the first streams (the most promising shapes) give many items
    before the last give any. A search cut short reaches the third protocol choice of one of TTMc's
    first shapes (the whole search's pick) after a few dozen programs rather than 5,142."""
    waiting = iter(streams)
    active: list[Iterator] = []
    admitted, width = 0, 1
    while True:
        fresh = list(islice(waiting, width - admitted))
        admitted += len(fresh)
        active.extend(fresh)
        if not active:
            return
        active = yield from _round(active)
        if admitted == width:  # else every stream is admitted
            width *= 2


_DONE = object()
