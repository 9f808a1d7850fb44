"""Assignment + formats + a schedule -> the CIN a kernel runs.

A schedule is nothing (the default schedule), hand-written CIN (text or a statement), or scheduling
commands (a `Schedule` or their text) replayed on the default schedule; the default schedule and replayed
commands are legalised for the extents at hand. The default schedule, CIN an autoscheduler chose
(`Chosen`) and commands that only choose co-iteration strategies are made parallel where the kernel may
use several threads and the outermost loop shares well (`schedule.autoparallel`, `parallel_by_default`);
any other schedule the user gives runs as given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Mapping

from ..cin import Access, Assign, Stmt, default_loops, default_protocol, legalise, loop_indices, parse_cin
from ..cin import accesses as cin_accesses
from ..cin.concretize import compiled_result_fill
from ..cin.check import check_computes
from ..cin.rewrite import postwalk
from ..cin.provenance import Provenance, split_relations
from ..errors import ScheduleError
from ..format import Capability, Compressed, Format, Layout
from ..notation import Assignment, accesses
from ..notation.ast import IndexVar
from ..notation.operators import Value
from ..schedule import Schedule, blocked
from ..schedule.autoparallel import parallelized

#: CIN with no loop at all (`s() = a() * b()`, a scalar candidate): an assignment, which no command text is.
_CIN_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*\s*\([^()]*\)\s*\+?=(?!=)")


@dataclass(frozen=True)
class Chosen:
    """CIN an autoscheduler chose rather than a user wrote: it runs on threads by the default schedule's
    rule (`parallelized`, and per call only where the operands hold the work), so a pick is never
    sequential where the default it competes with runs parallel. As CIN, it writes the result in the
    format it was chosen for."""

    cin: Stmt


def scheduled(assignment: Assignment, formats: Mapping[str, Format], temporary_formats: Mapping[str, Format],
              schedule, extents: Mapping[IndexVar, int], threads: int, fills: Mapping[str, Value] = {}) -> Stmt:
    """The kernel's CIN for `schedule`, checked to compute `assignment` (`formats` holds every tensor of
    the assignment; `temporary_formats` those of CIN text's temporaries), for a kernel of `threads` whose
    operands have `fills` (0 where not given)."""
    blocked_operands = sorted(name for name, fmt in formats.items() if isinstance(fmt, Layout))
    if schedule is None:
        return parallelized(legalise(unscheduled(assignment, formats, fills), extents), threads)
    if isinstance(schedule, Chosen):
        return parallelized(scheduled(assignment, formats, temporary_formats, schedule.cin, extents, threads, fills),
                            threads)
    if isinstance(schedule, str):
        text = schedule.strip()
        if text == "auto":
            raise ScheduleError("schedule='auto' selects for the operands of one call: use evaluate(..., "
                                "schedule='auto'), or autoschedule(...).select(**operands) as the schedule")
        if written_as_cin(text):
            if blocked_operands:
                raise ScheduleError(f"Expected scheduling commands for a kernel reading the blocked operands "
                                    f"{blocked_operands}, but found CIN: their block views are the kernel's own")
            result = assignment.lhs.tensor
            stmt = parse_cin(text, {**formats, **temporary_formats},
                             {**fills, result: compiled_result_fill(assignment, fills)})
            check_computes(stmt, assignment)
            return stmt
        schedule = Schedule.parse(text)
    if isinstance(schedule, Schedule):
        stmt = legalise(schedule.apply(unscheduled(assignment, formats, fills)), extents)
        if strategies_only(schedule):
            return parallelized(stmt, threads)
    elif hasattr(schedule, "children") and not blocked_operands:
        result = assignment.lhs.tensor
        stmt = _filled(_assembling(schedule, result, formats[result]),
                       {**fills, result: compiled_result_fill(assignment, fills)})
    else:
        raise ScheduleError(f"Expected None, CIN text, scheduling commands or a CIN statement as the schedule, "
                            f"but found {type(schedule).__name__}")
    if not blocked_operands:  # block views are read at the block variables, not the expression's indices
        check_computes(stmt, assignment)
    return stmt


def parallel_by_default(schedule) -> bool:
    """Whether a kernel of `schedule` runs on threads by the default schedule's rule, sized per call."""
    return schedule is None or isinstance(schedule, Chosen) or strategies_only(schedule)


def strategies_only(schedule) -> bool:
    """Whether `schedule` is commands that only choose how loops meet their operands (`coiterate(j, auto)`):
    they keep the default schedule's loops, so its reasons to share the outermost loop among threads still
    hold (a table that threads could not share keeps the loop sequential: `autoparallel`), while a user
    who orders, splits or parallelises loops by hand means the kernel to run as written."""
    if isinstance(schedule, str) and not written_as_cin(schedule) and schedule.strip() != "auto":
        schedule = Schedule.parse(schedule)
    return isinstance(schedule, Schedule) and bool(schedule.commands) and all(
        command.name == "coiterate" for command in schedule.commands)


def written_as_cin(schedule) -> bool:
    """Whether `schedule` is CIN (text or a statement), which writes its result in a format of its own,
    rather than nothing or scheduling commands applied to the default schedule."""
    if isinstance(schedule, str):
        text = schedule.strip()
        return text.startswith(("∀", "forall", "where", "sequence")) or bool(_CIN_ASSIGNMENT.match(text))
    return isinstance(schedule, Chosen) or hasattr(schedule, "children")


def _assembling(stmt: Stmt, result: str, fmt: Format) -> Stmt:
    """`stmt` writing `result` in `fmt`, the format the kernel assembles, as CIN text is parsed: a
    protocol that was its level's default becomes the new level's default."""
    if isinstance(stmt, Assign):
        lhs = stmt.lhs
        if lhs.tensor.name != result or lhs.tensor.format == fmt:
            return stmt
        tensor = replace(lhs.tensor, format=fmt)
        protocols = tuple(default_protocol(tensor.format.levels[fmt.mode_order.index(m)], True)
                          if p is default_protocol(lhs.level_of_mode(m), True) else p
                          for m, p in enumerate(lhs.protocols))
        return replace(stmt, lhs=Access(tensor, lhs.indices, protocols))
    return stmt.with_children(tuple(_assembling(child, result, fmt) for child in stmt.children()))


def _filled(stmt: Stmt, fills: Mapping[str, Value]) -> Stmt:
    """`stmt` with each operand and the result at its fill (0 where not given), as CIN text is parsed: a
    statement an autoscheduler built (`realise`) names the tensors before the operands' fills are known.
    Temporaries keep theirs (their reduction's identity)."""
    def refilled(access: Access) -> Access:
        tensor, fill = access.tensor, fills.get(access.tensor.name, 0)
        return access if tensor.temporary or bool(tensor.fill == fill) else \
            replace(access, tensor=replace(tensor, fill=fill))

    def changed(node):
        if isinstance(node, Access):
            return refilled(node)
        return replace(node, lhs=refilled(node.lhs)) if isinstance(node, Assign) else node
    return postwalk(stmt, changed)


def unscheduled(assignment: Assignment, formats: Mapping[str, Format], fills: Mapping[str, Value] = {}) -> Stmt:
    """The default schedule before legalisation; blocked operands read through their block views."""
    blocks = {name: fmt for name, fmt in formats.items() if isinstance(fmt, Layout)}
    if not blocks:
        return default_loops(assignment, formats, fills=fills)
    ordering = {name: blocked.stand_in(fmt) if isinstance(fmt, Layout) else fmt for name, fmt in formats.items()}
    return blocked.unblock(default_loops(assignment, ordering, fills=fills), blocks)


def derived_indices(cin: Stmt, assignment: Assignment) -> dict[IndexVar, tuple[str, int]]:
    """The loop indices a schedule introduced (precompute's iw), each with an operand mode that gives its
    extent."""
    known = {i for a in (assignment.lhs, *accesses(assignment.rhs)) for i in a.indices}
    made = Provenance(split_relations(cin)[1]).derived()
    derived = {}
    for access in cin_accesses(cin):
        if not access.tensor.temporary and access.tensor.name != assignment.lhs.tensor:
            for mode, index in enumerate(access.indices):
                if index not in known and index not in made:
                    derived.setdefault(index, (access.tensor.name, mode))
    unbound = {i for i in loop_indices(cin) if i not in known and i not in derived and i not in made}
    if unbound:
        raise ScheduleError(f"Expected every loop index to index an operand, but {', '.join(map(str, unbound))} "
                            f"indexes none, so its extent is unknown")
    return derived


def assembly_format(fmt: Format) -> Format:
    """The format a kernel builds for a requested result format: the same, except that levels it can
    neither locate densely nor append to (hashed) are built compressed, then converted by the storage
    layer."""
    levels = tuple(level if level.properties.full or Capability.APPEND in level.capabilities else Compressed()
                   for level in fmt.levels)
    return fmt if levels == fmt.levels else Format(levels, mode_order=fmt.mode_order)
