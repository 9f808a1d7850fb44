"""A front as readable text (`print(front)`, `autosparse autoschedule`): one entry per candidate with its
number, the model that found it, the operands it reformats (transposes) and the temporaries it adds,
the program in its model's notation, its CIN, the cost its model kept it for and the cost `select` ranks it by (the task sets of its CIN as it
runs, every term printed: candidates that tie in the first often differ in the second).

Plain text, no terminal codes, the same for the same front, so tests and logs can compare it.
"""

from __future__ import annotations

from .sparseauto.cost import Costs


def front_table(front) -> str:
    formats = ", ".join(f"{name}: {fmt}" for name, fmt in sorted(front.formats.items()))
    complete = "" if getattr(front, "complete", True) else " (search cut short: the frontier of the programs taken)"
    lines = [f"{len(front)} candidates for {front.assignment}  [{formats}]{complete}"]
    for number, cand in enumerate(front):
        lines += [f"[{number}] {cand.found_by}   transposes: {_named(cand.transposes)}   "
                  f"temporaries: {', '.join(cand.temporaries) or '—'}",
                  *_program(cand),
                  f"    cin:        {cand.cin}",
                  f"    cost:       {model_cost(cand)}",
                  f"    as it runs: {cand.running_cost}"]
    return "\n".join(lines)


def _program(cand) -> list[str]:
    """The candidate in its model's own notation (a sketch, a branched graph) where that differs from
    its CIN."""
    own = str(cand)
    return [] if own == str(cand.cin) else [f"    program:    {own}"]


def _named(formats) -> str:
    return ", ".join(f"{name} -> {fmt}" for name, fmt in sorted(formats.items())) or "—"


def model_cost(cand) -> str:
    """The cost the candidate's own model kept it for: task sets (asymptotic), SparseAuto's time and
    memory polynomials with the loop and temporary depths, or the text a stored candidate kept."""
    cost = cand.cost
    if isinstance(cost, Costs):
        return (f"time: {cost.time}   memory: {cost.memory}   loop depth {cost.loop_depth}, "
                f"memory depth {cost.memory_depth}")
    return str(cost)
