"""The autoschedulers as the public API offers them: `autoschedule`, whose fronts compile their
candidates through the pipeline's Kernel, and `schedule="auto"`: the candidates of an expression (by
default both models': the asymptotic frontier and SparseAuto's final set, ranked by one estimate),
selected from for the operands at hand.

Searching and selecting cost far more than a small kernel call, so both are remembered: the front per
model, expression and formats, the choice per size class of the operands as well (each dimension and
each operand's stored-entry count rounded up to a power of two), in this process and in the cache
directory for later ones (autoschedule/store.py), so a loop over similar inputs — or a program run
again — decides once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Mapping

from ..autoschedule import Candidates
from ..autoschedule import autoschedule as run_autoscheduler
from ..autoschedule import store
from ..autoschedule.candidate import ScheduleCandidate
from ..autoschedule.tiebreak import size_class
from ..format.spec import as_format
from ..notation import Assignment, accesses
from ..tensor import as_tensor
from .kernel import Kernel

#: The asymptotic search stops taking programs after this many seconds (the frontier of those taken is
#: still a frontier of valid schedules; only searches of four or more factors reach it).
SEARCH_SECONDS = 2.0  # enough for the pick of the whole search: docs/notes/autoschedule-search.md


@dataclass
class Decisions:
    """What `schedule="auto"` did in this process: searches run and selections made (each avoided
    where this process or an earlier one decided already), and decisions read back from the store."""

    searches: int = 0
    selections: int = 0
    stored_fronts: int = 0
    stored_choices: int = 0


decisions = Decisions()
_fronts: dict[tuple, Candidates] = {}
_choices: dict[tuple, ScheduleCandidate] = {}


def autoschedule(expression: str, formats: Mapping[str, object] | None = None, model: str = "asymptotic",
                 **options) -> Candidates:
    """`asp.autoschedule`: the candidates of autoscheduler `model` ("asymptotic", "sparseauto", or
    "auto" for both side by side) for `expression` (the options are `autoschedule.autoschedule`'s),
    compiled by the pipeline's Kernel where `select(tune=...)` times them or `verify` checks them."""
    return run_autoscheduler(expression, formats, model, kernel_factory=Kernel, **options)


def chosen_schedule(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object],
                    model: str = "auto") -> ScheduleCandidate | None:
    """The candidate chosen for these operands; None (the default schedule) where the front is empty
    (`B(i,j) - B(j,i)` reads B in two orders, which no one format of B realises)."""
    return chosen(assignment, formats, operands, model)[1]


def chosen(assignment: Assignment, formats: Mapping[str, object], operands: Mapping[str, object],
           model: str = "auto") -> tuple[Candidates, ScheduleCandidate | None]:
    """The candidates of `model` for the expression, and the one chosen for these operands (None where
    there are none: the default schedule)."""
    key, resolved = _front_key(model, assignment, tuple(sorted((name, str(fmt)) for name, fmt in formats.items())))
    front = _front(key, assignment, resolved, model)
    given = {name: value for name, value in operands.items() if name in resolved}
    choice_key = [*key, _size_class({name: value if hasattr(value, "shape") else as_tensor(value, resolved[name], name)
                                     for name, value in given.items()})]
    choice = _choices.get(repr(choice_key)) or _stored_choice(choice_key, assignment, resolved)
    if choice is None:
        tensors = {name: as_tensor(value, resolved[name], name) for name, value in given.items()}
        if isinstance(front, store.StoredFront) and not len(front):  # every stored record failed its checks
            front = _fronts[repr(key)] = _searched(key, assignment, resolved, model)
        if not len(front):
            return front, None
        choice = front.select(**tensors)
        decisions.selections += 1
        store.save_choice(choice_key, choice)
    _choices[repr(choice_key)] = choice
    return front, choice


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
    limit = {"time_limit": SEARCH_SECONDS} if model != "sparseauto" else {}
    front = autoschedule(str(assignment), formats, model=model, **limit)
    decisions.searches += 1
    store.save_front(key, front)
    return front

