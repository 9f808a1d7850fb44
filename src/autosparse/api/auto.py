"""The autoschedulers as the public API offers them: `autoschedule`, whose fronts compile their
candidates through the pipeline's Kernel, and `schedule="auto"`: the candidates of an expression (by
default both models': the asymptotic frontier and SparseAuto's final set, ranked by one estimate),
selected from for the operands at hand.

Searching and selecting cost far more than a small kernel call, so both are remembered: the front per
model, expression and formats, the choice per size class of the operands as well (each dimension and
each operand's stored-entry count rounded up to a power of two), in this process and in the cache
directory for later ones (autoschedule/store.py), so a loop over similar inputs — or a program run
again — decides once. Where the estimate cannot tell the best few apart, the user's own calls decide
(`evaluated`, `tiebreak.Trial`): a first call compiles one kernel, not one per contender.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import Callable, Mapping

from ..autoschedule import Candidates
from ..autoschedule import autoschedule as run_autoscheduler
from ..autoschedule import store
from ..autoschedule.candidate import ScheduleCandidate
from ..autoschedule import tiebreak
from ..autoschedule.select import ranking
from ..autoschedule.tiebreak import Trial, size_class
from ..errors import AutosparseError
from ..format.spec import as_format, format_mapping
from ..notation import Assignment, accesses
from ..pipeline.operands import as_assignment, operand_fills
from ..pipeline.result_format import inferred_result_format
from ..tensor import as_tensor
from .kernel import Kernel

#: The searches of a first call (both models' together, under model="auto") stop after this many seconds
#: (the frontier of the programs taken is still a frontier of valid schedules), so that searching,
#: selecting and compiling take about a second. Measured on the autotune suite's first inputs, under load
#: (docs/notes/autoschedule-29.md, round 4): 0.5 s finds the whole search's best estimate for SpMV2,
#: SpGEMM, SDDMM, SpGEMMH, MTTKRP, TTMc, SA3 and SA7, but not for SA8 (1 s does) nor SA2 (10 s does):
#: `autoschedule(..., remember=True)` stores a longer search for later processes.
SEARCH_SECONDS = 0.5


@dataclass
class Decisions:
    """What `schedule="auto"` did in this process: searches run and selections made (each avoided
    where this process or an earlier one decided already), and decisions read back from the store."""

    searches: int = 0
    selections: int = 0
    stored_fronts: int = 0
    stored_choices: int = 0


decisions = Decisions()
_fronts: dict[str, tuple[Candidates, str]] = {}  # front and its digest, per front key (model, expression, formats)
_choices: dict[tuple, ScheduleCandidate] = {}  # per front and size class of the operands
_trials: dict[tuple, Trial] = {}  # ties being decided by the calls (tiebreak.Trial), per front and size class


def autoschedule(expression: str, formats: Mapping[str, object] | None = None, model: str = "asymptotic",
                 remember: bool = False, **options) -> Candidates:
    """`asp.autoschedule`: the candidates of autoscheduler `model` ("asymptotic", "sparseauto", or
    "auto" for both side by side) for `expression` (the options are `autoschedule.autoschedule`'s),
    compiled by the pipeline's Kernel where `select(tune=...)` times them or `verify` checks them.

    `remember=True` also stores the front where `schedule="auto"` looks for it (for this model and
    these formats; the result's, when not given, inferred as `evaluate` infers it), replacing what a
    first call's short search stored (`SEARCH_SECONDS`), and the choices made from that: a longer search
    run once (`time_limit=60`, or None for the whole search; the CLI's `autosparse autoschedule
    --remember`) serves every later process. Only `time_limit` and `progress` go with it: other options search another front."""
    if not remember:
        return run_autoscheduler(expression, formats, model, kernel_factory=Kernel, **options)
    other = sorted(set(options) - {"time_limit", "progress"})
    if other:
        raise AutosparseError(f"Expected remember=True with time_limit and progress only (the front "
                              f"schedule=\"auto\" searches), but found {other}")
    assignment, given = as_assignment(expression), format_mapping(formats)
    orders = _orders(assignment)
    unknown = sorted(set(given) - set(orders))
    if unknown:
        raise AutosparseError(f"Expected formats only for tensors of {assignment}, but found {unknown}")
    resolved = {name: as_format(given.get(name, "dense"), order) for name, order in orders.items()}
    if assignment.lhs.tensor not in given:
        resolved[assignment.lhs.tensor] = inferred_result_format(assignment, resolved)
    key, resolved, front_memo = _front_key(model, assignment, tuple(sorted(resolved.items(), key=_by_name)))
    front = run_autoscheduler(str(assignment), resolved, model, kernel_factory=Kernel, **options)
    _fronts[front_memo] = (front, store.save_front(key, front))
    for memo in [m for m in (*_choices, *_trials) if m[0] == front_memo]:
        _choices.pop(memo, None)
        _trials.pop(memo, None)
    return front


def chosen(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object],
           model: str = "auto") -> tuple[Candidates, ScheduleCandidate | None]:
    """The candidates of `model` for the expression, and the one chosen for these operands (None where
    there are none: the default schedule); while a tie is on trial, the contender its next call runs."""
    front, _, _, decision = _decision(assignment, formats, operands, model)
    return front, decision.candidate() if isinstance(decision, Trial) else decision


def evaluated(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object], model: str,
              kernel_for: Callable[[ScheduleCandidate | None], Callable]):
    """The value of the expression on the operands, computed by the chosen candidate's kernel
    (`kernel_for(candidate)`). While a tie is on trial (`tiebreak.Trial`), this call runs the trial's
    next contender and reports how long it took; the decision, once made, is remembered and stored. A
    contender that refuses the operands (its workspaces past the memory limit) is out of the trial and
    the estimate's best runs instead."""
    _, key, memo, decision = _decision(assignment, formats, operands, model)
    if not isinstance(decision, Trial):
        return kernel_for(decision)(**operands)
    cand = decision.candidate()
    try:
        kernel = kernel_for(cand)
        start = time.perf_counter()
        result = kernel(**operands)
    except AutosparseError:
        if cand is decision.contenders[0]:
            raise
        decision.record(cand, math.inf)
        result = kernel_for(decision.contenders[0])(**operands)
    else:
        decision.record(cand, time.perf_counter() - start)
    if decision.decided and _trials.pop(memo, None) is not None:
        _choices[memo] = decision.decision
        store.save_choice(_choice_key(key, memo), decision.decision)
    return result


def pending_trials() -> int:
    """How many ties this process's calls are still deciding (a benchmark runs the calls until none is)."""
    return len(_trials)


def _decision(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object],
              model: str) -> tuple[Candidates, list, tuple, "ScheduleCandidate | Trial | None"]:
    """The front, its key in the store, the choice's key in this process (front, size class of the
    operands: `_choice_key` gives the store's), and what decides these operands' candidate: a remembered
    or stored choice, a trial of a near tie, or None (an empty front). A warm call costs one lookup of
    the expression and formats (`_front_key`) and the operands' size class."""
    fills = tuple(sorted((name, fill) for name, fill in operand_fills(operands).items() if fill != 0))
    key, resolved, front_memo = _front_key(model, assignment, tuple(sorted(formats.items(), key=_by_name)), fills)
    given = {name: value if hasattr(value, "shape") else as_tensor(value, resolved[name], name)
             for name, value in operands.items() if name in resolved}
    memo = (front_memo, size_class(given))
    known = _fronts.get(front_memo)
    decision = _choices.get(memo) or _trials.get(memo)
    if known is not None and decision is not None:
        return known[0], key, memo, decision
    if known is None:
        known = _fronts[front_memo] = _front(key, assignment, resolved, model, dict(fills))
    front = known[0]
    if decision is None:
        decision = _stored_choice(_choice_key(key, memo), assignment, resolved)
        if decision is not None:
            _choices[memo] = decision
    if decision is not None:
        return front, key, memo, decision
    tensors = {name: as_tensor(value, resolved[name], name) for name, value in given.items()}
    if isinstance(front, store.StoredFront) and not len(front):  # every stored record failed its checks
        front, _ = _fronts[front_memo] = _searched(key, assignment, resolved, model, dict(fills))
    if not len(front):
        return front, key, memo, None
    decisions.selections += 1
    on_trial = tiebreak.trial(front, ranking(front, tensors), tensors)
    if on_trial.decided:
        _choices[memo] = on_trial.decision
        store.save_choice(_choice_key(key, memo), on_trial.decision)
        return front, key, memo, on_trial.decision
    _trials[memo] = on_trial
    return front, key, memo, on_trial


def _by_name(item: tuple) -> str:
    return item[0]


@functools.lru_cache(maxsize=1024)
def _front_key(model: str, assignment: Assignment, formats: tuple, fills: tuple = ()) -> tuple[list, dict, str]:
    """The store's key of the front (`store.front_key`), every tensor's format, and the key's text (this
    process's key, cheap to hash), worked out once per expression, formats and operands' fills (those
    not 0) however the formats are spelled: a warm `schedule="auto"` call should cost little more than
    the kernel."""
    given = dict(formats)
    resolved = {name: as_format(given.get(name, "dense"), order) for name, order in _orders(assignment).items()}
    key = store.front_key(model, assignment, resolved, dict(fills))
    return key, resolved, repr(key)


def _choice_key(front_key: list, memo: tuple) -> list:
    """The store's key of a choice: the front's, the size class (`tiebreak.size_class`) and the digest
    of the front it was chosen from (`store.save_front`), JSON-ready."""
    return [*front_key, [[name, list(shape), entries] for name, shape, entries in memo[1]], _fronts[memo[0]][1]]


def _stored_choice(key: list, assignment: Assignment, formats: dict) -> ScheduleCandidate | None:
    choice = store.load_choice(key, assignment, formats)
    decisions.stored_choices += choice is not None
    return choice


def _front(key: list, assignment: Assignment, formats: dict, model: str, fills: dict) -> tuple[Candidates, str]:
    """The front under `key` and its digest: the store's, else searched (and stored)."""
    front = store.load_front(key, assignment, formats, Kernel, fills)
    decisions.stored_fronts += front is not None
    return _searched(key, assignment, formats, model, fills) if front is None else (front, front.digest)


def _searched(key: list, assignment: Assignment, formats: dict, model: str, fills: dict) -> tuple[Candidates, str]:
    front = autoschedule(str(assignment), formats, model=model, time_limit=SEARCH_SECONDS, fills=fills)
    decisions.searches += 1
    return front, store.save_front(key, front)


def _orders(assignment: Assignment) -> dict[str, int]:
    return {a.tensor: len(a.indices) for a in (assignment.lhs, *accesses(assignment.rhs))}

