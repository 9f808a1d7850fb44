"""Commands that derive index variables (split, divide, collapse, pos, coord, bound; Senanayake et al.
§4): every schedule computes what the default computes (numpy reference on dense copies, over the edge-case
inputs and both index dtypes, serial and in parallel), the generated code has the paper's shape (bounds
instead of guards, a binary search per chunk and row tracking for position splits), and each broken
precondition is a ScheduleError naming the command, the variable and the rule."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import autosparse as asp
from autosparse.cin import Forall, walk
from autosparse.schedule import Schedule

from conftest import densified
from kernel_cases import CASES, expect_schedule_error, run_differential, stratified

SPMV = "y(i) = A(i,j) * x(j)"
SPMM = "C(i,j) = A(i,k) * B(k,j)"
SPGEMM = "C(i,j) = A(i,k) * B(k,j)"
SDDMM = "A(i,j) = B(i,j) * C(i,k) * D(k,j)"
MTTKRP = "A(i,j) = B(i,k,l) * C(k,j) * D(l,j)"
TTM = "A(i,j,k) = B(i,j,l) * C(k,l)"
TTV = "A(i,j) = B(i,j,k) * c(k)"
BALANCED = "collapse(i, j, f); pos(f, fp, A(i,j)); split(fp, p0, p1, 3)"

#: (expression, formats, schedule): the paper's combinations and every command, tails included (the test
#: extents are 3, 4, 5 and 2, so factors 2 and 3 leave short last tiles and 8 exceeds them)
DERIVED = [
    (SPMV, {"A": "csr"}, "split(i, i0, i1, 2)"),
    (SPMV, {"A": "csr"}, "split(i, i0, i1, 8)"),
    (SPMV, {"A": "csr"}, "divide(i, i0, i1, 2)"),
    (SPMV, {"A": "csr"}, "split(i, i0, i1, 2); reorder(i1, i0)"),
    (SPMV, {"A": "csr"}, "split(i, i0, i1, 2); parallelize(i0, cpu_thread, no_races)"),
    (SPMV, {"A": "csr"}, "divide(i, i0, i1, 2); parallelize(i1, cpu_thread, no_races)"),
    (SPMV, {"A": "csr"}, "pos(j, jp, A(i,j))"),
    (SPMV, {"A": "csr"}, "pos(j, jp, A(i,j)); split(jp, j0, j1, 3)"),
    (SPMV, {"A": "csr"}, "pos(j, jp, A(i,j)); coord(jp, j)"),
    (SPMV, {"A": "csr"}, "collapse(i, j, f); pos(f, fp, A(i,j))"),
    (SPMV, {"A": "csr"}, BALANCED),
    (SPMV, {"A": "csr"}, f"{BALANCED}; parallelize(p0, cpu_thread, atomics)"),
    (SPMV, {"A": "csr"}, f"{BALANCED}; reorder(p1, p0)"),
    (SPMV, {"A": "csr"}, "collapse(i, j, f); pos(f, fp, A(i,j)); parallelize(fp, cpu_thread, atomics)"),
    (SPMV, {"A": "dcsr", "y": "dense"}, f"{BALANCED}; parallelize(p0, cpu_thread, atomics)"),
    (SPMV, {"A": "csc"}, "reorder(j, i); collapse(j, i, f); pos(f, fp, A(i,j)); split(fp, p0, p1, 2); "
                         "parallelize(p0, cpu_thread, atomics)"),
    (SPMV, {"A": "dcsr", "y": "dense"},
     "pos(i, ip, A(i,j)); split(ip, i0, i1, 2); parallelize(i0, cpu_thread, no_races)"),
    (SPMV, {"A": "csr"}, "bound(i, ib, 64, max_constraint)"),
    (SPMV, {"A": "dense"}, "split(j, j0, j1, 3); parallelize(i, cpu_thread, no_races)"),
    (SPMV, {"A": "dense"}, "collapse(i, j, f); split(f, f0, f1, 5); parallelize(f0, cpu_thread, atomics)"),
    ("y(i) = a(i) * b(i)", {"a": "s", "y": "dense"},
     "pos(i, ip, a(i)); split(ip, i0, i1, 2); parallelize(i0, cpu_thread, no_races)"),
    ("C(i,j) = A(i,j) + B(i,j)", {}, "collapse(i, j, f); split(f, f0, f1, 4); parallelize(f0, cpu_thread, no_races)"),
    (SPMM, {"A": "csr"}, "split(i, i0, i1, 2); split(j, j0, j1, 3)"),
    (SPMM, {"A": "csr"}, "split(i, i0, i1, 2); split(j, j0, j1, 3); reorder(i0, j0, i1, k, j1); "
                         "parallelize(i0, cpu_thread, no_races)"),
    (SPMM, {"A": "csr"}, "pos(k, kp, A(i,k)); split(kp, k0, k1, 2); parallelize(i, cpu_thread, no_races)"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "split(i, i0, i1, 2)"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "split(i, i0, i1, 2); precompute(A(i,k) * B(k,j), j, j)"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "divide(i, i0, i1, 2); precompute(A(i,k) * B(k,j), j, jw, h)"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "dense"}, "split(i, i0, i1, 2); pos(k, kp, A(i,k))"),
    # the reduction's tiles go into the producer: the consumer appends each row once
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "split(k, k0, k1, 1); split(i, i0, i1, 1); "
                                                   "precompute(A(i,k) * B(k,j), j, jw)"),
    (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}, "split(k, k0, k1, 2); precompute(A(i,k) * B(k,j), j, jw, h)"),
    (SDDMM, {"B": "csr", "A": "csr"}, "split(k, k0, k1, 2)"),
    (SDDMM, {"B": "csr", "A": "csr"}, "split(i, i0, i1, 2); pos(j, jp, B(i,j))"),
    (SDDMM, {"B": "csr", "A": "csr"}, "split(k, k0, k1, 2); parallelize(i, cpu_thread, no_races)"),
    (MTTKRP, {"B": "dss", "A": "dense"}, "split(i, i0, i1, 2); precompute(B(i,k,l) * D(l,j), j, j)"),
    (MTTKRP, {"B": "dss"}, "split(j, j0, j1, 3); parallelize(i, cpu_thread, no_races)"),
    (TTV, {"B": "dss", "A": "ds"}, "split(i, i0, i1, 2); pos(j, jp, B(i,j,k))"),
    (TTV, {"B": "dss", "A": "dense"}, "split(i, i0, i1, 2); pos(j, jp, B(i,j,k)); parallelize(i0, cpu_thread, no_races)"),
    (TTM, {"B": "dss", "A": "dsd"}, "split(k, k0, k1, 2)"),
]
IDS = [f"{e.split('=')[0].strip()}-{'-'.join(f'{n}:{f}' for n, f in fm.items())}-{s}" for e, fm, s in DERIVED]


def _derived_grid() -> list:
    """Each schedule on every case and both index dtypes by default (a stratified sample of their pairs); the
    rest under `-m grid`."""
    return [pytest.param(*derived, *p.values, marks=p.marks, id=f"{ident}-{p.values[0]}-{np.dtype(p.values[1]).name}")
            for n, (derived, ident) in enumerate(zip(DERIVED, IDS))
            for p in stratified((CASES, (np.int32, np.int64)), len(CASES), f"derived-{n}")]


@pytest.mark.parametrize("expression, formats, schedule, case, index_dtype", _derived_grid())
def test_a_derived_schedule_computes_the_expression(expression, formats, schedule, case, index_dtype):
    """Up to reassociation (atomics): the inputs are multiples of 1/8, so sums are exact."""
    threads = 3 if "parallelize" in schedule else None
    run_differential(expression, formats, case, np.float64, index_dtype, schedule=schedule, num_threads=threads)


@pytest.mark.parametrize("schedule", [BALANCED, f"{BALANCED}; parallelize(p0, cpu_thread, atomics)",
                                      "collapse(i, j, f); pos(f, fp, A(i,j)); split(fp, p0, p1, 7); reorder(p1, p0)",
                                      "split(i, i0, i1, 5); parallelize(i0, cpu_thread, no_races)",
                                      "divide(i, i0, i1, 4); reorder(i1, i0)"])
@pytest.mark.parametrize("shape", [(37, 29), (1, 50), (50, 1), (200, 3)])
def test_row_and_position_splits_cover_many_rows_with_empty_ones(schedule, shape):
    rng = np.random.default_rng(sum(shape))
    matrix = sp.random(*shape, density=0.2, format="csr", random_state=rng)
    matrix = sp.csr_matrix(matrix.multiply(rng.random(shape[0])[:, None] < 0.7))  # whole empty rows
    x = rng.integers(1, 64, shape[1]) / 8
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule=schedule, num_threads=2)
    np.testing.assert_allclose(densified(kernel(A=matrix, x=x)), matrix.toarray() @ x)


def test_derived_loops_print_their_relations():
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule=f"{BALANCED}; parallelize(p0, cpu_thread, atomics)")
    assert str(kernel.cin) == ("suchthat(∀p0 @parallel(cpu_thread, atomics) ∀p1 y(i) += A(i,j) * x(j), "
                               "collapse(i, j, f), pos(f, fp, A(i,j)), split(fp, p0, p1, 3))")
    split = asp.compile(SPMV, {"A": "csr"}, schedule="split(i, i0, i1, 32)")
    assert str(split.cin) == "suchthat(∀i0 ∀i1 ∀j y(i) += A(i,j) * x(j), split(i, i0, i1, 32))"


def test_chained_methods_spell_the_same_schedule():
    chained = Schedule().collapse("i", "j", "f").pos("f", "fp", "A(i,j)").split("fp", "p0", "p1", 3)
    assert chained == Schedule.parse(BALANCED)
    assert Schedule().divide("i", "i0", "i1", 4).bound("j", "jb", 8, "max_exact") == \
        Schedule.parse("divide(i, i0, i1, 4); bound(j, jb, 8, max_exact)")


# ----- generated-code shape ------------------------------------------------------------------------------------

def test_a_row_split_bounds_its_tiles_instead_of_guarding_them():
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule="split(i, i0, i1, 32); parallelize(i0, cpu_thread, no_races)")
    source = kernel.source
    assert "#pragma omp parallel for schedule(static)" in source and "runtime" not in source
    assert "for (int64_t i0_ = 0; i0_ < i_dim / 32 + (i_dim % 32 > 0); i0_++)" in source
    assert "for (int64_t i1_ = 0; i1_ < min64(32, i_dim - i0_ * 32); i1_++)" in source
    assert "const int64_t i_ = i0_ * 32 + i1_;" in source
    assert "break" not in source and "if (i_ >=" not in source


def test_load_balanced_spmv_searches_each_chunk_once_and_tracks_rows():
    """The paper's listing: a binary search for the chunk's first row, then rows followed (`pos[row + 1]
    <= p`, which also steps over empty rows), the chunk's part of each row in a plain loop summing into a
    register, flushed atomically into y once per row."""
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule="collapse(i, j, f); pos(f, fp, A(i,j)); "
                                                      "split(fp, p0, p1, 16); parallelize(p0, cpu_thread, atomics)")
    source = kernel.source
    chunk = source.index("for (int64_t p0_ = 0;")
    search = source.index("while (high", chunk)
    rows = source.index("while (q", search)
    track = source.index("while (A_pos2[row", rows)
    hot = source.index("for (; q", track)
    flush = source.index("#pragma omp atomic", hot)
    assert chunk < search < rows < track < hot < flush
    assert source.count("while (high") == 1  # once per chunk, outside the hot loop
    assert source.count("#pragma omp atomic") == 1  # the register's flush, not each entry
    assert "#pragma omp parallel for schedule(static)" in source


def test_a_position_loop_over_its_innermost_part_searches_per_iteration():
    """Parallel over the part that completes the position, no row can be carried: each iteration searches."""
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule="collapse(i, j, f); pos(f, fp, A(i,j)); "
                                                      "parallelize(fp, cpu_thread, atomics)")
    source = kernel.source
    loop = source.index("for (int64_t fp_ = 0;")
    assert source.index("while (high") > loop


def test_bound_gives_the_loop_a_constant_extent_and_checks_each_call():
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule="bound(i, ib, 4, max_exact)")
    assert "for (int64_t ib_ = 0; ib_ < 4; ib_++)" in kernel.source
    x = np.ones(3)
    matrix = sp.csr_matrix(np.arange(12.0).reshape(4, 3))
    np.testing.assert_allclose(densified(kernel(A=matrix, x=x)), matrix.toarray() @ x)
    with pytest.raises(asp.ShapeError, match=r"bound\(i, ib, 4, max_exact\) promises that i has extent exactly 4, but the operands give it 5"):
        kernel(A=sp.csr_matrix(np.ones((5, 3))), x=x)
    at_most = asp.compile(SPMV, {"A": "csr"}, schedule="bound(i, ib, 4, max_constraint)")
    np.testing.assert_allclose(densified(at_most(A=sp.csr_matrix(np.ones((2, 3))), x=x)), [3.0, 3.0])
    with pytest.raises(asp.ShapeError, match="at most 4"):
        at_most(A=sp.csr_matrix(np.ones((5, 3))), x=x)


def test_instrumented_derived_loops_count_each_iteration():
    matrix = sp.csr_matrix(np.array([[1.0, 0, 2], [0, 0, 0], [3, 4, 5], [0, 6, 0]]))
    kernel = asp.compile(SPMV, {"A": "csr"}, schedule="collapse(i, j, f); pos(f, fp, A(i,j)); split(fp, p0, p1, 4)",
                         instrument=True)
    kernel(A=matrix, x=np.ones(3))
    counts = dict(kernel.counts)
    assert counts["∀p0 split(fp, p0, p1, 4)"] == 2  # ⌈6 / 4⌉ chunks
    assert counts["∀p1 split(fp, p0, p1, 4)"] == 6  # one per stored entry


# ----- broken preconditions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, formats, schedule, words", [
    (SPMV, {"A": "csr"}, "split(i, i0, i1, 0)", ["split(i)", "positive integer"]),
    (SPMV, {"A": "csr"}, "divide(i, i0, i1, -2)", ["divide", "positive integer"]),
    (SPMV, {"A": "csr"}, "split(q, q0, q1, 4)", ["split(q, q0, q1, 4)", "no loop over q"]),
    (SPMV, {"A": "csr"}, "split(i, j, i1, 4)", ["split(i, j, i1, 4)", "j is already an index variable"]),
    (SPMV, {"A": "csr"}, "split(i, i0, i0, 4)", ["must differ"]),
    (SPMV, {"A": "csr"}, "split(i, i0, i1, 4); split(i1, a, b, 2)", ["split(i1)", "twice"]),
    (SPMV, {"A": "csr"}, "split(i, i0, i1, 4); split(i, a, b, 2)", ["split(i, a, b, 2)", "no loop over i"]),
    (SPMV, {"A": "csr"}, "parallelize(i, cpu_thread, no_races); split(i, i0, i1, 4)", ["no command may follow"]),
    (SPMV, {"A": "csr"}, "pos(i, ip, A(i,j))", ["pos(i, ip, A(i,j))", "dense", "split i instead"]),
    (SPMV, {"A": "csr"}, "pos(j, jp, A(i,j)); pos(jp, jq, A(i,j))", ["pos(jp)", "already runs over positions"]),
    (SPMV, {"A": "csr"}, "pos(j, jp, B(i,j))", ["pos(j, jp, B(i,j))", "reads no B(i,j)"]),
    (SPMV, {"A": "csr"}, "pos(j, jp, x(j))", ["x(j)", "dense"]),
    (SPMV, {"A": "coo"}, "pos(i, ip, A(i,j))", ["repeats coordinates"]),
    (SPMV, {"A": "csr"}, "collapse(j, i, f)", ["collapse(i)", "directly inside the loop over j"]),
    (SPMV, {"A": "csr"}, "split(i, i0, i1, 2); collapse(i1, j, f)", ["collapse(i1)", "only loops over the tensors"]),
    (TTV, {"B": "dss"}, "collapse(j, k, f); pos(f, fp, B(i,j,k))", ["first two levels"]),
    (SPMV, {"A": "csr"}, "coord(j, j)", ["coord(j)", "not the position variable"]),
    (SPMV, {"A": "csr"}, "bound(i, ib, 0, max_exact)", ["bound(i)", "positive integer"]),
    (SPMV, {"A": "csr"}, "bound(i, ib, 4, min_exact)", ["max_exact"]),
    (SPMV, {"A": "csr"}, "unroll(i, 2); parallelize(i, cpu_thread, no_races)", ["parallelize(i)", "unrolled"]),
    (SPMV, {"A": "csr"}, f"{BALANCED}; parallelize(p0, cpu_thread, no_races)",
     ["parallelize(p0)", "no_races over a reduction"]),
    ("y(i) = a(i) + b(i)", {"a": "s", "b": "s"}, "pos(i, ip, a(i))", ["pos(i, ip, a(i))", "also steps b(i)"]),
    ("y(i) = a(i) + b(i)", {"a": "s"}, "pos(i, ip, a(i))", ["pos(i, ip, a(i))", "coordinates that a(i) lacks"]),
    ("C(i,j) = A(i,j) * B(i,j)", {"C": "csr"}, "split(i, i0, i1, 2); split(j, j0, j1, 2); reorder(i0, j0, i1, j1)",
     ["C is assembled by appending", "the loop over j0 interleaves"]),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "csr", "C": "csr"},
     "split(i, i0, i1, 2); pos(j, jp, A(i,j)); split(jp, j0, j1, 2); reorder(i0, j0, i1)",
     ["pos(j, jp, A(i,j))", "before A(i,j) reaches its level for i"]),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "csr", "B": "dense", "C": "csr"}, "split(i, i0, i1, 2); reorder(i1, i0)",
     ["C is assembled by appending", "out of order"]),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "dcsr", "B": "dense", "C": "dcsr"},
     "collapse(i, j, f); pos(f, fp, A(i,j))", ["C's level for i is sparse"]),
])
def test_broken_derivation_preconditions_are_schedule_errors(expression, formats, schedule, words):
    expect_schedule_error(expression, formats, schedule, words)


# ----- random legal command sequences --------------------------------------------------------------------------

KERNELS = [(SPMV, {"A": "csr"}), (SPMV, {"A": "dcsr"}), (SPMM, {"A": "csr"}), (SDDMM, {"B": "csr", "A": "csr"}),
           (SPGEMM, {"A": "csr", "B": "csr", "C": "csr"}), (TTV, {"B": "dss", "A": "ds"})]


@st.composite
def command_sequences(draw):
    """A kernel and a sequence of commands drawn one at a time from those that apply to the CIN so far
    (a drawn command the schedule rejects is skipped), then perhaps a parallel loop."""
    expression, formats = draw(st.sampled_from(KERNELS))
    schedule, fresh = Schedule(), iter(f"v{k}" for k in range(100))
    for _ in range(draw(st.integers(2, 8))):  # attempts: about half the drawn commands do not apply
        loops = [n for n in walk(_cin(expression, formats, schedule)) if isinstance(n, Forall)]
        loop = draw(st.sampled_from(loops))
        kind = draw(st.sampled_from(["split", "split", "divide", "pos", "pos", "collapse", "reorder", "unroll",
                                     "precompute"]))
        index = str(loop.index)
        if kind == "precompute":  # the whole product into a workspace over the loop's index
            rhs = expression.split("=")[1].strip()
            step = schedule.precompute(rhs, index, next(fresh), *draw(st.sampled_from([(), ("h",)])))
        elif kind in ("split", "divide"):
            step = getattr(schedule, kind)(index, next(fresh), next(fresh), draw(st.integers(1, 6)))
        elif kind == "pos":
            reads = [read for read in _reads(expression) if index in read[read.index("(") + 1:-1].split(",")]
            if not reads:
                continue
            step = schedule.pos(index, next(fresh), draw(st.sampled_from(reads)))
        elif kind in ("collapse", "reorder"):
            if not isinstance(loop.body, Forall):
                continue
            inner = str(loop.body.index)
            step = schedule.collapse(index, inner, next(fresh)) if kind == "collapse" else schedule.reorder(inner, index)
        else:
            step = schedule.unroll(index, draw(st.integers(1, 4)))
        try:
            _cin(expression, formats, step)
        except asp.ScheduleError:
            continue
        schedule = step
    if draw(st.booleans()):
        loops = [n for n in walk(_cin(expression, formats, schedule)) if isinstance(n, Forall)]
        race = draw(st.sampled_from(["no_races", "atomics", "temporary"]))
        step = schedule.parallelize(str(draw(st.sampled_from(loops)).index), "cpu_thread", race)
        try:
            _cin(expression, formats, step)
            schedule = step
        except asp.ScheduleError:
            pass
    return expression, formats, schedule


def _cin(expression, formats, schedule):
    kernel = asp.compile(expression, formats=formats, schedule=schedule)
    kernel.source  # noqa: B018 - lowered, so that a command only lowering refuses is not kept
    return kernel.cin


def _reads(expression):
    """The accesses of a product, as text."""
    return [part.strip() for part in expression.split("=")[1].split("*")]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(drawn=command_sequences(), case=st.sampled_from(["rect", "one-entry", "empty-inner", "size-1"]),
       index_dtype=st.sampled_from([np.int32, np.int64]))
def test_random_command_sequences_compute_the_expression_or_are_refused(drawn, case, index_dtype):
    """Each drawn schedule either lowers and equals the reference, or is refused with a ScheduleError at
    lowering (a check only the loop shapes reveal) — never a wrong answer or another error."""
    expression, formats, schedule = drawn
    try:
        asp.compile(expression, formats=formats, schedule=schedule).source  # noqa: B018
    except asp.ScheduleError:
        event("refused by lowering")
        return
    event(f"ran {len(schedule.commands)} commands")
    run_differential(expression, formats, case, np.float64, index_dtype, schedule=schedule, num_threads=2)


@pytest.mark.parametrize("expression, formats, schedule", [
    (SPMV, {"A": "csr"}, "split(j, j0, j1, 4)"),
    (SPMV, {"A": "csr"}, "collapse(i, j, f)"),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "csr", "B": "csr", "C": "csr"}, "split(i, i0, i1, 2); split(j, j0, j1, 2)"),
    ("C(i,j) = A(i,j) * B(i,j)", {"A": "dcsr", "B": "coo"}, "split(j, j0, j1, 3)"),
])
def test_coordinate_splits_of_sparse_levels_find_them_by_binary_search(expression, formats, schedule):
    """A loop over coordinates that a split or collapse fixes meets a sparse level at each of them: the
    level's segment is bisected for it (every coordinate is visited: `pos` splits the stored ones)."""
    rng = np.random.default_rng(8)
    dense = {name: np.where(rng.random((7, 9)) < 0.4, rng.integers(1, 9, (7, 9)).astype(float), 0.0)
             for name in ("A", "B")}
    kernel = asp.compile(expression, formats=formats, schedule=schedule)
    operands = {name: asp.Tensor.from_numpy(dense[name], format=formats.get(name, "dense"))
                for name in ("A", "B") if f"{name}(" in expression}
    if "x(j)" in expression:
        operands["x"] = rng.random(9)
    expected = dense["A"] @ operands["x"] if "x(j)" in expression else dense["A"] * dense["B"]
    np.testing.assert_allclose(densified(kernel(**operands)), expected)
    assert "_at = " in kernel.source  # the position found by bisection
