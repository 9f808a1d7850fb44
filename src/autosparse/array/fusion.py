"""Rule 2 of plan.py by the asymptotic cost model (Ahrens et al.; autoschedule/asymptotic): whether inlining
a reducing node into its consumer makes the one kernel asymptotically costlier than two.

Each program is costed as the kernel `compute` runs it — under the default schedule, whose CIN the pipeline
builds without compiling it — by the task sets the autoscheduler's selection costs the default schedule by
(`DefaultCandidate.running_cost`). The split program is the producer (the node materialised, `Q`) and the
consumer reading it; its cost is the union of theirs. All three assignments use the planner's index names,
so the costs' dimensions agree. The fused one is costlier when it dominates: it holds the split program's
work and more (`A @ (B @ x)` inlined computes `B @ x` again for every i: {[i,j,k] | A, B} against
{[j,k] | B} ∪ {[i,j] | A}).

The model costs + - * and sums only; for any other operator (functions, divisions, other reductions),
or where the default schedule refuses the assignment, `costlier` answers None and plan.py falls back to
its syntactic test. A temporary or a node materialised before is costed as dense (its format is known
only once it is computed): that overcounts a sparse temporary's reads in the split program, never the
fused one's.
"""

from __future__ import annotations

from functools import lru_cache

from ..autoschedule.asymptotic.cost import Cost
from ..autoschedule.candidate import DefaultCandidate, cost_model
from ..cin.ast import tensors
from ..errors import AutosparseError
from ..format import Format, as_format
from ..notation import Access, Add, Assignment, Literal, Mul, Neg, Sub, Sum, walk
from ..pipeline.kernel import Kernel
from ..tensor import Tensor
from ..tensor.interop import is_scipy

#: The expressions the asymptotic model costs (its sketches' `+`, `*`, `-` and sums).
COSTED = (Access, Literal, Neg, Add, Sub, Mul, Sum)

#: Judgements kept: a lazy program run again (a solver's iterations) is planned again with the same texts.
KEPT = 256


def costlier(fused: Assignment, producer: Assignment, consumer: Assignment, values: dict) -> bool | None:
    """Whether `fused` dominates `producer` then `consumer` in the asymptotic model, each under the default
    schedule, with the operands `values` (a leaf's value, or None for a node computed by another step);
    None where the model cannot cost them."""
    if not all(isinstance(node, COSTED) for a in (fused, producer, consumer) for node in walk(a.rhs)):
        return None
    formats = tuple(sorted((name, _format(value, order)) for name, (value, order) in values.items()))
    return _judged(fused, producer, consumer, formats)


def _format(value, order: int) -> Format:
    """The format a value is read in: a Tensor's own, a scipy matrix's counterpart, dense otherwise."""
    if isinstance(value, Tensor):
        return value.format
    if is_scipy(value):
        return as_format(value.format if value.format in ("csr", "csc", "coo") else "csr", 2)
    return Format("d" * order)


@lru_cache(maxsize=KEPT)
def _judged(fused: Assignment, producer: Assignment, consumer: Assignment, formats: tuple) -> bool | None:
    given = dict(formats)
    temporary = {producer.lhs.tensor: Format("d" * len(producer.lhs.indices))}
    model = cost_model(fused, given)  # one model: the same sunk costs and assumptions for all three
    try:
        whole = _cost(fused, given, model)
        split = [_cost(producer, given, model), _cost(consumer, given | temporary, model)]
    except AutosparseError:
        return None
    return whole.dominates(Cost.of(query for cost in split for query in cost.queries))


def _cost(assignment: Assignment, formats: dict, model) -> Cost:
    """The asymptotic cost of `assignment` as its default schedule runs it, in `model`'s terms."""
    named = {a.tensor for a in walk(assignment.rhs) if isinstance(a, Access)}
    operands = {name: fmt for name, fmt in formats.items() if name in named}
    cin = Kernel(assignment, operands).cin
    return DefaultCandidate(cin, {name: var.format for name, var in tensors(cin).items()}, operands, model,
                            DefaultCandidate.found_by, "").running_cost
