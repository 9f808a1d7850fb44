"""Partitioned tensors and the distributed plan, without a cluster: cuts and joins against numpy
slicing, the balance of the cuts, and which index a plan splits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import autosparse as asp
from autosparse.distributed import Combine, Partitioned, partition, prepare
from autosparse.distributed.partitioned import TensorFile, balanced_bounds
from autosparse.tensor.slicing import cut, join

from conftest import assert_same_tensor, format_grid, reference_dense, special_tensors

FORMATS = [f for f in format_grid() if len(f.replace("0", "").replace("1", "").replace("2", "").replace("3", "")) <= 3]
FORMATS += ["csr", "csc", "dcsr", "coo", "s~s", "u~q", "ds~", "bcsr(2)"]


def _order(fmt: str) -> int:
    return 2 if fmt.startswith(("csr", "csc", "dcsr", "coo", "bcsr")) else sum(c in "dshuqc" for c in fmt)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(FORMATS), st.sampled_from(sorted(special_tensors(2, np.float64))), st.data())
def test_cuts_are_numpy_slices_and_join_back(fmt, case, data):
    order = _order(fmt)
    coords, values, shape = special_tensors(order, np.float64, seed=3)[case]
    tensor = asp.Tensor.from_coo(coords, values, shape, format=fmt)
    dense = reference_dense(coords, values, shape, np.float64)
    mode = data.draw(st.integers(0, order - 1))
    extent = shape[mode]
    cuts = sorted(data.draw(st.lists(st.integers(0, extent), max_size=3)))
    bounds = [0, *cuts, extent]
    pieces = [cut(tensor, mode, b, e) for b, e in zip(bounds, bounds[1:])]
    for piece, b, e in zip(pieces, bounds, bounds[1:]):
        assert piece.format == tensor.format
        np.testing.assert_array_equal(piece.to_numpy(), np.take(dense, range(b, e), axis=mode))
    joined = join(pieces, mode)
    assert joined.format == tensor.format and joined.shape == tensor.shape
    np.testing.assert_array_equal(joined.to_numpy(), dense)


@pytest.mark.parametrize("fmt", ["csr", "dcsr", "coo", "sss", "dss", "ucq"])
def test_cuts_along_the_first_stored_mode_are_views_and_joins_restore_storage(fmt):
    order = 2 if fmt in ("csr", "dcsr", "coo") else 3
    coords, values, shape = special_tensors(order, np.float64, seed=5)["explicit-zero"]
    tensor = asp.Tensor.from_coo(coords, values, shape, format=fmt)
    pieces = [cut(tensor, 0, b, e) for b, e in [(0, 1), (1, 1), (1, shape[0])]]
    assert any(np.shares_memory(p.vals, tensor.vals) for p in pieces if p.vals.size)
    assert_same_tensor(join(pieces, 0), tensor)  # explicit zeros and storage order kept


def test_cut_refuses_bounds_outside_the_mode():
    tensor = asp.Tensor.from_numpy(np.eye(3), "csr")
    with pytest.raises(asp.ShapeError, match=r"\[2, 5\)"):
        cut(tensor, 0, 2, 5)
    with pytest.raises(asp.ShapeError, match="join"):
        join([tensor, asp.Tensor.from_numpy(np.eye(4), "csr")], 0)


def _power_law(n: int, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    lengths = np.minimum((rng.pareto(1.2, n) * 3).astype(int) + 1, n)
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n, len(rows))
    return sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))


@pytest.mark.parametrize("parts", [1, 2, 3, 7])
def test_partition_balances_nonzeros_not_rows(parts):
    matrix = _power_law(500)
    tensor = asp.Tensor.from_scipy(matrix)
    partitioned = partition(tensor, parts)
    assert len(partitioned.chunks) == parts
    longest_row = int(np.diff(matrix.indptr).max())
    share = tensor.nnz / parts
    assert all(abs(c.nnz - share) <= longest_row for c in partitioned.chunks)
    np.testing.assert_array_equal(partitioned.gather().to_numpy(), matrix.toarray())
    assert partitioned.shape == tensor.shape and partitioned.nnz == tensor.nnz


def test_balanced_bounds_never_make_empty_runs():
    assert balanced_bounds(np.array([2]), np.array([100]), 5, 4) == (0, 3, 5)  # one heavy coordinate
    assert balanced_bounds(np.array([], int), np.array([], int), 6, 3) == (0, 2, 4, 6)
    assert balanced_bounds(np.array([], int), np.array([], int), 2, 5) == (0, 1, 2)
    assert balanced_bounds(np.array([], int), np.array([], int), 0, 2) == (0, 0)
    with pytest.raises(asp.AutosparseError, match="positive integer, but found 0"):
        balanced_bounds(np.array([0]), np.array([1]), 1, 0)


def test_partitioned_chunks_must_agree():
    a = asp.Tensor.from_numpy(np.ones((2, 3)), "csr")
    with pytest.raises(asp.ShapeError, match="chunks of format"):
        Partitioned((a, asp.Tensor.from_numpy(np.ones((2, 4)), "csr")), 0)
    with pytest.raises(asp.ShapeError, match="chunks of format"):
        Partitioned((a, asp.Tensor.from_numpy(np.ones((2, 3)), "dcsr")), 0)


def test_from_directory_reads_chunks_in_name_order(tmp_path):
    matrix = sp.random(30, 12, 0.2, format="csr", random_state=4)
    whole = asp.Tensor.from_scipy(matrix)
    for k, (b, e) in enumerate([(0, 10), (10, 11), (11, 30)]):
        asp.write(tmp_path / f"block{k:02d}.mtx", cut(whole, 0, b, e))
    partitioned = Partitioned.from_directory(tmp_path, format="csr")
    assert all(isinstance(c, TensorFile) for c in partitioned.chunks)  # nothing read but the headers
    assert partitioned.bounds == (0, 10, 11, 30) and partitioned.nnz == whole.nnz
    np.testing.assert_array_equal(partitioned.gather().to_numpy(), matrix.toarray())
    (tmp_path / "empty").mkdir()
    with pytest.raises(asp.AutosparseError, match="Expected .mtx or .tns files"):
        Partitioned.from_directory(tmp_path / "empty")


def test_tns_chunks_take_their_shape_from_the_header_or_their_coordinates(tmp_path):
    tensor = asp.Tensor.from_coo([[0, 3], [1, 1], [0, 2]], [1.5, 2.0], (6, 2, 3), format="sss")
    asp.write(tmp_path / "a.tns", tensor)
    (tmp_path / "b.tns").write_text("# shape: 3 2 3\n1 2 3 4.5\n2 1 1 1\n")
    described = [TensorFile.of(tmp_path / n) for n in ("a.tns", "b.tns")]
    assert [(f.shape, f.nnz, str(f.format)) for f in described] == [((6, 2, 3), 2, "ucq"), ((3, 2, 3), 2, "ucq")]
    assert all(Path(f.path).is_absolute() for f in described)  # workers elsewhere find them
    np.testing.assert_array_equal(described[0].load().to_numpy(), tensor.to_numpy())
    partitioned = Partitioned.from_directory(tmp_path, format="sss")
    assert partitioned.shape == (9, 2, 3) and partitioned.gather().to_numpy()[7, 0, 0] == 1
    (tmp_path / "c.tns").write_text("1 2 3 4.5\n")  # no shape line: its trailing empty rows would vanish
    with pytest.raises(asp.ShapeError, match="shape:"):
        Partitioned.from_directory(tmp_path)


def test_empty_chunks_keep_their_place():
    a = _csr(4, 3, seed=6)
    chunks = Partitioned((cut(a, 0, 0, 0), cut(a, 0, 0, 3), cut(a, 0, 3, 4)), 0)
    job = prepare("y(i) = A(i,j) * x(j)", A=chunks, x=np.ones(3))
    assert [t.shape for t in job.plan.chunk_operands(1, job.operands).values()] == [(3, 3)]


def test_triangular_formats_are_refused_before_cutting():
    lower = asp.Tensor.from_numpy(np.tril(np.ones((5, 5))), "dt")
    with pytest.raises(asp.FormatError, match="convert it"):
        partition(lower, 2)


# --- plans ------------------------------------------------------------------------------------------


def _csr(n=40, m=30, seed=0):
    return asp.Tensor.from_scipy(sp.random(n, m, 0.2, format="csr", random_state=seed))


@pytest.mark.parametrize("expression, formats, index, combine", [
    ("y(i) = A(i,j) * x(j)", {"A": "csr"}, "i", Combine.JOIN),
    ("y(i) = A(i,j) * x(j)", {"A": "csc"}, "j", Combine.SUM),          # the columns come first
    ("C(j,k) = A(i,j) * A(i,k)", {"A": "csr", "C": "dense"}, "i", Combine.SUM),  # j would cut A two ways
    ("s() = a(i) * b(i)", {}, "i", Combine.SUM),
    ("y(i) = A(i,j) * x(j) + b(i)", {"A": "csr"}, "i", Combine.JOIN),
])
def test_the_plan_splits_the_outermost_index_that_stays_exact(expression, formats, index, combine):
    rng = np.random.default_rng(1)
    operands = {"A": _csr(), "x": rng.random(30), "a": rng.random(9), "b": rng.random(9 if "s()" in expression else 40)}
    used = {n: (v.to_format(formats[n]) if n in formats else v) for n, v in operands.items()
            if f"{n}(" in expression.split("=", 1)[1]}
    plan = prepare(expression, parts=3, format=formats.get(expression[0]), **used).plan
    assert str(plan.index) == index and plan.combine is combine
    assert plan.chunks == 3 and plan.bounds[0] == 0


def test_any_summed_index_splits_and_a_tensor_read_two_ways_is_two_operands():
    plan = prepare("s() = sum(i, a(i) + 2)", parts=2, a=np.ones(4)).plan  # 2 per i, in every chunk
    assert str(plan.index) == "i" and plan.combine is Combine.SUM and plan.chunks == 2
    plan = prepare("s() = a(i) + 2", parts=2, a=np.ones(4)).plan  # Σ a + 2: i sums part of it, never split
    assert plan.index is None and plan.chunks == 1
    job = prepare("C(i,j) = A(i,k) * A(k,j)", parts=2, A=_csr(30, 30))  # one A cut by rows, one sent whole
    assert job.spec.expression == "C(i,j) = A(i,k) * A1(k,j)"
    assert dict(job.plan.cuts) == {"A": (0,)} and job.plan.broadcast == ("A1",)
    assert job.operands["A1"] is job.operands["A"]
    square = partition(_csr(30, 30), 2)  # partitioned: the second read is its chunks joined on a worker
    job = prepare("C(i,j) = A(i,k) * A(k,j)", A=square)
    assert job.plan.bounds == square.bounds and job.plan.broadcast == ("A1",)
    sparser = asp.Tensor.from_scipy(sp.random(30, 30, 0.05, format="csr", random_state=1))
    with pytest.raises(asp.ShapeError, match=r"B\(i,j\) is partitioned along j"):  # i at its other mode
        prepare("C(i,j) = A(i,j) * B(i,j)", A=partition(_csr(30, 30), 3), B=partition(sparser, 2, mode=1))


def test_sums_into_unordered_formats_add_sorted_twins():
    job = prepare("C(j,k) = A(i,j) * A(i,k)", format="ds~", parts=2, index="i", A=_csr())  # default: j, A as CSC
    assert job.plan.combine is Combine.SUM and dict(job.spec.formats)["C"] == "ds" and job.result_format == "ds~"


def test_bad_input_fails_before_anything_is_planned():
    with pytest.raises(asp.ShapeError):
        prepare("y(i) = A(i,j) * x(j)", A=_csr(), x=np.ones(31))
    with pytest.raises(asp.AutosparseError, match="Expected operands"):
        prepare("y(i) = A(i,j) * x(j)", A=_csr())
    with pytest.raises(asp.ParseError):
        prepare("y(i) = A(i,j) * ", A=_csr())
    with pytest.raises(asp.ScheduleError):
        prepare("y(i) = A(i,j) * x(j)", schedule="reorder(q, i)", A=_csr(), x=np.ones(30))
    with pytest.raises(asp.AutosparseError, match="'='"):
        prepare("y(i) += A(i,j) * x(j)", A=_csr(), x=np.ones(30))
    with pytest.raises(asp.AutosparseError, match="positive integer, but found 0"):
        prepare("y(i) = A(i,j) * x(j)", parts=0, A=_csr(), x=np.ones(30))
    with pytest.raises(asp.ShapeError, match=r"A\(i,j\) is partitioned along i"):
        prepare("y(i) = A(i,j) * x(j)", index="j", A=partition(_csr(), 2), x=np.ones(30))


def test_partitioned_operands_fix_the_split_and_cut_the_others_alike():
    a, b = _csr(seed=1), _csr(seed=2)
    job = prepare("C(i,j) = A(i,j) * B(i,j)", format="csr", A=partition(a, 3), B=b)
    plan, tensors = job.plan, job.operands
    assert plan.bounds == partition(a, 3).bounds
    chunk = plan.chunk_operands(1, tensors)
    begin, end = plan.bounds[1:3]
    np.testing.assert_array_equal(chunk["B"].to_numpy(), b.to_numpy()[begin:end])
    with pytest.raises(asp.ShapeError, match="line up"):
        prepare("C(i,j) = A(i,j) * B(i,j)", format="csr", A=partition(a, 3), B=partition(b, 2))


def test_estimated_work_balances_chunks_of_an_autoscheduled_kernel():
    matrix = _power_law(400, seed=3)
    a = asp.Tensor.from_scipy(matrix)
    plan = prepare("C(i,j) = A(i,k) * B(k,j)", format="csr", schedule="auto", parts=2, A=a, B=a).plan
    assert plan.cost_model == "estimate" and plan.chunks == 2
    assert max(plan.costs) <= 1.5 * min(plan.costs)
