"""Iteration lattices are pure values: built from iterators with meet (products) and join (sums), and
compared with lattices written out by hand (LOWERING.md §3)."""

from __future__ import annotations

import pytest

from autosparse.cin import default_access, TensorVar
from autosparse.coiterate.lattice import (DIMENSION, Iterator, Point, dense_loop, join, meet, single, sub_points,
                                          universe)
from autosparse.format import Format
from autosparse.notation.ast import IndexVar


def _iterator(name: str, full: bool = False) -> Iterator:
    access = default_access(TensorVar(name, Format("d" if full else "s")), (IndexVar("i"),), write=False)
    return Iterator(access, 0, full)


A, B, C = _iterator("A"), _iterator("B"), _iterator("C")
D = _iterator("D", full=True)


def points(*sets) -> tuple[Point, ...]:
    return tuple(Point(frozenset(s)) for s in sets)


@pytest.mark.parametrize("lattice, expected", [
    (meet(single(A), single(B)), points({A, B})),
    (join(single(A), single(B)), points({A, B}, {A}, {B})),
    (join(meet(single(A), single(B)), single(C)), points({A, B, C}, {A, B}, {C})),
    (meet(single(A), join(single(B), single(C))), points({A, B, C}, {A, B}, {A, C})),
    # a full iterator never runs out: below a point with it, points without it are unreachable
    (join(single(A), single(D)), points({A, D}, {D})),
    (meet(single(A), single(D)), points({A, D})),
    # operands that do not vary with the index (or are located) need the loop's whole range
    (join(single(A), universe()), points({A, DIMENSION}, {DIMENSION})),
    (meet(single(A), universe()), points({A, DIMENSION})),
], ids=["A*B", "A+B", "A*B+C", "A*(B+C)", "A+dense", "A*dense", "A+constant", "A*constant"])
def test_lattices_match_hand_written_ones(lattice, expected):
    assert lattice == expected


@pytest.mark.parametrize("lattice, dense", [
    (meet(single(A), single(B)), False),
    (join(single(A), single(B)), False),
    (meet(single(A), single(D)), False),   # iterate A, locate D
    (join(single(A), single(D)), True),    # D's every coordinate must be visited
    (universe(), True),
])
def test_dense_loops_exactly_when_a_point_has_only_full_iterators(lattice, dense):
    assert dense_loop(lattice) is dense


def test_sub_points_are_the_cases_a_merge_loop_distinguishes():
    lattice = join(single(A), single(B))
    top, only_a, only_b = lattice
    assert sub_points(lattice, top) == (top, only_a, only_b)
    assert sub_points(lattice, only_a) == (only_a,)
