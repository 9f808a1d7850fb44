"""Autoschedulers: enumerate schedules, cost them, keep a frontier, select one for the inputs at hand.

`autoschedule(expression, formats, model="asymptotic")` runs the asymptotic autoscheduler of Ahrens,
Kjolstad and Amarasinghe: every minimum-depth program (loop orders, workspaces, protocols), costed as
task sets, filtered to the undominated ones. `model="sparseauto"` runs SparseAuto (Dias et al.):
branched loop nests by recursive fission and fusion, pruned by depth and, under `constraints`, by Z3.
`model="auto"` runs both where both apply (SparseAuto takes products only) and returns their candidates
side by side (`JointFront`), each costed by the asymptotic model's estimate of its CIN, so `select`
ranks them by one measure.
"""

from __future__ import annotations

import time
from typing import Callable, Mapping, Sequence

from ..errors import AutosparseError, ScheduleError
from ..format import Format
from ..format.spec import as_format, format_mapping
from ..notation import Div, accesses, parse, split_diagonals, walk
from .algebra import checked
from .asymptotic.pipeline import search
from .candidate import Candidates, JointFront, KernelFactory
from .front import Candidate, Front
from .progress import progress_bar
from .sparseauto.front import SparseAutoCandidate, SparseAutoFront
from .sparseauto.pipeline import as_compute
from .sparseauto.pipeline import search as sparseauto_search

MODELS = ("asymptotic", "sparseauto", "auto")


def autoschedule(expression: str, formats: Mapping[str, "str | Format"] | None = None, model: str = "asymptotic",
                 taco: bool = False, sunk_costs: bool = True, paper: bool = False,
                 time_limit: float | None = None, progress: Callable[[int, int], None] | None = None,
                 constraints: Sequence[str] = (), rule: str = "everywhere", max_memory_depth: int = 2,
                 stage1_groups: bool = False, *, kernel_factory: KernelFactory,
                 fills: Mapping[str, object] | None = None) -> Candidates:
    """The frontier of schedules for `expression` with each tensor stored in `formats` (dense where not
    given), whose candidates compile through `kernel_factory` (api passes the pipeline's). `taco=True` keeps to what TACO can run (the paper's restricted mode); `sunk_costs=False`
    compares raw task sets; `time_limit` (seconds) makes the search anytime. `fills`: the operands'
    fills (0 where not given), for which the candidates are searched and compiled.

    The expression may be any semiring's (algebra.py): `y(i) = min(j, A(i,j) + d(j))` with A's fill
    +inf, `any(j, logical_and(A(i,j), q(j)))`, a product masked by `pattern(M(i,j))`; SparseAuto takes
    products of a semiring whose ⊗ distributes over ⊕ and whose zero is every sparse factor's fill (a
    ScheduleError otherwise, and `model="auto"` keeps the asymptotic front alone).

    `paper=True` gives the paper's frontier (Figure 6 but three, docs/notes/autoschedule-counts.md): a workspace analysed as Fig. 5
    does, nonzero wherever any iteration of the loops around its `where` wrote, and asymptotic cost the
    only criterion. By default a workspace's state is that of the current iteration, and a program also
    stays when it needs fewer hash-table levels than the programs asymptotically cheaper than it: the
    paper's frontier would otherwise drop a row-at-a-time schedule with dense workspaces for one that
    saves work only on inputs with empty slices but stages every write through a 2-D hash table.

    For `model="sparseauto"`: `constraints` are inequalities over sizes that stage 3 may assume
    (`"nnz(B) <= 1e5"`, `"10*j < k"`); `rule` is "everywhere" (drop a schedule another one beats or ties
    for every allowed size) or "literal" (the paper's Listing 1); stage 1 drops temporaries of more than
    `max_memory_depth` dimensions; `stage1_groups` also counts stage 1's distinct costs (slow, for the
    paper's Table 3).

    `model="auto"` takes both models' options and returns a `JointFront`: the asymptotic frontier, then
    SparseAuto's final set where the expression is a product of tensors; `time_limit` bounds both
    searches together (SparseAuto's runs first, with at most half of it)."""
    if model not in MODELS:
        raise AutosparseError(f"Expected a model among {MODELS}, but found {model!r}")
    assignment = parse(expression)
    checked(assignment)
    fills = {name: fill for name, fill in (fills or {}).items() if not _zero(fill)}
    if any(isinstance(node, Div) for node in walk(assignment.rhs)) or split_diagonals(assignment)[1]:
        raise ScheduleError(f"Expected an expression the autoschedulers cost (+, - and * of accesses with "
                            f"distinct indices), but {assignment} divides or reads a diagonal: use "
                            f"schedule=None (the default schedule) or write one")
    formats = format_mapping(formats)
    orders = {a.tensor: len(a.indices) for a in (assignment.lhs, *accesses(assignment.rhs))}
    unknown = sorted(set(formats) - set(orders))
    if unknown:
        raise AutosparseError(f"Expected formats only for tensors of {assignment}, but found {unknown}")
    resolved = {name: as_format(formats.get(name, "dense"), order) for name, order in orders.items()}
    if model == "auto":
        def one(model: str, limit: float | None) -> Candidates:
            return autoschedule(expression, formats, model, taco, sunk_costs, paper, limit, progress, constraints,
                                rule, max_memory_depth, stage1_groups, kernel_factory=kernel_factory, fills=fills)

        if not _is_product(assignment, fills, resolved):
            return JointFront([one("asymptotic", time_limit)])
        began = time.perf_counter()  # one limit for both: SparseAuto's small search first, at most half of it
        sparseauto = one("sparseauto", None if time_limit is None else time_limit / 2)
        left = None if time_limit is None else max(time_limit - (time.perf_counter() - began), 0.0)
        return JointFront([one("asymptotic", left), sparseauto])
    if model == "sparseauto":
        with progress_bar(progress, "steps") as report:
            found = sparseauto_search(assignment, resolved, constraints, rule, max_memory_depth, stage1_groups,
                                      time_limit=time_limit, progress=report, fills=fills)
        return _filled(SparseAutoFront(assignment, resolved, found, kernel_factory), fills)
    with progress_bar(progress, "programs") as report:
        found = search(assignment, resolved, taco=taco, sunk=sunk_costs, paper=paper,
                       time_limit=time_limit, progress=report, fills=fills)
    return _filled(Front(assignment, resolved, found, kernel_factory), fills)


def _filled(front: Candidates, fills: Mapping[str, object]) -> Candidates:
    front.fills = fills
    return front


def _zero(fill) -> bool:
    return bool(fill == 0)


def _is_product(assignment, fills: Mapping[str, object], formats: Mapping[str, Format]) -> bool:
    """Whether SparseAuto schedules `assignment` (a product of tensors in a semiring whose zero is every
    sparse factor's fill, §3 of its paper)."""
    try:
        as_compute(assignment, fills, formats)
    except AutosparseError:
        return False
    return True


__all__ = ["Candidate", "Candidates", "Front", "JointFront", "SparseAutoCandidate", "SparseAutoFront", "autoschedule"]
