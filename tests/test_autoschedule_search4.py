"""Round 4 of the asymptotic search's speed (issue 29, section "search"): guards written without the
nonzero reads they already imply (`query.narrowed`), so the interpreter's memo meets the loops below
once for every way of stepping above; `reads_agree` asked once per loop nest; unbeaten costs
remembered. The narrowed search finds what the plain one (`analysis.narrowed` replaced by `conj`)
finds: every program's cost, the frontier and the witnesses; and its picks compute the expression
(against numpy)."""

import numpy as np
import pytest

import autosparse as asp
from autosparse.autoschedule.asymptotic import analysis, cost, pipeline
from autosparse.autoschedule.asymptotic.cost import CostModel
from autosparse.autoschedule.asymptotic.query import TRUE, And, Atom, Exists, conj, exists, narrowed
from autosparse.autoschedule.verify import dense_value

SPMV2 = ("a(i) = B(i,j) * C(j,k) * d(k)", {"B": "ds", "C": "ds"})
SDDMM = ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "ds", "A": "ds"})
SPGEMM2 = ("A(i,j) = B(i,k) * C(k,l) * D(j,l)", {"B": "ds", "C": "ds", "D": "ds", "A": "ds"})
SUMS = ("A(i,j) = B(i,k) * C(k,j) + D(i,j)", {"B": "ds", "C": "ds", "D": "ds"})
TWICE = ("A(i,j) = B(i,j) * C(i,k) * B(k,j)", {"B": "ds", "C": "ds"})
MTTKRP = ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "dss"})
TTMC = ("A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)", {"B": "dss"})

B_IK = Atom("B", ("i", "k"))


def _dense(value) -> np.ndarray:
    return value.to_numpy() if isinstance(value, asp.Tensor) else np.asarray(value)


def _clear_memos():
    for memo in (analysis._place_memo, analysis._nonzero_memo, analysis._written_memo, cost._program_memo,
                 cost._task_memo, cost._cost_memo):
        memo.clear()


@pytest.fixture
def plain(monkeypatch):
    """The interpreter with guards conjoined as they come (the search before round 4)."""
    _clear_memos()
    monkeypatch.setattr(analysis, "narrowed", conj)
    yield
    _clear_memos()


# --- narrowed -----------------------------------------------------------------------------------------


def test_a_read_implies_the_same_read_with_an_index_quantified():
    assert narrowed(exists(["k"], B_IK), B_IK) == B_IK
    assert narrowed(B_IK, exists(["k"], B_IK)) == B_IK
    assert narrowed(TRUE, exists(["i", "k"], B_IK), exists(["k"], B_IK), B_IK) == B_IK


def test_reads_that_imply_nothing_of_each_other_all_stay():
    transposed = exists(["k"], Atom("B", ("k", "i")))  # ∃k B(k,i) is not ∃k B(i,k)
    other = exists(["k"], Atom("C", ("i", "k")))
    assert narrowed(B_IK, transposed) == And((B_IK, transposed))
    assert narrowed(B_IK, other) == And((B_IK, other))
    # B(i,j) implies ∃k B(i,k), not the other way: the free j stays
    assert narrowed(exists(["k"], B_IK), Atom("B", ("i", "j"))) == Atom("B", ("i", "j"))
    assert narrowed(Atom("B", ("j", "k")), B_IK) == And((Atom("B", ("j", "k")), B_IK))


def test_a_repeated_quantified_index_must_meet_one_value():
    diagonal = exists(["k"], Atom("B", ("k", "k")))
    assert narrowed(Atom("B", ("i", "j")), diagonal) == And((Atom("B", ("i", "j")), diagonal))
    assert narrowed(Atom("B", ("i", "i")), diagonal) == Atom("B", ("i", "i"))


def test_compound_parts_are_kept_as_they_are():
    compound = Exists(("k'^1",), And((Atom("B", ("i", "k'^1")), Atom("C", ("k'^1", "j")))))
    assert narrowed(compound, B_IK) == And((compound, B_IK))
    assert narrowed(B_IK) == B_IK and narrowed() == TRUE


# --- the search finds what it found before --------------------------------------------------------------


def _found(expression, formats, **options):
    search = asp.autoschedule(expression, formats=formats, **options).search
    return (search.frontier, search.witnesses, search.costs,
            [(stage.name, stage.count) for stage in search.stages])


@pytest.mark.parametrize("kernel", [SPMV2, SDDMM, SUMS, TWICE], ids=["SpMV2", "SDDMM", "sum", "twice"])
@pytest.mark.parametrize("taco", [False, True])
def test_the_narrowed_search_finds_what_the_plain_one_finds(kernel, taco, request):
    expression, formats = kernel
    _clear_memos()
    narrowed_found = _found(expression, formats, taco=taco)
    request.getfixturevalue("plain")
    assert _found(expression, formats, taco=taco) == narrowed_found


def test_spgemm2s_whole_search_is_unchanged_and_replays_more(request):
    """SpGEMM2 (20,736 programs): the same costs, frontier and witnesses, and the memo of loops' and
    wheres' effects computes well under three quarters as many effects as without narrowing."""
    expression, formats = SPGEMM2
    _clear_memos()
    misses = analysis._place_memo.misses
    narrowed_found = _found(expression, formats)
    narrowed_misses = analysis._place_memo.misses - misses
    request.getfixturevalue("plain")
    misses = analysis._place_memo.misses
    assert _found(expression, formats) == narrowed_found
    assert narrowed_misses < 0.75 * (analysis._place_memo.misses - misses)


@pytest.mark.parametrize("kernel", [MTTKRP, TTMC], ids=["MTTKRP", "TTMc"])
def test_long_searches_cost_each_program_as_the_plain_interpreter_does(kernel, request):
    """MTTKRP's and TTMc's whole searches take a minute: the programs a 3 s search costs are costed
    again by a fresh model with the plain interpreter and every memo cleared."""
    expression, formats = kernel
    _clear_memos()
    search = asp.autoschedule(expression, formats=formats, time_limit=3).search  # 1 s costed too few under load
    assert search.processed > 10
    request.getfixturevalue("plain")
    model = search.model
    fresh = CostModel(dict(model.sparse), model.indices, model.sunk, model.scoped)
    assert all(fresh.cost(program) == found for program, found in search.costs.items())


# --- reads_agree once per loop nest ---------------------------------------------------------------------


def _agreement_asked(monkeypatch, kernel):
    """The programs the search asks `reads_agree` about, and its front."""
    asked = []
    original = pipeline.reads_agree

    def counted(program):
        asked.append(program)
        return original(program)

    monkeypatch.setattr(pipeline, "reads_agree", counted)
    expression, formats = kernel
    return asked, asp.autoschedule(expression, formats=formats)


def test_programs_that_read_every_tensor_once_are_not_asked_whether_reads_agree(monkeypatch):
    asked, front = _agreement_asked(monkeypatch, SDDMM)
    assert asked == [] and front.search.complete


def test_a_tensor_read_twice_is_still_asked_per_program_and_its_disagreements_dropped(monkeypatch):
    """`B(i,j) * C(i,k) * B(k,j)`: B read twice, so each program is asked, and no frontier program
    reads B two ways; the pick computes the expression."""
    asked, front = _agreement_asked(monkeypatch, TWICE)
    assert len(asked) == front.search.processed > 0
    assert all(pipeline.reads_agree(program) for program, _ in front.search.frontier)
    rng = np.random.default_rng(4)
    b = rng.random((5, 5)) * (rng.random((5, 5)) < 0.4)
    c = rng.random((5, 5)) * (rng.random((5, 5)) < 0.4)
    operands = {"B": asp.Tensor.from_numpy(b, format="ds"), "C": asp.Tensor.from_numpy(c, format="ds")}
    expression, formats = TWICE
    value = asp.compile(expression, formats=formats, schedule=front.select(**operands))(**operands)
    expected = dense_value(front.assignment, {"B": b, "C": c})
    np.testing.assert_allclose(expected, np.einsum("ij,ik,kj->ij", b, c, b))
    np.testing.assert_allclose(_dense(value), expected, atol=1e-12)


# --- picks compute the expression ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def spgemm2_front():
    """SpGEMM2's whole search, once for the three densities its pick is run on."""
    expression, formats = SPGEMM2
    return asp.autoschedule(expression, formats=formats)


@pytest.mark.parametrize("density", [0.0, 0.3, 1.0], ids=["empty", "sparse", "full"])
def test_spgemm2s_pick_computes_the_product(density, spgemm2_front):
    rng = np.random.default_rng(7)
    shapes = {"B": (4, 6), "C": (6, 1), "D": (3, 1)}  # non-square, a size-1 index
    dense = {name: rng.random(shape) * (rng.random(shape) < density) for name, shape in shapes.items()}
    expression, formats = SPGEMM2
    front = spgemm2_front
    operands = {name: asp.Tensor.from_numpy(array, format="ds") for name, array in dense.items()}
    value = asp.compile(expression, formats=formats, schedule=front.select(**operands))(**operands)
    expected = dense_value(front.assignment, dense)
    np.testing.assert_allclose(expected, np.einsum("ik,kl,jl->ij", dense["B"], dense["C"], dense["D"]))
    np.testing.assert_allclose(_dense(value), expected, atol=1e-12)
