"""SparseAuto's search under a time limit (issue 29): `where`s nested one deeper at a time, whole
sub-spaces shared across depths, a deadline that keeps what was built, and a front marked incomplete.
No test here times anything: a limit of 0 has always passed, and a limit of a day never does."""

from __future__ import annotations

import time

import numpy as np
import pytest

import autosparse as asp
from conftest import densified, edge_matrix
from autosparse.autoschedule.sparseauto.pipeline import as_compute
from autosparse.autoschedule.sparseauto.space import SpaceBuilder
from autosparse.cin.ast import walk
from autosparse.format import as_format
from autosparse.notation import parse
from autosparse.schedule.big import Where

from autosparse_bench.sparseauto_counts import KERNELS, constraints

A_DAY = 86400.0


def builder_for(number: int) -> tuple[SpaceBuilder, object]:
    expression, formats = KERNELS[number]
    compute = as_compute(parse(expression))
    orders = {f.tensor: len(f.indices) for f in (compute.lhs, *compute.factors)}
    return SpaceBuilder({n: as_format(formats.get(n, "dense"), orders[n]) for n in orders}), compute


def sparseauto(number: int, **options):
    expression, formats = KERNELS[number]
    return asp.autoschedule(expression, formats=formats, model="sparseauto", **options)


def texts(front) -> list[str]:
    return [str(c.big) for c in front]


@pytest.mark.parametrize("number", [1, 4, 5, 6, 7, 8])
def test_a_limit_that_never_passes_gives_the_whole_search_in_its_order(number):
    whole = sparseauto(number)
    limited = sparseauto(number, time_limit=A_DAY)
    assert limited.complete and whole.complete
    assert texts(limited) == texts(whole)
    assert [(s.name, s.count, s.groups) for s in limited.stages] == [(s.name, s.count, s.groups) for s in whole.stages]


def test_a_limit_that_never_passes_keeps_the_constrained_and_literal_sets():
    for rule in ("everywhere", "literal"):
        whole = sparseauto(5, constraints=constraints(5), rule=rule)
        limited = sparseauto(5, constraints=constraints(5), rule=rule, time_limit=A_DAY)
        assert limited.complete and texts(limited) == texts(whole), rule


@pytest.mark.parametrize("number", [2, 5, 8])
def test_a_passed_limit_returns_loop_orders_only_marked_cut_short(number):
    limited = sparseauto(number, time_limit=0)
    whole_linear = [c for c in sparseauto(number) if not any(isinstance(n, Where) for n in walk(c.big))]
    assert not limited.complete
    assert len(limited) > 0 and not any(isinstance(n, Where) for c in limited for n in walk(c.big))
    assert {str(c.big) for c in whole_linear} <= set(texts(limited))
    assert "cut short" in limited.stages[0].name
    assert limited.search.solver_queries == 1  # the check that the constraints hold somewhere, no comparison
    assert "search cut short" in str(limited)


def test_nesting_limits_cut_the_space_and_the_deepest_one_is_the_whole_space():
    builder, compute = builder_for(5)
    whole = SpaceBuilder(builder.formats).space(compute)
    one, two = builder.space(compute, (), 1), builder.space(compute, (), 2)
    assert not one.complete and one.count < whole.count
    assert two.complete and two.count == whole.count and two.histogram == whole.histogram


def test_deepening_builds_whole_sub_spaces_once():
    """Depth 2 after depth 1 rebuilds only the sub-problems depth 1 cut: fewer builds than a fresh
    depth-2 space, and a depth that adds nothing builds nothing."""
    deepening, compute = builder_for(5)
    deepening.deepened(compute, 1)
    after_one = deepening.built
    deepening.deepened(compute, 2)
    fresh = SpaceBuilder(deepening.formats)
    fresh.deepened(compute, 2)
    assert deepening.built - after_one < fresh.built
    before = deepening.built
    assert deepening.deepened(compute, 3).complete and deepening.built == before


def test_splits_the_deadline_stops_keep_the_previous_depth():
    """Past the deadline, depth 2 looks up depth 1's sub-spaces for every split: the space of depth
    1 again, built from memory, marked incomplete, and the deadline cleared."""
    builder, compute = builder_for(2)
    one = builder.deepened(compute, 1)
    built = builder.built
    builder.deadline = time.perf_counter() - 1
    two = builder.deepened(compute, 2)
    assert builder.built == built and builder.deadline is None
    assert not two.complete and two.histogram == one.histogram and len(two.splits) == len(one.splits)


def test_progress_hears_each_depth_then_each_group():
    calls = []
    front = sparseauto(5, time_limit=A_DAY, progress=lambda done, total: calls.append((done, total)))
    groups = front.stages[2].groups
    assert calls[:2] == [(1, 2), (2, 2)]
    assert calls[2:] == [(n, groups) for n in range(1, groups + 1)]


@pytest.mark.parametrize("case", ["random", "empty", "single", "non-square", "size-1", "explicit-zero"])
def test_a_cut_short_front_computes_what_numpy_computes(case):
    rng = np.random.default_rng(29)
    dense, b = edge_matrix(case, rng)
    c, d = rng.random((dense.shape[1], 3)), rng.random((3, 2))
    operands, expected = {"B": b, "C": c, "D": d}, np.einsum("ij,jk,kl->il", dense, c, d)
    front = sparseauto(4, time_limit=0)
    expression, formats = KERNELS[4]
    for cand in front:
        kernel = asp.compile(expression, formats=formats, schedule=cand)
        np.testing.assert_allclose(densified(kernel(**operands)), expected, rtol=1e-12, atol=0, err_msg=str(cand))
    chosen = front.select(**operands)
    np.testing.assert_allclose(densified(asp.compile(expression, formats=formats, schedule=chosen)(**operands)),
                               expected, rtol=1e-12)
