"""Layouts that level formats cannot express (Zhao et al. §2): packed triangular matrices. Each kernel
iterates the layout natively (the shape tests read the loops in the generated C) and equals numpy."""

from __future__ import annotations

import numpy as np
import pytest

import autosparse as asp
from conftest import densified


def _triangle(n, seed, upper=False, density=0.6):
    rng = np.random.default_rng(seed)
    m = np.where(rng.random((n, n)) < density, rng.integers(1, 9, (n, n)).astype(float), 0.0)
    return np.triu(m) if upper else np.tril(m)


@pytest.mark.parametrize("name, upper", [("lower", False), ("upper", True)])
@pytest.mark.parametrize("n", [1, 2, 9])
def test_packed_triangular_round_trips(name, upper, n):
    m = _triangle(n, n, upper)
    tensor = asp.Tensor.from_numpy(m, format=name)
    assert str(tensor.format) == ("dt^" if upper else "dt")
    assert tensor.nnz == n * (n + 1) // 2  # every coordinate of the triangle is stored
    np.testing.assert_array_equal(tensor.to_numpy(), m)
    np.testing.assert_array_equal(tensor.to_format("csr").to_numpy(), m)
    assert tensor.to_format("csr").nnz == np.count_nonzero(m)  # zeros of the triangle are fill
    np.testing.assert_array_equal(asp.Tensor(tensor.shape, name, tensor.levels, tensor.vals).to_numpy(), m)


def test_packed_value_positions_follow_the_paper():
    """value(i, j) = data[i(i+1)/2 + j] for the lower triangle."""
    m = np.tril(np.arange(1.0, 17.0).reshape(4, 4))
    vals = asp.Tensor.from_numpy(m, format="lower").vals
    for i in range(4):
        for j in range(i + 1):
            assert vals[i * (i + 1) // 2 + j] == m[i, j]


def test_entries_outside_the_triangle_and_non_square_shapes_are_refused():
    with pytest.raises(asp.FormatError, match="on or below the diagonal"):
        asp.Tensor.from_numpy(np.ones((3, 3)), format="lower")
    with pytest.raises(asp.FormatError, match="on or above the diagonal"):
        asp.Tensor.from_numpy(np.tril(np.ones((3, 3))), format="upper")
    with pytest.raises(asp.FormatError, match="square"):
        asp.Tensor.from_numpy(np.zeros((3, 4)), format="lower")
    with pytest.raises(asp.FormatError, match="below a dense level"):
        asp.Format("st")


@pytest.mark.parametrize("name, upper", [("lower", False), ("upper", True)])
@pytest.mark.parametrize("n", [1, 5, 40])
def test_spmv_on_a_packed_triangle(name, upper, n):
    m = _triangle(n, 3, upper)
    x = np.random.default_rng(4).random(n)
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": name})
    y = kernel(A=asp.Tensor.from_numpy(m, format=name), x=x)
    np.testing.assert_allclose(densified(y), m @ x)
    # the triangle's own bounds: a row's segment from the row, no index array
    segment = "i_ * j_dim - i_ * (i_ - 1) / 2" if upper else "i_ * (i_ + 1) / 2"
    assert segment in kernel.source and "A_p2_base" in kernel.source and "A_crd1" not in kernel.source


@pytest.mark.parametrize("expression, reference", [
    ("C(i,j) = A(i,j) + B(i,j)", lambda a, b: a + b),
    ("C(i,j) = A(i,j) * B(i,j)", lambda a, b: a * b),
    ("y(i) = A(i,j) * B(i,j)", lambda a, b: (a * b).sum(axis=1)),
    ("C(i,k) = A(i,j) * B(j,k)", lambda a, b: a @ b),
])
@pytest.mark.parametrize("b_format", ["csr", "dense", "lower"])
def test_triangles_meet_other_formats(expression, reference, b_format):
    a = _triangle(8, 5)
    b = _triangle(8, 6) if b_format == "lower" else np.random.default_rng(6).random((8, 8)) * (
        np.random.default_rng(7).random((8, 8)) < 0.5)
    kernel = asp.compile(expression, formats={"A": "lower", "B": b_format})
    result = kernel(A=asp.Tensor.from_numpy(a, format="lower"), B=asp.Tensor.from_numpy(b, format=b_format))
    np.testing.assert_allclose(densified(result), reference(a, b))


def test_a_triangle_cannot_be_split_by_positions():
    with pytest.raises(asp.ScheduleError, match="segment"):
        asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "lower"},
                    schedule="pos(j, jp, A(i,j))").source


# --- blocked CSR -------------------------------------------------------------------------------------------

def _sparse(shape, density, seed):
    rng = np.random.default_rng(seed)
    return np.where(rng.random(shape) < density, rng.integers(1, 9, shape).astype(float), 0.0)


@pytest.mark.parametrize("spec, blocks", [("bcsr(4)", (4, 4)), ("bcsr(2,3)", (2, 3)), ("bcsr(1)", (1, 1)),
                                          ("bcsr(8,8)", (8, 8))])
@pytest.mark.parametrize("shape", [(10, 9), (1, 1), (16, 16), (3, 20)])
def test_bcsr_round_trips(spec, blocks, shape):
    m = _sparse(shape, 0.3, 1)
    tensor = asp.Tensor.from_numpy(m, format=spec)
    assert tensor.format.blocks == blocks and tensor.format.order == 2 and tensor.shape == shape
    np.testing.assert_array_equal(tensor.to_numpy(), m)
    np.testing.assert_array_equal(tensor.to_format("csr").to_numpy(), m)
    np.testing.assert_array_equal(asp.Tensor.from_scipy(tensor.to_scipy(), format=spec).to_numpy(), m)
    again = asp.Tensor(tensor.shape, spec, tensor.levels, tensor.vals)
    np.testing.assert_array_equal(again.to_numpy(), m)
    rows, cols = (-(-shape[0] // blocks[0]), -(-shape[1] // blocks[1]))
    nonzero_blocks = {(i // blocks[0], j // blocks[1]) for i, j in zip(*np.nonzero(m))}
    assert len(tensor.levels[1]["crd"]) == len(nonzero_blocks) and len(tensor.levels[1]["pos"]) == rows + 1
    assert tensor.nnz == len(nonzero_blocks) * blocks[0] * blocks[1]  # blocks are stored whole
    assert max(tensor.levels[1]["crd"], default=0) < cols


@pytest.mark.parametrize("spec", ["ubcsr(4)", "ubcsr(2,3)", "ubcsr(1)"])
@pytest.mark.parametrize("shape", [(10, 9), (1, 1), (16, 16), (3, 20)])
def test_unaligned_bcsr_round_trips_with_the_fewest_blocks(spec, shape):
    """Blocks start at any column: each block row's are at least bc apart, cover its entries, and are no
    more than the aligned layout needs (greedy covering from the left is optimal)."""
    m = _sparse(shape, 0.3, 6)
    tensor = asp.Tensor.from_numpy(m, format=spec)
    assert str(tensor.format) == spec.replace("(4)", "(4,4)").replace("(1)", "(1,1)")
    np.testing.assert_array_equal(tensor.to_numpy(), m)
    np.testing.assert_array_equal(asp.Tensor(tensor.shape, spec, tensor.levels, tensor.vals).to_numpy(), m)
    pos, crd = tensor.levels[1]["pos"], tensor.levels[1]["crd"]
    br, bc = tensor.format.blocks
    for row in range(len(pos) - 1):
        starts = crd[pos[row]:pos[row + 1]]
        assert np.all(np.diff(starts) >= bc)
    aligned = asp.Tensor.from_numpy(m, format=f"bcsr({br},{bc})")
    assert len(crd) <= len(aligned.levels[1]["crd"])


def test_overlapping_unaligned_blocks_are_refused():
    levels = [{}, {"pos": np.array([0, 2]), "crd": np.array([0, 2])}, {}, {}]
    with pytest.raises(asp.FormatError, match="at least 4 columns apart"):
        asp.Tensor((4, 8), "ubcsr(4)", levels, np.zeros(32))


@pytest.mark.parametrize("spec", ["bcsr(4)", "bcsr(2,3)", "bcsr(1)", "bcsr(5)", "ubcsr(4)", "ubcsr(2,3)"])
@pytest.mark.parametrize("shape", [(10, 9), (1, 1), (16, 16), (3, 20), (0, 4)])
def test_spmv_on_bcsr(spec, shape):
    m = _sparse(shape, 0.3, 2)
    x = np.random.default_rng(3).random(shape[1])
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": spec})
    y = kernel(A=asp.Tensor.from_numpy(m, format=spec), x=x)
    np.testing.assert_allclose(densified(y), m @ x)


def test_bcsr_spmv_runs_dense_block_loops():
    kernel = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "bcsr(4)"})
    assert str(kernel.cin) == "suchthat(∀iB ∀jB ∀ib ∀jb y(i) += A(iB,jB,ib,jb) * x(j), split(i, iB, ib, 4), " \
                              "split(j, jB, jb, 4))"
    source = kernel.source
    assert "for (int64_t ib_ = 0; ib_ < min64(4, i_dim - iB_ * 4); ib_++)" in source  # the last block cut short
    assert "for (int64_t jb_ = 0; jb_ < min64(4, j_dim - jB_ * 4); jb_++)" in source
    assert "A_vals[(A_p2 * 4 + ib_) * 4 + jb_]" in source  # a block's values in order


SPGEMM_FORMATS = ["coo", "csr", "dcsr", "bcsr(4)"]


@pytest.mark.parametrize("fa, fb", [("ubcsr(3)", "csr"), ("ubcsr(3)", "dcsr"), ("ubcsr(3)", "coo"),
                                    ("csr", "ubcsr(3)"), ("dcsr", "ubcsr(3)"), ("coo", "ubcsr(3)")])
def test_spgemm_with_unaligned_blocks(fa, fb):
    a, b = _sparse((8, 10), 0.3, 7), _sparse((10, 7), 0.3, 8)
    kernel = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": fa, "B": fb})
    result = kernel(A=asp.Tensor.from_numpy(a, format=fa), B=asp.Tensor.from_numpy(b, format=fb))
    np.testing.assert_allclose(densified(result), a @ b)


@pytest.mark.parametrize("fa", SPGEMM_FORMATS)
@pytest.mark.parametrize("fb", SPGEMM_FORMATS)
@pytest.mark.parametrize("shape", [(9, 11, 7), (4, 4, 4), (1, 5, 1)])
def test_spgemm_over_every_pair_of_coo_csr_dcsr_bcsr(fa, fb, shape):
    m, k, n = shape
    a, b = _sparse((m, k), 0.3, 4), _sparse((k, n), 0.3, 5)
    operands = {"A": asp.Tensor.from_numpy(a, format=fa), "B": asp.Tensor.from_numpy(b, format=fb)}
    dense = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": fa, "B": fb, "C": "dense"})
    np.testing.assert_allclose(dense(**operands), a @ b)
    if fa != "bcsr(4)":  # rows of a blocked A's product arrive block column by block column
        csr = asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": fa, "B": fb, "C": "csr"})
        np.testing.assert_allclose(densified(csr(**operands)), a @ b)


def test_blocked_errors():
    with pytest.raises(asp.ScheduleError, match="one block size"):
        asp.compile("C(i,j) = A(i,k) * B(k,j)", formats={"A": "bcsr(4)", "B": "bcsr(2)"}).source
    with pytest.raises(asp.ScheduleError, match="convert"):
        asp.compile("C(i,j) = A(i,j)", formats={"A": "csr", "C": "bcsr(4)"}).source
    with pytest.raises(asp.ScheduleError, match="factor"):
        asp.compile("C(i,j) = A(i,j) + B(i,j)", formats={"A": "csr", "B": "bcsr(2)"}).source
    with pytest.raises(asp.ScheduleError, match="different columns"):
        asp.compile("C(i,j) = A(i,j) * B(i,j)", formats={"A": "ubcsr(2)", "B": "ubcsr(2)"}).source
    with pytest.raises(asp.FormatError, match="positive block"):
        asp.Format("bcsr(0)")
    padded = asp.Tensor.from_numpy(np.ones((3, 3)), format="bcsr(2)")
    vals = np.ones_like(padded.vals)  # a one where the 2x2 blocks reach past the 3x3 shape
    with pytest.raises(asp.FormatError, match="past the shape"):
        asp.Tensor((3, 3), "bcsr(2)", padded.levels, vals)


from hypothesis import given, settings, strategies as st  # noqa: E402

LAYOUTS = ["csr", "coo", "dcsr", "ds-", "ds~", "bcsr(2)", "bcsr(3)", "bcsr(2,3)", "ubcsr(2)", "u~q"]
KERNELS = {
    "y(i) = A(i,j) * x(j)": lambda a, b, x: a @ x,
    "C(i,j) = A(i,j) + B(i,j)": lambda a, b, x: a + b,
    "C(i,j) = A(i,j) * B(i,j)": lambda a, b, x: a * b,
    "C(i,k) = A(i,j) * B(j,k)": lambda a, b, x: a @ b.T,
}


@settings(max_examples=60, deadline=None)
@given(expression=st.sampled_from(list(KERNELS)), fa=st.sampled_from(LAYOUTS), fb=st.sampled_from(LAYOUTS),
       rows=st.integers(1, 9), cols=st.integers(1, 9), density=st.floats(0, 1), seed=st.integers(0, 2**16))
def test_random_kernels_over_layouts(expression, fa, fb, rows, cols, density, seed):
    a, b = _sparse((rows, cols), density, seed), _sparse((rows, cols), density, seed + 1)
    x = np.random.default_rng(seed).random(cols)
    operands, formats = {"A": asp.Tensor.from_numpy(a, format=fa)}, {"A": fa}
    if "B(" in expression:
        formats["B"] = fb
        operands["B"] = asp.Tensor.from_numpy(b.T if "B(j,k)" in expression else b, format=fb)
    else:
        operands["x"] = x
    try:
        result = asp.compile(expression, formats=formats)(**operands)
    except asp.ScheduleError as error:  # an unordered level can be neither merged nor searched; an index
        # is split by one block size only; the loops over a blocked operand's blocks cannot cover a sum
        assert "~" in fa + fb or any(why in str(error) for why in ("block size", "factor", "unaligned"))
        return
    np.testing.assert_allclose(densified(result), KERNELS[expression](a, b, x))


# --- unsorted COO ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["u~q", "u-q", "u~cq"])
def test_spmv_and_reductions_over_unsorted_coo(spec):
    """Unsorted COO's rows recur: a sum into a row adds to what an earlier run of it stored."""
    order = 3 if spec == "u~cq" else 2
    shape = (6, 4, 9) if order == 3 else (8, 9)
    a = _sparse(shape, 0.5, 9)
    tensor = asp.Tensor.from_numpy(a, format=spec)
    if order == 2:
        x = np.random.default_rng(10).random(9)
        y = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": spec})(A=tensor, x=x)
        np.testing.assert_allclose(densified(y), a @ x)
        total = asp.compile("s() = A(i,j)", formats={"A": spec})(A=tensor)
    else:
        total = asp.compile("s() = A(i,j,k)", formats={"A": spec})(A=tensor)
        y = asp.compile("y(i) = A(i,j,k)", formats={"A": spec})(A=tensor)
        np.testing.assert_allclose(densified(y), a.sum(axis=(1, 2)))
    assert total == pytest.approx(a.sum())


def test_unsorted_coo_meets_a_sorted_operand_by_finding_it():
    """Each entry of the unsorted operand finds its row and column in the sorted one by binary search;
    merging them is refused (the unsorted entries of a row come in no order)."""
    a, b = _sparse((8, 9), 0.4, 11), _sparse((8, 9), 0.6, 12)
    operands = {"A": asp.Tensor.from_numpy(a, format="dcsr"), "B": asp.Tensor.from_numpy(b, format="u~q")}
    kernel = asp.compile("C(i,j) = A(i,j) * B(i,j)", formats={"A": "dcsr", "B": "u~q"},
                         schedule="coiterate(i, binary, A); coiterate(j, binary, A)")
    np.testing.assert_allclose(densified(kernel(**operands)), a * b)
    with pytest.raises(asp.ScheduleError, match="unordered"):
        asp.compile("C(i,j) = A(i,j) * B(i,j)", formats={"A": "csr", "B": "u~q"}).source


# --- unsorted COO found by hashing its whole coordinates -----------------------------------------------------

def _shuffled(a: np.ndarray, spec: str, seed: int) -> asp.Tensor:
    """`a` in unsorted COO with its entries in a random order, so a row's entries come in scattered runs."""
    coords = np.array(np.nonzero(a), dtype=np.int32).reshape(a.ndim, -1)
    order = np.random.default_rng(seed).permutation(coords.shape[1])
    coords = coords[:, order]
    levels = [{"pos": np.array([0, coords.shape[1]], dtype=np.int32), "crd": coords[0]}]
    levels += [{"crd": row} for row in coords[1:]]
    return asp.Tensor(a.shape, spec, levels, a[tuple(coords)].astype(float))


HASHED = [  # (expression, reference, the hashed operand's index count, schedule)
    ("C(i,j) = A(i,j) * B(i,j)", lambda a, b: a * b, "coiterate(j, hash, B)"),
    ("C(i,j) = A(i,j) + B(i,j)", lambda a, b: a + b, "coiterate(j, hash, B)"),
    ("C(i,j) = A(i,j) * B(i,j) * A(i,j)", lambda a, b: a * b * a, "coiterate(j, hash, B)"),
    ("y(i) = B(i,j) * A(i,j)", lambda a, b: (a * b).sum(axis=1), "coiterate(j, hash, B)"),
]


@pytest.mark.parametrize("expression, reference, schedule", HASHED)
@pytest.mark.parametrize("a_format, c_format", [("csr", "csr"), ("dcsr", "dense"), ("csr", "dcsr")])
@pytest.mark.parametrize("shape, density", [((7, 9), 0.4), ((1, 6), 0.7), ((6, 1), 0.5), ((5, 5), 0.0),
                                            ((5, 5), 1.0), ((4, 3), 0.05)])
def test_unsorted_coo_is_found_by_hashing_its_coordinates(expression, reference, schedule, a_format, c_format,
                                                         shape, density):
    """The loops walk A and look each (i, j) up in a table of B's entries: B's rows come in scattered
    runs, which no level-by-level search could find, and a sorted result is appended in A's order."""
    a, b = _sparse(shape, density, 21), _sparse(shape, max(density, 0.3), 22)
    formats = {"A": a_format, "B": "u~q"}
    if expression.startswith("C"):
        formats["C"] = c_format
    kernel = asp.compile(expression, formats=formats, schedule=schedule)
    assert "keyedfind2" in kernel.source
    result = kernel(A=asp.Tensor.from_numpy(a, format=a_format), B=_shuffled(b, "u~q", 23))
    np.testing.assert_allclose(densified(result), reference(a, b))


def test_a_hashed_unsorted_coo_holds_explicit_zeros_empty_and_single_entries():
    a = _sparse((6, 7), 0.6, 31)
    kernel = asp.compile("C(i,j) = A(i,j) * B(i,j)", formats={"A": "csr", "B": "u~q", "C": "csr"},
                         schedule="coiterate(j, hash, B)")
    for b in (np.zeros((6, 7)), np.eye(6, 7) * 0, np.pad([[3.0]], ((2, 3), (4, 2)))):
        result = kernel(A=asp.Tensor.from_numpy(a, format="csr"), B=_shuffled(b + 0.0, "u~q", 1))
        np.testing.assert_allclose(densified(result), a * b)
    zeros = _shuffled(np.ones((6, 7)), "u~q", 2)
    zeros = asp.Tensor((6, 7), "u~q", [dict(level) for level in zeros.levels], np.zeros(zeros.nnz))
    np.testing.assert_allclose(densified(kernel(A=asp.Tensor.from_numpy(a, format="csr"), B=zeros)), 0 * a)


def test_three_way_unsorted_coo_is_hashed_by_all_three_coordinates():
    a, b = _sparse((4, 5, 6), 0.3, 41), _sparse((4, 5, 6), 0.5, 42)
    kernel = asp.compile("C(i,j,k) = A(i,j,k) * B(i,j,k)", formats={"A": "sss", "B": "u~cq", "C": "sss"},
                         schedule="coiterate(k, hash, B)")
    assert "keyedfind3" in kernel.source
    result = kernel(A=asp.Tensor.from_numpy(a, format="sss"), B=_shuffled(b, "u~cq", 43))
    np.testing.assert_allclose(densified(result), a * b)


def test_hashing_an_unsorted_coo_costs_its_entries_once_and_a_lookup_per_entry_of_the_walked_operand():
    """Instrumented: the table takes nnz(B) insertions, once per call; the loops run over A alone."""
    a, b = _sparse((30, 40), 0.1, 51), _sparse((30, 40), 0.5, 52)
    kernel = asp.compile("C(i,j) = A(i,j) * B(i,j)", formats={"A": "csr", "B": "u~q", "C": "csr"},
                         schedule="coiterate(j, hash, B)", instrument=True)
    result = kernel(A=asp.Tensor.from_numpy(a, format="csr"), B=_shuffled(b, "u~q", 53))
    counts = kernel.counts
    np.testing.assert_allclose(densified(result), a * b)
    assert counts["hash B by coordinates"] == np.count_nonzero(b)
    assert sum(counts.values()) <= np.count_nonzero(a) + np.count_nonzero(b) + a.shape[0]


def test_a_hashed_unsorted_coo_storing_a_coordinate_twice_is_refused():
    levels = [{"pos": np.array([0, 3], dtype=np.int32), "crd": np.array([2, 0, 2], dtype=np.int32)},
              {"crd": np.array([1, 3, 1], dtype=np.int32)}]
    b = asp.Tensor((3, 4), "u~q", levels, np.array([1.0, 2.0, 3.0]))
    kernel = asp.compile("C(i,j) = A(i,j) * B(i,j)", formats={"A": "csr", "B": "u~q"}, schedule="coiterate(j, hash, B)")
    with pytest.raises(asp.FormatError, match="stored twice"):
        kernel(A=asp.Tensor.from_numpy(np.ones((3, 4)), format="csr"), B=b)


def test_only_unsorted_coo_is_hashed_by_its_whole_coordinates():
    """Below a sorted level, the entries hold a coordinate the table would not see."""
    with pytest.raises(asp.ScheduleError, match="only unsorted COO"):
        asp.compile("C(i,j,k) = A(i,j,k) * B(i,j,k)", formats={"A": "sss", "B": "du~q"},
                    schedule="coiterate(k, hash, B)").source


@settings(max_examples=25, deadline=None)
@given(expression=st.sampled_from([e for e, _, _ in HASHED]), fa=st.sampled_from(["csr", "coo", "dcsr", "ds-", "dense"]),
       fc=st.sampled_from(["csr", "dense", "dcsr"]), rows=st.integers(1, 8), cols=st.integers(1, 8),
       density=st.floats(0, 1), seed=st.integers(0, 2**16))
def test_random_kernels_over_a_hashed_unsorted_coo(expression, fa, fc, rows, cols, density, seed):
    a, b = _sparse((rows, cols), density, seed), _sparse((rows, cols), density, seed + 1)
    formats = {"A": fa, "B": "u~q", **({"C": fc} if expression.startswith("C") else {})}
    kernel = asp.compile(expression, formats=formats, schedule="coiterate(j, hash, B)")
    try:
        result = kernel(A=asp.Tensor.from_numpy(a, format=fa), B=_shuffled(b, "u~q", seed + 2))
    except asp.ScheduleError as error:  # A's decreasing rows cannot append to a sorted result, nor meet a dense loop
        assert fa == "ds-" and "increasing" in str(error)
        return
    reference = next(r for e, r, _ in HASHED if e == expression)
    np.testing.assert_allclose(densified(result), reference(a, b))
