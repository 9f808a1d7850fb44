"""Round 3 of the asymptotic search's speed (section searchA): what the faster search replays, counts
or skips gives exactly what computing it afresh gives, and a search cut short still computes the
expression (against numpy)."""

import numpy as np
import pytest

import autosparse as asp
from autosparse.autoschedule.asymptotic import analysis, cost
from autosparse.autoschedule.asymptotic.cost import CostModel
from autosparse.autoschedule.asymptotic.protocols import protocol_choices, protocolised
from autosparse.autoschedule.verify import dense_value

SDDMM = ("A(i,j) = B(i,j) * C(i,k) * D(j,k)", {"B": "ds", "A": "ds"})
SPGEMM2 = ("A(i,j) = B(i,k) * C(k,l) * D(j,l)", {"B": "ds", "C": "ds", "D": "ds", "A": "ds"})
SUMS = ("A(i,j) = B(i,k) * C(k,j) + D(i,j)", {"B": "ds", "C": "ds", "D": "ds"})
TTMC = ("A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)", {"B": "dss"})


@pytest.mark.parametrize("kernel", [SDDMM, SUMS], ids=["SDDMM", "sum"])
def test_replayed_effects_give_the_task_sets_of_a_fresh_interpretation(kernel):
    """Every program's tasks with the memo of loops' and wheres' effects warm (as the search left it)
    equal those of an interpreter that starts with the memo empty, and the memo was replayed from."""
    expression, formats = kernel
    analysis._place_memo.clear()
    hits = analysis._place_memo.hits
    front = asp.autoschedule(expression, formats=formats)
    assert analysis._place_memo.hits > hits
    sparse = {name: len(ix) for name, ix in front.search.model.sparse.items()}
    warm = {program: analysis.tasks(program, sparse) for program in front.search.costs}
    for program, tasks in warm.items():
        analysis._place_memo.clear()
        assert analysis.tasks(program, sparse) == tasks, program


def test_the_cost_of_every_program_is_that_of_a_fresh_model():
    """Costs keep their hash and the interpreter replays effects: a new model over cleared memos costs
    each of SDDMM's 4,504 programs as the search did."""
    expression, formats = SDDMM
    search = asp.autoschedule(expression, formats=formats).search
    model = search.model
    for memo in (analysis._place_memo, analysis._nonzero_memo, cost._program_memo, cost._task_memo, cost._cost_memo):
        memo.clear()
    fresh = CostModel(dict(model.sparse), model.indices, model.sunk, model.scoped)
    assert all(fresh.cost(program) == found for program, found in search.costs.items())


@pytest.mark.parametrize("taco", [False, True])
@pytest.mark.parametrize("kernel", [SDDMM, SPGEMM2, SUMS], ids=["SDDMM", "SpGEMM2", "sum"])
def test_protocol_choices_are_counted_as_many_as_are_built(kernel, taco):
    """Stage 6 counts each nest's protocol assignments without building their options; the count is
    what `protocolised` yields (workspaces, dense inputs and TACO mode included)."""
    from autosparse.autoschedule.asymptotic.pipeline import search
    from autosparse.format import Format
    from autosparse.notation import accesses, parse
    expression, formats = kernel
    assignment = parse(expression)
    names = {a.tensor for a in (assignment.lhs, *accesses(assignment.rhs))}
    full = {name: Format(formats.get(name, "d" * len(next(a for a in (assignment.lhs, *accesses(assignment.rhs))
                                                              if a.tensor == name).indices))) for name in names}
    found = search(assignment, full, taco=taco, time_limit=0.2)
    sparse = {name for name, fmt in full.items() if not fmt.is_dense and name != assignment.lhs.tensor}
    shapes = {}
    for program in list(found.costs)[:50]:
        shapes.setdefault(_shape_of(program), program)
    for shape in shapes:
        workspaces = {a for a in _written(shape) if a not in names}
        built = sum(1 for _ in protocolised(shape, sparse, workspaces, taco))
        assert protocol_choices(shape, sparse, workspaces, taco) == built


def _shape_of(program):
    """`program` with every protocol dropped: the nest stage 6 assigns protocols to."""
    from autosparse.autoschedule.asymptotic.sketch import Access, map_accesses
    return map_accesses(program, lambda a: Access(a.tensor, a.indices))


def _written(stmt):
    from autosparse.cin.ast import assignments
    return {a.lhs.tensor for a in assignments(stmt)}


def test_a_search_cut_short_does_not_count_stage_3_and_still_computes_ttmc():
    """Under a time limit stage 3 (a statistic) is skipped; the frontier found computes TTMc as numpy
    does, on an all-zero and a sparse tensor with a size-1 mode."""
    expression, formats = TTMC
    front = asp.autoschedule(expression, formats=formats, time_limit=0.3)
    assert any(s.name.startswith("3 forall nestings (not counted") for s in front.stages)
    assert len(front) > 0 and not front.complete
    from autosparse.autoschedule.asymptotic.pipeline import COUNTED_PAST

    long = asp.autoschedule("A(i,j) = B(i,j) * C(i,k) * D(k,j)", formats={"B": "ds"}, time_limit=COUNTED_PAST)
    assert next(s.count for s in long.stages if s.name.startswith("3 forall")) == 338  # the counting suites'
    rng = np.random.default_rng(29)
    for density in (0.0, 0.2):
        b = rng.random((3, 1, 4)) * (rng.random((3, 1, 4)) < density)
        c, d, e = rng.random((3, 2)), rng.random((1, 3)), rng.random((4, 2))
        tensors = {"B": asp.Tensor.from_numpy(b, format="dss"), "C": c, "D": d, "E": e}
        chosen = front.select(**tensors)
        got = asp.compile(expression, formats=formats, schedule=chosen)(**tensors)
        expected = dense_value(front.assignment, {"B": b, "C": c, "D": d, "E": e})
        np.testing.assert_allclose(np.asarray(got), expected, err_msg=str(chosen.cin))
        np.testing.assert_allclose(expected, np.einsum("ijk,il,jm,kn->lmn", b, c, d, e))


def test_a_whole_search_still_counts_stage_3():
    expression, formats = SDDMM
    front = asp.autoschedule(expression, formats=formats)
    assert {s.name: s.count for s in front.stages}["3 forall nestings"] == 338
