"""Costs that see what runs: select prices per-call conversions, dense workspaces' whole extent and
dense accesses against their storage order, refuses workspaces past the memory limit, and breaks near
ties by timing (autoschedule/tiebreak.py), once per size class."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from conftest import densified
from autosparse.autoschedule import select as selection
from autosparse.autoschedule import tiebreak

SPMV2 = "a(i) = B(i,j) * C(j,k) * d(k)"
SDDMM = "A(i,j) = B(i,j) * C(i,k) * D(k,j)"


@pytest.fixture(scope="module")
def spmv2_front():
    return asp.autoschedule(SPMV2, formats={"B": "ds", "C": "ds"})


@pytest.fixture(scope="module")
def sddmm_front():
    return asp.autoschedule(SDDMM, formats={"B": "ds", "A": "ds"})


@pytest.fixture(autouse=True)
def fresh_decisions():
    tiebreak.forget()
    yield
    tiebreak.forget()


def sparse(rows, cols, density, seed):
    return sp.random(rows, cols, density, format="csr", random_state=seed)


def spmv2_operands(n, m, p, density, seed=0):
    return {"B": sparse(n, m, density, seed), "C": sparse(m, p, density, seed + 1),
            "d": np.random.default_rng(seed).random(p)}


def sddmm_operands(n, m, rank, density, seed=0):
    rng = np.random.default_rng(seed)
    return {"B": sparse(n, m, density, seed), "C": rng.random((n, rank)), "D": rng.random((rank, m))}


def dense_of(value):
    return value.toarray() if sp.issparse(value) else np.asarray(value)


@pytest.mark.parametrize("shape, density", [
    ((7, 5, 3), 0.4),    # non-square
    ((6, 6, 6), 0.0),    # empty operands
    ((1, 1, 1), 1.0),    # size 1, a single entry
    ((30, 20, 25), 0.1),
])
def test_the_chosen_spmv2_candidate_computes_numpys_values(spmv2_front, shape, density):
    operands = spmv2_operands(*shape, density)
    chosen = spmv2_front.select(**operands)
    got = spmv2_front.kernel(chosen)(**operands)
    dense = {name: dense_of(value) for name, value in operands.items()}
    np.testing.assert_allclose(densified(got), np.einsum("ij,jk,k->i", dense["B"], dense["C"], dense["d"]))


@pytest.mark.parametrize("shape, density", [((9, 11, 4), 0.3), ((5, 5, 2), 0.0), ((1, 1, 1), 1.0)])
def test_the_chosen_sddmm_candidate_computes_numpys_values(sddmm_front, shape, density):
    operands = sddmm_operands(*shape, density)
    chosen = sddmm_front.select(**operands)
    got = sddmm_front.kernel(chosen)(**operands)
    dense = {name: dense_of(value) for name, value in operands.items()}
    expected = dense["B"] * np.einsum("ik,kj->ij", dense["C"], dense["D"])
    np.testing.assert_allclose(densified(got), expected)


def test_explicit_zeros_are_not_priced_as_entries(spmv2_front):
    """An explicit zero stored in B changes no estimate: the query sizes count nonzeros."""
    operands = spmv2_operands(12, 10, 8, 0.3)
    padded = operands["B"].copy()
    padded.data[:3] = 0.0
    plain = padded.copy()
    plain.eliminate_zeros()
    assert selection.estimates(spmv2_front, {**operands, "B": padded}) == \
        selection.estimates(spmv2_front, {**operands, "B": plain})


def test_a_candidate_that_reformats_an_operand_per_call_ranks_below_an_equal_one_that_does_not(spmv2_front):
    """Same task sets, but one converts an operand on every call: a counting sort of its entries."""
    operands = spmv2_operands(200, 180, 160, 0.05)
    work = selection._estimator(spmv2_front, operands)
    pairs = [(plain, converting) for plain in spmv2_front for converting in spmv2_front
             if not plain.transposes and converting.transposes
             and plain.running_cost == converting.running_cost and plain.table_cost == converting.table_cost
             and plain.probe_cost == converting.probe_cost and plain.scattered_costs == converting.scattered_costs
             and plain.dense_workspaces == converting.dense_workspaces]
    assert pairs
    for plain, converting in pairs:
        entries = sum(operands[name].nnz for name in converting.transposes)
        assert work(converting) >= work(plain) + selection.CONVERSION_WEIGHT * entries
    ranked = [cand for _, cand in selection.ranking(spmv2_front, operands)]
    assert all(ranked.index(plain) < ranked.index(converting) for plain, converting in pairs)


def test_a_dense_ijk_workspace_ranks_below_the_fused_sddmm_on_a_large_sparse_b(sddmm_front):
    """58 of SDDMM's candidates stage B(i,j)·C(i,k) in a dense I·J·K array, cleared after each use: priced
    at its extent they lose to the fused kernel, and past the memory limit they are refused (not run)."""
    n, rank = 4096, 16
    operands = {"B": sparse(n, n, 4 / n, 3), "C": np.ones((n, rank)), "D": np.ones((rank, n))}
    three_d = [c for c in sddmm_front if any(len(dims) == 3 for _, dims in c.dense_workspaces)]
    fused = next(c for c in sddmm_front if not c.temporaries and str(c.cin).startswith("∀i ∀j ∀k"))
    assert three_d
    work = selection._estimator(sddmm_front, operands)
    assert all(work(c) > 100 * work(fused) for c in three_d)
    asp.set_memory_limit(n * n * rank * selection.VALUE_BYTES - 1)
    try:
        work = selection._estimator(sddmm_front, operands)
        assert all(math.isinf(work(c)) for c in three_d) and math.isfinite(work(fused))
    finally:
        asp.set_memory_limit(None)


def test_dense_operands_read_out_of_stride_are_priced_apart(sddmm_front):
    """The fused SDDMM reads D(k,j) down a column (k innermost) and C(i,k) along a row; the row-at-a-time
    form reads D(k,j) along a row, but only at B's coordinates (a gather): both scatter D, neither C."""
    fused = next(c for c in sddmm_front if not c.temporaries and str(c.cin).startswith("∀i ∀j ∀k"))
    rows = next(c for c in sddmm_front if str(c.cin).startswith("∀i where(∀j A(i,j) = t0(j), ∀k ∀j t0(j) += B"))
    assert set(fused.scattered_costs) == set(rows.scattered_costs) == {"D"}


def test_near_ties_are_broken_by_the_injected_timer_once_per_size_class(sddmm_front, monkeypatch):
    """Tied estimates go to the fastest of the few best as timed, not the CIN text; the decision is
    remembered for operands of the same size class, which are not timed again."""
    operands = sddmm_operands(40, 30, 8, 0.1)
    ranked = selection.ranking(sddmm_front, operands)
    contenders = tiebreak.tied(ranked)
    assert len(contenders) > 1  # SDDMM's best estimates tie
    assert len({c.runs_as for c in contenders}) == len(contenders)  # each runs differently
    timed = []

    def fake_seconds(front, cand, given):
        timed.append(cand)
        return 1.0 if cand is contenders[-1] else 2.0  # the last of the tied is the fastest

    monkeypatch.setattr(selection, "_seconds", fake_seconds)
    before = (tiebreak.counts.ties_timed, tiebreak.counts.remembered)
    assert selection.select(sddmm_front, operands) is contenders[-1]
    assert timed == contenders
    similar = sddmm_operands(40, 30, 8, 0.1, seed=7)  # another input of the same size class
    assert tiebreak.key(sddmm_front, similar) == tiebreak.key(sddmm_front, operands)
    assert selection.select(sddmm_front, similar) is contenders[-1]
    assert len(timed) == len(contenders)
    assert (tiebreak.counts.ties_timed, tiebreak.counts.remembered) == (before[0] + 1, before[1] + 1)


def test_candidates_that_run_alike_are_not_timed_against_each_other(spmv2_front, monkeypatch):
    """SpMV2's best estimates tie only between candidates that differ in protocols on dense levels (the
    same loops over the same arrays): those are not timed against each other; only the default schedule,
    estimated within DEFAULT_WITHIN of them, is timed beside the best."""
    operands = spmv2_operands(40, 30, 20, 0.1)
    ranked = selection.ranking(spmv2_front, operands)
    assert ranked[0][0] == ranked[1][0] and ranked[0][1].runs_as == ranked[1][1].runs_as
    timed = []
    monkeypatch.setattr(selection, "_seconds", lambda front, cand, given: timed.append(cand) or 1.0)
    assert selection.select(spmv2_front, operands) is ranked[0][1]
    assert timed[0] is ranked[0][1] and all(c.found_by == "default" for c in timed[1:])
    assert ranked[1][1] not in timed


def test_equal_times_keep_the_estimates_order(sddmm_front, monkeypatch):
    operands = sddmm_operands(24, 16, 4, 0.2)
    monkeypatch.setattr(selection, "_seconds", lambda front, cand, given: 1.0)
    assert selection.select(sddmm_front, operands) is selection.ranking(sddmm_front, operands)[0][1]


def test_a_clear_winner_is_not_timed(spmv2_front, monkeypatch):
    operands = spmv2_operands(24, 16, 12, 0.2)
    ranked = selection.ranking(spmv2_front, operands)
    clear = [(1.0, ranked[0][1]), (2.0, ranked[1][1])]  # the runner-up estimated at twice the work
    monkeypatch.setattr(selection, "ranking", lambda front, given: clear)
    monkeypatch.setattr(selection, "_seconds", lambda *args: pytest.fail("a clear winner was timed"))
    assert selection.select(spmv2_front, operands) is ranked[0][1]


def test_the_estimate_is_computed_once_per_size_class(spmv2_front):
    first = spmv2_operands(50, 40, 30, 0.1, seed=1)
    same_class = spmv2_operands(50, 40, 30, 0.1, seed=2)
    larger = spmv2_operands(300, 40, 30, 0.1, seed=3)
    before = (selection.counts.estimated, selection.counts.reused)
    assert selection.ranking(spmv2_front, first) is selection.ranking(spmv2_front, same_class)
    assert selection.ranking(spmv2_front, larger) is not selection.ranking(spmv2_front, first)
    assert (selection.counts.estimated, selection.counts.reused) == (before[0] + 2, before[1] + 2)


def test_size_classes_round_dimensions_and_entries_up_to_powers_of_two():
    small = {"B": sparse(5, 6, 0.5, 0), "d": np.ones(3)}
    assert tiebreak.size_class(small) == (("B", (8, 8), 16), ("d", (4,), 4))
    assert tiebreak.size_class({"B": sp.csr_matrix((0, 0))}) == (("B", (1, 1), 1),)


@pytest.mark.parametrize("shape", [(30, 20, 25), (1, 1, 1), (4, 0, 3)])
def test_a_two_operand_join_is_counted_from_multiplicities_exactly(shape):
    """{[i,k,j] | B(i,k) ∧ C(k,j)} is a sparse product's multiplications: (B ≠ 0) @ (C ≠ 0) summed."""
    from autosparse.autoschedule.asymptotic.query import Atom, Query

    n, m, p = shape
    B, C = sparse(n, m, 0.3, 5), sparse(m, p, 0.3, 6)
    query = Query.of([(v, v) for v in "ikj"], [Atom("B", ("i", "k")), Atom("C", ("k", "j"))])
    patterns = {name: np.argwhere(dense_of(x) != 0).astype(np.int64) for name, x in (("B", B), ("C", C))}
    expected = ((dense_of(B) != 0).astype(int) @ (dense_of(C) != 0).astype(int)).sum()
    assert selection.query_size(query, patterns, {"i": n, "k": m, "j": p}) == expected


def test_the_tie_breaker_stops_timing_past_its_budget(sddmm_front, monkeypatch):
    """Past BUDGET seconds no further tied candidate is timed: the first, timed, is kept."""
    operands = sddmm_operands(40, 30, 8, 0.1, seed=3)
    contenders = tiebreak.tied(selection.ranking(sddmm_front, operands))
    timed = []
    monkeypatch.setattr(tiebreak, "BUDGET", -1.0)
    monkeypatch.setattr(selection, "_seconds", lambda front, cand, given: timed.append(cand) or 1.0)
    assert selection.select(sddmm_front, operands) is contenders[0] and timed == contenders[:1]


TTMC = "A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)"
TTMC_FORMATS = {"B": "dss", "C": "dd", "D": "dd", "E": "dd", "A": "ddd"}
#: Three TTMc programs with the same task sets that the lowering runs differently: `w0(m)` a list
#: workspace (a mark checked on every write), `w0(i,n,m)` a dense array written along its last mode,
#: `w0(i,m,n)` the same array written down `m`, out of stride; one whose only list workspace sums over
#: an inner loop its index leaves out; and one that reads B in another mode order.
TTMC_PROGRAMS = {
    "listed": ("∀i ∀n where(∀l ∀m A(l,m,n) += C(i@locate,l@locate) * w0(m@locate), "
               "where(∀j ∀m w0(m) += D(j@locate,m@locate) * w1(j), ∀j ∀k w1(j) += B(i,j,k) * E(k@locate,n@locate)))",
               {"w0": "d", "w1": "d"}),
    "along": ("where(∀i ∀l ∀n ∀m A(l,m,n) += C(i@locate,l@locate) * w0(i,n,m@locate), "
              "∀i ∀j ∀n where(∀m w0(i,n,m) += D(j@locate,m@locate) * w1(), ∀k w1() += B(i,j,k) * E(k@locate,n@locate)))",
              {"w0": "ddd", "w1": ""}),
    "down": ("where(∀i ∀l ∀m ∀n A(l,m,n) += C(i@locate,l@locate) * w0(i,m,n@locate), "
             "∀i ∀j ∀n where(∀m w0(i,m,n) += D(j@locate,m@locate) * w1(), ∀k w1() += B(i,j,k) * E(k@locate,n@locate)))",
             {"w0": "ddd", "w1": ""}),
    "summed": ("∀i ∀n where(∀j ∀m ∀l A(l,m,n) += C(i@locate,l@locate) * D(j@locate,m@locate) * w1(j), "
               "∀j ∀k w1(j) += B(i,j,k) * E(k@locate,n@locate))", {"w1": "d"}),
    "transposed": ("where(∀k ∀m ∀l ∀n A(l,m,n) += E(k@locate,n@locate) * w0(k,m@locate,l@locate), "
                   "∀i ∀k ∀m where(∀l w0(k,m,l) += C(i@locate,l@locate) * w1(), ∀j w1() += B(i,j,k) * D(j@locate,m@locate)))",
                   {"B": "s0s2s1", "w0": "ddd", "w1": ""}),
}


@pytest.fixture(scope="module")
def ttmc_programs():
    """The programs of TTMC_PROGRAMS as candidates known by their CIN, and a front-like holder of the
    expression and formats for the estimator."""
    from types import SimpleNamespace

    from autosparse.autoschedule.candidate import CinCandidate, cost_model
    from autosparse.cin.ast import tensors
    from autosparse.cin.parser import parse_cin
    from autosparse.format import Format
    from autosparse.notation import parse

    assignment = parse(TTMC)
    user = {name: Format(fmt) for name, fmt in TTMC_FORMATS.items()}
    model = cost_model(assignment, user)
    made = {}
    for name, (text, temporaries) in TTMC_PROGRAMS.items():
        stmt = parse_cin(text, {**TTMC_FORMATS, **temporaries})
        made[name] = CinCandidate(stmt, {n: var.format for n, var in tensors(stmt).items()}, user, model, "test", "")
    return SimpleNamespace(assignment=assignment, formats=user), made


def ttmc_operands(side, rank, entries, seed=0):
    rng = np.random.default_rng(seed)
    flat = rng.choice(side ** 3, entries, replace=False)
    coords = np.stack(np.unravel_index(flat, (side,) * 3)).astype(np.int64)
    b = asp.Tensor.from_coo(coords, rng.random(entries), (side,) * 3, format="dss")
    return {"B": b, **{name: rng.random((side, rank)) for name in "CDE"}}


def test_list_workspace_writes_and_temporaries_written_out_of_stride_rank_below_writes_in_place(ttmc_programs):
    """The same task sets, three costs: writing a dense array along its last mode is cheapest, down
    another mode (no vectorising, a line a write) dearer, through a list workspace (a mark checked and
    a coordinate listed a write) dearest — the order they run in (TTMc on uniform 126^3: 1.0, 1.9, 2.9 ms)."""
    holder, programs = ttmc_programs
    listed, along, down = programs["listed"], programs["along"], programs["down"]
    assert listed.list_write_cost.queries and not along.list_write_cost.queries and not down.list_write_cost.queries
    assert "w0" in down.scattered_costs and "w0" not in along.scattered_costs
    operands = ttmc_operands(30, 8, 900)
    work, size = selection._estimator(holder, operands), selection._sizer(*selection._patterns(holder, operands))
    assert work(along) < work(down) < work(listed)
    assert size(down.running_cost) == size(along.running_cost)  # the difference is the strided accesses alone

    def strided(cand):  # every tensor fits the private caches
        return sum(size(cost) for cost in cand.scattered_costs.values())

    assert work(down) - work(along) == pytest.approx(
        (selection.CACHED_STRIDE_WEIGHT - 1) * (strided(down) - strided(along)))


def test_a_sum_into_a_list_workspace_is_written_once_per_coordinate(ttmc_programs):
    """`∀j ∀k w1(j) += …` adds over k in a register and writes w1(j) once per j: {[i,j,n]}, not a write
    per entry of B; in "listed" the writes of `∀j ∀m w0(m) += …` ({[i,j,m,n]}) contain those."""
    _, programs = ttmc_programs
    assert [str(q) for q in programs["summed"].list_write_cost.queries] == ["{[i,j,n] | ∃k₁ B(i,j,k₁)}"]
    assert [str(q) for q in programs["listed"].list_write_cost.queries] == ["{[i,j,m,n] | ∃k₁ B(i,j,k₁)}"]


@pytest.mark.parametrize("side, rank, entries", [(30, 8, 900), (5, 3, 0), (1, 1, 1), (6, 2, 216)])
def test_the_three_ttmc_programs_compute_numpys_values(ttmc_programs, side, rank, entries):
    _, programs = ttmc_programs
    operands = ttmc_operands(side, rank, entries)
    dense = {name: operands[name].to_numpy() if name == "B" else operands[name] for name in operands}
    expected = np.einsum("ijk,il,jm,kn->lmn", dense["B"], dense["C"], dense["D"], dense["E"])
    for cand in programs.values():
        got = asp.compile(TTMC, formats={"B": "dss"}, schedule=cand)(**operands)
        np.testing.assert_allclose(densified(got), expected, atol=1e-12)


def test_reformatting_a_three_mode_operand_costs_more_an_entry_than_a_matrix(ttmc_programs, monkeypatch):
    """A TTMc program that reads B in another mode order pays TENSOR_CONVERSION_FACTOR times a matrix's
    price an entry (a sort on all coordinates, not a count into columns): what kept such programs, timed
    on B converted beforehand, from looking cheap next to those that read B as given."""
    holder, programs = ttmc_programs
    transposed = programs["transposed"]
    assert set(transposed.transposes) == {"B"} and not any(c.transposes for n, c in programs.items() if n != "transposed")
    operands = ttmc_operands(20, 4, 400)
    work = selection._estimator(holder, operands)
    priced = {name: work(cand) for name, cand in programs.items()}
    factor = selection.TENSOR_CONVERSION_FACTOR
    monkeypatch.setattr(selection, "TENSOR_CONVERSION_FACTOR", 1)
    work = selection._estimator(holder, operands)  # an estimator keeps what it costed
    as_matrix = {name: work(cand) for name, cand in programs.items()}
    entries = operands["B"].nnz + operands["B"].shape[0]  # and a pointer per slice of the first mode stored
    extra = (factor - 1) * selection.CONVERSION_WEIGHT * entries
    assert priced["transposed"] - as_matrix["transposed"] == pytest.approx(extra)
    assert all(priced[name] == as_matrix[name] for name in programs if name != "transposed")


def test_a_sparseauto_program_is_estimated_as_the_asymptotic_program_that_runs_alike():
    """SpMV2: SparseAuto's `a(i@locate) += t0(j@locate) * B(i,j)` steps B's dense rows as written, which
    the lowering visits whole, as the asymptotic program's running sketch has it; read so, neither writes
    `a` out of stride, and the two, the same loops over the same arrays, get one estimate."""
    front = asp.autoschedule(SPMV2, formats={"B": "ds", "C": "ds"}, model="auto")
    sparseauto = next(c for c in front if c.found_by == "sparseauto"
                      and str(c.cin).startswith("where(∀i ∀j a(i@locate) += t0(j@locate) * B(i,j), ∀j ∀k"))
    asymptotic = next(c for c in front if c.found_by == "asymptotic" and str(c.cin) ==
                      "where(∀i ∀j a(i) += B(i,j) * w0(j@locate), ∀j ∀k w0(j) += C(j,k) * d(k@locate))")
    assert "a" not in sparseauto.scattered_costs and "a" not in asymptotic.scattered_costs
    work = selection._estimator(front, spmv2_operands(300, 280, 260, 0.02))
    assert work(sparseauto) == work(asymptotic)
