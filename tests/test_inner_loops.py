"""Unroll-and-jam of sparse loops around a dense accumulation (codegen/jam.py): which loops it rewrites,
and that the kernels it rewrites (SpMM, MTTKRP, TTM) give numpy's and scipy's results, the same bit for bit
as the plain loop's order of additions, on rows of every length around the jam factors."""

import numpy as np
import pytest
import scipy.sparse as sp

import autosparse as asp

from kernel_cases import sddmm_in_loop_order
from autosparse.codegen import c_ast as c
from autosparse.codegen.jam import NARROW, WIDE, jam_loops

SPMM = ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "dense", "C": "dense"})


def _dense(result) -> np.ndarray:
    return result.to_numpy() if isinstance(result, asp.Tensor) else np.asarray(result)


def _spmm_source(num_threads: int = 1) -> str:
    return asp.compile(SPMM[0], formats=SPMM[1], num_threads=num_threads).source


def _sparse_loop(body: tuple) -> c.For:
    p, end = c.Var("p"), c.Var("end")
    return c.For(None, c.lt(p, end), c.increment(p), c.Block(body))


def _decl_k() -> c.Decl:
    return c.Decl(c.CType("int64_t", const=True), "k", c.Var("crd")[c.Var("p")])


def _dense_loop(update: c.Stmt) -> c.For:
    j = c.Var("j")
    return c.For(c.Decl("int64_t", "j", c.Literal(0)), c.lt(j, c.Var("n")), c.increment(j), c.Block((update,)))


def _row_update(op: str = "+=", target=None, value=None) -> c.Assign:
    j, k, p = c.Var("j"), c.Var("k"), c.Var("p")
    target = target if target is not None else c.Var("C")[c.Var("i") * c.Var("n") + j]
    value = value if value is not None else c.Var("A")[p] * c.Var("B")[k * c.Var("n") + j]
    return c.Assign(target, value, op)


# --- which loops are rewritten ------------------------------------------------------------------------------


def _jammed_pair(block: c.Block, short: c.Expr) -> tuple[c.For, c.For, c.For]:
    """The narrow and wide jammed loops `jam_loops` makes of `block`'s one loop, chosen by `short`, and the
    remainder."""
    choice, remainder = jam_loops(block).body
    assert isinstance(choice, c.If) and choice.condition == short
    (narrow,), (wide,) = choice.then.body, choice.otherwise.body
    return narrow, wide, remainder


def _assert_steps(loop: c.For, factor: int) -> None:
    assert loop.step == c.Assign(c.Var("p"), c.Literal(factor), "+=")
    assert loop.condition == c.lt(c.Var("p"), c.Var("end") - (factor - 1))


def test_spmm_loop_is_jammed_by_the_rows_length_and_keeps_its_remainder():
    block = c.Block((_sparse_loop((_decl_k(), c.Block((_dense_loop(_row_update()),)))),))
    narrow, wide, remainder = _jammed_pair(block, c.lt(c.Var("end") - c.Var("p"), WIDE))
    assert remainder is block.body[0]
    for loop, factor in ((narrow, NARROW), (wide, WIDE)):
        _assert_steps(loop, factor)
        *decls, dense = loop.body.body
        assert [d.name for d in decls] == ["k"] + [f"k_jam{n}" for n in range(1, factor)]
        update = dense.body.body[0]
        assert update.op == "=" and update.target == _row_update().target


@pytest.mark.parametrize("why, loop", [
    ("a reduction into a scalar", _sparse_loop((_decl_k(), _dense_loop(_row_update(target=c.Var("t")))))),
    ("the target moves with the position", _sparse_loop((_decl_k(), _dense_loop(
        _row_update(target=c.Var("C")[c.Var("p") * c.Var("n") + c.Var("j")]))))),
    ("the target does not move with the dense loop", _sparse_loop((_decl_k(), _dense_loop(
        _row_update(target=c.Var("C")[c.Var("i")]))))),
    ("the value reads the target's array", _sparse_loop((_decl_k(), _dense_loop(
        _row_update(value=c.Var("C")[c.Var("k")]))))),
    ("a plain store", _sparse_loop((_decl_k(), _dense_loop(_row_update(op="="))))),
    ("a declaration with an effect", _sparse_loop((c.Decl(c.CType("int64_t", const=True), "k",
                                                          c.call("next", c.Var("p"))),
                                                   _dense_loop(_row_update())))),
    ("a statement besides the dense loop", _sparse_loop((_decl_k(), c.ExprStmt(c.call("count")),
                                                         _dense_loop(_row_update())))),
    ("no dense loop", _sparse_loop((_decl_k(), _row_update()))),
])
def test_other_loops_are_left_alone(why, loop):
    block = c.Block((loop,))
    assert jam_loops(block) is block, why


def _dots_loop(before: tuple = (), after_value=None, update_value=None) -> c.For:
    """SDDMM's loop: `for (; p < end; p++) { const k = crd[p]; out_crd[p] = k; { double t = 0;
    for (j...) t += C[i * n + j] * D[j * m + k]; out[p] = B[p] * t; } }`."""
    j, k, p, t = c.Var("j"), c.Var("k"), c.Var("p"), c.Var("t")
    update = c.Assign(t, update_value if update_value is not None else
                      c.Var("C")[c.Var("i") * c.Var("n") + j] * c.Var("D")[j * c.Var("m") + k], "+=")
    dense = c.For(c.Decl("int64_t", "j", c.Literal(0)), c.lt(j, c.Var("n")), c.increment(j), c.Block((update,)))
    store = c.Assign(c.Var("out")[p], after_value if after_value is not None else c.Var("B")[p] * t)
    return _sparse_loop((_decl_k(), *before, c.Assign(c.Var("outcrd")[p], c.Var("k")),
                         c.Block((c.Decl("double", "t", c.Literal(0)), dense, store))))


def test_sddmm_loop_is_jammed_into_side_by_side_sums():
    block = c.Block((_dots_loop(),))
    short = c.or_(c.lt(c.Var("end") - c.Var("p"), WIDE), c.lt(c.Var("n"), WIDE))  # a short row, or short sums
    narrow, wide, remainder = _jammed_pair(block, short)
    assert remainder is block.body[0]
    for loop, factor in ((narrow, NARROW), (wide, WIDE)):
        _assert_steps(loop, factor)
        dense = next(s for s in loop.body.body if isinstance(s, c.For))
        assert [u.target for u in dense.body.body] == [c.Var("t")] + [c.Var(f"t_jam{n}") for n in range(1, factor)]
        stores = [s for s in loop.body.body if isinstance(s, c.Assign) and s.target.base == c.Var("out")]
        assert [s.target.index for s in stores] == [c.Var("p")] + [c.Var("p") + n for n in range(1, factor)]


@pytest.mark.parametrize("why, loop", [
    ("a store read by the loop", _dots_loop(after_value=c.Var("outcrd")[c.Var("p")] * c.Var("t"))),
    ("a sum that reads itself", _dots_loop(update_value=c.Var("t") * c.Var("C")[c.Var("j")])),
    ("a store with an effect", _dots_loop(before=(c.Assign(c.Var("log")[c.Var("p")], c.call("tick")),))),
    ("an array stored both before and after the sum", _dots_loop(before=(c.Assign(c.Var("out")[c.Var("p") + 1],
                                                                                  c.Literal(0)),))),
])
def test_other_dot_loops_are_left_alone(why, loop):
    block = c.Block((loop,))
    assert jam_loops(block) is block, why


def test_kernels_without_the_shape_print_as_before():
    for expression, formats in [("y(i) = A(i,j) * x(j)", {"A": "csr", "x": "dense", "y": "dense"}),
                                ("y(i) = A(i,j) * x(j) + z(i)", {"A": "csr", "x": "dense", "y": "dense", "z": "dense"}),
                                ("C(i,j) = A(i,k) * B(k,j)", {"A": "csr", "B": "csr", "C": "csr"})]:
        assert "_jam" not in asp.compile(expression, formats=formats, num_threads=1).source, expression


@pytest.mark.parametrize("threads", [1, 2])
def test_spmm_kernel_is_jammed(threads):
    source = _spmm_source(threads)
    assert f"+= {WIDE})" in source and f"k__jam{WIDE - 1}" in source
    assert f"+= {NARROW})" in source


# --- results -------------------------------------------------------------------------------------------------


def _matrix_with_row_lengths(cols: int, index_dtype, rng) -> sp.csr_array:
    """One row of each length 0 .. 2 WIDE + 1 (each jammed loop, every remainder), then a random tail."""
    lengths = list(range(min(2 * WIDE + 2, cols + 1))) + list(rng.integers(0, cols + 1, size=5))
    indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(index_dtype)
    indices = np.concatenate([np.sort(rng.choice(cols, n, replace=False)) for n in lengths]).astype(index_dtype)
    values = rng.integers(1, 64, size=len(indices)) / 8 - 4  # exact in sums of a few, zeros among them
    return sp.csr_array((values, indices, indptr), shape=(len(lengths), cols))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("width", [1, 3, 64])
@pytest.mark.usefixtures("unfused")
def test_spmm_is_scipys_product_bit_for_bit(threads, index_dtype, width):
    rng = np.random.default_rng(width)
    m = _matrix_with_row_lengths(2 * WIDE + 1, index_dtype, rng)
    b = rng.random((2 * WIDE + 1, width))  # not exact: the order of additions shows
    kernel = asp.compile(SPMM[0], formats=SPMM[1], num_threads=threads)
    got = _dense(kernel(A=asp.Tensor.from_scipy(m, index_dtype=index_dtype), B=asp.Tensor.from_numpy(b)))
    expected = np.zeros((m.shape[0], width))
    for i in range(m.shape[0]):  # the plain loop's order: row i's terms added one after the other
        for p in range(m.indptr[i], m.indptr[i + 1]):
            expected[i] += m.data[p] * b[m.indices[p]]
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_allclose(got, m @ b, rtol=1e-13)


@pytest.mark.parametrize("case", ["empty", "all-zero", "one-entry", "explicit-zero", "non-square", "size-1"])
@pytest.mark.parametrize("threads", [1, 2])
def test_spmm_edge_cases(case, threads):
    rng = np.random.default_rng(1)
    rows, inner, width = {"empty": (0, 5, 4), "size-1": (1, 1, 1), "non-square": (7, 13, 5)}.get(case, (6, 6, 3))
    dense = np.zeros((rows, inner))
    if case == "one-entry":
        dense[-1, -1] = 2.5
    elif case in ("explicit-zero", "non-square", "size-1"):
        dense = rng.integers(0, 3, size=(rows, inner)).astype(float)
    m = sp.csr_array(dense)
    if case == "explicit-zero":
        m = sp.csr_array((np.where(np.arange(m.nnz) % 2, 0.0, 1.5), m.indices, m.indptr), shape=m.shape)
    b = rng.random((inner, width))
    kernel = asp.compile(SPMM[0], formats=SPMM[1], num_threads=threads)
    got = _dense(kernel(A=asp.Tensor.from_scipy(m), B=asp.Tensor.from_numpy(b)))
    np.testing.assert_allclose(got, m.toarray() @ b, rtol=1e-13, atol=0)


@pytest.mark.parametrize("threads", [1, 2])
def test_mttkrp_and_ttm_are_jammed_and_match_numpy(threads):
    rng = np.random.default_rng(3)
    shape = (4, 5, 11)
    dense = np.where(rng.random(shape) < 0.6, rng.integers(1, 9, size=shape) / 4, 0.0)
    tensor = asp.Tensor.from_numpy(dense, format="csf")
    c_, d_ = rng.random((5, 6)), rng.random((11, 6))
    mttkrp = asp.compile("A(i,l) = B(i,j,k) * C(j,l) * D(k,l)", formats={"B": "csf", "C": "dense", "D": "dense",
                                                                         "A": "dense"}, num_threads=threads)
    got = _dense(mttkrp(B=tensor, C=asp.Tensor.from_numpy(c_), D=asp.Tensor.from_numpy(d_)))
    np.testing.assert_allclose(got, np.einsum("ijk,jl,kl->il", dense, c_, d_), rtol=1e-13)
    assert "_jam" in mttkrp.source
    ttm = asp.compile("A(i,j,l) = B(i,j,k) * C(k,l)", formats={"B": "csf", "C": "dense", "A": "dense"},
                      num_threads=threads)
    got = _dense(ttm(B=tensor, C=asp.Tensor.from_numpy(d_)))
    np.testing.assert_allclose(got, np.einsum("ijk,kl->ijl", dense, d_), rtol=1e-13)


SDDMM = ("A(i,j) = B(i,j) * C(i,k) * D(k,j)", {"B": "csr", "C": "dense", "D": "dense", "A": "csr"})


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
@pytest.mark.parametrize("d_format", ["dense", "d1d0"])
@pytest.mark.usefixtures("unfused")
def test_sddmm_is_the_plain_loops_result_bit_for_bit(threads, index_dtype, d_format):
    rng = np.random.default_rng(7)
    m = _matrix_with_row_lengths(2 * WIDE + 1, index_dtype, rng)
    width = WIDE + 1
    c_, d_ = rng.random((m.shape[0], width)), rng.random((width, m.shape[1]))  # not exact: the order of additions shows
    kernel = asp.compile(SDDMM[0], formats=dict(SDDMM[1], D=d_format), num_threads=threads)
    assert f"+= {WIDE})" in kernel.source and f"+= {NARROW})" in kernel.source
    got = kernel(B=asp.Tensor.from_scipy(m, index_dtype=index_dtype), C=asp.Tensor.from_numpy(c_),
                 D=asp.Tensor.from_numpy(d_, format=d_format)).to_scipy()
    expected = sddmm_in_loop_order(m, c_, d_)
    np.testing.assert_array_equal(got.indptr, m.indptr)
    np.testing.assert_array_equal(got.indices, m.indices)
    np.testing.assert_array_equal(got.data, expected)


@pytest.mark.parametrize("case", ["empty", "all-zero", "one-entry", "explicit-zero", "non-square", "size-1"])
@pytest.mark.parametrize("threads", [1, 2])
def test_sddmm_edge_cases(case, threads):
    rng = np.random.default_rng(2)
    rows, cols, width = {"empty": (0, 5, 3), "size-1": (1, 1, 1), "non-square": (7, 13, 4)}.get(case, (6, 6, 3))
    dense = np.zeros((rows, cols))
    if case == "one-entry":
        dense[-1, -1] = 2.5
    elif case in ("explicit-zero", "non-square", "size-1"):
        dense = rng.integers(0, 3, size=(rows, cols)).astype(float)
    m = sp.csr_array(dense)
    if case == "explicit-zero":
        m = sp.csr_array((np.where(np.arange(m.nnz) % 2, 0.0, 1.5), m.indices, m.indptr), shape=m.shape)
    c_, d_ = rng.random((rows, width)), rng.random((width, cols))
    kernel = asp.compile(SDDMM[0], formats=SDDMM[1], num_threads=threads)
    got = kernel(B=asp.Tensor.from_scipy(m), C=asp.Tensor.from_numpy(c_), D=asp.Tensor.from_numpy(d_)).to_scipy()
    assert got.nnz == m.nnz  # the pattern is B's, stored zeros included
    np.testing.assert_allclose(got.toarray(), m.toarray() * (c_ @ d_), rtol=1e-13, atol=0)
