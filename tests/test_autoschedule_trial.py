"""Ties decided by the user's own calls (`tiebreak.Trial`, api/auto.py's `evaluated`): each call runs the
trial's next contender and reports its time; the first call of each contender (compile, first touch) is
not a time; the fastest is kept, remembered and stored. Every call's value is checked against numpy."""

import ast
import math

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse.api import auto
from autosparse.autoschedule import store, tiebreak
from autosparse.errors import AutosparseError, MemoryLimitError
from autosparse.notation import parse

SDDMM = "A(i,j) = B(i,j) * C(i,k) * D(k,j)"


class Stand:
    def __init__(self, name):
        self.cin, self.found_by = name, "asymptotic"


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    monkeypatch.setattr(store, "cache_dir", lambda: tmp_path)
    for memo in ("_fronts", "_choices", "_trials"):
        monkeypatch.setattr(auto, memo, {})
    monkeypatch.setattr(auto, "decisions", auto.Decisions())
    monkeypatch.setattr(auto, "SEARCH_SECONDS", 2.0)
    tiebreak.forget()
    yield auto
    tiebreak.forget()


def served(trial, times):
    """Run `trial` to its decision, contender `c` taking `times[c.cin]` seconds a call (its first call
    taking an hour: a compile that must not count); the contenders in the order they served."""
    order = []
    while not trial.decided:
        cand = trial.candidate()
        order.append(cand.cin)
        trial.record(cand, 3600.0 if order.count(cand.cin) == 1 else times[cand.cin])
    return order


def test_each_contender_serves_a_warm_up_and_samples_then_the_fastest_is_kept():
    a, b, c = Stand("a"), Stand("b"), Stand("c")
    trial = tiebreak.Trial(("key",), [a, b, c])
    assert served(trial, {"a": 2.0, "b": 1.0, "c": 1.5}) == ["a"] * 3 + ["b"] * 3 + ["c"] * 3
    assert trial.decision is b and trial.candidate() is b and tiebreak._decided[("key",)] == "b"


def test_a_hopeless_contender_serves_one_timed_call_and_equal_times_keep_the_estimates_order():
    a, b, c = Stand("a"), Stand("b"), Stand("c")
    trial = tiebreak.Trial(("k2",), [a, b, c])
    assert served(trial, {"a": 1.0, "b": 1.0 + tiebreak.HOPELESS * 1.0, "c": 1.0}) == ["a"] * 3 + ["b"] * 2 + ["c"] * 3
    assert trial.decision is a


def test_a_contender_that_cannot_run_is_out_at_once():
    a, b = Stand("a"), Stand("b")
    trial = tiebreak.Trial(("k4",), [a, b])
    for seconds in (9.0, 5.0, 5.0):
        trial.record(a, seconds)
    assert trial.candidate() is b
    trial.record(b, math.inf)  # on its first call: no warm-up needed to know
    assert trial.decided and trial.decision is a


def test_one_contender_is_decided_from_the_start():
    a = Stand("a")
    assert tiebreak.Trial(("k5",), [a]).decision is a


def sddmm_operands(seed=0):
    rng = np.random.default_rng(seed)
    B = sp.random(40, 30, 0.1, format="csr", random_state=seed)
    return {"B": asp.Tensor.from_scipy(B, format="ds"), "C": rng.random((40, 8)), "D": rng.random((8, 30))}


def sddmm_reference(operands):
    return operands["B"].to_numpy() * (operands["C"] @ operands["D"])


def test_schedule_auto_decides_a_tie_over_its_calls_compiling_one_kernel_a_call(fresh, monkeypatch):
    from autosparse import api

    operands = sddmm_operands()
    built = []
    real_kernel = api._kernel
    monkeypatch.setattr(api, "_kernel", lambda *args: built.append(args[2]) or real_kernel(*args))
    first = asp.evaluate(SDDMM, format="ds", schedule="auto", **operands)
    np.testing.assert_allclose(first.to_numpy(), sddmm_reference(operands))
    assert len(fresh._trials) == 1  # SDDMM's best estimates tie
    trial = next(iter(fresh._trials.values()))
    assert built == [trial.contenders[0]]  # one kernel for the first call: the estimate's best
    for _ in range(len(trial.contenders) * (1 + tiebreak.SAMPLES) - 1):
        if trial.decided:
            break
        np.testing.assert_allclose(asp.evaluate(SDDMM, format="ds", schedule="auto", **operands).to_numpy(),
                                   sddmm_reference(operands))
    assert not fresh._trials and trial.decided
    assert {id(c) for c in built} == {id(c) for c in trial.contenders}
    assert all(2 <= built.count(c) <= 1 + tiebreak.SAMPLES for c in trial.contenders)  # hopeless: one timed
    timed = {id(c): min(t) for c, t in zip(trial.contenders, (trial.times[n] for n in range(len(trial.contenders))))}
    assert timed[id(trial.decision)] == min(timed.values())
    memo = next(iter(fresh._choices))
    assert fresh._choices[memo] is trial.decision
    front_key = ast.literal_eval(memo[0])  # this process's key of the front is the store's key as text
    stored = store.load_choice(fresh._choice_key(front_key, memo), parse(SDDMM),
                               next(iter(fresh._fronts.values()))[0].formats)
    assert str(stored.cin) == str(trial.decision.cin)
    built.clear()
    asp.evaluate(SDDMM, format="ds", schedule="auto", **operands)
    assert built == [trial.decision]


def test_a_contender_refusing_the_operands_leaves_the_trial_and_the_call_still_answers(fresh):
    from autosparse import api

    operands = sddmm_operands(seed=1)
    assignment, formats = parse(SDDMM), {"B": "ds", "A": "ds", "C": "dd", "D": "dd"}
    refused = []

    def kernel_for(cand):
        if cand is not None and refused == [] and cand is not trial_of()[0]:
            refused.append(cand)
            raise MemoryLimitError("a workspace past the memory limit")
        return api._kernel(assignment, formats, cand, None, False, operands, "auto")

    def trial_of():
        return next(iter(fresh._trials.values())).contenders

    for _ in range(3):  # the first contender's warm-up and samples
        np.testing.assert_allclose(auto.evaluated(assignment, formats, operands, "auto", kernel_for).to_numpy(),
                                   sddmm_reference(operands))
    trial = next(iter(fresh._trials.values()))
    np.testing.assert_allclose(auto.evaluated(assignment, formats, operands, "auto", kernel_for).to_numpy(),
                               sddmm_reference(operands))
    assert refused and math.isinf(min(trial.times[1]))
    with pytest.raises(AutosparseError, match="memory limit"):  # the estimate's best refusing: the user's error
        auto.evaluated(assignment, formats, operands, "auto",
                       lambda cand: (_ for _ in ()).throw(MemoryLimitError("past the memory limit")))


def test_a_stored_choice_is_read_once_per_process(fresh, monkeypatch):
    operands = sddmm_operands(seed=2)
    for _ in range(30):
        if fresh._choices:
            break
        asp.evaluate(SDDMM, format="ds", schedule="auto", **operands)
    assert fresh._choices and not fresh._trials
    monkeypatch.setattr(auto, "_choices", {})
    before = fresh.decisions.stored_choices
    for _ in range(3):
        np.testing.assert_allclose(asp.evaluate(SDDMM, format="ds", schedule="auto", **operands).to_numpy(),
                                   sddmm_reference(operands))
    assert fresh.decisions.stored_choices == before + 1
