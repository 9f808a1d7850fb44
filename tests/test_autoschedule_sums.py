"""Sums and differences through every path of the autoschedulers (issue 29): `autoschedule` -> candidates
compiled with the user's formats -> numpy, and `evaluate(schedule="auto")` -> numpy, on expressions with
+, -, unary -, literals, scoped sums, transposed and repeated reads, 2-6 factors and 4-D tensors, over
CSR, CSC, DCSR, COO and dense operands that are random, empty, all explicit zeros, a single entry or of
size 1. The reference is numpy on dense copies, term by term (`verify.dense_value`, itself checked
against expressions written out in numpy below).

The default run takes a stratified sample (each expression once, the operand kinds and formats rotated
over the expressions, an even spread of candidates); `-m grid` runs the whole grid."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pytest
from click.testing import CliRunner

import autosparse as asp
from autosparse.api import auto
from autosparse.autoschedule.verify import dense_value, index_extents
from autosparse.cin.check import check_computes
from autosparse.cli import main
from autosparse.notation import accesses, parse

from conftest import densified

#: Seconds each search may take (an anytime search: the frontier of the programs it reached).
SEARCH_SECONDS = 2.0
KINDS = ("random", "empty", "all-zero", "one-entry", "size-1")
FORMATS_2D = ("csr", "csc", "dcsr", "coo", "dense")


@dataclass(frozen=True)
class Case:
    """An expression, the formats of its operands by order (2-D ones rotated over FORMATS_2D where
    `rotate`), and whether its frontier is all compiled in the default run or a spread of it."""

    expression: str
    formats: tuple[tuple[str, str], ...] = ()  # fixed formats by tensor name
    rotate: tuple[str, ...] = ()  # 2-D tensors whose formats rotate over FORMATS_2D


CASES = [
    Case("A(i,j) = B(i,j) + C(j,i)", rotate=("B", "C")),
    Case("A(i,j) = B(i,j) - C(i,k)*D(k,j)", rotate=("B", "C", "D")),
    Case("A(i,j) = -B(i,j) + 2*C(j,i)", rotate=("B", "C")),
    Case("y(i) = sum(j, B(i,j)*x(j)) - B(i,k)*z(k)", rotate=("B",)),
    Case("y(i) = B(i,j)*x(j) + z(i) - 3", rotate=("B",)),
    Case("A(i,j) = B(i,k)*(C(k,j) - D(j,k))", rotate=("B", "C", "D")),
    Case("A(i,j) = -(B(i,j) + C(i,j)) * D(i,j)", rotate=("B", "C", "D")),
    Case("a() = B(i,j)*C(j,i) - 1", rotate=("B", "C")),
    Case("A(i,m) = B(i,j)*C(j,k)*D(k,l)*E(l,m)", rotate=("B", "C", "D", "E")),
    Case("A(i,m) = B(i,j)*C(j,k)*D(k,l)*E(l,m) - F(i,m)", rotate=("B", "C", "D", "E", "F")),
    Case("A(i,l) = B(i,j,k)*C(j,l)*D(k,l) - E(i,l)", (("B", "sss"),), rotate=("E",)),
    Case("A(i,j) = B(i,k,l,m)*C(k,j)*D(l,j)*E(m,j)", (("B", "dsss"),)),
    Case("A(i,j,k) = B(i,j,k,l)*c(l) - D(i,j,k)", (("B", "dsss"), ("D", "sss"), ("c", "s"))),
    Case("A(i,j,k,l) = B(i,j,k,l) + C(l,k,j,i)", (("B", "ssss"), ("C", "ssss"), ("A", "ssss"))),
]
IDS = [case.expression for case in CASES]
#: Five factors: each search spends ~20 s before its time limit is looked at (stage 5), so only the grid.
GRID_CASES = [*CASES, Case("A(i,j) = B(i,j)*c(i)*d(j)*E(i,j)*F(i,j)", (("c", "s"),), rotate=("B", "E", "F"))]


@pytest.fixture(autouse=True)
def _short_auto_search(monkeypatch):
    """schedule="auto" searches as long as `front_of` does: the first call's search, not its result, is
    what a longer limit would change."""
    monkeypatch.setattr(auto, "SEARCH_SECONDS", SEARCH_SECONDS)


def formats_of(case: Case, turn: int) -> dict[str, str]:
    """The case's formats with its rotating 2-D operands `turn` steps along FORMATS_2D (each its own)."""
    formats = dict(case.formats)
    for n, name in enumerate(case.rotate):
        formats[name] = FORMATS_2D[(turn + n) % len(FORMATS_2D)]
    return formats


@lru_cache(maxsize=None)
def front_of(expression: str, formats: tuple[tuple[str, str], ...]):
    return asp.autoschedule(expression, formats=dict(formats), time_limit=SEARCH_SECONDS)


def dense_operands(expression: str, kind: str, seed: int) -> dict[str, np.ndarray]:
    """Dense operands of `kind` whose shapes agree (indices meeting at one tensor's mode share an extent;
    other indices get distinct extents, so a kernel confusing them fails)."""
    rng = np.random.default_rng(seed)
    reads = accesses(parse(expression).rhs)
    extents = index_extents(reads, 1 if kind == "size-1" else 3)
    arrays = {}
    for access in reads:
        shape = tuple(extents[i] for i in access.indices)
        if kind in ("empty", "all-zero"):
            arrays.setdefault(access.tensor, np.zeros(shape))
        elif kind == "one-entry" and shape:
            one = np.zeros(shape)
            one[tuple(d - 1 for d in shape)] = rng.integers(1, 9)
            arrays.setdefault(access.tensor, one)
        else:
            values = rng.integers(1, 64, size=shape) / 8
            arrays.setdefault(access.tensor, values * (rng.random(shape) < 0.5) if shape else values)
    return arrays


def stored(arrays: dict[str, np.ndarray], formats: dict[str, str], kind: str) -> dict[str, object]:
    """The operands as a user passes them: numpy arrays where dense, Tensors in their formats else;
    for "all-zero" every coordinate of a sparse operand stored, with the value 0."""
    operands = {}
    for name, array in arrays.items():
        fmt = formats.get(name, "dense")
        if fmt == "dense" or array.ndim == 0:
            operands[name] = array if array.ndim else float(array)
        elif kind == "all-zero":
            coords = np.array(list(np.ndindex(array.shape)), dtype=np.int64).T.reshape(array.ndim, -1)
            operands[name] = asp.Tensor.from_coo(coords, np.zeros(coords.shape[1]), array.shape, format=fmt)
        else:
            operands[name] = asp.Tensor.from_numpy(array, format=fmt)
    return operands


def spread(items: list, count: int) -> list:
    """`count` items evenly spread over `items` (the first and the last among them)."""
    if len(items) <= count:
        return items
    return [items[round(n * (len(items) - 1) / (count - 1))] for n in range(count)]


def check_candidates(case: Case, turn: int, kinds: tuple[str, ...], count: int) -> None:
    """A spread of `count` frontier candidates, compiled with the user's formats, against numpy."""
    formats = formats_of(case, turn)
    front = front_of(case.expression, tuple(sorted(formats.items())))
    assignment = parse(case.expression)
    for cand in spread(list(front), count):
        kernel = asp.compile(case.expression, formats=formats, schedule=cand)
        for kind in kinds:
            arrays = dense_operands(case.expression, kind, turn)
            got = densified(kernel(**stored(arrays, formats, kind)))
            np.testing.assert_allclose(got, dense_value(assignment, arrays), err_msg=f"{kind}: {cand.cin}")


def check_auto(case: Case, turn: int, kinds: tuple[str, ...]) -> None:
    """`evaluate(schedule="auto")` against numpy (with the default schedule where the front is empty)."""
    formats = formats_of(case, turn)
    assignment = parse(case.expression)
    for kind in kinds:
        arrays = dense_operands(case.expression, kind, turn)
        got = asp.evaluate(case.expression, schedule="auto", **stored(arrays, formats, kind))
        np.testing.assert_allclose(densified(got), dense_value(assignment, arrays), err_msg=kind)


@pytest.mark.filterwarnings("ignore::autosparse.PerformanceWarning")
@pytest.mark.parametrize("turn, case", list(enumerate(CASES)), ids=IDS)
def test_sampled_candidates_and_auto_match_numpy(turn, case):
    kind = KINDS[turn % len(KINDS)]
    check_candidates(case, turn, ("random", kind), count=2)
    check_auto(case, turn, ("random", kind))


@pytest.mark.grid
@pytest.mark.filterwarnings("ignore::autosparse.PerformanceWarning")
@pytest.mark.parametrize("turn", range(len(FORMATS_2D)))
@pytest.mark.parametrize("case", GRID_CASES, ids=[case.expression for case in GRID_CASES])
def test_grid_of_candidates_and_auto_matches_numpy(case, turn):
    if turn and not case.rotate:
        pytest.skip("no operand whose format rotates")
    check_candidates(case, turn, KINDS, count=8)
    check_auto(case, turn, KINDS)


# --- the reference itself, against numpy written out by hand ---------------------------------------

def test_dense_value_is_numpy_term_by_term():
    rng = np.random.default_rng(3)
    B, C, D = rng.random((3, 4)), rng.random((4, 3)), rng.random((3, 5))
    x, z = rng.random(4), rng.random(3)
    cases = [
        ("A(i,j) = B(i,j) - C(j,i)", dict(B=B, C=C), B - C.T),
        ("y(i) = B(i,j)*x(j) + z(i)", dict(B=B, x=x, z=z), B @ x + z),
        ("y(i) = sum(j, B(i,j)*x(j)) - B(i,k)*x(k)", dict(B=B, x=x), np.zeros(3)),
        ("A(i,k) = -(B(i,j)*C(j,k)) + 2", dict(B=B, C=C), -(B @ C) + 2),
        ("a() = B(i,j)*C(j,i) - 1", dict(B=B, C=C), np.trace(B @ C) - 1),
        ("A(i,k) = B(i,j)*C(j,l)*D(l,k)", dict(B=B, C=C, D=D), B @ C @ D),
    ]
    for expression, arrays, expected in cases:
        np.testing.assert_allclose(dense_value(parse(expression), arrays), expected, err_msg=expression)


def test_index_extents_join_indices_that_meet_at_one_mode():
    def extents(expression: str) -> dict[str, int]:
        return {str(index): n for index, n in index_extents(accesses(parse(expression).rhs), 5).items()}
    assert extents("y(i) = sum(j, B(i,j)*x(j)) - B(i,k)*z(k)") == {"i": 5, "j": 6, "k": 6}
    assert extents("A(i,j) = B(i,j) + B(j,i) * C(j,k)") == {"i": 5, "j": 5, "k": 6}


# --- the paths that used to refuse or misjudge sums ------------------------------------------------

@pytest.mark.filterwarnings("ignore::autosparse.PerformanceWarning")
@pytest.mark.parametrize("kind", ["random", "one-entry", "all-zero", "size-1"])
def test_auto_adds_a_transposed_csr_operand(kind):
    """co-iteration chosen per call once found C(j,i) in a loop appending to the CSR result: two passes
    out of order, which lowering refuses; the sum must merge."""
    import scipy.sparse as sp
    arrays = dense_operands("A(i,j) = B(i,j) + C(j,i)", kind, 7)
    B, C = sp.csr_matrix(arrays["B"]), sp.csr_matrix(arrays["C"])
    got = asp.evaluate("A(i,j) = B(i,j) + C(j,i)", B=B, C=C, format="csr", schedule="auto")
    np.testing.assert_allclose(densified(got), arrays["B"] + arrays["C"].T)


@pytest.mark.filterwarnings("ignore::autosparse.PerformanceWarning")
def test_a_reused_operand_has_a_frontier_and_check_passes():
    """B read through j in a scoped sum and through k in the other term asks one format of B; the
    frontier was empty, and --check's operands disagreed on B's shape (every candidate failed)."""
    expression = "y(i) = sum(j, B(i,j)*x(j)) - B(i,k)*z(k)"
    result = CliRunner().invoke(main, ["autoschedule", expression, "-f", "B=csr", "--check"])
    assert result.exit_code == 0, result.output
    count = len(front_of(expression, (("B", "csr"),)))
    assert count > 0
    assert f"compiled and equal to numpy: {count} / {count}" in result.output


def test_reads_in_two_orders_refuse_as_the_default_schedule_does():
    """No one format of B serves B(i,j) and B(j,i): the frontier is empty, and schedule="auto" runs the
    default schedule, which explains how to pass B twice."""
    B = asp.Tensor.from_numpy(np.eye(3) + np.eye(3, k=1), format="csr")
    assert len(front_of("A(i,j) = B(i,j) - B(j,i)", (("A", "csr"), ("B", "csr")))) == 0
    with pytest.raises(asp.ScheduleError, match="pass it twice"):
        asp.evaluate("A(i,j) = B(i,j) - B(j,i)", B=B, schedule="auto")
    Bt = B.to_format("csc")
    got = asp.evaluate("A(i,j) = B(i,j) - D(j,i)", operands={"B": B, "D": Bt}, schedule="auto")
    np.testing.assert_allclose(densified(got), B.to_numpy() - B.to_numpy().T)


def test_formats_rotate_over_every_2d_format():
    seen = {formats_of(CASES[1], turn)[name] for turn, name in itertools.product(range(5), "BCD")}
    assert seen == set(FORMATS_2D)


@pytest.mark.filterwarnings("ignore::autosparse.PerformanceWarning")
def test_auto_subtracts_a_coo_operand_from_mttkrp():
    """A COO E(i,l) may repeat a coordinate: no find strategy may seek it while B(i,j,k) drives the
    union's pass (co-iteration chosen per call galloped into it)."""
    expression = "A(i,l) = B(i,j,k)*C(j,l)*D(k,l) - E(i,l)"
    arrays = dense_operands(expression, "random", 11)
    operands = stored(arrays, {"B": "sss", "E": "coo"}, "random")
    got = asp.evaluate(expression, schedule="auto", **operands)
    expected = np.einsum("ijk,jl,kl->il", arrays["B"], arrays["C"], arrays["D"]) - arrays["E"]
    np.testing.assert_allclose(densified(got), expected)


@pytest.mark.parametrize("expression", [
    "A(i,j) = B(i,j) - C(i,k)*D(k,j)",
    "A(i,j) = -(B(i,j) - C(i,k)*D(k,j))",
    "A(i,j) = (B(i,k) - E(i,k))*(C(k,j) - D(k,j))",
    "A(i,j) = B(i,j)*(C(i,j) - D(i,j))*E(i,j)",
    "A(i,j) = B(i,k)*(C(k,l)*D(l,j) - E(k,j))",
    "y(i) = b(i) - 2*sum(j, B(i,j)*x(j))",
])
def test_compile_accepts_every_rewritten_candidate(expression):
    """Stage 1 distributes products over sums and spells a - b as a + -b; compile's check that a
    schedule computes the expression (cin/check.py) must see through both, for every candidate."""
    assignment = parse(expression)
    formats = {a.tensor: "csr" for a in (assignment.lhs, *accesses(assignment.rhs)) if len(a.indices) == 2}
    front = front_of(expression, tuple(sorted(formats.items())))
    assert len(front) > 0
    for cand in front:
        check_computes(cand.cin, assignment)
