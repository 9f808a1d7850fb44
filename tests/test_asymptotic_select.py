"""Selecting a frontier candidate from the operands: task-set sizes against brute force, and choices."""

from __future__ import annotations

from itertools import product

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import autosparse as asp
from conftest import densified
from autosparse.autoschedule import select as selection
from autosparse.autoschedule import tiebreak
from autosparse.autoschedule.asymptotic.query import Atom, Query


def brute_size(query: Query, dense: dict, extents: dict) -> int:
    found = set()
    ranges = [range(extents[query.dims[v]]) if v < query.head_size else range(4) for v in range(query.variable_count)]
    for values in product(*ranges):
        if all(dense[t][tuple(values[x] for x in args)] for t, args in query.atoms):
            found.add(values[:query.head_size])
    return len(found)


ATOMS = st.sampled_from([("B", ("i", "k")), ("B", ("i", "x")), ("C", ("k", "j")), ("C", ("y", "j")),
                         ("C", ("k", "y")), ("D", ("j", "k")), ("B", ("x", "x")), ("D", ("i", "j"))])


@settings(max_examples=60, deadline=None)
@given(head=st.sets(st.sampled_from("ijk"), max_size=3), atoms=st.lists(ATOMS, min_size=1, max_size=3),
       seed=st.integers(0, 1000))
def test_query_sizes_equal_brute_force(head, atoms, seed):
    """Exact whether joined or sampled: with every candidate value sampled, sampling is exact too."""
    rng = np.random.default_rng(seed)
    dense = {name: rng.random((4, 4)) < 0.4 for name in "BCD"}
    renamed = [(t, tuple(v if v in head or v in "xy" else v + "_" for v in args)) for t, args in atoms]
    query = Query.of([(v, v) for v in sorted(head)], [Atom(t, a) for t, a in renamed])
    extents = {"i": 4, "j": 4, "k": 4}
    patterns = {n: np.argwhere(d).astype(np.int64) for n, d in dense.items()}
    expected = brute_size(query, dense, extents)
    old = selection.EXACT_ROWS
    try:
        for exact_rows in (old, 1):  # joined, then sampled (every value: exact as well)
            selection.EXACT_ROWS = exact_rows
            assert selection.query_size(query, patterns, extents) == expected, exact_rows
    finally:
        selection.EXACT_ROWS = old


def test_select_prefers_gustavson_rows_over_an_outer_product_hash_for_spgemm():
    """Gustavson and outer products cost the same asymptotically; the tie goes to fewer hashed levels."""
    formats = {"B": "csr", "C": "csr", "A": "csr"}
    front = asp.autoschedule("A(i,j) = B(i,k) * C(k,j)", formats=formats)
    B = sp.random(200, 150, 0.02, format="csr", random_state=1)
    C = sp.random(150, 180, 0.02, format="csr", random_state=2)
    best = next(c for _, c in selection.ranking(front, {"B": B, "C": C}) if c.found_by != "default")
    assert best.sketch.index == "i" and "h" not in "".join(f.levels[0].letter for f in best.formats.values())
    result = asp.compile("A(i,j) = B(i,k) * C(k,j)", formats=formats, schedule=best)(
        B=asp.Tensor.from_scipy(B), C=asp.Tensor.from_scipy(C))
    np.testing.assert_allclose(densified(result), (B @ C).toarray())


def test_select_needs_every_operand():
    front = asp.autoschedule("a(i) = B(i,j) * c(j)", formats={"B": "csr"})
    with pytest.raises(asp.AutosparseError, match="operand c"):
        front.select(B=sp.random(5, 5, 0.3, format="csr"))


@pytest.mark.parametrize("expression, formats, make", [
    ("A(i,j) = B(i,k) * C(k,j)", {"A": "csr"},
     lambda: {"B": sp.random(40, 30, 0.1, format="csr", random_state=3),
              "C": sp.random(30, 35, 0.1, format="csr", random_state=4)}),
    ("a(i) = B(i,j) * C(j,k) * d(k)", {},
     lambda: {"B": sp.random(40, 30, 0.1, format="csr", random_state=5),
              "C": sp.random(30, 20, 0.1, format="csr", random_state=6), "d": np.arange(20.0)}),
    ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"A": "csr"},
     lambda: {"B": sp.random(20, 25, 0.1, format="csr", random_state=7), "C": np.ones((20, 6)),
              "D": np.arange(150.0).reshape(6, 25)}),
])
def test_evaluate_auto_equals_the_reference_and_decides_once(expression, formats, make):
    from autosparse.api import auto

    operands = make()
    dense = {n: v.toarray() if sp.issparse(v) else v for n, v in operands.items()}
    expected = asp.evaluate(expression, format=formats.get("A"), **operands)
    got = asp.evaluate(expression, format=formats.get("A"), schedule="auto", **operands)
    to_array = lambda r: r.to_numpy() if isinstance(r, asp.Tensor) else np.asarray(r)
    np.testing.assert_allclose(to_array(got), to_array(expected))
    decided = len(auto._choices)
    asp.evaluate(expression, format=formats.get("A"), schedule="auto", **operands)
    assert len(auto._choices) == decided
    assert dense  # the operands were real arrays


def test_compile_with_auto_explains_where_selection_happens():
    with pytest.raises(asp.ScheduleError, match="evaluate"):
        asp.compile("a(i) = B(i,j) * c(j)", formats={"B": "csr"}, schedule="auto")


def test_tuning_times_the_best_estimated_candidates_and_returns_one_of_them(monkeypatch):
    front = asp.autoschedule("A(i,j) = B(i,k) * C(j,k)", formats={"B": "csr", "C": "csr", "A": "csr"}, paper=True)
    operands = {"B": sp.random(60, 50, 0.05, format="csr", random_state=8),
                "C": sp.random(40, 50, 0.05, format="csr", random_state=9)}
    timed, before = [], tiebreak.counts.candidates_timed
    tiebreak.forget()
    real = selection._seconds
    monkeypatch.setattr(selection, "_seconds", lambda f, c, o: timed.append(c) or real(f, c, o))
    assert front.select(**operands) is front.select(tune=1, **operands)
    assert len(timed) == tiebreak.counts.candidates_timed - before  # only ties are timed unless asked
    timed.clear()
    chosen = front.select(tune=3, **operands)
    assert len(timed) == 3 and chosen in timed
    with pytest.raises(asp.AutosparseError, match="tune"):
        front.select(tune=-1, **operands)


def test_selection_costs_a_stepped_mode_stored_dense_as_visited_whole():
    """A two-index workspace its consumer locates is a dense array, so stepping its other mode visits
    the whole dimension: the running cost counts that, the sketch's cost does not."""
    from autosparse.autoschedule.asymptotic.cost import CostModel
    from autosparse.autoschedule.asymptotic.sketch import Access, Call
    from autosparse.autoschedule.front import Candidate
    from autosparse.cin.ast import Assign, Forall as Loop, Protocol, Where
    from autosparse.format.spec import as_format
    from autosparse.notation import parse

    def acc(tensor, indices, protocols):
        return Access(tensor, tuple(indices), tuple(Protocol({"s": "step", "l": "locate", "a": "append",
                                                              "i": "insert"}[p]) for p in protocols))

    expression = "A(i,j) = B(i,k) * C(j,k) * D(j,k)"
    consumer = Loop("i", Loop("k", Loop("j", Assign(
        acc("A", "ij", "ai"), Call("*", (acc("B", "ik", "ss"), acc("w0", "kj", "ls"))), True))))
    producer = Loop("j", Loop("k", Assign(acc("w0", "kj", "ii"), Call("*", (acc("C", "jk", "ss"),
                                                                          acc("D", "jk", "ss"))), False)))
    sketch = Where(consumer, producer)
    model = CostModel({"B": ("i", "k"), "C": ("j", "k"), "D": ("j", "k")}, ("i", "j", "k"))
    formats = {name: as_format("ds", 2) for name in "ABCD"}
    cand = Candidate(sketch, model.cost(sketch), parse(expression), formats, model)
    assert cand.formats["w0"].is_dense
    assert cand.cost <= cand.running_cost and not cand.running_cost <= cand.cost


@settings(max_examples=25, deadline=None)
@given(queries=st.lists(st.tuples(st.sets(st.sampled_from("ijk"), max_size=3), st.lists(ATOMS, min_size=1, max_size=3)),
                        min_size=2, max_size=6), seed=st.integers(0, 1000))
def test_queries_sized_with_a_shared_memo_equal_brute_force(queries, seed):
    """Selection sizes every query of a call against one memo of the operands' projections, sorts and
    slices: a query must not see what another query's variable names made of the same operand."""
    rng = np.random.default_rng(seed)
    dense = {name: rng.random((4, 4)) < 0.4 for name in "BCD"}
    patterns = {n: np.argwhere(d).astype(np.int64) for n, d in dense.items()}
    extents = {"i": 4, "j": 4, "k": 4}
    memo = {}
    old = selection.EXACT_ROWS
    try:
        for exact_rows in (old, 1):
            selection.EXACT_ROWS = exact_rows
            for head, atoms in queries:
                renamed = [(t, tuple(v if v in head or v in "xy" else v + "_" for v in args)) for t, args in atoms]
                query = Query.of([(v, v) for v in sorted(head)], [Atom(t, a) for t, a in renamed])
                assert selection.query_size(query, patterns, extents, memo) == brute_size(query, dense, extents)
    finally:
        selection.EXACT_ROWS = old


def test_ties_go_to_fewer_hashed_levels_then_fewer_temporaries(monkeypatch):
    """With every estimate equal, the choice is the candidate with the fewest hash-table levels and, among
    those, the fewest workspaces (writing one and reading it back repeats work a task set cannot see)."""
    from autosparse.autoschedule.asymptotic.realise import hash_levels

    front = asp.autoschedule("A(i,j) = B(i,k) * C(j,k) * D(j,k)", formats={n: "ds" for n in "ABCD"}, taco=True)
    monkeypatch.setattr(selection, "_estimator", lambda f, operands, alike=None: lambda cand: 1.0)
    monkeypatch.setattr(selection, "_seconds", lambda f, c, o: 1.0)  # the measured tie-break ties too
    chosen = front.select(**{name: sp.random(6, 6, 0.5, format="csr", random_state=seed)
                             for seed, name in enumerate("BCD")})
    fewest = min((hash_levels(c.formats), len(c.temporaries)) for c in front)
    assert (hash_levels(chosen.formats), len(chosen.temporaries)) == fewest
    assert any(hash_levels(c.formats) == fewest[0] and len(c.temporaries) > fewest[1] for c in front)


@pytest.fixture(scope="module")
def spgemmh_front():
    return asp.autoschedule("A(i,j) = B(i,k) * C(j,k) * D(j,k)", formats={n: "ds" for n in "ABCD"})


def test_hash_tables_built_are_weighed_apart_from_hashed_operands_probed(spgemmh_front):
    tables = [c for c in spgemmh_front if c.table_cost.queries]
    probes = [c for c in spgemmh_front if c.probe_cost.queries]
    assert tables and probes
    for cand in tables:
        assert any(level.letter == "h" for name in cand.temporaries for level in cand.formats[name].levels)
    for cand in probes:
        assert any(level.letter == "h" for name in cand.transposes for level in cand.formats[name].levels)
        assert not set(cand._realised.probed) & set(cand.temporaries)


@pytest.mark.slow
def test_spgemmh_scatters_into_a_hash_table_only_where_the_table_stays_small(spgemmh_front):
    """Measured (docs/benchmarks.md): on uniform n=1,024 the 2-D table of `∀j ∀k ∀i t0(i,j) += …` is the
    fastest schedule; on an R-MAT 2^12 matrix its 0.9 M-entry table makes it about 2× slower than
    building rows through dense vectors, which selection must see without running anything."""
    from autosparse_bench.asymptotic_select import power_law_inputs, uniform_inputs

    rng = np.random.default_rng(0)
    uniform = selection.ranking(spgemmh_front, uniform_inputs("SpGEMMH", rng, 1024))[0][1]
    assert uniform.table_cost.queries
    skewed = selection.ranking(spgemmh_front, power_law_inputs("SpGEMMH", rng, 12))[0][1]
    assert not skewed.table_cost.queries and skewed.cin.index.name == "i"  # a frontier row-wise one, or the default
