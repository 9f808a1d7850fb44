"""User names and generated names never meet in C: kernels renamed to anything the generator emits, C
keywords, libc/libm/header names and random identifiers compute what numpy.einsum computes."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import autosparse as asp
from autosparse.codegen import names
from autosparse.notation.operators import FUNCTIONS, REDUCTIONS

#: What the generator emits, today and before the namespaces were split (TACO's spelling included).
GENERATED = """
    pA1 pA2 pB2 pA2_end pA2_seg A1_pos A2_pos A2_crd A_vals N_i N_j N_k N_0j A2_i w1_i A2_size C2_nz C_bounded
    acc1 acc2 v1 stored1 failed failed1 allocated1 ready1 done1 q1 lo1 hi1 row1 high1 mid1 row_sum1 segment1
    stop1 first1 w w1 w2 t0 t1 q p s k m n t slot slots side share low high middle trips threads thread team
    length from trimmed min64 hash64 resultarray result_array sortcoordinates sort_coordinates ordertouched
    order_touched keyedfind2 keyed_find2 keyedinsert2 keyedslot2 hashedfind32 hashedfind64 hashed_find_int32_t
    autosparse_kernel args dims sizes counters i_ j_ i_dim j_dim A_p2 A_p2_end A_p2_seg A_p2_base A_i2 A_l2
    A_l2_at A_pos2 A_crd2 C_size2 C_nz2 C_c2 A_1p2 w_list w_mark w_gen w_count w_spare w_bits w_vals y_copies
    y_shared fillready countready
""".split()
C_KEYWORDS = """
    auto break case char const continue default do double else enum extern float for goto if inline int long
    register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
    while _Bool _Complex _Imaginary _Alignas _Atomic _Generic _Noreturn _Static_assert _Thread_local
""".split()
LIBRARY = """
    malloc calloc realloc free memset memcpy memmove qsort madvise abs labs exp log sqrt pow sin cos fabs
    printf exit main abort I complex imaginary creal cimag _Complex_I NULL EOF errno size_t int64_t int32_t
    uint64_t uintptr_t INT32_MAX INT64_MAX u_int u_char u_long MADV_HUGEPAGE PROT_READ MAP_ANONYMOUS
    omp_get_thread_num omp_get_max_threads __GNUC__ __GNUC _GNU_SOURCE _DEFAULT_SOURCE __x86_64__ bool true
    false self
""".split()
#: The notation's own words, for reductions (`sum(j, e)`, `min(j, e)`) and functions (`exp(e)`), which no
#: tensor on the right can take (test_notation_functions checks the error that says so).
NOT_NAMES = set(REDUCTIONS) | set(FUNCTIONS)

POOL = sorted(set(GENERATED + C_KEYWORDS + LIBRARY) - NOT_NAMES)
IDENTIFIERS = st.from_regex(re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,7}", re.ASCII), fullmatch=True).filter(
    lambda n: n not in NOT_NAMES)
NAME = st.one_of(st.sampled_from(POOL), IDENTIFIERS)


def _csr(rows, cols, seed):
    return sp.random(rows, cols, density=0.3, random_state=seed, format="csr")


def _dense(shape, seed):
    return np.random.default_rng(seed).random(shape)


def _coo_tensor(shape, seed, fmt):
    dense = _dense(shape, seed) * (_dense(shape, seed + 1) < 0.3)
    return asp.Tensor.from_numpy(dense, format=fmt), dense


def _spmv():
    A = _csr(7, 5, 1)
    return {"A": A, "x": _dense(5, 2)}, {"A": "csr"}, lambda o: o["A"] @ o["x"]


def _spgemm():
    A, B = _csr(6, 5, 3), _csr(5, 7, 4)
    return {"A": A, "B": B}, {"A": "csr", "B": "csr", "C": "csr"}, lambda o: (o["A"] @ o["B"]).toarray()


def _add():
    A, B = _csr(6, 5, 5), _csr(6, 5, 6)
    return {"A": A, "B": B}, {"A": "csr", "B": "csr", "C": "csr"}, lambda o: (o["A"] + o["B"]).toarray()


def _ttv():
    T, dense = _coo_tensor((4, 3, 5), 7, "sss")
    v = _dense(5, 9)
    return {"T": T, "v": v}, {"T": "sss", "y": "ds"}, lambda o: np.einsum("ijk,k->ij", dense, o["v"])


def _mttkrp():
    T, dense = _coo_tensor((4, 3, 5), 10, "coo")
    B, C = _dense((3, 2), 11), _dense((5, 2), 12)
    return ({"T": T, "B": B, "C": C}, {"T": "coo"},
            lambda o: np.einsum("ijk,jr,kr->ir", dense, o["B"], o["C"]))


def _transposed_spmv():
    A = _csr(7, 5, 13)
    return {"A": A, "x": _dense(7, 14)}, {"A": "csr"}, lambda o: o["A"].T @ o["x"]


#: (expression, schedule, operands) with every tensor and index a placeholder; `num_threads` where parallel.
KERNELS = {
    "spmv": ("{y}({i}) = {A}({i},{j}) * {x}({j})", None, _spmv, None),
    "spgemm workspace": ("{C}({i},{j}) = {A}({i},{k}) * {B}({k},{j})", None, _spgemm, None),
    "add": ("{C}({i},{j}) = {A}({i},{j}) + {B}({i},{j})", None, _add, None),
    "ttv csf": ("{y}({i},{j}) = {T}({i},{j},{k}) * {v}({k})", None, _ttv, None),
    "mttkrp coo": ("{D}({i},{r}) = {T}({i},{j},{k}) * {B}({j},{r}) * {C}({k},{r})", None, _mttkrp, None),
    "split": ("{y}({i}) = {A}({i},{j}) * {x}({j})", "split({i}, {i0}, {i1}, 4)", _spmv, None),
    "precompute": ("{C}({i},{j}) = {A}({i},{k}) * {B}({k},{j})",
                   "precompute({A}({i},{k}) * {B}({k},{j}), {j}, {jw})", _spgemm, None),
    "parallel rows": ("{y}({i}) = {A}({i},{j}) * {x}({j})", "parallelize({i}, cpu_thread, no_races)", _spmv, 2),
    "parallel temporary": ("{y}({j}) = {A}({i},{j}) * {x}({i})", "parallelize({i}, cpu_thread, temporary)",
                           _transposed_spmv, 2),
}
TENSORS = ("y", "A", "x", "C", "B", "T", "v", "D")
INDICES = ("i", "j", "k", "r", "i0", "i1", "jw")


def _renamings(draw_names):
    """Distinct names for the tensors and for the indices (a tensor and an index may share one)."""
    return st.tuples(st.lists(draw_names, min_size=len(TENSORS), max_size=len(TENSORS), unique=True),
                     st.lists(draw_names, min_size=len(INDICES), max_size=len(INDICES), unique=True))


def _run(kernel: str, tensor_names, index_names):
    expression, schedule, data, threads = KERNELS[kernel]
    rename = dict(zip(TENSORS, tensor_names)) | dict(zip(INDICES, index_names))
    operands, formats, expected = data()
    renamed = expression.format(**rename)
    compiled = asp.compile(renamed, formats={rename[n]: f for n, f in formats.items()},
                           schedule=schedule.format(**rename) if schedule else None, num_threads=threads)
    result = compiled(**{rename[n]: value for n, value in operands.items()})
    result = result.to_numpy() if isinstance(result, asp.Tensor) else result
    np.testing.assert_allclose(result, expected(operands), rtol=1e-12, atol=1e-12, err_msg=f"{renamed}\n{schedule}")


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(renaming=_renamings(NAME))
def test_renamed_kernels_match_numpy(kernel, renaming):
    _run(kernel, *renaming)


@pytest.mark.parametrize("tensors, indices", [
    (("y", "A", "x"), ("i", "pA2")),      # an index named like A's position gave wrong values
    (("y", "A", "x"), ("pA2", "j")),      # ... and as the row index, a crash
    (("y", "A", "x"), ("i", "acc1")),     # an index named like the accumulator looped forever
    (("I", "free", "int"), ("malloc", "N_i")),
])
def test_the_reported_collisions(tensors, indices):
    _run("spmv", (*tensors, "C", "B", "T", "v", "D"), (*indices, "k", "r", "i0", "i1", "jw"))


def test_an_index_named_like_an_extent_in_a_sparse_product():
    """`C(N_j,j) = A(N_j,k) * B(k,j)` corrupted the heap: N_j was also j's extent."""
    _run("spgemm workspace", ("y", "A", "x", "C", "B", "T", "v", "D"), ("N_j", "j", "k", "r", "i0", "i1", "jw"))


def test_a_tensor_named_like_the_workspace_keeps_its_own_name():
    """The default workspace is named in CIN apart from every tensor of the statement."""
    _run("spgemm workspace", ("y", "w", "x", "C", "w1", "T", "v", "D"), ("i", "j", "k", "r", "i0", "i1", "jw"))


@given(st.lists(st.tuples(IDENTIFIERS, st.sampled_from(["", "dim", "vals", "pos2", "p2", "p2_end", "1p2"])),
                min_size=2, max_size=2, unique=True))
def test_user_identifiers_are_one_to_one(pairs):
    (a, tail_a), (b, tail_b) = pairs
    assert names.user(a, tail_a) != names.user(b, tail_b)


@given(IDENTIFIERS, st.sampled_from(["", "dim", "vals", "pos2", "p2_end"]))
def test_user_identifiers_hold_an_underscore_and_no_reserved_start(name, tail):
    ident = names.user(name, tail)
    assert "_" in ident and ident.isidentifier()
    assert not ident.startswith("__") and not re.match(r"_[A-Z]", ident)


def test_generated_names_hold_no_underscore():
    fresh = names.Fresh()
    assert "_" not in fresh("acc") and fresh("acc") == "acc2"
    with pytest.raises(ValueError):
        fresh("row_sum")


@pytest.mark.parametrize("tail", ["0", "_x"])
def test_a_tail_cannot_make_a_stem_ambiguous(tail):
    with pytest.raises(ValueError):
        names.user("A", tail)


def test_generated_source_names_user_names_by_their_stems():
    source = asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, num_threads=1).source
    assert "for (int64_t i_ = 0; i_ < i_dim; i_++)" in source and "A_vals[A_p2]" in source
    assert not re.search(r"\b[ijAxy]\b", source.split("autosparse_kernel")[1])  # no user name stands bare
