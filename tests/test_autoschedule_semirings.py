"""The autoschedulers over semirings other than (+, ·) and fills other than 0 (autoschedule/algebra.py):
every candidate of the fronts for min-plus, or-and and max-times SpMV and masked SpGEMM, run and compared
with numpy on dense copies built with the operands' fills (`np.where(stored, values, fill)`), empty,
all-fill and single-entry operands included; `schedule="auto"` end to end; the store's round trip; and
the refusals, each naming what it refuses."""

import numpy as np
import pytest

import autosparse as asp
from autosparse.api import auto
from autosparse.autoschedule import store
from autosparse.autoschedule.algebra import PLUS_TIMES, Semiring, checked, semiring_of
from autosparse.autoschedule.verify import dense_value, verify
from autosparse.cin import parse_cin
from autosparse.cin.ast import assignments
from autosparse.cin.check import check_computes
from autosparse.coiterate.choice import unites
from autosparse.errors import ScheduleError
from autosparse.notation import parse, walk

INF = np.inf
MIN_PLUS = "y(i) = min(j, A(i,j) + d(j))"
OR_AND = "y(i) = any(j, logical_and(A(i,j), q(j)))"
MAX_TIMES = "y(i) = max(j, A(i,j) * x(j))"
MASKED = "C(i,j) = pattern(M(i,j)) * A(i,k) * B(k,j)"
SPMV = {MIN_PLUS: ("d", INF), OR_AND: ("q", 0), MAX_TIMES: ("x", 0)}  # the dense vector, A's fill


def _operand(kind: str, shape: tuple, fill, rng) -> np.ndarray:
    """A dense copy with `fill` where nothing is stored: random (values of both signs), empty (all fill),
    one stored entry, or stored everywhere."""
    values = rng.uniform(-2.0, 3.0, shape)
    stored = {"random": rng.random(shape) < 0.4, "empty": np.zeros(shape, bool), "full": np.ones(shape, bool),
              "single": np.arange(np.prod(shape)).reshape(shape) == np.prod(shape) // 2}[kind]
    return np.where(stored, values, fill)


@pytest.mark.parametrize("text", list(SPMV))
@pytest.mark.parametrize("fmt", ["csr", "dcsr", "coo", "dense"])
def test_every_candidate_of_a_semiring_spmv_front_matches_numpy(text, fmt):
    vector, fill = SPMV[text]
    front = asp.autoschedule(text, {"A": fmt}, fills={"A": fill})
    assert len(front) > 0
    rng = np.random.default_rng(0)
    inputs = [(_operand(kind, (4, 3), fill, rng), rng.uniform(-1.0, 2.0, 3)) for kind in
              ("random", "empty", "single", "full")]
    for cand in front:
        kernel = front.kernel(cand)
        for a, v in inputs:
            got = kernel(A=asp.Tensor.from_numpy(a, fmt, fill=fill), **{vector: v})
            got = got.to_numpy() if isinstance(got, asp.Tensor) else got
            expected = dense_value(parse(text), {"A": a, vector: v})
            np.testing.assert_allclose(np.asarray(got, float), np.asarray(expected, float), err_msg=str(cand.cin))


def test_min_plus_candidates_spell_the_reduction_as_min():
    front = asp.autoschedule(MIN_PLUS, {"A": "csr"}, fills={"A": INF})
    texts = [str(cand.cin) for cand in front]
    assert all("min=" in text and "+=" not in text for text in texts)
    assert all(assign.reduce == "minimum" for cand in front for assign in assignments(cand.cin) if assign.accumulate)


def test_verify_checks_a_min_plus_front_with_its_fills():
    front = asp.autoschedule(MIN_PLUS, {"A": "csr"}, fills={"A": INF})
    passed, failures = verify(front, extent=4)
    assert (passed, failures) == (len(front), [])


def test_masked_spgemm_candidates_compute_the_mask():
    front = asp.autoschedule(MASKED, {"M": "csr", "A": "csr", "B": "csr", "C": "csr"})
    assert len(front) > 1
    for cand in front:  # every candidate symbolically; a spread of them compiled and run
        check_computes(cand.cin, front.assignment)
    rng = np.random.default_rng(1)
    m, a, b = (_operand(kind, shape, 0, rng) for kind, shape in (("random", (3, 4)), ("random", (3, 5)),
                                                                ("random", (5, 4))))
    expected = np.where(m != 0, a @ b, 0)
    for cand in list(front)[::max(1, len(front) // 6)]:
        got = front.kernel(cand)(M=asp.Tensor.from_numpy(m, "csr"), A=asp.Tensor.from_numpy(a, "csr"),
                                 B=asp.Tensor.from_numpy(b, "csr"))
        np.testing.assert_allclose(got.to_numpy(), expected, err_msg=str(cand.cin))


def test_schedule_auto_evaluates_min_plus_spmv_over_a_fill_inf_tensor():
    rng = np.random.default_rng(2)
    d = rng.uniform(0.0, 1.0, 5)
    for kind in ("random", "empty", "single"):
        a = _operand(kind, (6, 5), INF, rng)
        got = asp.evaluate(MIN_PLUS, A=asp.Tensor.from_numpy(a, "csr", fill=INF), d=d, schedule="auto")
        got = got.to_numpy() if isinstance(got, asp.Tensor) else got
        np.testing.assert_array_equal(got, np.min(a + d, axis=1))


def test_a_min_plus_front_round_trips_through_the_store():
    assignment = parse(MIN_PLUS)
    front = asp.autoschedule(MIN_PLUS, {"A": "csr"}, fills={"A": INF})
    key = store.front_key("asymptotic", assignment, front.formats, {"A": INF})
    assert key != store.front_key("asymptotic", assignment, front.formats)  # the fills decide the front too
    store.save_front(key, front)
    loaded = store.load_front(key, assignment, front.formats, front.kernel_factory, {"A": INF})
    assert [str(c.cin) for c in loaded] == [str(c.cin) for c in front]
    a = np.array([[1.0, INF, 2.0], [INF, INF, INF]])
    got = loaded.kernel(loaded[0])(A=asp.Tensor.from_numpy(a, "csr", fill=INF), d=np.array([1.0, 0.0, 0.5]))
    np.testing.assert_array_equal(got, [2.0, INF])


def test_a_masked_sketch_round_trips_through_the_store_with_its_function_by_name():
    front = asp.autoschedule(MASKED, {"M": "csr", "A": "csr", "B": "csr", "C": "csr"}, time_limit=0.2)
    sketch = front[0].sketch
    assert store._decoded(store._encoded(sketch)) == sketch
    assert '"pattern"' in str(store._encoded(sketch)).replace("'", '"')


def test_the_semiring_is_read_from_the_registry():
    assert semiring_of(parse("y(i) = A(i,j) * x(j)")) is PLUS_TIMES
    assert semiring_of(parse(MIN_PLUS)) == Semiring("minimum", "add")
    assert semiring_of(parse(OR_AND)) == Semiring("logical_or", "logical_and")
    assert semiring_of(parse(MAX_TIMES)) == Semiring("maximum", "multiply")
    assert Semiring("minimum", "add").distributes and not Semiring("maximum", "multiply").distributes
    assert Semiring("minimum", "add").zero == INF and Semiring("logical_or", "logical_and").has_zero(0)
    assert not Semiring("maximum", "multiply").has_zero(0)  # maximum's identity is -inf: no zero


@pytest.mark.parametrize("text, named", [
    ("y(i) = exp(A(i))", "exp"),
    ("y(i) = where(A(i), B(i), 1)", "where"),
    ("y(i) = less(A(i), B(i))", "less"),
    ("y(i) = min(j, A(i,j)) + sum(j, B(i,j))", "reductions of ['add', 'minimum']"),
    ("y(i) = min(j, pattern(A(i,j)) + d(j))", "pattern"),
    ("y(i) = min(j, A(i,j) - d(j))", "subtract, which is not commutative"),
    ("y(i) = min(j, -A(i,j) + d(j))", "negation and subtraction"),
])
def test_what_the_search_cannot_read_is_refused_by_name(text, named):
    with pytest.raises(ScheduleError, match=named.replace("[", r"\[").replace("]", r"\]")):
        asp.autoschedule(text)


@pytest.mark.parametrize("text, fills", [(MIN_PLUS, {"A": INF}), (OR_AND, {})])
def test_sparseauto_schedules_a_semiring_whose_zero_is_the_sparse_fill(text, fills):
    front = asp.autoschedule(text, {"A": "csr"}, model="sparseauto", fills=fills)
    assert len(front) > 0
    assert all("+=" not in str(cand.cin) for cand in front)
    assert verify(front, extent=5) == (len(front), [])


def test_sparseauto_refuses_what_its_model_cannot_read_and_auto_keeps_the_asymptotic_front():
    with pytest.raises(ScheduleError, match="fill inf .*A has fill 0"):
        asp.autoschedule(MIN_PLUS, {"A": "csr"}, model="sparseauto")
    with pytest.raises(ScheduleError, match="fill 0 .*A has fill inf"):
        asp.autoschedule("y(i) = A(i,j) * x(j)", {"A": "csr"}, model="sparseauto", fills={"A": INF})
    with pytest.raises(ScheduleError, match="distributes"):
        asp.autoschedule(MAX_TIMES, {"A": "csr"}, model="sparseauto")
    joint = asp.autoschedule(MIN_PLUS, {"A": "csr"}, model="auto")  # A of fill 0 under min-plus
    assert [type(front).__name__ for front in joint.fronts] == ["Front"]


def test_a_max_times_product_of_three_keeps_no_workspace_that_would_start_at_minus_inf():
    text = "y(i) = max(j, A(i,j) * B(i,j) * x(j))"
    front = asp.autoschedule(text, {"A": "csr", "B": "csr"})
    rng = np.random.default_rng(3)
    a, b = (_operand("random", (5, 4), 0, rng) for _ in range(2))
    x = rng.uniform(-1.0, 2.0, 4)
    expected = dense_value(parse(text), {"A": a, "B": b, "x": x})
    for cand in front:
        got = front.kernel(cand)(A=asp.Tensor.from_numpy(a, "csr"), B=asp.Tensor.from_numpy(b, "csr"), x=x)
        np.testing.assert_allclose(got, expected, err_msg=str(cand.cin))


def test_functions_that_keep_the_zero_keep_sparsity():
    front = asp.autoschedule("y(i) = abs(A(i,j)) * x(j)", {"A": "csr"})
    assert all("abs(" in str(cand.cin) for cand in front)
    checked(parse("y(i) = sqrt(A(i,j)) * x(j)"))
    with pytest.raises(ScheduleError, match="exp"):
        checked(parse("y(i) = exp(A(i,j)) * x(j)"))


@pytest.mark.parametrize("text, fills, merges", [
    ("∀i y(i) = A(i) + B(i)", {}, True),
    ("∀i y(i) = A(i) * B(i)", {}, False),
    ("∀i y(i) = A(i) + B(i)", {"A": INF, "B": INF}, False),  # +inf annihilates +: an intersection
    ("∀i y(i) = maximum(A(i), B(i))", {}, True),
    ("∀i y(i) = A(i) - B(i)", {}, True),
])
def test_a_union_is_read_from_the_registry_and_the_fills(text, fills, merges):
    (assign,) = assignments(parse_cin(text, {"y": "s", "A": "s", "B": "s"}, fills))
    assert any(unites(node) for node in walk(assign.rhs)) is merges


def test_the_stored_choice_key_carries_the_fills():
    key, _, memo = auto._front_key("asymptotic", parse(MIN_PLUS), (("A", "csr"),), (("A", INF),))
    plain, _, plain_memo = auto._front_key("asymptotic", parse(MIN_PLUS), (("A", "csr"),))
    assert key != plain and memo != plain_memo
