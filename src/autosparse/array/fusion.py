"""Rule 2 of plan.py by the asymptotic cost model (Ahrens et al.; autoschedule/asymptotic): which of a step's
reducing inputs to compute inlined and which to materialise, decided over every combination at once.

A step with n reducing inputs inlined can run as 2ⁿ programs: each subset of them materialised (a kernel of
its own, read by the step as a temporary `Q`), the rest inlined. Each program is costed as the kernels
`compute` runs — under their default schedules, whose CIN the pipeline builds without compiling it — by the
task sets the autoscheduler's selection costs the default schedule by (`DefaultCandidate.running_cost`), a
program's cost the union of its kernels'. The programs no other program dominates are the frontier (Galley's
question of what to materialise, asked of one step's whole program rather than of one input at a time: two
inputs may pay materialised together where neither pays alone); of those, plan.py keeps the one with the
fewest kernels. `A @ (B @ x)` inlined computes `B @ x` again for every i: {[i,j,k] | A, B} against {[j,k] | B}
∪ {[i,j] | A}, off the frontier. All programs use the planner's index names, so their dimensions agree, and
one model (the step fully fused: its sparse inputs, indices and sunk costs).

The model reasons about + and · (and -) with sums. A program in another semiring is costed by its skeleton
(autoschedule/algebra.py: ⊕ as +, its reductions as sums, ⊗ as ·): a min-plus product's tasks are a
plus-times product's, where the sparse operands' fill is the semiring's zero (a sparse operand of any other
fill is costed dense, as the search costs it). Where a program is in no semiring (a function that keeps no
sparsity, a division, two reductions of different operators) or its default schedule refuses it, the model
cannot cost it: `frontier` answers None and plan.py falls back to its syntactic test. A temporary or a node
materialised before is costed as dense (its format is known only once it is computed): that overcounts a
sparse temporary's reads in the split programs, never the fused one's.
"""

from __future__ import annotations

from functools import lru_cache

from ..autoschedule.algebra import Semiring, checked, untracked
from ..autoschedule.asymptotic.cost import Cost
from ..autoschedule.candidate import DefaultCandidate, cost_model
from ..cin.ast import tensors
from ..errors import AutosparseError
from ..format import Format, as_format
from ..notation import (
    Access,
    Add,
    Assignment,
    Literal,
    Mul,
    Neg,
    Sub,
    Sum,
    accesses,
    walk,
)
from ..notation.ast import operator_of, reduction_of
from ..pipeline.kernel import Kernel
from ..tensor import Tensor
from ..tensor.interop import is_scipy

#: The expressions the asymptotic model costs (its sketches' `+`, `*`, `-` and sums).
COSTED = (Access, Literal, Neg, Add, Sub, Mul, Sum)

#: Judgements kept: a lazy program run again (a solver's iterations) is planned again with the same texts.
KEPT = 256


def frontier(programs: list[tuple[Assignment, ...]], values: dict) -> list[int] | None:
    """The positions of the `programs` (each a result's kernels, the result's own first; the first program
    the step fully fused) whose costs no other program's dominates, with the operands `values` (a leaf's value,
    or None for a node computed by another step, and its order); None where the model cannot cost them."""
    formats = tuple(sorted((name, _format(value, order)) for name, (value, order) in values.items()))
    fills = tuple(sorted((name, value.fill) for name, (value, _) in values.items() if isinstance(value, Tensor)))
    return _frontier(tuple(programs), formats, fills)


def _format(value, order: int) -> Format:
    """The format a value is read in: a Tensor's own, a scipy matrix's counterpart, dense otherwise."""
    if isinstance(value, Tensor):
        return value.format
    if is_scipy(value):
        return as_format(value.format if value.format in ("csr", "csc", "coo") else "csr", 2)
    return Format("d" * order)


@lru_cache(maxsize=KEPT)
def _frontier(programs: tuple, formats: tuple, fills: tuple) -> tuple[int, ...] | None:
    fused = programs[0][0]
    given = dict(formats)
    try:
        semiring = checked(fused)
        given.update((name, Format("d" * len(given[name].levels)))
                     for name in untracked(fused, semiring, given, dict(fills)))
        skeletons = [tuple(_skeleton(assignment, semiring) for assignment in program) for program in programs]
    except AutosparseError:
        return None
    if not all(isinstance(node, COSTED) for program in skeletons for a in program for node in walk(a.rhs)):
        return None
    model = cost_model(skeletons[0][0], given)  # one model: the same sunk costs and assumptions for all
    costs = []
    for program in skeletons:
        temporaries = {a.lhs.tensor: Format("d" * len(a.lhs.indices)) for a in program[1:]}
        try:
            parts = [_cost(assignment, tuple(sorted((given | temporaries).items())), model) for assignment in program]
        except AutosparseError:
            return None
        costs.append(Cost.of(query for cost in parts for query in cost.queries))
    return tuple(k for k, cost in enumerate(costs) if not any(cost.dominates(other) for other in costs))


def _skeleton(assignment: Assignment, semiring: Semiring) -> Assignment:
    """`assignment` in + and ·: ⊕ (a reduction or the element-wise operator) as +, ⊗ as ·."""
    if semiring.plus_times:
        return assignment

    def spelled(node):
        if isinstance(node, Access):
            return node
        children = tuple(spelled(child) for child in node.children())
        reduction, op = reduction_of(node), operator_of(node)
        if reduction is not None and reduction.name == semiring.add:
            return Sum(node.index, children[0])
        if op is not None and op.arity == 2 and op.name in (semiring.add, semiring.multiply):
            return (Add if op.name == semiring.add else Mul)(*children)
        return node.with_children(children)
    return Assignment(assignment.lhs, spelled(assignment.rhs))


@lru_cache(maxsize=4 * KEPT)
def _cost(assignment: Assignment, formats: tuple, model) -> Cost:
    """The asymptotic cost of `assignment` as its default schedule runs it, in `model`'s terms (kept: the
    programs of one step share most of their kernels)."""
    named = {a.tensor for a in accesses(assignment.rhs)}
    operands = {name: fmt for name, fmt in formats if name in named}
    cin = Kernel(assignment, operands).cin
    return DefaultCandidate(cin, {name: var.format for name, var in tensors(cin).items()}, operands, model,
                            DefaultCandidate.found_by, "").running_cost
