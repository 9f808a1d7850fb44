"""The order in which a search cut short takes programs (stage 7 under a time limit).

A search under `schedule="auto"`'s limit costs a few hundred of its thousands of programs, so what it takes
first decides what it finds. Nests are taken by `promise`, a program's standing before it is costed;
stage 5 names loop orders of every nest in turn (`interleaved`) and stage 7 takes the protocol choices
of the most promising nests first (`favouring_first`). docs/notes/autoschedule-anytime.md measures
where each kernel's whole-search pick comes in this order.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import islice
from typing import Iterable, Iterator, Mapping

from ...cin.ast import Forall, Where
from .sketch import Stmt, reads


def promise(shape: Stmt, workspaces: Mapping[str, tuple[str, ...]],
             stored: Mapping[str, tuple[int, ...]]) -> tuple[int, int]:
    """What a search cut short takes first: nests that read every sparse input in its stored mode order
    (`stored`: each sparse input's mode order; no transpose per call), then those with the fewest
    workspace dimensions. `select`'s picks for MTTKRP, TTMc and SDDMM are such nests, so a short limit
    finds the picks a whole search finds."""
    return transposed(shape, (), stored), sum(map(len, workspaces.values()))


def transposed(stmt: Stmt, loops: tuple[str, ...], stored: Mapping[str, tuple[int, ...]]) -> int:
    """How many reads of sparse inputs in `stmt` (under `loops`) visit their modes out of stored order."""
    if isinstance(stmt, Forall):
        return transposed(stmt.body, (*loops, stmt.index), stored)
    if isinstance(stmt, Where):
        return transposed(stmt.consumer, loops, stored) + transposed(stmt.producer, loops, stored)
    return sum(_loop_order(access.indices, loops) != _stored_order(access.indices, stored[access.tensor])
               for access in reads(stmt.rhs) if access.tensor in stored)


# Cached: the same read under the same loops recurs across the thousands of shapes stage 7 sorts.
@lru_cache(maxsize=1 << 14)
def _loop_order(indices: tuple[str, ...], loops: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(dict.fromkeys(indices), key=loops.index))


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
