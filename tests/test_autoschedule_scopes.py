"""Both autoschedulers on expressions whose reductions cover only part of the right-hand side (TACO's
rule: `y(i) = A(i,j) * x(j) + z(i)` is A·x + z). Every candidate of the asymptotic frontier must compute
that meaning: checked symbolically (`check_computes`) for all of them, and compiled and run for an even
spread of them on random, empty and single-entry operands against numpy written term by term and
against the default schedule. SparseAuto, whose model is products only, refuses a scoped sum of terms."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pytest
from click.testing import CliRunner

import autosparse as asp
from autosparse.autoschedule.verify import dense_value
from autosparse.cin.check import check_computes
from autosparse.cli import main
from autosparse.notation import accesses, parse

EXTENTS = {"i": 5, "j": 6, "k": 4}
COMPILED_PER_EXPRESSION = 5

# (expression, formats, numpy reference over dense operands, each reduction summed where TACO sums it)
CASES = [
    ("y(i) = A(i,j) * x(j) + z(i)", {"A": "csr"}, lambda A, x, z: A @ x + z),
    ("r(i) = b(i) - A(i,j) * x(j)", {"A": "dcsr"}, lambda b, A, x: b - A @ x),
    ("y(i) = 2*A(i,j)*x(j) + z(i)", {"A": "csr"}, lambda A, x, z: 2 * (A @ x) + z),
    ("a(i) = b(i) + c(j,i) + d(i)", {"c": "csr"}, lambda b, c, d: b + c.sum(axis=0) + d),
    ("a(i) = b(i) + c(j,i) + d(i)", {}, lambda b, c, d: b + c.sum(axis=0) + d),
    ("C(i,j) = A(i,k) * B(k,j) + D(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, lambda A, B, D: A @ B + D),
    ("y(i) = A(i,j) * x(j) + B(i,k) * w(k)", {"A": "csr", "B": "csc"}, lambda A, x, B, w: A @ x + B @ w),
    ("y(i) = sum(j, A(i,j) * x(j)) + sum(j, B(i,j) * w(j))", {"A": "csr", "B": "csr"},
     lambda A, x, B, w: A @ x + B @ w),
    ("s() = (A(i,j) * x(j) + z(i)) * w(i)", {"A": "csr", "w": "s"}, lambda A, x, z, w: (A @ x + z) @ w),
    ("y(i) = c(i) * (a(i) + B(i,j))", {"B": "csr", "c": "s"}, lambda c, a, B: c * (a + B.sum(axis=1))),
]
IDS = [f"{expression} {formats}" for expression, formats, _ in CASES]


@lru_cache(maxsize=None)
def _front(expression: str, formats: tuple):
    return asp.autoschedule(expression, formats=dict(formats))


def _operand_shapes(expression: str) -> dict[str, tuple[int, ...]]:
    return {a.tensor: tuple(EXTENTS[i.name] for i in a.indices) for a in accesses(parse(expression).rhs)}


def _dense_operands(expression: str, formats: dict, kind: str, seed: int) -> dict[str, np.ndarray]:
    """Random dense arrays; the sparse operands random (40% full), all zero, or holding one entry."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for name, shape in _operand_shapes(expression).items():
        values = rng.uniform(-1, 1, shape)
        if name in formats and kind != "random":
            kept = np.zeros(shape, dtype=bool)
            if kind == "single":
                kept[tuple(rng.integers(0, n) for n in shape)] = True
            values = values * kept
        elif name in formats:
            values = values * (rng.random(shape) < 0.4)
        arrays[name] = values
    return arrays


def _as_operands(arrays: dict, formats: dict) -> dict:
    return {name: asp.Tensor.from_numpy(value, format=formats[name]) if name in formats else value
            for name, value in arrays.items()}


def _numpy(result) -> np.ndarray:
    return result.to_numpy() if isinstance(result, asp.Tensor) else np.asarray(result)


def _spread(candidates: list, count: int) -> list:
    """`count` candidates spread evenly over the frontier (all of them when there are fewer)."""
    if len(candidates) <= count:
        return candidates
    return [candidates[round(n * (len(candidates) - 1) / (count - 1))] for n in range(count)]


@pytest.mark.parametrize("expression, formats, reference", CASES, ids=IDS)
def test_every_frontier_candidate_computes_the_scoped_expression(expression, formats, reference):
    front = _front(expression, tuple(sorted(formats.items())))
    assignment = parse(expression)
    assert assignment.scoped and len(front) > 0
    for cand in front:
        check_computes(cand.cin, assignment)


@pytest.mark.parametrize("expression, formats, reference", CASES, ids=IDS)
def test_frontier_candidates_equal_numpy_and_the_default_schedule(expression, formats, reference):
    front = _front(expression, tuple(sorted(formats.items())))
    inputs = [_dense_operands(expression, formats, kind, seed)
              for seed, kind in enumerate(("random", "empty", "single", "single"))]
    default = asp.compile(expression, formats)
    for cand in _spread(list(front), COMPILED_PER_EXPRESSION):
        kernel = asp.compile(expression, formats, schedule=cand)
        for arrays in inputs:
            operands = _as_operands(arrays, formats)
            got = _numpy(kernel(**operands))
            np.testing.assert_allclose(got, reference(**arrays), atol=1e-12, err_msg=str(cand.cin))
            np.testing.assert_allclose(got, _numpy(default(**operands)), atol=1e-12, err_msg=str(cand.cin))


@pytest.mark.parametrize("expression, formats, reference", CASES[:3] + CASES[6:8], ids=IDS[:3] + IDS[6:8])
def test_evaluate_auto_selects_a_candidate_with_the_scoped_meaning(expression, formats, reference):
    arrays = _dense_operands(expression, formats, "random", 7)
    result = parse(expression).lhs.tensor
    got = asp.evaluate(expression, **_as_operands(arrays, formats), format=formats.get(result), schedule="auto")
    np.testing.assert_allclose(_numpy(got), reference(**arrays), atol=1e-12)


def test_a_summed_index_never_loops_outside_its_sum():
    """The old meaning (j around the whole right-hand side) is no candidate: no loop over j encloses the
    write of y or the read of z, in any program of the frontier."""
    front = _front("y(i) = 2*A(i,j)*x(j) + z(i)", (("A", "csr"),))
    for cand in front:
        assert "j" not in _loops_around(cand.sketch, "y")


def _loops_around(stmt, tensor: str, loops: tuple = ()) -> tuple:
    if hasattr(stmt, "lhs"):
        return loops if stmt.lhs.tensor == tensor else ()
    if hasattr(stmt, "index"):
        return _loops_around(stmt.body, tensor, (*loops, stmt.index))
    return _loops_around(stmt.consumer, tensor, loops) + _loops_around(stmt.producer, tensor, loops)


def test_an_explicit_sum_over_a_whole_sum_keeps_its_old_meaning():
    """sum(j, b(i) + c(j,i)) adds b once per j, and the autoscheduler's candidates say so too."""
    expression = "a(i) = sum(j, b(i) + c(j,i))"
    arrays = _dense_operands(expression, {"c": "csr"}, "random", 3)
    cand = asp.autoschedule(expression, formats={"c": "csr"})[0]
    got = asp.compile(expression, {"c": "csr"}, schedule=cand)(**_as_operands(arrays, {"c": "csr"}))
    np.testing.assert_allclose(got, EXTENTS["j"] * arrays["b"] + arrays["c"].sum(axis=0))


def test_frontiers_of_unscoped_expressions_have_no_forced_workspace():
    """SpMV's reduction covers the whole right-hand side: its frontier still holds the plain loop nest."""
    front = asp.autoschedule("y(i) = A(i,j) * x(j)", formats={"A": "csr"})
    assert any(not cand.temporaries for cand in front)


def test_sparseauto_refuses_a_scoped_sum_of_terms_and_takes_a_sum_in_a_product():
    with pytest.raises(asp.AutosparseError, match="product of tensors.*model='asymptotic'"):
        asp.autoschedule("y(i) = 2*A(i,j)*x(j) + z(i)", formats={"A": "csr"}, model="sparseauto")
    expression = "y(i) = sum(j, A(i,j)) * x(i)"
    front = asp.autoschedule(expression, formats={"A": "csr"}, model="sparseauto")
    arrays = _dense_operands(expression, {"A": "csr"}, "random", 5)
    for cand in front:
        got = asp.compile(expression, {"A": "csr"}, schedule=cand)(**_as_operands(arrays, {"A": "csr"}))
        np.testing.assert_allclose(got, arrays["A"].sum(axis=1) * arrays["x"])


def test_dense_value_sums_each_reduction_over_its_own_scope():
    rng = np.random.default_rng(0)
    A, x, z = rng.random((3, 4)), rng.random(4), rng.random(3)
    np.testing.assert_allclose(dense_value(parse("y(i) = A(i,j) * x(j) + z(i)"), {"A": A, "x": x, "z": z}),
                               A @ x + z)
    np.testing.assert_allclose(dense_value(parse("y(i) = sum(j, A(i,j) * x(j) + z(i))"), {"A": A, "x": x, "z": z}),
                               A @ x + 4 * z)
    np.testing.assert_allclose(dense_value(parse("B(j,i) = A(i,j) - 1"), {"A": A}), A.T - 1)


def test_cli_check_finds_every_candidate_of_a_scoped_expression_correct():
    result = CliRunner().invoke(main, ["autoschedule", "y(i) = A(i,j) * x(j) + z(i)", "-f", "A=csr", "--check"])
    assert result.exit_code == 0, result.output
    count = result.output.count("cost:")
    assert count > 0 and f"compiled and equal to numpy: {count} / {count}" in result.output
