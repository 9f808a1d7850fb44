"""SparseAuto's branched iteration graphs: the directives, linearisation and the symbolic costs,
checked against the paper's worked TTMc example (Dias et al. Fig. 2, 5, 6)."""

from __future__ import annotations

import pytest

from autosparse.autoschedule.sparseauto.cost import costs
from autosparse.autoschedule.sparseauto.poly import Poly, Symbol
from autosparse.cin.ast import nest
from autosparse.schedule.big import Compute, Factor, show
from autosparse.schedule.loopfuse import linearise, loopfuse, reorder, split
from autosparse.errors import ScheduleError
from autosparse.format import as_format

B, C, D, E = Factor("B", ("i", "j", "k")), Factor("C", ("i", "l")), Factor("D", ("j", "m")), Factor("E", ("k", "n"))
A = Factor("A", ("l", "m", "n"))
FORMATS = {"B": as_format("dss", 3), "C": as_format("dense", 2), "D": as_format("dense", 2),
           "E": as_format("dense", 2), "A": as_format("dense", 3)}
TTMC = nest("lmnijk", Compute(A, (B, C, D, E)))


def sym(name):
    return Poly.symbol(Symbol("dim", name.lower()))


NNZ = Poly.symbol(Symbol("nnz", "B", ("i", "j", "k")))
I, J, K, L, M, N = (sym(x) for x in "IJKLMN")


def fig2():
    """Figure 2's five schedules, reached with the directives as Figure 6 means them (its root-level
    loc values are swapped: by the definition, loc=3 of B·C·D·E gives 5(b))."""
    b = loopfuse(TTMC, 3, True, ())
    c = loopfuse(TTMC, 2, True, ())
    d = loopfuse(reorder(c, ("m", "k", "n", "j"), (1,), FORMATS), 2, True, (1,))
    e = nest("l", _replace_consumer(c, split(("m", "k", "n", "j"), A, (Factor("t0", ("j", "k")), D), (E,), True,
                                             "t1", fuse=False)))
    return {"a": TTMC, "b": b, "c": c, "d": d, "e": e}


def _replace_consumer(c, consumer):
    where = c.body
    return type(where)(where.temporary, consumer, where.producer)


def test_loopfuse_splits_after_loc_and_fuses_the_common_outer_loops():
    figure = fig2()
    assert show(figure["b"]) == "l,m⟨t0(k); i,j,k: t0(k) += B(i,j,k) * C(i,l) * D(j,m), n,k: A(l,m,n) += t0(k) * E(k,n)⟩"
    assert show(figure["c"]) == ("l⟨t0(j,k); i,j,k: t0(j,k) += B(i,j,k) * C(i,l), "
                                 "m,n,j,k: A(l,m,n) += t0(j,k) * D(j,m) * E(k,n)⟩")
    # reorder then loopfuse on the consumer: the temporary shrinks to the scalar t1 (Fig. 5(e))
    assert show(figure["d"]) == ("l⟨t0(j,k); i,j,k: t0(j,k) += B(i,j,k) * C(i,l), "
                                 "m,k⟨t1(); j: t1() += t0(j,k) * D(j,m), n: A(l,m,n) += t1() * E(k,n)⟩⟩")


def test_figure_2_costs():
    expected = {  # time, memory, loop depth, memory depth
        "a": (L * M * N * NNZ, Poly(), 6, 0),
        "b": (L * M * (NNZ + N * K), K, 5, 1),
        "c": (L * (NNZ + J * M * K * N), J * K, 5, 2),
        "d": (L * (NNZ + M * K * (J + N)), J * K, 4, 2),
        "e": (L * (NNZ + M * K * (J + N)), J * K + M * K, 4, 2),
    }
    for name, big in fig2().items():
        found = costs(big, FORMATS)
        assert (found.time, found.memory, found.loop_depth, found.memory_depth) == expected[name], name


def test_a_position_loop_between_dense_loops_still_counts_the_level_prefix():
    """Kernel 1 of Table 2, `i,j′⟨t; k: t += B C D, l: A += t E⟩`: nnz(B_ij)·(K + L)."""
    formats = {"B": as_format("ds", 2)}
    big = loopfuse(nest("ijkl", Compute(Factor("A", ("i", "l")), (
        Factor("B", ("i", "j")), Factor("C", ("i", "k")), Factor("D", ("j", "k")), Factor("E", ("j", "l"))))),
        3, True, ())
    nnz = Poly.symbol(Symbol("nnz", "B", ("i", "j")))
    assert show(big).startswith("i,j⟨t0(); k:")
    assert costs(big, formats).time == nnz * (sym("K") + sym("L"))


def test_the_literal_figure_6b_sequence_fails_at_its_reorder():
    """Fig. 6(b) as printed fuses at loc=3 first; path {1} then holds loops n,k, not m,n,j,k."""
    with pytest.raises(ScheduleError, match="permutation of the section's loops"):
        reorder(loopfuse(TTMC, 3, True, ()), ("m", "k", "n", "j"), (1,), FORMATS)


def test_directives_reject_bad_paths_positions_and_orders():
    with pytest.raises(ScheduleError, match="linear section"):
        loopfuse(loopfuse(TTMC, 2, True, ()), 1, True, ())
    with pytest.raises(ScheduleError, match="is linear"):
        loopfuse(TTMC, 2, True, (0,))
    with pytest.raises(ScheduleError, match="1 <= loc < 4"):
        loopfuse(TTMC, 4, True, ())
    with pytest.raises(ScheduleError, match="loop j must enclose loop k"):
        reorder(TTMC, tuple("lmnikj"), (), FORMATS)


def test_pol_false_makes_the_factors_after_loc_the_producer():
    assert show(loopfuse(TTMC, 3, False, ())) == (
        "⟨t0(n,k); n,k: t0(n,k) += E(k,n), l,m,n,i,j,k: A(l,m,n) += B(i,j,k) * C(i,l) * D(j,m) * t0(n,k)⟩")


def test_linearise_inlines_every_temporary_in_a_storage_respecting_order():
    for name, big in fig2().items():
        flat = linearise(big, FORMATS)
        order, body = [], flat
        while not isinstance(body, Compute):
            order.append(body.index)
            body = body.body
        assert sorted(body.factors) == sorted((B, C, D, E)), name
        assert body.lhs == A and sorted(order) == sorted("ijklmn"), name
        assert order.index("i") < order.index("j") < order.index("k"), name


def test_a_dense_loop_between_sparse_levels_multiplies_the_prefix_above_it():
    """§2's example `i,j′,n⟨t; k′: t += B E, m,l: A += t C D⟩` costs N·(nnz(B) + nnz(B_ij)·L·M)."""
    big = loopfuse(nest("ijnkml", Compute(A, (B, E, C, D))), 2, True, ())
    assert show(big).startswith("i,j,n⟨t0(); k: t0() += B(i,j,k) * E(k,n), m,l:")
    nnz_ij = Poly.symbol(Symbol("nnz", "B", ("i", "j")))
    assert costs(big, FORMATS).time == N * (NNZ + nnz_ij * L * M)


def test_the_directives_run_as_scheduling_commands_written_or_chained():
    import numpy as np

    import autosparse as asp

    text = "reorder(l, m, n, i, j, k); loopfuse(2, true, []); reorder(m, k, n, j, path=[1]); loopfuse(2, true, [1])"
    chained = (asp.Schedule().reorder("l", "m", "n", "i", "j", "k").loopfuse(2, True, [])
               .reorder("m", "k", "n", "j", path=[1]).loopfuse(2, True, [1]))
    assert asp.Schedule.parse(text) == chained == asp.Schedule.parse(str(chained))
    rng = np.random.default_rng(3)
    dense = rng.random((6, 5, 4)) * (rng.random((6, 5, 4)) < 0.3)
    c, d, e = rng.random((6, 3)), rng.random((5, 4)), rng.random((4, 2))
    kernel = asp.compile("A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)", formats={"B": "dss"}, schedule=text)
    assert "where(∀n" in str(kernel.cin) and "t1() +=" in str(kernel.cin)  # Fig. 5(e): the scalar t1
    result = kernel(B=asp.Tensor.from_numpy(dense, format="dss"), C=c, D=d, E=e)  # a dense result: an array
    np.testing.assert_allclose(result, np.einsum("ijk,il,jm,kn->lmn", dense, c, d, e))


def test_directive_errors_name_the_command():
    import autosparse as asp
    from autosparse.errors import ParseError

    expression = "A(l,m,n) = B(i,j,k) * C(i,l) * D(j,m) * E(k,n)"
    with pytest.raises(ScheduleError, match=r"loopfuse\(2, maybe, \[\]\): expected true or false"):
        asp.compile(expression, formats={"B": "dss"}, schedule="loopfuse(2, maybe, [])")
    with pytest.raises(ParseError, match="0 \\(producer\\) or 1 \\(consumer\\)"):
        asp.Schedule.parse("loopfuse(2, true, [2])")
    with pytest.raises(ScheduleError, match="path of 0s"):
        asp.Schedule().loopfuse(2, True, [3])
    with pytest.raises(ScheduleError, match="products of tensors|product of tensors"):
        asp.compile("a(i) = B(i,j) * c(j) + d(i)", formats={"B": "ds"}, schedule="loopfuse(1, true, [])")


def test_the_poset_example_stage_2_removes_c_and_stage_3_removes_e():
    """§5.3 on Figure 2's schedules: (c) has the loop depth of (b) and the memory depth of (d), so the
    poset drops it; (e) costs what (d) does in time with more memory, so Z3 drops it; a, b, d stay."""
    from collections import Counter

    from autosparse.autoschedule.sparseauto.prune import Solver, dominated, pareto_depths

    found = {name: costs(big, FORMATS) for name, big in fig2().items()}
    depths = Counter((c.loop_depth, c.memory_depth) for c in found.values())
    kept = [name for name, c in found.items() if (c.loop_depth, c.memory_depth) in pareto_depths(depths, 2)]
    assert kept == ["a", "b", "d", "e"]
    solver = Solver({"B": B}, FORMATS, "ijklmn")
    removed = dominated([(found[n].time, found[n].memory) for n in kept], solver)
    assert [kept[n] for n in sorted(removed)] == ["e"]


def test_a_solver_that_cannot_tell_keeps_both_schedules(monkeypatch):
    """Stage 3 removes a group only on answers it has: `unknown` (a timeout) keeps both, under either
    rule; the termwise shortcut needs no solver and still applies."""
    from autosparse.autoschedule.sparseauto.prune import Solver, dominated

    found = {name: costs(big, FORMATS) for name, big in fig2().items()}
    groups = [(found[n].time, found[n].memory) for n in ("a", "b", "d")]
    solver = Solver({"B": B}, FORMATS, "ijklmn")
    monkeypatch.setattr(Solver, "satisfiable", lambda self, *facts: None)
    assert dominated(groups, solver, "everywhere") == set()
    assert dominated(groups, solver, "literal") == set()
    e = (found["e"].time, found["e"].memory)
    assert dominated([groups[2], e], solver, "everywhere") == {1}  # (e) ≥ (d) term by term
