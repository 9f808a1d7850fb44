"""Task sets as unions of conjunctive queries: normal form, containment, minimisation (Ahrens et al. §6)."""

from __future__ import annotations

from itertools import product

import numpy as np
from hypothesis import given, settings, strategies as st

from autosparse.autoschedule.asymptotic.cost import Cost
from autosparse.autoschedule.asymptotic.query import (FALSE, TRUE, Atom, Query, conj, contained, disj, disjuncts,
                                                      exists, minimal)


def q(head: str, *atoms: str, dims: dict | None = None) -> Query:
    """`q("ij", "B(i,k1)", "C(k2,j)")`: head variables are named by their dimension unless `dims` says."""
    dims = dims or {}
    parsed = [Atom(a[:a.index("(")], tuple(a[a.index("(") + 1:-1].split(","))) for a in atoms]
    return Query.of([(v, dims.get(v, v)) for v in head.split(",") if v] if "," in head else
                    [(v, dims.get(v, v)) for v in head], parsed)


def test_the_papers_containment_example():
    """{(i,j) | ∃k₁,k₂ B(i,k₁) ∧ C(k₂,j)} ⊆ {(i,j) | ∃k C(k,j)}, by i→i, j→j, k→k₂ — and not back."""
    p = q("ij", "B(i,k1)", "C(k2,j)")
    r = q("ij", "C(k,j)")
    assert contained(p, r)
    assert not contained(r, p)


def test_lazy_subsets_of_the_head():
    """A task [i,j,k] stands for every tuple over a subset of its variables: {[j,i]} ⊆ {[i,j,k]}."""
    assert contained(q("ji"), q("ijk"))
    assert not contained(q("ijk"), q("ij"))
    assert contained(q("ij", "B(i,k)", "C(k,j)"), q("ijk", "B(i,k)", "C(k,j)"))
    assert contained(q("ij", "B(i,k)"), q("ijk", "B(i,k)"))


def test_head_maps_keep_dimensions():
    """{[i ∈ I]} is not inside {[j ∈ J]}, and {[i,i']} (I²) is not inside {[i,j]} (I·J)."""
    assert not contained(q("i"), q("j"))
    assert not contained(q("a,b", dims={"a": "I", "b": "I"}), q("a,b", dims={"a": "I", "b": "J"}))
    assert contained(q("a,b", dims={"a": "I", "b": "J"}), q("a,b,c", dims={"a": "I", "b": "J", "c": "I"}))


def test_head_variables_not_in_atoms_cover_freely():
    """A dense loop's index constrains nothing: {[i,j,k] | D(i,j)} ⊆ {[i,j,k]} but not back."""
    assert contained(q("ijk", "D(i,j)"), q("ijk"))
    assert not contained(q("ijk"), q("ijk", "D(i,j)"))


def test_sddmm_fused_inside_unfused():
    fused = Cost.of([q("i", "D(i,j1)"), q("ij", "D(i,j)"), q("ijk", "D(i,j)")])
    unfused = Cost.of([q("i", "D(i,j1)"), q("ij", "D(i,j)"), q("i"), q("ij"), q("ijk")])
    assert fused <= unfused and unfused.dominates(fused) and not fused.dominates(unfused)


def test_disjunctive_normal_form_renames_each_quantifier():
    """{(i,j) | ∃k B(i,k) ∨ C(k,j)} = {(i,j) | ∃k B(i,k)} ∪ {(i,j) | ∃k C(k,j)}; two instances of the
    same ∃ get different variables."""
    pred = exists(["k"], disj(Atom("B", ("i", "k")), Atom("C", ("k", "j"))))
    ds = disjuncts(pred)
    assert len(ds) == 2 and {next(iter(d)).tensor for d in ds} == {"B", "C"}
    both = disjuncts(conj(pred, pred))
    assert len(both) == 4
    b_and_c = [d for d in both if {a.tensor for a in d} == {"B", "C"}][0]
    assert len({a.args[1] if a.tensor == "B" else a.args[0] for a in b_and_c}) == 2
    assert disjuncts(TRUE) == [frozenset()] and disjuncts(FALSE) == []
    assert conj(TRUE, FALSE) == FALSE and disj(FALSE, TRUE) == TRUE


def test_minimisation_drops_redundant_atoms():
    """∃k₁ B(i,k) ∧ B(i,k₁) is B(i,k) (k₁ → k); B(i,k) ∧ C(k,j) keeps both."""
    assert minimal(q("ik", "B(i,k)", "B(i,k1)")) == q("ik", "B(i,k)")
    assert minimal(q("ijk", "B(i,k)", "C(k,j)")) == q("ijk", "B(i,k)", "C(k,j)")
    assert minimal(q("i", "B(i,k)", "B(i2,k2)")) == q("i", "B(i,k)")


def test_cost_of_drops_contained_queries_and_is_canonical():
    a = Cost.of([q("ij", "B(i,k)"), q("ijk", "B(i,k)"), q("ij", "B(i,k)", "C(k,j)")])
    assert a.queries == (q("ijk", "B(i,k)"),)
    b = Cost.of([q("ijk", "B(i,k)"), q("i", "B(i,k)")])
    assert a == b and hash(a) == hash(b)


# --- containment against brute force on small random inputs --------------------------------------

_DIMS = {"i": 2, "j": 2, "k": 2}


def _tuples(query: Query, tensors: dict[str, np.ndarray]) -> set[tuple]:
    """The tuples of `query` on concrete tensors: every assignment of its variables that satisfies the
    atoms, projected onto each subset of the head, in any order (lazy subset semantics)."""
    n = query.variable_count
    ranges = [range(_DIMS[query.dims[v]]) if v < query.head_size else range(2) for v in range(n)]
    found = set()
    for values in product(*ranges):
        if all(tensors[t][tuple(values[x] for x in args)] for t, args in query.atoms):
            for mask in product((False, True), repeat=query.head_size):
                found.add(tuple(sorted((query.dims[h], values[h]) for h, keep in enumerate(mask) if keep)))
    return found


_ATOMS = st.sampled_from(["B(i,k)", "B(i,x)", "B(y,k)", "C(k,j)", "C(x,j)", "C(k,y)", "B(i,i2)", "C(i2,j)"])


@settings(max_examples=150, deadline=None)
@given(st.sets(st.sampled_from("ijk"), max_size=3), st.lists(_ATOMS, max_size=3),
       st.sets(st.sampled_from("ijk"), max_size=3), st.lists(_ATOMS, max_size=3),
       st.lists(st.integers(0, 15), min_size=6, max_size=6))
def test_containment_is_sound_on_concrete_tensors(head_p, atoms_p, head_q, atoms_q, seeds):
    """When the search proves P ⊆ Q, every tuple of P is a tuple of Q on random 2×2 patterns."""
    def query(head, atoms):
        used = {v for a in atoms for v in a[a.index("(") + 1:-1].split(",")}
        atoms = [a.replace("i2", "z") for a in atoms]
        # variables named by a dimension but not in the head stay existential under another name
        rename = {v: v + "e" for v in "ijk" if v not in head and v in used}
        for old, new in rename.items():
            atoms = [a.replace(old, new) for a in atoms]
        return q("".join(sorted(head)), *atoms)
    p, r = query(head_p, atoms_p), query(head_q, atoms_q)
    if not contained(p, r):
        return
    for seed in seeds:
        rng = np.random.default_rng(seed)
        tensors = {"B": rng.random((2, 2)) < 0.5, "C": rng.random((2, 2)) < 0.5}
        assert _tuples(p, tensors) <= _tuples(r, tensors), (str(p), str(r))


def test_memo_forgets_everything_at_its_limit_and_recomputes():
    from autosparse.autoschedule.asymptotic.query import Memo

    calls = []
    memo = Memo(2)
    square = lambda k: calls.append(k) or k * k  # noqa: E731
    assert [memo.get_or(k, square) for k in (1, 2, 1)] == [1, 4, 1] and calls == [1, 2]
    assert memo.get_or(3, square) == 9 and len(memo) == 1  # full: cleared before 3 went in
    assert memo.get_or(1, square) == 1 and calls == [1, 2, 3, 1]
