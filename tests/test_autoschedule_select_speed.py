"""select's ranking costs one candidate of each class estimated alike (`Costed.estimated_as`) and renders
CIN text only for exact ties; the ranking must be exactly the one that costs every candidate on its own
(same order, same estimates, same tie), and its pick must compute numpy's values."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from conftest import densified
from autosparse.autoschedule import select as selection
from autosparse.autoschedule import tiebreak
from autosparse.autoschedule.asymptotic.realise import hash_levels
from autosparse.notation import accesses

KERNELS = {
    "SpMV2": ("a(i) = B(i,j) * C(j,k) * d(k)", {"B": "ds", "C": "ds"}, "ij,jk,k->i"),
    "SpGEMM": ("A(i,j) = B(i,k) * C(k,j)", {"B": "ds", "C": "ds", "A": "ds"}, "ik,kj->ij"),
    "SDDMM": ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "ds", "A": "ds"}, "ij,ik,kj->ij"),
    "MTTKRP": ("A(i,j) = B(i,k,l) * C(k,j) * D(l,j)", {"B": "dss"}, "ikl,kj,lj->ij"),
    "SA4": ("A(i,l) = B(i,j) * C(j,k) * D(k,l)", {"B": "ds"}, "ij,jk,kl->il"),
    "sum": ("A(i,j) = B(i,j) + C(j,i)", {"B": "ds", "C": "ds", "A": "ds"}, None),
}
EXTENTS = {"i": 9, "j": 7, "k": 6, "l": 5, "m": 4}


@pytest.fixture(scope="module")
def fronts():
    return {name: asp.autoschedule(expression, formats=formats, model="auto", time_limit=1)
            for name, (expression, formats, _) in KERNELS.items()}


@pytest.fixture(autouse=True)
def fresh_decisions():
    """No decision or ranking kept from another test (an empty input and a single entry share a size
    class, and would share a ranking)."""
    tiebreak.forget()
    selection._rankings.clear()
    yield
    tiebreak.forget()


def operands(front, entries: str, seed: int = 0) -> dict:
    """Every operand of `front`'s expression: sparse ones with the given `entries` ("some", "none", "one"
    at the last coordinate), dense ones random."""
    rng = np.random.default_rng(seed)
    found = {}
    for access in accesses(front.assignment.rhs):
        shape = tuple(EXTENTS[i.name] for i in access.indices)
        if front.formats[access.tensor].is_dense:
            found[access.tensor] = rng.random(shape)
            continue
        dense = np.zeros(shape)
        if entries == "some":
            dense = np.where(rng.random(shape) < 0.3, rng.random(shape), 0.0)
        elif entries == "one":
            dense[tuple(n - 1 for n in shape)] = 2.5
        found[access.tensor] = sp.csr_matrix(dense) if len(shape) == 2 else asp.Tensor.from_numpy(
            dense, front.formats[access.tensor])
    return found


def costed_one_by_one(front, given) -> list[tuple[float, object]]:
    """The ranking as it was before classes: each candidate estimated on its own (a fresh estimator, so
    nothing is shared), ordered by the whole key, CIN text included."""
    estimated = [(selection.estimated_work(front, cand, given), cand) for cand in selection.contenders(front)]
    return sorted(estimated, key=lambda wc: (wc[0], hash_levels(wc[1].formats), len(wc[1].temporaries),
                                             len(wc[1].transposes), str(wc[1].cin)))


@pytest.mark.parametrize("entries", ["some", "none", "one"])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_the_ranking_is_the_one_that_costs_every_candidate(fronts, kernel, entries):
    front = fronts[kernel]
    given = operands(front, entries)
    ranked = selection.ranking(front, given)
    expected = costed_one_by_one(front, given)
    assert [(work, id(cand)) for work, cand in ranked] == [(work, id(cand)) for work, cand in expected]
    assert [id(c) for c in tiebreak.tied(ranked)] == [id(c) for c in tiebreak.tied(expected)]


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_each_class_estimated_alike_is_costed_once(fronts, kernel):
    front = fronts[kernel]
    classes = {cand.estimated_as for cand in selection.contenders(front)}
    before = selection.counts.costed
    selection.ranking(front, operands(front, "some", seed=3))
    assert selection.counts.costed - before == len(classes)


def test_spmv2_has_candidates_that_share_a_class(fronts):
    """SpMV2's front holds programs that differ only in protocols their formats ignore: costed once."""
    contenders = selection.contenders(fronts["SpMV2"])
    assert len({cand.estimated_as for cand in contenders}) < len(contenders)


def test_members_of_a_class_get_their_estimate(fronts):
    front = fronts["SpMV2"]
    given = operands(front, "some", seed=4)
    by_class: dict[tuple, set] = {}
    for work, cand in selection.ranking(front, given):
        by_class.setdefault(cand.estimated_as, set()).add(work)
    assert all(len(works) == 1 for works in by_class.values())


@pytest.mark.parametrize("entries", ["some", "none", "one"])
@pytest.mark.parametrize("kernel", list(KERNELS))
def test_the_pick_computes_numpys_values(fronts, kernel, entries):
    front = fronts[kernel]
    _, _, subscripts = KERNELS[kernel]
    given = operands(front, entries, seed=5)
    chosen = front.select(**given)
    got = densified(front.kernel(chosen)(**given))
    dense = {name: value.toarray() if sp.issparse(value) else densified(value) for name, value in given.items()}
    names = [access.tensor for access in accesses(front.assignment.rhs)]
    expected = dense["B"] + dense["C"].T if subscripts is None else np.einsum(subscripts, *(dense[n] for n in names))
    np.testing.assert_allclose(got, expected, atol=1e-12)
