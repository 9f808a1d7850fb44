"""Merge loops (lower/coiteration.py): unions and intersections of sparse levels, where each merged
iterator of a unique level steps past the coordinate inside the case that handled it (`q++`), a
conditional step `q += (c == i)` is left only where no earlier case rules the iterator out, and a
product's coordinates that no case takes get a last `else`. Checked against numpy on the edge cases and
against scipy on random and banded matrices (whose patterns mostly agree, so the both-present case is
the hot one), over CSR, DCSR, COO and CSC mixes, both index dtypes, one and two threads; and the
structure of the generated merge itself, which the differential tests cannot see."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

from kernel_cases import CASES, run_differential, stratified

ADD = "C(i,j) = A(i,j) + B(i,j)"
SUBTRACT = "C(i,j) = A(i,j) - B(i,j)"
MULTIPLY = "C(i,j) = A(i,j) * B(i,j)"
UNION3 = "C(i,j) = A(i,j) + B(i,j) + D(i,j)"
MIXED = "C(i,j) = A(i,j) * (B(i,j) + D(i,j))"
#: (A, B, D, C) formats: CSR alone, with hypersparse rows, with a COO operand (non-unique rows), CSC
#: beside CSR (a transposed operand), and CSC throughout (the merge over rows inside columns).
MIXES = [("csr", "csr", "csr", "csr"), ("dcsr", "csr", "dcsr", "dcsr"), ("coo", "dcsr", "csr", "csr"),
         ("csr", "csc", "csr", "csr"), ("csc", "csc", "csc", "csc")]
CONDITIONAL_STEP = re.compile(r"\b(\w+_p\d+) \+= \w+_i\d+ == j_;")


def _formats(mix, expression):
    a, b, d, c = mix
    return {name: fmt for name, fmt in (("A", a), ("B", b), ("D", d), ("C", c)) if f"{name}(" in expression}


@pytest.mark.filterwarnings("ignore::autosparse.PerformanceWarning")  # the CSC operand converted per call
@pytest.mark.parametrize("expression, mix, case, index_dtype, threads", stratified(
    [[ADD, SUBTRACT, MULTIPLY, UNION3, MIXED], MIXES, CASES, [np.int32, np.int64], [1, 2]], 200, "merges"))
def test_merges_equal_numpy_on_the_edge_cases(expression, mix, case, index_dtype, threads):
    run_differential(expression, _formats(mix, expression), case, np.float64, index_dtype, num_threads=threads)


def _banded(n, seed):
    """Five diagonals with a few entries dropped: two such matrices agree on most coordinates."""
    rng = np.random.default_rng(seed)
    matrix = sp.diags([rng.random(n - abs(k)) + 1 for k in range(-2, 3)], range(-2, 3), format="csr")
    matrix.data[rng.random(matrix.nnz) < 0.1] = 0
    matrix.eliminate_zeros()
    return matrix


def _uniform(n, seed):
    matrix = sp.random(n, n + 7, density=0.03, format="csr", random_state=seed)
    matrix.data += 1
    return matrix


@pytest.mark.filterwarnings("ignore::autosparse.PerformanceWarning")
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("pattern", [_banded, _uniform])
@pytest.mark.parametrize("b_format", ["csr", "csc"])
@pytest.mark.parametrize("expression, combine", [(ADD, lambda a, b: a + b), (SUBTRACT, lambda a, b: a - b),
                                                 (MULTIPLY, lambda a, b: a.multiply(b))])
def test_merges_equal_scipy_on_larger_matrices(expression, combine, b_format, pattern, index_dtype, threads):
    a, b = pattern(700, 1), pattern(700, 2)
    A = asp.Tensor.from_scipy(a, index_dtype=index_dtype)
    B = asp.Tensor.from_scipy(b.asformat(b_format), index_dtype=index_dtype)
    kernel = asp.compile(expression, formats={"A": "csr", "B": b_format, "C": "csr"}, num_threads=threads)
    result = kernel(A=A, B=B)
    expected = sp.csr_array(combine(a, b))
    expected.sort_indices()
    assert result.levels[1]["pos"].dtype == index_dtype
    np.testing.assert_array_equal(result.levels[1]["pos"], expected.indptr)
    np.testing.assert_array_equal(result.levels[1]["crd"], expected.indices)
    np.testing.assert_array_equal(result.vals, expected.data)


def _merge_loops(source: str) -> list[str]:
    """The text of each merge `while` of the fill (the loops that step two iterators or more), the one of
    the lattice's top point first."""
    fill = source[source.index("/* fill */"):]
    starts = [m.start() for m in re.finditer(r"while \(\w+_p2 < \w+_p2_end && ", fill)]
    loops = []
    for start in starts:
        depth, at = 0, fill.index("{", start)
        for end in range(at, len(fill)):
            depth += {"{": 1, "}": -1}.get(fill[end], 0)
            if depth == 0:
                loops.append(fill[start:end + 1])
                break
    return loops


def _source(expression, names="AB"):
    formats = {name: "csr" for name in (*names, "C")}
    return asp.compile(expression, formats=formats, num_threads=1).source


@pytest.mark.parametrize("expression, names", [(ADD, "AB"), (SUBTRACT, "AB"), (UNION3, "ABD")])
def test_a_union_steps_each_iterator_inside_its_case_and_never_conditionally(expression, names):
    """Every coordinate falls in some case of a union, and each case knows who is present."""
    loops = _merge_loops(_source(expression, names))
    assert len(loops) == (1 if len(names) == 2 else 4)  # the top point's, then each pair's
    assert not any(CONDITIONAL_STEP.search(loop) for loop in loops)
    for name in names:
        assert re.search(rf"\b{name}_p2\+\+;", loops[0])


def test_a_product_steps_both_in_its_case_and_the_unmatched_coordinate_in_a_last_else():
    loop, = _merge_loops(_source(MULTIPLY))
    both = loop.index("A_p2++;\n")
    assert loop.index("B_p2++;\n") > both
    last_else = loop.rindex("} else {")
    assert last_else > both
    assert sorted(CONDITIONAL_STEP.findall(loop[last_else:])) == ["A_p2", "B_p2"]
    assert not CONDITIONAL_STEP.search(loop[:last_else])


def test_a_product_of_a_sum_steps_conditionally_only_what_no_earlier_case_rules_out():
    """A * (B + D): in the case {A, B} the iterator D cannot be at the coordinate ({A, B, D} came
    first), so it is not stepped there; A alone, or B and D without A, fall to the last else."""
    loop = _merge_loops(_source(MIXED, "ABD"))[0]
    cases = loop.split("} else ")
    assert len(cases) == 4  # {A, B, D}, {A, B}, {A, D}, and the else
    assert all(not CONDITIONAL_STEP.search(case) for case in cases[:-1])
    assert sorted(CONDITIONAL_STEP.findall(cases[-1])) == ["A_p2", "B_p2", "D_p2"]


def test_a_non_unique_level_still_skips_its_run_after_the_cases():
    """A COO operand's rows repeat: its position jumps to the run's end whatever case took it."""
    source = asp.compile(ADD, formats={"A": "coo", "B": "csr", "C": "csr"}, num_threads=1).source
    assert re.search(r"\bA_p1 = A_p1_seg;", source)
