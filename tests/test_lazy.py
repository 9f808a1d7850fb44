"""Lazy programs: `asp.lazy` records, plan.py fuses, `asp.compute` runs; fused and eager results agree,
and the plan has as few kernels as the fusion rule allows (design31.md §3.2)."""

from __future__ import annotations

import gc
import importlib
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp
from autosparse import api
from autosparse.array.plan import plan

xp = asp.array


def dense(value) -> np.ndarray:
    if sp.issparse(value):
        return value.toarray()
    return value.to_numpy() if isinstance(value, asp.Tensor) else np.asarray(value)


def matrix(n: int, m: int, seed: int) -> asp.Tensor:
    return asp.Tensor.from_scipy(sp.random(n, m, density=0.4, format="csr", random_state=seed))


def texts(*lazies) -> list[str]:
    return [step.expression for step in plan([lazy.node for lazy in lazies])]


def test_an_elementwise_chain_is_one_kernel():
    a, b = matrix(5, 6, 1), matrix(5, 6, 2)
    chain = (asp.lazy(a) + b) * 2 - asp.lazy(a) / 4
    assert texts(chain) == ["C(i,j) = (T0(i,j) + T1(i,j)) * T2() - T0(i,j) / T3()"]
    before = set(api._kernels)
    (fused,) = asp.compute(chain)
    assert len(set(api._kernels) - before) == 1
    eager = xp.subtract(xp.multiply(xp.add(a, b), 2), xp.divide(a, 4))
    np.testing.assert_allclose(dense(fused), dense(eager))
    np.testing.assert_allclose(dense(fused), (a.to_numpy() + b.to_numpy()) * 2 - a.to_numpy() / 4)


def test_a_product_plus_a_vector_is_one_kernel_with_a_scoped_sum():
    a, x, z = matrix(7, 5, 3), np.arange(5.0), np.ones(7)
    program = asp.lazy(a) @ x + z
    assert texts(program) == ["C(i) = sum(j, T0(i,j) * T1(j)) + T2(i)"]
    (y,) = asp.compute(program)
    np.testing.assert_allclose(y, a.to_numpy() @ x + z)
    np.testing.assert_allclose(y, dense(xp.add(xp.matmul(a, x), z)))


def test_a_product_of_a_product_materialises_the_inner_one():
    a, b, x = matrix(6, 4, 4), matrix(4, 3, 5), np.arange(1.0, 4.0)
    program = asp.lazy(a) @ (asp.lazy(b) @ x)
    assert texts(program) == ["C(i) = T0(i,j) * T1(j)", "C(i) = T0(i,j) * T1(j)"]
    steps = plan([program.node])
    assert steps[1].operands[1] is steps[0].target  # the outer product reads the inner one's result
    (y,) = asp.compute(program)
    np.testing.assert_allclose(y, a.to_numpy() @ (b.to_numpy() @ x))


def test_a_reduction_with_two_consumers_is_materialised_an_elementwise_one_is_not():
    a, x = matrix(4, 4, 6), np.arange(4.0)
    shared = asp.lazy(a) @ x
    assert len(texts(shared * shared + 1)) == 2
    scaled = asp.lazy(a) * 3
    assert len(texts(scaled * scaled)) == 1
    (y,) = asp.compute(shared * shared + 1)
    np.testing.assert_allclose(y, (a.to_numpy() @ x) ** 2 + 1)


def test_compute_returns_every_root_and_leaves_as_they_are():
    a, x = matrix(3, 3, 7), np.arange(3.0)
    ax = asp.lazy(a) @ x
    y, z, same = asp.compute(ax, ax.sum(), asp.lazy(x))
    np.testing.assert_allclose(y, a.to_numpy() @ x)
    assert z == pytest.approx((a.to_numpy() @ x).sum())
    assert same is x


def test_transposes_and_reductions_inline():
    a = matrix(4, 5, 8)
    program = xp.sum(asp.lazy(a).T * 2, axis=0)
    assert texts(program) == ["C(i) = T0(i,j) * T1()"]
    (y,) = asp.compute(program)
    np.testing.assert_allclose(y, (a.to_numpy().T * 2).sum(axis=0))


def test_nodes_check_shapes_and_know_dtype_and_fill():
    a = asp.lazy(matrix(3, 4, 9))
    with pytest.raises(asp.ShapeError):
        a @ a
    with pytest.raises(asp.ShapeError):
        a + np.ones(3)
    assert (a @ np.ones(4, np.float32)).shape == (3,)
    assert (asp.lazy(np.ones(3, np.float32)) * 2).dtype == np.float32
    assert xp.exp(a).fill == 1.0
    assert xp.sum(a, axis=1).fill == 0


def test_functions_the_pipeline_does_not_compile_yet_build_their_text_and_are_refused():
    a, b = matrix(3, 4, 10), matrix(3, 4, 11)
    program = xp.maximum(asp.lazy(a) * 2, b) + 1
    assert texts(program) == ["C(i,j) = maximum(T0(i,j) * T1(), T2(i,j)) + T3()"]
    shortest = xp.matmul(asp.lazy(a), b.to_numpy().T.copy(), semiring="min_plus")
    assert texts(shortest) == ["C(i,j) = min(k, T0(i,k) + T1(k,j))"]
    d, e = a.to_numpy(), b.to_numpy()
    expected = (np.maximum(d * 2, e) + 1, np.min(d[:, :, None] + e.T[None], axis=1))
    for lazy, value in zip((program, shortest), expected):
        (computed,) = asp.compute(lazy)
        np.testing.assert_allclose(dense(computed), value)


def conjugate_gradient(a, b, iterations: int, lazy: bool):
    """x after `iterations` steps of CG, each vector operation lazy (autosparse) or numpy's; the keys of
    api._kernels after each iteration."""
    wrap = asp.lazy if lazy else (lambda value: value)
    run = asp.compute if lazy else (lambda *values: values)
    x, r = np.zeros_like(b), b.copy()
    p, rr = r.copy(), float(r @ r)
    keys = []
    for _ in range(iterations):
        (ap,) = run(wrap(a) @ p)
        (pap,) = run(xp.vecdot(wrap(p), ap) if lazy else p @ ap)
        alpha = rr / pap
        x, r = run(wrap(x) + alpha * wrap(p), wrap(r) - alpha * wrap(ap))
        (new,) = run(xp.vecdot(wrap(r), r) if lazy else r @ r)
        (p,) = run(wrap(r) + (new / rr) * wrap(p))
        rr = new
        keys.append(set(api._kernels))
    return x, keys


def test_a_conjugate_gradient_loop_builds_its_kernels_once():
    n = 9
    m = sp.random(n, n, density=0.3, format="csr", random_state=12)
    spd = (m @ m.T + n * sp.identity(n)).tocsr()
    b = np.arange(1.0, n + 1)
    x, keys = conjugate_gradient(asp.Tensor.from_scipy(spd), b, 3, lazy=True)
    assert keys[1] <= keys[0] and keys[2] <= keys[0]  # no kernel built after the first iteration
    expected, _ = conjugate_gradient(spd.toarray(), b, 3, lazy=False)
    np.testing.assert_allclose(x, expected)


@pytest.mark.parametrize("shape", [(0, 3), (1, 3), (3, 1), (4, 3)])
def test_lazy_tensor_numpy_and_scipy_operands_of_empty_and_size_one_modes(shape):
    d = np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape)
    column = np.arange(1.0, shape[0] + 1)[:, None]  # broadcast along j: a numpy array's extent-1 mode
    for a in (asp.Tensor.from_numpy(d, "csr"), d, sp.csr_matrix(d)):
        program = (asp.lazy(a) * column + 1) @ np.ones(shape[1])
        (y,) = asp.compute(program)
        np.testing.assert_allclose(y, (d * column + 1) @ np.ones(shape[1]))
        assert len(texts(program)) == 1


# ----- rule 2: the asymptotic model of the default schedules (array/fusion.py) ---------------------------------

def test_a_masked_product_fuses_the_model_finds_it_no_costlier():
    lower = asp.Tensor.from_scipy(sp.tril(sp.random(6, 6, density=0.5, random_state=13), -1, format="csr"))
    program = xp.sum(asp.lazy(lower) * (asp.lazy(lower) @ lower))
    assert texts(program) == ["C() = T0(i,j) * sum(k, T0(i,k) * T0(k,j))"]
    (count,) = asp.compute(program)
    d = lower.to_numpy()
    assert count == pytest.approx((d * (d @ d)).sum())


def test_where_the_model_and_the_syntactic_rule_disagree(monkeypatch):
    """An outer product of A @ x with y: its sum runs under the loop over j, an index it does not use, so the
    syntactic rule materialised it; the default schedule hoists that sum into a scalar computed once per i
    (`∀i where(∀j C(i,j) = t * y(j), ∀k t += A(i,k) * x(k))`), no costlier than two kernels: one."""
    from autosparse.array import plan as planning

    a, x, y = matrix(5, 4, 14), np.arange(1.0, 5.0), np.arange(1.0, 4.0)
    program = xp.tensordot(asp.lazy(a) @ x, y, axes=0)
    assert texts(program) == ["C(i,j) = sum(k, T0(i,k) * T1(k)) * T2(j)"]
    (z,) = asp.compute(program)
    np.testing.assert_allclose(z, np.outer(a.to_numpy() @ x, y))
    monkeypatch.setattr(planning, "frontier", lambda *_: None)  # as where the model cannot cost: syntactic
    monkeypatch.setattr(planning, "_plans", {})  # planned again, not the plan kept for this structure
    assert texts(program) == ["C(i) = T0(i,j) * T1(j)", "C(i,j) = T0(i) * T1(j)"]


def test_the_syntactic_rule_stands_in_where_the_model_cannot_cost():
    a, b, x = matrix(6, 4, 15), matrix(4, 3, 16), np.arange(1.0, 4.0)
    rectified = xp.maximum(asp.lazy(a) @ (asp.lazy(b) @ x), 0.0)  # maximum: no cost in the model
    assert len(texts(rectified)) == 2
    inner = xp.matmul(asp.lazy(b), x, semiring="min_plus")  # a min reduction: no cost in the model
    assert len(texts(xp.matmul(asp.lazy(a), inner, semiring="min_plus"))) == 2
    (y,) = asp.compute(rectified)
    np.testing.assert_allclose(y, np.maximum(a.to_numpy() @ (b.to_numpy() @ x), 0.0))


def test_the_models_judgements_are_kept_for_a_program_planned_again(monkeypatch):
    from autosparse.array import fusion
    from autosparse.array import plan as planning

    a, b, x = matrix(6, 4, 17), matrix(4, 3, 18), np.arange(1.0, 4.0)
    texts(asp.lazy(a) @ (asp.lazy(b) @ x))
    monkeypatch.setattr(planning, "_plans", {})  # planned again, not the plan kept for this structure
    before = fusion._frontier.cache_info()
    texts(asp.lazy(a) @ (asp.lazy(b) @ x))
    after = fusion._frontier.cache_info()
    assert after.hits > before.hits and after.misses == before.misses


# ----- the per-step overhead: a program run again is neither parsed nor planned again -------------------------

@pytest.fixture
def plannings(monkeypatch):
    """How many times plan.py's planner ran since the plan cache was emptied."""
    from autosparse.array import plan as planning

    runs = []

    class Counted(planning._Planner):
        def __init__(self, roots):
            runs.append(roots)
            super().__init__(roots)

    monkeypatch.setattr(planning, "_plans", {})
    monkeypatch.setattr(planning, "_Planner", Counted)
    return runs


def scaled_product(a, x, y):
    return (asp.lazy(a) @ x) * 2 + asp.lazy(y) * y


def test_a_program_of_the_same_shape_is_planned_once_and_computes_its_new_values(plannings):
    for seed in (20, 21, 22):
        a, x, y = matrix(6, 4, seed), np.arange(seed, seed + 4.0), np.arange(6.0) - seed
        program = scaled_product(a, x, y)
        (value,) = asp.compute(program)
        expected = (a.to_numpy() @ x) * 2 + y * y
        np.testing.assert_allclose(value, expected)
        np.testing.assert_allclose(value, (a @ x) * 2 + y * y)  # eager
    assert len(plannings) == 1


def csc(n, m, seed):
    return asp.Tensor.from_scipy(sp.random(n, m, density=0.4, format="csc", random_state=seed))


@pytest.mark.parametrize("changed", [
    lambda: (csc(6, 4, 23), np.arange(4.0), np.arange(6.0)),  # a leaf's format
    lambda: (asp.Tensor.from_scipy(sp.random(6, 4, density=0.4, format="csr", random_state=23), index_dtype=np.int64),
             np.arange(4.0), np.arange(6.0)),  # its index dtype
    lambda: (matrix(6, 4, 23), np.arange(4, dtype=np.float32), np.arange(6.0)),  # a dtype
    lambda: (matrix(7, 1, 23), np.arange(1.0), np.arange(7.0)),  # the shapes
    lambda: (matrix(6, 4, 23).to_scipy(), np.arange(4.0), np.arange(6.0)),  # a scipy matrix for a Tensor
    lambda: (matrix(6, 4, 23), np.arange(4.0), asp.Tensor.from_numpy(np.arange(6.0))),  # a Tensor for an array
], ids=["format", "index-dtype", "dtype", "shape", "scipy", "tensor"])
def test_a_changed_leaf_kind_is_planned_again(plannings, changed):
    a, x, y = changed()
    texts(scaled_product(matrix(6, 4, 24), np.arange(4.0), np.arange(6.0)))
    (value,) = asp.compute(scaled_product(a, x, y))
    assert len(plannings) == 2
    np.testing.assert_allclose(value, (dense(a) @ dense(x)) * 2 + dense(y) * dense(y), rtol=1e-6)


def test_a_changed_fill_is_planned_again(plannings):
    ones = np.ones((3, 4))
    texts(asp.lazy(asp.Tensor.from_numpy(ones, "csr")) + 1.0)
    texts(asp.lazy(asp.Tensor.from_numpy(ones, "csr", fill=1.0)) + 1.0)
    assert len(plannings) == 2


def test_two_leaves_that_were_one_value_are_planned_again(plannings):
    x, y = np.arange(1.0, 5.0), np.arange(5.0, 9.0)
    assert texts(asp.lazy(x) * 2.0 - asp.lazy(x)) == ["C(i) = T0(i) * T1() - T0(i)"]  # two leaves, one value
    program = asp.lazy(x) * 2.0 - asp.lazy(y)
    assert texts(program) == ["C(i) = T0(i) * T1() - T2(i)"]
    assert len(plannings) == 2
    np.testing.assert_allclose(asp.compute(program)[0], x * 2.0 - y)


def test_record_parses_a_text_seen_before_no_more(monkeypatch):
    recording = importlib.import_module("autosparse.array.lazy")  # the package's `lazy` is the function
    parsed = []
    monkeypatch.setattr(recording, "parse", lambda text: parsed.append(text) or asp.notation.parse(text))
    recording._parsed.cache_clear()
    recording._shaped.cache_clear()
    monkeypatch.setattr(recording, "_made", {})  # nodes an earlier test recorded are made without a parse
    x = np.arange(3.0)
    for n in (3, 3, 5):
        asp.lazy(np.ones((2, n))) @ asp.lazy(np.arange(float(n)))
    asp.lazy(x) + x
    assert parsed == ["C(i) = A(i,j) * B(j)", "C(i) = A(i) + B(i)"]


def test_a_node_recorded_again_reads_its_own_operands():
    x, y, z = np.arange(1.0, 5.0), np.arange(5.0, 9.0), np.arange(4, dtype=np.int64)
    programs = [asp.lazy(x) * asp.lazy(x), asp.lazy(x) * asp.lazy(y), asp.lazy(y) * asp.lazy(x),
                asp.lazy(x) * x, asp.lazy(y) * z, asp.lazy(z) * z, asp.lazy(x) * 2, asp.lazy(z) * 2]
    expected = [x * x, x * y, y * x, x * x, y * z, z * z, x * 2, z * 2]
    for program, value in zip(programs, expected):
        assert program.dtype == value.dtype
        np.testing.assert_array_equal(asp.compute(program)[0], value)


@pytest.mark.parametrize("layout", ["csr", "csc", "coo"])
def test_a_lifted_scipy_matrix_is_converted_once_and_computes_as_eagerly(monkeypatch, layout):
    """A CSR or CSC matrix becomes the Tensor over its arrays when lifted, so that each compute passes
    evaluate that Tensor (its warm path) rather than the matrix to convert again; a COO matrix goes as it is."""
    matrix, x = sp.random(7, 5, density=0.4, format=layout, random_state=31), np.arange(1.0, 6.0)
    passed, evaluate = [], api.evaluate
    monkeypatch.setattr(api, "evaluate", lambda text, operands, **options: passed.append(operands["T0"]) or evaluate(
        text, operands=operands, **options))
    a = asp.lazy(matrix)
    for scale in (2.0, 3.0):
        np.testing.assert_allclose(asp.compute(a @ (asp.lazy(x) * scale))[0], matrix @ (x * scale))
    assert passed[0] is passed[1]
    assert isinstance(passed[0], asp.Tensor) == (layout != "coo")
    assert asp.compute(a)[0] is matrix


def test_a_scoped_sum_over_coordinates_out_of_row_order():
    matrix, x = sp.random(7, 5, density=0.4, format="coo", random_state=31), np.arange(1.0, 6.0)
    assert not np.all(np.diff(matrix.row) >= 0)
    np.testing.assert_allclose(asp.compute((asp.lazy(matrix) @ x) * 2.0)[0], (matrix @ x) * 2.0)


def test_compute_gives_back_what_is_not_lazy_as_it_is():
    """One program runs eagerly or lazily by what it lifts (examples/): compute passes values through."""
    x, tensor = np.arange(3.0), asp.Tensor.from_numpy(np.eye(2), "csr")
    values = asp.compute(x, tensor, 2.5, asp.lazy(x) * 2.0)
    assert values[0] is x and values[1] is tensor and values[2] == 2.5 and type(values[2]) is float
    np.testing.assert_array_equal(values[3], 2.0 * x)


@pytest.mark.parametrize("semiring", ["plus_times", "min_plus"])
def test_compute_autoschedules_each_step_and_agrees_with_the_default_schedule(semiring):
    """One meaning everywhere: the steps autoscheduled give the default schedule's values (and numpy's). A step
    the autoschedulers do not read (a function around a sum of another semiring) is refused by name."""
    rng = np.random.default_rng(3)
    fill = np.inf if semiring == "min_plus" else 0.0
    dense = np.where(rng.random((6, 5)) < 0.4, rng.random((6, 5)), fill)
    matrix = asp.Tensor.from_numpy(dense, "csr", fill=fill)
    x, z = rng.random(5), rng.random(6)
    combine = xp.minimum if semiring == "min_plus" else xp.add  # the semiring's own ⊕ around its product
    program = lambda: combine(xp.matmul(asp.lazy(matrix), asp.lazy(x), semiring=semiring), asp.lazy(z))
    expected = np.minimum((dense + x).min(axis=1), z) if semiring == "min_plus" else dense @ x + z
    np.testing.assert_allclose(asp.compute(program(), schedule="auto")[0], expected)
    np.testing.assert_allclose(asp.compute(program())[0], expected)
    with pytest.raises(asp.ScheduleError, match="autoschedul"):
        asp.compute(xp.maximum(xp.matmul(asp.lazy(matrix.to_format("csr")), asp.lazy(x)), 0.0) if semiring ==
                    "plus_times" else xp.negative(xp.matmul(asp.lazy(matrix), asp.lazy(x), semiring=semiring)),
                    schedule="auto")


@pytest.mark.parametrize("fmt, planned", [
    ("dense", "C(i) = T0(i,j,k) * T1(k) * T2(i,j)"),  # a dense factor: the inner sum goes around it
    ("csr", "C(i) = sum(k, T0(i,j,k) * T1(k)) * T2(i,j)"),  # a sparse one masks where the inner sum runs
])
def test_a_reduced_product_takes_a_sum_around_a_dense_factor_only(fmt, planned):
    rng = np.random.default_rng(8)
    tensor = asp.Tensor.from_numpy(np.where(rng.random((3, 4, 5)) < 0.5, rng.random((3, 4, 5)), 0.0), "csf")
    vector, factor = rng.random(5), np.where(rng.random((3, 4)) < 0.5, rng.random((3, 4)), 0.0)
    other = factor if fmt == "dense" else asp.Tensor.from_numpy(factor, fmt)
    inner = xp.tensordot(asp.lazy(tensor), asp.lazy(vector), axes=1)  # (i, j)
    program = xp.sum(xp.multiply(inner, asp.lazy(other)), axis=1)
    assert [step.expression for step in plan([program.node])] == [planned]
    (result,) = asp.compute(program)
    result = result.to_numpy() if isinstance(result, asp.Tensor) else result
    np.testing.assert_allclose(result, ((tensor.to_numpy() @ vector) * factor).sum(axis=1))


def test_a_computed_program_holds_no_value_in_a_reference_cycle():
    """A solver's vectors are freed when its loop drops them, not when the cyclic collector next runs: a
    planner walk that held the graph in a cycle grew a CG loop's heap by a vector a call (page faults)."""
    gc.disable()
    try:
        for _ in range(2):  # planned, then from the kept plan
            x = np.arange(6.0)
            dropped = weakref.ref(x)
            (y,) = asp.compute(xp.vecdot(asp.lazy(x), asp.lazy(x) * 2.0 + 1.0) + asp.lazy(x) @ asp.lazy(x))
            del x
            assert dropped() is None and y == 2 * 55.0 + 15.0 + 55.0
    finally:
        gc.enable()


def test_an_elementwise_node_over_materialised_reductions_inlines():
    """CG's `β = r'·r' / r·r` reads a result and a leaf: its consumer `r' + β p` reads the quotient in its own
    kernel, not a kernel of its own (its reductions are materialised, so inlining puts none under a loop)."""
    r, p = np.arange(1.0, 5.0), np.ones(4)
    new = xp.vecdot(asp.lazy(r), asp.lazy(r))
    updated = asp.lazy(r) + (new / 2.0) * asp.lazy(p)
    assert texts(new, updated) == ["C() = T0(i) * T0(i)", "C(i) = T0(i) + T1() / T2() * T3(i)"]
    total, value = asp.compute(new, updated)
    assert total == 30.0
    np.testing.assert_allclose(value, r + 15.0 * p)


# ----- rule 2 over a step's whole program: the frontier of every subset materialised (array/fusion.py) ----------

def test_the_frontier_of_a_product_of_a_product_holds_the_split_program_alone():
    from autosparse.array.fusion import frontier
    from autosparse.notation import parse

    fused = (parse("C(i) = A(i,j) * sum(k, B(j,k) * x(k))"),)
    split = (parse("C(i) = A(i,j) * Q0(j)"), parse("Q0(j) = B(j,k) * x(k)"))
    values = {"A": (matrix(6, 4, 30), 2), "B": (matrix(4, 3, 31), 2), "x": (np.ones(3), 1)}
    assert frontier([fused, split], values) == (1,)


def test_two_chains_of_products_materialise_their_inner_products_together():
    """Four reducing inputs in one step, sixteen programs: the frontier's fewest kernels materialise the two
    inner products and inline the outer ones into the sum."""
    a, b, c, d = (matrix(5, 5, seed) for seed in (32, 33, 34, 35))
    x, y = np.arange(1.0, 6.0), np.arange(5.0, 0.0, -1.0)
    program = asp.lazy(a) @ (asp.lazy(b) @ x) + asp.lazy(c) @ (asp.lazy(d) @ y)
    assert texts(program) == ["C(i) = T0(i,j) * T1(j)", "C(i) = T0(i,j) * T1(j)",
                              "C(i) = sum(j, T0(i,j) * T1(j)) + sum(k, T2(i,k) * T3(k))"]
    (z,) = asp.compute(program)
    dense_ = [m.to_numpy() for m in (a, b, c, d)]
    np.testing.assert_allclose(z, dense_[0] @ (dense_[1] @ x) + dense_[2] @ (dense_[3] @ y))


def test_a_min_plus_program_is_decided_by_the_model_in_its_semirings_skeleton(monkeypatch):
    """Over fill +inf (the min-plus zero) the model costs `A min.+ (B min.+ x)` as `A @ (B @ x)`; the syntactic
    rule is not asked."""
    from autosparse.array import plan as planning

    def weights(seed: int) -> asp.Tensor:
        rng = np.random.default_rng(seed)
        values = np.where(rng.random((5, 5)) < 0.4, rng.random((5, 5)), np.inf)
        return asp.Tensor.from_numpy(values, "csr", fill=np.inf)

    a, b, x = weights(36), weights(37), np.arange(5.0)
    program = xp.matmul(asp.lazy(a), xp.matmul(asp.lazy(b), x, semiring="min_plus"), semiring="min_plus")
    verdicts = []
    original = planning.frontier
    monkeypatch.setattr(planning, "frontier", lambda *args: verdicts.append(original(*args)) or verdicts[-1])
    monkeypatch.setattr(planning, "_plans", {})
    assert texts(program) == ["C(i) = min(j, T0(i,j) + T1(j))"] * 2
    assert verdicts == [(1,)]  # of the program fused and the program split: the split one alone
    (z,) = asp.compute(program)
    inner = (b.to_numpy() + x[None, :]).min(axis=1)
    np.testing.assert_allclose(z, (a.to_numpy() + inner[None, :]).min(axis=1))


def test_more_reducing_inputs_than_the_frontier_takes_fall_back_to_the_syntactic_rule(monkeypatch):
    from autosparse.array import plan as planning

    monkeypatch.setattr(planning, "CHOICES", 1)
    monkeypatch.setattr(planning, "_plans", {})
    a, b, c, d = (matrix(5, 5, seed) for seed in (38, 39, 40, 41))
    x, y = np.arange(1.0, 6.0), np.ones(5)
    program = asp.lazy(a) @ (asp.lazy(b) @ x) + asp.lazy(c) @ (asp.lazy(d) @ y)
    assert len(texts(program)) == 3
    (z,) = asp.compute(program)
    np.testing.assert_allclose(z, a.to_numpy() @ (b.to_numpy() @ x) + c.to_numpy() @ (d.to_numpy() @ y))
