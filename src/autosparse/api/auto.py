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
from ..format.spec import as_format
from ..notation import Assignment, accesses
from ..tensor import as_tensor
from .kernel import Kernel

#: The searches (both models' together, under model="auto") stop after this many seconds (the frontier of
#: the programs taken is still a frontier of valid schedules; only searches of four or more factors, and
#: SparseAuto's of five, reach it).
SEARCH_SECONDS = 1.0  # the whole search's pick at 0.3-1 s on a loaded machine: docs/notes/autoschedule-search.md


@dataclass
class Decisions:
    """What `schedule="auto"` did in this process: searches run and selections made (each avoided
    where this process or an earlier one decided already), and decisions read back from the store."""

    searches: int = 0
    selections: int = 0
    stored_fronts: int = 0
    stored_choices: int = 0


decisions = Decisions()
_fronts: dict[str, Candidates] = {}
_choices: dict[str, ScheduleCandidate] = {}
_trials: dict[str, Trial] = {}  # ties being decided by the calls (tiebreak.Trial), per choice key


def autoschedule(expression: str, formats: Mapping[str, object] | None = None, model: str = "asymptotic",
                 **options) -> Candidates:
    """`asp.autoschedule`: the candidates of autoscheduler `model` ("asymptotic", "sparseauto", or
    "auto" for both side by side) for `expression` (the options are `autoschedule.autoschedule`'s),
    compiled by the pipeline's Kernel where `select(tune=...)` times them or `verify` checks them."""
    return run_autoscheduler(expression, formats, model, kernel_factory=Kernel, **options)


def chosen(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object],
           model: str = "auto") -> tuple[Candidates, ScheduleCandidate | None]:
    """The candidates of `model` for the expression, and the one chosen for these operands (None where
    there are none: the default schedule); while a tie is on trial, the contender its next call runs."""
    front, _, decision = _decision(assignment, formats, operands, model)
    return front, decision.candidate() if isinstance(decision, Trial) else decision


def evaluated(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object], model: str,
              kernel_for: Callable[[ScheduleCandidate | None], Callable]):
    """The value of the expression on the operands, computed by the chosen candidate's kernel
    (`kernel_for(candidate)`). While a tie is on trial (`tiebreak.Trial`), this call runs the trial's
    next contender and reports how long it took; the decision, once made, is remembered and stored. A
    contender that refuses the operands (its workspaces past the memory limit) is out of the trial and
    the estimate's best runs instead."""
    _, choice_key, decision = _decision(assignment, formats, operands, model)
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
    if decision.decided and _trials.pop(repr(choice_key), None) is not None:
        _choices[repr(choice_key)] = decision.decision
        store.save_choice(choice_key, decision.decision)
    return result


def pending_trials() -> int:
    """How many ties this process's calls are still deciding (a benchmark runs the calls until none is)."""
    return len(_trials)


def _decision(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object],
              model: str) -> tuple[Candidates, list, "ScheduleCandidate | Trial | None"]:
    """The front, the choice's key (front, size class), and what decides these operands' candidate: a
    remembered or stored choice, a trial of a near tie, or None (an empty front)."""
    key, resolved = _front_key(model, assignment, tuple(sorted((name, str(fmt)) for name, fmt in formats.items())))
    front = _front(key, assignment, resolved, model)
    given = {name: value for name, value in operands.items() if name in resolved}
    choice_key = [*key, _size_class({name: value if hasattr(value, "shape") else as_tensor(value, resolved[name], name)
                                     for name, value in given.items()})]
    memo = repr(choice_key)
    decision = _choices.get(memo) or _trials.get(memo)
    if decision is None:
        decision = _stored_choice(choice_key, assignment, resolved)
        if decision is not None:
            _choices[memo] = decision
    if decision is not None:
        return front, choice_key, decision
    tensors = {name: as_tensor(value, resolved[name], name) for name, value in given.items()}
    if isinstance(front, store.StoredFront) and not len(front):  # every stored record failed its checks
        front = _fronts[repr(key)] = _searched(key, assignment, resolved, model)
    if not len(front):
        return front, choice_key, None
    decisions.selections += 1
    on_trial = tiebreak.trial(front, ranking(front, tensors), tensors)
    if on_trial.decided:
        _choices[memo] = on_trial.decision
        store.save_choice(choice_key, on_trial.decision)
        return front, choice_key, on_trial.decision
    _trials[memo] = on_trial
    return front, choice_key, on_trial


@functools.lru_cache(maxsize=1024)
def _front_key(model: str, assignment: Assignment, formats: tuple) -> tuple[list, dict]:
    """The store's key of the front (`store.front_key`) and every tensor's format, worked out once per
    expression and formats: a warm `schedule="auto"` call should cost little more than the kernel."""
    orders = {a.tensor: len(a.indices) for a in (assignment.lhs, *accesses(assignment.rhs))}
    given = dict(formats)
    resolved = {name: as_format(given.get(name, "dense"), order) for name, order in orders.items()}
    return store.front_key(model, assignment, resolved), resolved


def _stored_choice(key: list, assignment: Assignment, formats: dict) -> ScheduleCandidate | None:
    choice = store.load_choice(key, assignment, formats)
    decisions.stored_choices += choice is not None
    return choice


def _size_class(tensors: Mapping[str, object]) -> list:
    """The tie-breaker's size class of the operands (`tiebreak.size_class`), JSON-ready."""
    return [[name, list(shape), entries] for name, shape, entries in size_class(tensors)]


def _front(key: list, assignment: Assignment, formats: dict, model: str) -> Candidates:
    """The front under `key`: this process's, else the store's, else searched (and stored)."""
    memo = repr(key)
    front = _fronts.get(memo)
    if front is None:
        front = store.load_front(key, assignment, formats, Kernel)
        decisions.stored_fronts += front is not None
    if front is None:
        front = _searched(key, assignment, formats, model)
    _fronts[memo] = front
    return front


def _searched(key: list, assignment: Assignment, formats: dict, model: str) -> Candidates:
    front = autoschedule(str(assignment), formats, model=model, time_limit=SEARCH_SECONDS)
    decisions.searches += 1
    store.save_front(key, front)
    return front

