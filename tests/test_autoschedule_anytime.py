"""The order of a cut-short asymptotic search (asymptotic/order.py, issue 29): a short search costs the
program the whole search picks among its first few hundred. Counted in programs, never timed: the
search's clock is replaced by one that stands still until the N-th program is costed, then has passed
every deadline (docs/notes/autoschedule-anytime.md measures the same way)."""

from __future__ import annotations

import types

import numpy as np
import pytest

import autosparse as asp
from conftest import densified, edge_matrix
from autosparse.autoschedule.asymptotic import pipeline
from autosparse.autoschedule.asymptotic.order import NAMED_AT_LEAST, promise, stored_orders
from autosparse.format import as_format

from autosparse_bench.sparseauto_counts import KERNELS

#: Each kernel's pick (select's best estimate on the autotune suite's first input, 2·10^4 entries, ranks
#: 16) after the whole asymptotic search (SparseAuto's kernel 8: after 60 s and 52,560 programs; its
#: whole search takes hours), found by docs/notes/autoschedule-anytime.py --whole. Costed 88th, 159th,
#: 323rd and 731st before promise weighed accesses out of stride; 81st, 20th, 178th and 81st now.
PICKS = {
    2: "where(∀i ∀l ∀m A(i@insert,m@insert) += F(l@locate,m@locate) * w0(i,l@locate), ∀i ∀j where(∀l "
       "w0(i@insert,l@insert) += B(i,j) * E(j@locate,l@locate) * w1, ∀k w1 += C(i@locate,k@locate) * "
       "D(j@locate,k@locate)))",
    3: "where(∀i ∀k ∀l A(i@insert,l@insert) += E(k@locate,l@locate) * w0(i,k@locate), ∀i ∀j ∀k "
       "w0(i@insert,k@insert) += B(i,j) * C(j@locate,k@locate) * D(j@locate,k@locate))",
    5: "where(∀i ∀l ∀n ∀m A(l@insert,m@insert,n@insert) += C(i@locate,l@locate) * w0(i,n,m@locate), ∀i ∀j ∀n "
       "where(∀m w0(i@insert,n@insert,m@insert) += D(j@locate,m@locate) * w1, ∀k w1 += B(i,j,k) * "
       "E(k@locate,n@locate)))",
    8: "where(∀i ∀j ∀m A(i@insert,m@insert) += E(j@locate,m@locate) * w0(i,j@locate), ∀i ∀k ∀l ∀j "
       "w0(i@insert,j@insert) += B(i,k,l) * C(l@locate,j@locate) * D(k@locate,j@locate))",
}
FIRST = 200


def cut_after(monkeypatch, number: int, programs: int, naming_passed: bool = False, time_limit: float = 1.0):
    """Kernel `number`'s asymptotic front from a search cut after `programs` programs; with
    `naming_passed`, the clock has passed stage 5's deadline (half the limit) once the search began."""
    costed, began = [0], []

    def now() -> float:
        if costed[0] >= programs:
            return float("inf")
        started = bool(began) or began.append(0.0)
        return 0.75 * time_limit if naming_passed and started else 0.0

    monkeypatch.setattr(pipeline, "time", types.SimpleNamespace(perf_counter=now))
    expression, formats = KERNELS[number]
    return asp.autoschedule(expression, formats=formats, time_limit=time_limit,
                            progress=lambda done, total: costed.__setitem__(0, done))


def named(front) -> int:
    return next(stage.count for stage in front.stages if stage.name.startswith("5 named"))


@pytest.mark.parametrize("number", sorted(PICKS))
def test_the_whole_searchs_pick_is_among_the_first_programs_costed(monkeypatch, number):
    front = cut_after(monkeypatch, number, FIRST)
    assert front.search.processed == FIRST < front.search.total and not front.complete
    assert PICKS[number] in [str(program) for program in front.search.costs]


def test_promise_ranks_transposes_then_strides_then_workspace_dimensions(monkeypatch):
    """Kernel 3: the pick's nest reads B in order and C, D down their rows (no stride) with a 2-D
    workspace, so it comes before every nest that reads C or D across, whatever their workspaces."""
    front = cut_after(monkeypatch, 3, FIRST)
    expression, formats = KERNELS[3]
    stored = stored_orders({"A": as_format("dd", 2), "B": as_format(formats["B"], 2), "C": as_format("dd", 2),
                            "D": as_format("dd", 2), "E": as_format("dd", 2)})
    assert stored.sparse == {"B": (0, 1)} and set(stored.dense) == {"A", "C", "D", "E"}
    pick = next(program for program in front.search.costs if str(program) == PICKS[3])
    assert promise(pick, {"w0": ("i", "k")}, stored) == (0, 0, 2)
    first = next(iter(front.search.costs))
    assert promise(first, {"w0": ("i", "k")}, stored) <= (0, 0, 2)


def test_a_short_limit_costs_programs_after_naming_the_least_nests_it_names(monkeypatch):
    """TTMc's 2,568 loop orders took half a second to name: under `schedule="auto"`'s limit stage 5
    stops at its deadline once it has named NAMED_AT_LEAST of them (each nest's first orders) and
    costs their programs; a limit that leaves time names them all."""
    front = cut_after(monkeypatch, 5, 50, naming_passed=True)
    assert named(front) == NAMED_AT_LEAST and not front.search.named_all and front.search.processed == 50
    whole_named = cut_after(monkeypatch, 5, 1)
    assert named(whole_named) > 10 * NAMED_AT_LEAST and whole_named.search.named_all


@pytest.mark.parametrize("time_limit", [0.0, 10.0])
def test_a_limit_of_0_or_a_counting_searchs_names_every_nest(monkeypatch, time_limit):
    """The counting suites' limits: stages 5-6 stay exact although the clock has passed stage 5's deadline."""
    front = cut_after(monkeypatch, 3, 1, naming_passed=True, time_limit=time_limit)
    assert front.search.named_all and named(front) == 2124


def kernel3_operands(case: str, rng):
    """Kernel 3's operands (B stored "ds", `conftest.edge_matrix`) and numpy's value."""
    dense, b = edge_matrix(case, rng)
    shape = dense.shape
    k = 1 if case == "size-1" else 4
    c, d, e = rng.random((shape[1], k)), rng.random((shape[1], k)), rng.random((k, 2))
    return {"B": b, "C": c, "D": d, "E": e}, np.einsum("ij,jk,jk,kl->il", dense, c, d, e)


@pytest.mark.parametrize("case", ["random", "empty", "single", "non-square", "size-1", "explicit-zero"])
def test_a_cut_short_searchs_selection_computes_what_numpy_computes(monkeypatch, case):
    operands, expected = kernel3_operands(case, np.random.default_rng(29))
    front = cut_after(monkeypatch, 3, 50)
    assert front.search.processed == 50
    expression, formats = KERNELS[3]
    chosen = front.select(**operands)
    np.testing.assert_allclose(densified(asp.compile(expression, formats=formats, schedule=chosen)(**operands)),
                               expected, rtol=1e-12, atol=1e-12, err_msg=str(chosen))


def test_a_cut_short_ttmc_selection_computes_what_numpy_computes(monkeypatch):
    rng = np.random.default_rng(5)
    dense = rng.random((5, 4, 3)) * (rng.random((5, 4, 3)) < 0.3)
    c, d, e = rng.random((5, 2)), rng.random((4, 3)), rng.random((3, 2))
    operands = {"B": asp.Tensor.from_numpy(dense, format="dss"), "C": c, "D": d, "E": e}
    front = cut_after(monkeypatch, 5, 50, naming_passed=True)
    assert not front.search.named_all
    expression, formats = KERNELS[5]
    chosen = front.select(**operands)
    np.testing.assert_allclose(densified(asp.compile(expression, formats=formats, schedule=chosen)(**operands)),
                               np.einsum("ijk,il,jm,kn->lmn", dense, c, d, e), rtol=1e-12, err_msg=str(chosen))
