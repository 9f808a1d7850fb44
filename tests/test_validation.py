"""Every validation rule: corrupt arrays built by hand raise a FormatError (or ShapeError) naming it."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import autosparse as asp
from autosparse.format.hashed import home_slot

I = np.int64


def arr(*values, dtype=I):
    return np.array(values, dtype=dtype)


def csr_levels(pos, crd):
    return [{}, {"pos": arr(*pos), "crd": arr(*crd)}]


def test_valid_raw_tensors():
    tensor = asp.Tensor((2, 3), "csr", csr_levels([0, 2, 3], [0, 2, 1]), arr(1.0, 2.0, 3.0, dtype=float))
    np.testing.assert_array_equal(tensor.to_numpy(), [[1, 0, 2], [0, 3, 0]])
    coo = asp.Tensor((2, 2, 2), "ucq", [{"pos": arr(0, 3), "crd": arr(0, 0, 1)}, {"crd": arr(1, 1, 0)},
                                        {"crd": arr(0, 1, 1)}], arr(1.0, 2.0, 3.0, dtype=float))
    assert coo.nnz == 3 and coo.to_numpy()[0, 1, 1] == 2.0
    duplicated = asp.Tensor((2, 2), "uc", [{"pos": arr(0, 2), "crd": arr(1, 1)}, {"crd": arr(0, 0)}],
                            arr(1.0, 2.0, dtype=float))
    assert duplicated.to_numpy()[1, 0] == 3.0  # non-unique COO: duplicates add up
    assert duplicated.to_format("csr").nnz == 1


CSR = dict(shape=(2, 3), format="csr", vals=arr(1.0, 2.0, 3.0, dtype=float))


@pytest.mark.parametrize("levels,message", [
    (csr_levels([0, 2], [0, 2, 1]), r"pos to have 3 entries"),
    (csr_levels([1, 2, 3], [0, 2, 1]), r"pos\[0\] == 0"),
    (csr_levels([0, 3, 2], [0, 2, 1]), r"non-decreasing, but pos\[1\] = 3 > pos\[2\] = 2"),
    (csr_levels([0, 2, 2], [0, 2, 1]), r"pos\[-1\] == len\(crd\) == 3"),
    (csr_levels([0, 2, 3], [0, 3, 1]), r"crd in \[0, 3\), but crd\[1\] = 3"),
    (csr_levels([0, 2, 3], [0, -1, 1]), r"crd\[1\] = -1"),
    (csr_levels([0, 2, 3], [2, 0, 1]), r"sorted coordinates, but crd\[0\] = 2 > crd\[1\] = 0"),
    (csr_levels([0, 2, 3], [1, 1, 1]), r"unique coordinates, but crd\[0\] == crd\[1\] == 1"),
])
def test_compressed_rules(levels, message):
    with pytest.raises(asp.FormatError, match=message) as error:
        asp.Tensor(CSR["shape"], CSR["format"], levels, CSR["vals"])
    assert "Level 1 (s, mode 1) of ds" in str(error.value)


def test_non_unique_compressed_allows_repeats_but_not_disorder():
    vals = arr(1.0, 2.0, 3.0, dtype=float)
    asp.Tensor((2, 3), "du", csr_levels([0, 2, 3], [1, 1, 0]), vals)
    with pytest.raises(asp.FormatError, match="sorted coordinates"):
        asp.Tensor((2, 3), "du", csr_levels([0, 2, 3], [2, 1, 0]), vals)


def coo_levels(rows, cols):
    return [{"pos": arr(0, len(rows)), "crd": arr(*rows)}, {"crd": arr(*cols)}]


@pytest.mark.parametrize("spec,levels,message", [
    ("uq", coo_levels([0, 1, 1], [0, 2]), r"one entry per parent position \(3\), but found 2"),
    ("uq", coo_levels([0, 1, 1], [0, 2, 5]), r"crd in \[0, 3\), but crd\[2\] = 5"),
    ("uq", coo_levels([0, 1, 1], [0, 2, 1]), r"sorted coordinates, but crd\[1\] = 2 > crd\[2\] = 1"),
    ("uq", coo_levels([0, 1, 1], [0, 2, 2]), r"unique coordinates, but crd\[1\] == crd\[2\] == 2"),
    ("uq", coo_levels([1, 0, 1], [0, 2, 2]), r"Level 0 .* sorted coordinates"),
    ("uc", coo_levels([0, 1, 1], [0, 2, 1]), r"sorted coordinates"),
])
def test_singleton_rules(spec, levels, message):
    with pytest.raises(asp.FormatError, match=message):
        asp.Tensor((2, 3), spec, levels, arr(1.0, 2.0, 3.0, dtype=float))


def test_singleton_order_is_per_repeated_prefix():
    # (0,0,1) (0,1,0) (0,1,1): the last level restarts when the (row, col) prefix changes.
    levels = [{"pos": arr(0, 3), "crd": arr(0, 0, 0)}, {"crd": arr(0, 1, 1)}, {"crd": arr(1, 0, 1)}]
    asp.Tensor((1, 2, 2), "ucq", levels, arr(1.0, 2.0, 3.0, dtype=float))
    levels[2] = {"crd": arr(1, 1, 0)}
    with pytest.raises(asp.FormatError, match=r"Level 2 .* sorted coordinates, but crd\[1\] = 1 > crd\[2\] = 0"):
        asp.Tensor((1, 2, 2), "ucq", levels, arr(1.0, 2.0, 3.0, dtype=float))


def hashed_table(keys, size):
    """A correct table for `keys`, built by probing independently of the packer."""
    table = np.full(size, -1, dtype=I)
    for key in keys:
        slot = int(home_slot(arr(key), arr(size))[0])
        while table[slot] != -1:
            slot = (slot + 1) % size
        table[slot] = key
    return table


def test_hashed_rules():
    def vals(table):
        return (np.asarray(table) != -1).astype(float)  # values only where a key is stored

    good = hashed_table([3, 5, 6], 8)
    tensor = asp.Tensor((10,), "h", [{"pos": arr(0, 8), "crd": good}], vals(good))
    np.testing.assert_array_equal(np.flatnonzero(tensor.to_numpy()), [3, 5, 6])
    assert tensor.nnz == 3
    with pytest.raises(asp.FormatError, match="power-of-two table size per parent, but parent 0 has 6"):
        asp.Tensor((10,), "h", [{"pos": arr(0, 6), "crd": good[:6]}], vals(good[:6]))
    with pytest.raises(asp.FormatError, match=r"crd in \[-1, 10\)"):
        asp.Tensor((10,), "h", [{"pos": arr(0, 8), "crd": np.where(good == 3, -2, good)}], vals(good))
    twice = good.copy()
    twice[np.flatnonzero(good == -1)[0]] = 5
    with pytest.raises(asp.FormatError, match="5 is stored twice in the table of parent 0"):
        asp.Tensor((10,), "h", [{"pos": arr(0, 8), "crd": twice}], vals(twice))
    home = int(home_slot(arr(3), arr(8))[0])
    moved = np.full(8, -1, dtype=I)
    moved[(home + 2) % 8] = 3  # two slots past an empty home slot: lookups never find it
    with pytest.raises(asp.FormatError, match="reachable by probing from its home slot"):
        asp.Tensor((10,), "h", [{"pos": arr(0, 8), "crd": moved}], vals(moved))


@pytest.mark.parametrize("shape,fmt,levels,vals,error,message", [
    ((2, 3), "csr", csr_levels([0, 2, 3], [0, 2, 1])[1:], np.ones(3), asp.FormatError, "2 levels of arrays"),
    ((2, 3), "csr", [{}, {"pos": arr(0, 2, 3)}], np.ones(3), asp.FormatError, r"arrays \['pos', 'crd'\]"),
    ((2, 3), "csr", [{"pos": arr(0)}, {"pos": arr(0, 2, 3), "crd": arr(0, 2, 1)}], np.ones(3), asp.FormatError,
     r"level 0 \(d\) of ds to have arrays \[\]"),
    ((2, 3), "csr", [{}, {"pos": arr(0, 2, 3).reshape(1, 3), "crd": arr(0, 2, 1)}], np.ones(3), asp.FormatError,
     "1-D"),
    ((2, 3), "csr", [{}, {"pos": arr(0, 2, 3, dtype=np.int16), "crd": arr(0, 2, 1, dtype=np.int16)}], np.ones(3),
     asp.FormatError, "int32 or int64, but found int16"),
    ((2, 3), "csr", [{}, {"pos": arr(0, 2, 3, dtype=float), "crd": arr(0, 2, 1)}], np.ones(3), asp.FormatError,
     "float64"),
    ((2, 3), "csr", [{}, {"pos": arr(0, 2, 3, dtype=np.int32), "crd": arr(0, 2, 1)}], np.ones(3),
     asp.FormatError, "one index dtype"),
    ((2, 3), "csr", csr_levels([0, 2, 3], [0, 2, 1]), np.ones(3, dtype=np.float16), asp.FormatError,
     "found float16"),
    ((2, 3), "csr", csr_levels([0, 2, 3], [0, 2, 1]), np.ones(4), asp.FormatError, r"one entry per position .* \(3\)"),
    ((2, 3), "csr", csr_levels([0, 2, 3], [0, 2, 1]), np.ones((3, 1)), asp.FormatError, "1-D vals"),
    ((2, 3), "dense", [{}, {}], np.ones(5), asp.FormatError, r"\(6\), but found 5"),
    ((2, -3), "csr", csr_levels([0, 2, 3], [0, 2, 1]), np.ones(3), asp.ShapeError, "non-negative"),
    ((2, 3.5), "csr", csr_levels([0, 2, 3], [0, 2, 1]), np.ones(3), asp.ShapeError, "integer"),
    ((2, 3, 4), "csr", csr_levels([0, 2, 3], [0, 2, 1]), np.ones(3), asp.FormatError, "order 3"),
    ("ab", "csr", csr_levels([0, 2, 3], [0, 2, 1]), np.ones(3), asp.ShapeError, "shape of integers"),
])
def test_structure_rules(shape, fmt, levels, vals, error, message):
    with pytest.raises(error, match=message):
        asp.Tensor(shape, fmt, levels, vals)


@pytest.mark.parametrize("coords,values,shape,error,message", [
    ([[0, 2], [1, 1]], [1.0, 2.0], (2, 2), asp.FormatError, r"mode-0 coordinates in \[0, 2\), but entry 1 has 2"),
    ([[0, 1], [1, -1]], [1.0, 2.0], (2, 2), asp.FormatError, r"mode-1 .* entry 1 has -1"),
    ([[0, 1]], [1.0, 2.0], (2, 2), asp.ShapeError, r"shape \(2, nnz\)"),
    ([[0.5, 1], [1, 1]], [1.0, 2.0], (2, 2), asp.FormatError, "integer coordinates"),
    ([[0, 1], [1, 1]], [1.0, 2.0, 3.0], (2, 2), asp.ShapeError, "Expected 2 values"),
    ([[0, 1], [1, 1]], ["a", "b"], (2, 2), asp.FormatError, "without loss"),
])
def test_from_coo_rules(coords, values, shape, error, message):
    with pytest.raises(error, match=message):
        asp.Tensor.from_coo(coords, values, shape, "csr")


def test_index_dtype_rules():
    with pytest.raises(asp.FormatError, match="int32 or int64, but found int16"):
        asp.Tensor.from_numpy(np.eye(2), "csr", index_dtype=np.int16)
    with pytest.raises(asp.FormatError, match="int32 or int64"):
        asp.Tensor.from_numpy(np.eye(2), "csr").to_format("csc", index_dtype=np.float64)


def test_validated_arrays_are_read_only_views():
    pos, crd = arr(0, 2, 3), arr(0, 2, 1)
    tensor = asp.Tensor((2, 3), "csr", [{}, {"pos": pos, "crd": crd}], np.ones(3))
    assert not tensor.levels[1]["pos"].flags.writeable
    assert pos.flags.writeable
    with pytest.raises(ValueError):
        tensor.vals[0] = 5.0


def test_hashed_tables_are_at_most_half_full():
    with pytest.raises(asp.FormatError, match="at most half full, but the table of parent 0 holds 1 keys in 1 slots"):
        asp.Tensor((4,), "h", [{"pos": arr(0, 1), "crd": arr(2)}], np.ones(1))


def test_nothing_is_stored_below_an_empty_hashed_slot():
    good = asp.Tensor.from_coo([[1], [2]], [5.0], (4, 3), "hs")
    table = good.levels[0]["crd"]  # a table of two slots, one of them empty
    empty = int(np.flatnonzero(table == -1)[0])
    below_each_slot = {"pos": np.arange(len(table) + 1, dtype=table.dtype), "crd": np.where(table == 1, 2, 0).astype(table.dtype)}
    with pytest.raises(asp.FormatError, match="nothing stored below an empty slot .* coordinate 0 at position"):
        asp.Tensor((4, 3), "hs", [good.levels[0], below_each_slot], np.ones(len(table)))
    dense = asp.Tensor.from_coo([[1], [2]], [5.0], (4, 3), "hd")
    vals = dense.vals.copy()
    vals[3 * empty] = 1.0
    with pytest.raises(asp.FormatError, match="zero values at positions that hold no coordinate"):
        asp.Tensor((4, 3), "hd", [dict(level) for level in dense.levels], vals)
    asp.Tensor((4, 3), "hd", [dict(level) for level in dense.levels], dense.vals)


def test_containers_that_are_not_arrays():
    with pytest.raises(asp.FormatError, match="one mapping of arrays per level"):
        asp.Tensor((3,), "s", None, [])
    with pytest.raises(asp.FormatError, match="numpy could not read it"):
        asp.Tensor((3,), "s", [{"pos": [0, [1, 2]], "crd": [0]}], [1.0])


def test_strided_arrays_become_contiguous():
    every_third = np.arange(9)[::3]
    tensor = asp.Tensor((9,), "s", [{"pos": arr(0, 3), "crd": every_third}], np.ones(3))
    assert tensor.levels[0]["crd"].flags.c_contiguous
    np.testing.assert_array_equal(np.flatnonzero(tensor.to_numpy()), [0, 3, 6])


def test_requested_index_dtype_must_fit():
    with pytest.raises(asp.FormatError, match="fit the requested index dtype int32"):
        asp.Tensor.from_coo([[2**32 + 3]], [1.0], (2**33,), "s", index_dtype=np.int32)
    with pytest.raises(asp.FormatError, match="fit the requested index dtype int32"):
        asp.Tensor.from_coo([[2**32 + 3]], [1.0], (2**33,), "s").to_format("h", index_dtype=np.int32)
    assert asp.Tensor.from_coo([[2**31 - 1]], [1.0], (2**31,), "s", index_dtype=np.int32).to_coo()[0][0, 0] == 2**31 - 1


def test_dimensions_must_fit_int64():
    with pytest.raises(asp.ShapeError, match="below 2\\*\\*63"):
        asp.Tensor.from_coo(np.array([[2**63 + 5]], dtype=np.uint64), [1.0], (2**64,), "s")


def test_pydata_fill_value_must_be_zero():
    import sparse

    with pytest.raises(asp.FormatError, match="fill value is 0, but found 1.0"):
        asp.Tensor.from_pydata(sparse.COO([[0]], [5.0], shape=(3,), fill_value=1.0))


# ----- hostile input: lying scipy matrices, impossible settings, values of the wrong kind --------------

def _lying(kind: str, **arrays):
    """A valid 3 x 4 scipy matrix whose arrays are then replaced, as a caller mutating them would."""
    import scipy.sparse as sp

    matrix = sp.random_array((3, 4), density=0.5, format=kind, random_state=0)
    for name, value in arrays.items():
        setattr(matrix, name, value)
    return matrix


@pytest.mark.parametrize("kind,arrays,message", [
    # indptr not monotone: scipy's C++ canonicalisation corrupted the heap (double free or corruption)
    ("csr", dict(indptr=arr(0, 5, 1, 6), indices=arr(0, 1, 2, 3, 0, 1), data=np.ones(6)), "non-decreasing"),
    ("csc", dict(indptr=arr(0, 4, 2, 5, 6), indices=arr(0, 1, 2, 0, 1, 2), data=np.ones(6)), "non-decreasing"),
    ("csr", dict(indptr=arr(0, 2, 4, 6), indices=arr(0, 1, 2, 99, 0, 1), data=np.ones(6)), r"crd in \[0, 4\)"),
    ("csr", dict(indptr=arr(0, 2, 4, 6), indices=arr(0, -1, 2, 3, 0, 1), data=np.ones(6)), r"crd in \[0, 4\)"),
    ("csr", dict(indptr=arr(0, 2, 4, 6), indices=arr(0, 1, 2, 3, 0, 1), data=np.ones(5)), "as many indices as data"),
    ("csr", dict(indptr=arr(0, 2, 4, 9), indices=arr(0, 1, 2, 3, 0, 1), data=np.ones(6)), r"indptr\[-1\] between"),
    ("csr", dict(indptr=arr(1, 2, 4, 6), indices=arr(0, 1, 2, 3, 0, 1), data=np.ones(6)), r"pos\[0\] == 0"),
    ("csr", dict(indptr=arr(0, 2, 6), indices=arr(0, 1, 2, 3, 0, 1), data=np.ones(6)), "pos to have 4 entries"),
    ("csr", dict(indptr=arr(0, 2, 4, 6), indices=np.array([0, 1, 2, 3, 0, 1.5]), data=np.ones(6)), "integer index"),
    ("csr", dict(indptr=arr(0, 2, 4, 6), indices=np.array([0, 1, 2, 3, 0, 2**64 - 1], dtype=np.uint64),
                 data=np.ones(6)), "fit int64"),
    ("csr", dict(indptr=arr(0, 2, 4, 6), indices=arr(0, 1, 2, 3, 0, 1), data=np.array(list("abcdef"))), "without loss"),
    ("coo", dict(coords=(arr(0, 1, 2), arr(0, 1)), data=np.ones(3)), "one coordinate per value"),
    ("coo", dict(coords=(arr(0, 1, 5), arr(0, 1, 2)), data=np.ones(3)), r"mode-0 coordinates in \[0, 3\)"),
    ("bsr", dict(indptr=arr(0, 3, 1, 4), indices=arr(0, 1, 2, 3), data=np.ones((4, 1, 1))), "non-decreasing"),
    ("bsr", dict(indptr=arr(0, 1, 2, 2), indices=arr(0, 1), data=np.ones((3, 1, 1))), "one block per index"),
    ("dia", dict(offsets=arr(0, 1, 2), data=np.ones((2, 4))), "one row of data per integer offset"),
])
def test_lying_scipy_matrices_are_refused_before_scipy_reads_them(kind, arrays, message):
    with pytest.raises(asp.FormatError, match=message):
        asp.Tensor.from_scipy(_lying(kind, **arrays))


def test_scipy_arrays_of_mixed_or_small_index_dtypes_are_checked_and_converted():
    matrix = _lying("csr", indptr=np.array([0, 2, 2, 3], dtype=np.int64), indices=np.array([3, 1, 0], dtype=np.int16),
                    data=np.array([1.0, 2.0, 3.0], dtype=np.float16))
    tensor = asp.Tensor.from_scipy(matrix)
    assert tensor.format == "csr" and tensor.dtype == np.float32  # row 0 unsorted: canonicalised, int32 fits
    assert tensor.index_dtype == np.int32 and tensor.levels[1]["crd"].tolist() == [1, 3, 0]
    np.testing.assert_array_equal(tensor.to_numpy(), [[0, 2, 0, 1], [0, 0, 0, 0], [3, 0, 0, 0]])
    longer = _lying("csr", indptr=arr(0, 1, 1, 2), indices=arr(2, 0, 3), data=np.array([5.0, 6.0, 7.0]))
    np.testing.assert_array_equal(asp.Tensor.from_scipy(longer).to_numpy(),  # scipy ignores past indptr[-1]
                                  [[0, 0, 5, 0], [0, 0, 0, 0], [6, 0, 0, 0]])


def test_lying_scipy_matrix_cannot_kill_the_interpreter():
    """The heap corruption aborted the process, so the proof runs in a child that must survive it."""
    script = ("import numpy as np, scipy.sparse as sp, autosparse as asp\n"
              "m = sp.csr_matrix((np.ones(3), np.array([0, 1, 2]), np.array([0, 3, 1, 3])), shape=(3, 3))\n"
              "try:\n    asp.Tensor.from_scipy(m)\nexcept asp.FormatError:\n    print('refused')\n")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "refused", result.stderr


@pytest.mark.parametrize("spec,message", [
    (f"bcsr({2**63})", "positive block sizes below 2\\*\\*63"),
    (f"ubcsr(2,{2**70})", "positive block sizes below 2\\*\\*63"),
    ("bcsr(0)", "positive block sizes"),
    (42, "format string, a Format or a sequence of levels"),
    (None, "format string, a Format or a sequence of levels"),
    ([1, 2], "format string, a Format or a sequence of levels"),
])
def test_impossible_formats(spec, message):
    with pytest.raises(asp.FormatError, match=message):
        asp.Format(spec)


def test_shapes_of_too_many_modes_or_too_large_dimensions():
    with pytest.raises(asp.ShapeError, match="at most 64 modes"):
        asp.Tensor.from_coo(np.zeros((65, 0), dtype=np.int64), [], (1,) * 65)
    with pytest.raises(asp.ShapeError, match="below 2\\*\\*63"):
        asp.Tensor.from_coo([[0]], [1.0], (2**63,))
    with pytest.raises(asp.ShapeError, match="shape of integers"):
        asp.Tensor.from_coo([[0]], [1.0], (float("inf"),))


@pytest.mark.parametrize("text", ["1e400", "inf", "nan", "0", "-1", "0.5", "lots", ""])
def test_memory_limits_from_the_environment_are_checked(monkeypatch, text):
    monkeypatch.setenv("AUTOSPARSE_MEMORY_LIMIT", text)
    with pytest.raises(asp.MemoryLimitError, match="AUTOSPARSE_MEMORY_LIMIT to be a positive, finite number"):
        asp.memory_limit()
    with pytest.raises(asp.MemoryLimitError, match="AUTOSPARSE_MEMORY_LIMIT"):
        asp.Tensor.from_numpy(np.eye(2), "csr").to_numpy()


def test_memory_limit_from_the_environment_and_in_process(monkeypatch):
    monkeypatch.setenv("AUTOSPARSE_MEMORY_LIMIT", "1e3")
    assert asp.memory_limit() == 1000
    monkeypatch.setenv("AUTOSPARSE_MEMORY_LIMIT", str(10**30))
    assert asp.memory_limit() == 10**30  # larger than a float holds exactly
    asp.set_memory_limit(np.int64(5000))
    assert asp.memory_limit() == 5000
    for bad in (0, -1, 1e400, 2.5, "100", True):
        with pytest.raises(asp.MemoryLimitError, match="positive integer number of bytes"):
            asp.set_memory_limit(bad)
    asp.set_memory_limit(None)
    assert asp.memory_limit() == 10**30


def test_an_invalid_environment_limit_does_not_break_import():
    env = dict(os.environ, AUTOSPARSE_MEMORY_LIMIT="1e400")
    script = "import autosparse as asp\ntry:\n    asp.memory_limit()\nexcept asp.MemoryLimitError as e:\n    print(e)\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0 and "found '1e400'" in result.stdout, result.stderr


@pytest.mark.parametrize("call,error,message", [
    (lambda: asp.compile(42), asp.ParseError, "assignment as text"),
    (lambda: asp.compile(None), asp.ParseError, "assignment as text"),
    (lambda: asp.evaluate(42), asp.ParseError, "assignment as text"),
    (lambda: asp.einsum(42, np.eye(2)), asp.ParseError, "einsum subscripts as text"),
    (lambda: asp.compile("y(i) = A(i,j) * x(j)", formats=42), asp.FormatError, "mapping of tensor names"),
    (lambda: asp.autoschedule(42), asp.ParseError, "assignment as text"),
    (lambda: asp.autoschedule("y(i) = A(i,j) * x(j)", formats=42), asp.FormatError, "mapping of tensor names"),
    (lambda: asp.compile("y(i) = A(i,j) * x(j)", formats={"A": 42}), asp.FormatError, "format string"),
    (lambda: asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, schedule="precompute([0], j, jw)"),
     asp.ScheduleError, r"precompute\(\[0\], j, jw\): expected an expression, but found the Path"),
    (lambda: asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"},
                         schedule=asp.Schedule().precompute(asp.schedule.language.Path((0,)), "j", "jw")),
     asp.ScheduleError, "expected an expression"),
    (lambda: asp.compile("y(i) = A(i,j) * x(j)", formats={"A": "csr"}, schedule="pos(i, ip, [0])"),
     asp.ScheduleError, "expected an expression"),
])
def test_arguments_of_the_wrong_kind_are_user_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
