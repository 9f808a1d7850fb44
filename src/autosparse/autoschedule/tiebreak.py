"""The measured tie-breaker: when the best estimates of a front lie within NEAR of each other, the cost
model cannot tell the candidates apart (constant factors it does not see: code layout, vectorisation,
branch patterns), so the few best are compiled and timed on the operands and the fastest is kept — not the
first in the text order of their CIN.

A decision is remembered per (expression, formats, size class of the operands): every dimension and
every operand's stored-entry count rounded up to a power of two, so a loop over similar inputs times
once (api's `schedule="auto"` persists the choice it makes, this decision included, across processes).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..errors import AutosparseError

#: Estimates within this fraction of the best are a tie the measurement decides.
NEAR = 0.05
#: At most this many tied candidates are compiled and timed, and the best tied one of each other model.
TIMED = 3
#: Seconds after which no further tied candidate is timed (the first always is).
BUDGET = 2.0


@dataclass
class Counts:
    """What the tie-breaker did in this process: ties it timed, candidates it timed, and ties answered
    from a remembered decision."""

    ties_timed: int = 0
    candidates_timed: int = 0
    remembered: int = 0


counts = Counts()
_decided: dict[tuple, str] = {}


def size_class(operands: Mapping[str, object]) -> tuple:
    """Each operand's dimensions and stored entries (its number of elements when dense) rounded up to a
    power of two: inputs in one class get one decision."""
    found = []
    for name, tensor in sorted(operands.items()):
        shape = tuple(int(n) for n in getattr(tensor, "shape", ()))
        stored = getattr(tensor, "nnz", None)
        entries = math.prod(shape) if stored is None else stored
        found.append((name, tuple(_rounded(n) for n in shape), _rounded(entries)))
    return tuple(found)


def key(front, operands: Mapping[str, object]) -> tuple:
    """What a decision is remembered under: the expression, every tensor's format, the size class."""
    return (str(front.assignment), tuple(sorted((name, str(fmt)) for name, fmt in front.formats.items())),
            size_class(operands))


def tied(ranked: Sequence[tuple[float, object]]) -> list:
    """The candidates of `ranked` ((estimate, candidate), best first) whose estimates lie within NEAR of
    the best: the best of each model among them (the default schedule's, SparseAuto's and the
    asymptotic frontier's: a pick the estimate cannot tell from the default, or from the other model's
    program, is timed against it however many others tie), and others up to TIMED beside the models'
    firsts but one, one of each that runs alike (`Candidate.runs_as`). One alone is no tie."""
    best = ranked[0][0]
    if not math.isfinite(best):
        return [ranked[0][1]]
    near = [cand for work, cand in ranked if work <= best * (1 + NEAR)]
    firsts = {}
    for cand in near:
        firsts.setdefault(cand.found_by, cand)
    alike = {cand.runs_as: cand for cand in reversed(firsts.values())}
    for cand in near:
        if len(alike) >= TIMED + len(firsts) - 1:
            break
        alike.setdefault(cand.runs_as, cand)
    chosen = set(map(id, alike.values()))
    return [cand for cand in near if id(cand) in chosen]


def broken(front, ranked: Sequence[tuple[float, object]], operands: Mapping[str, object],
           seconds: Callable[[object, object, Mapping[str, object]], float]):
    """The best of `ranked`, ties timed with `seconds(front, candidate, operands)` once per key."""
    contenders = tied(ranked)
    if len(contenders) == 1:
        return contenders[0]
    decided = key(front, operands)
    remembered = _decided.get(decided)
    if remembered is not None:
        match = next((c for c in contenders if str(c.cin) == remembered), None)
        if match is not None:
            counts.remembered += 1
            return match
    counts.ties_timed += 1
    start, times = time.perf_counter(), []
    for cand in contenders:
        if times and time.perf_counter() - start > BUDGET:
            break  # the untimed ones are taken as slower: large inputs are not timed for minutes
        times.append(_timed(seconds, front, cand, operands))
    counts.candidates_timed += len(times)
    chosen = contenders[times.index(min(times))]  # equal times: the estimate's order
    _decided[decided] = str(chosen.cin)
    return chosen


def _timed(seconds, front, cand, operands) -> float:
    """`seconds(front, cand, operands)`, or infinity for a candidate that cannot run on them (past the
    memory limit, say): the others still compete."""
    try:
        return seconds(front, cand, operands)
    except AutosparseError:
        return math.inf


def forget() -> None:
    """Drop every decision (tests, or a machine whose speed changed)."""
    _decided.clear()


def _rounded(n: int) -> int:
    return 1 << max(int(n) - 1, 0).bit_length()
