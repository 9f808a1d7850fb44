"""The measured tie-breaker: when the best estimates of a front lie within NEAR of each other, the cost
model cannot tell the candidates apart (constant factors it does not see: code layout, vectorisation,
branch patterns), so the few best are timed on the operands and the fastest is kept — not the first in
the text order of their CIN. The default schedule is timed beside them wherever its estimate comes
within DEFAULT_WITHIN of the best: an estimate that far off is still within the model's error, and a
pick must not lose to what the user gets without autoscheduling.

A tie is decided by a `Trial`, in one of two ways. `select` (a caller asking for a decision now)
compiles and times each contender at once (`broken`). `schedule="auto"` lets the user's own calls
decide: each call runs the trial's next contender and reports its time, so the first call costs one
compile, not one per contender, and the timing costs no call the user did not ask for; the trial ends
after SAMPLES warm calls of each contender, and its fastest serves every later call.

A decision is remembered per (expression, formats, size class of the operands): every dimension and
every operand's stored-entry count rounded up to a power of two, so a loop over similar inputs decides
once (api's `schedule="auto"` persists the decision across processes).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from ..errors import AutosparseError

#: Estimates within this fraction of the best are a tie the measurement decides.
NEAR = 0.05
#: At most this many tied candidates are timed, beside the best tied one of each model.
TIMED = 3
#: The default schedule is timed beside a tie when its estimate is at most this many times the best.
DEFAULT_WITHIN = 4.0
#: Warm calls timed of each contender in a trial (a contender's first call compiles it and faults its
#: memory in, and is not counted); the least of them is its time.
SAMPLES = 2
#: A contender whose first timed call is this many times the best so far is not run again.
HOPELESS = 3.0
#: Seconds after which `broken` times no further contender (the first always is).
BUDGET = 2.0


@dataclass
class Counts:
    """What the tie-breaker did in this process: trials begun, trials decided (at once by `broken` or
    over calls), contenders timed, and ties answered from a remembered decision."""

    ties_timed: int = 0
    decided: int = 0
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
    """The candidates of `ranked` ((estimate, candidate), best first) worth timing against each other:
    among those whose estimates lie within NEAR of the best, the best of each model (the asymptotic
    frontier's, SparseAuto's, the default's: a pick the estimate cannot tell from the other model's
    program is timed against it however many others tie) and others up to TIMED beside the models'
    firsts but one, one of each that runs alike (`Candidate.runs_as`); and the default schedule wherever
    its estimate is within DEFAULT_WITHIN of the best. In estimate order; one alone is no tie."""
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
    chosen.update(id(cand) for work, cand in ranked
                  if cand.found_by == "default" and work <= best * DEFAULT_WITHIN)
    return [cand for _, cand in ranked if id(cand) in chosen]


@dataclass
class Trial:
    """A tie being decided: the contenders in estimate order, the warm times of each so far, and the
    decision once every contender has SAMPLES of them (or was hopeless after one). Safe to share
    between threads calling one kernel."""

    key: tuple
    contenders: list
    samples: int = SAMPLES
    decision: object = None
    times: dict = field(default_factory=dict)  # contender's index -> warm seconds timed
    served: dict = field(default_factory=dict)  # contender's index -> calls served
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def __post_init__(self):
        if len(self.contenders) == 1:
            self.decision = self.contenders[0]

    @property
    def decided(self) -> bool:
        return self.decision is not None

    def candidate(self):
        """The contender the next call should run: the decision once made; else the first (in estimate
        order) still owed a warm time."""
        with self.lock:
            return self.decision if self.decided else self.contenders[self._next()]

    def record(self, cand, seconds: float, warm: bool = False) -> None:
        """`cand` served a call in `seconds` (infinity: it could not run on these operands). Its first
        call is not a warm time unless `warm` says it was warmed up apart; the decision falls once every
        contender is timed."""
        with self.lock:
            if self.decided:
                return
            n = next(k for k, c in enumerate(self.contenders) if c is cand)
            self.served[n] = self.served.get(n, 0) + 1
            if warm or self.served[n] > 1 or math.isinf(seconds):
                counts.candidates_timed += n not in self.times
                self.times.setdefault(n, []).append(seconds)
            if self._next() is None:
                self._decide()

    def _next(self) -> int | None:
        fastest = min((min(t) for t in self.times.values()), default=math.inf)
        for n in range(len(self.contenders)):
            timed = self.times.get(n, [])
            done = len(timed) >= self.samples or (timed and min(timed) > HOPELESS * fastest) or \
                (timed and math.isinf(min(timed)))
            if not done:
                return n
        return None

    def _decide(self) -> None:
        """The fastest contender (equal times: the estimate's order); none that ran: the first."""
        least = {n: min(t) for n, t in self.times.items()}
        n = min(least, key=lambda m: (least[m], m)) if least and math.isfinite(min(least.values())) else 0
        self.decision = self.contenders[n]
        _decided[self.key] = str(self.decision.cin)
        counts.decided += 1


def trial(front, ranked: Sequence[tuple[float, object]], operands: Mapping[str, object],
          samples: int = SAMPLES) -> Trial:
    """The trial of `ranked`'s tie on these operands: decided already where there is no tie or a
    decision for their key is remembered."""
    contenders = tied(ranked)
    decided = key(front, operands)
    remembered = _decided.get(decided) if len(contenders) > 1 else None
    match = next((c for c in contenders if str(c.cin) == remembered), None)
    if match is not None:
        counts.remembered += 1
        return Trial(decided, [match])
    if len(contenders) > 1:
        counts.ties_timed += 1
    return Trial(decided, contenders, samples)


def broken(front, ranked: Sequence[tuple[float, object]], operands: Mapping[str, object],
           seconds: Callable[[object, object, Mapping[str, object]], float]):
    """The best of `ranked`, a tie decided at once: each contender timed with `seconds(front, candidate,
    operands)` (which warms it up itself), until BUDGET seconds have passed (the untimed ones are taken
    as slower: large inputs are not timed for minutes)."""
    now = trial(front, ranked, operands, samples=1)
    start = time.perf_counter()
    while not now.decided:
        cand = now.candidate()
        over = cand is not now.contenders[0] and time.perf_counter() - start > BUDGET
        now.record(cand, math.inf if over else _timed(seconds, front, cand, operands), warm=True)
    return now.decision


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
